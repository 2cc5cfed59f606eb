"""Fit a loss law in log space with a Huber loss (Hoffmann et al.; Epoch AI's replication), from
starting points that cover every parameter's plausible range, and say when a fit is not to be
trusted.

Objective: mean_i w_i·Huber_δ(log L_i − log L̂_i) / δ, minimised with scipy L-BFGS-B and an
analytic gradient. Dividing by δ and by the total weight keeps the gradient O(1) whatever δ and
the row count are, so the tolerances mean the same thing for every fit (the minimiser is that of
the paper's summed Huber loss; docs/fidelity.md#P1-FIT).

Search, and why it cannot miss a basin inside the grid's range:
1. Profile grid (variable projection). Both laws are linear in their coefficients once the
   exponents are fixed (``laws`` module docstring). For every point of a grid over the exponents
   (α, β: 0.02-4 in 26% steps; b_s: 0.05-16) the coefficients are solved *exactly* by relative
   least squares (≈ least squares on log L), with positive coefficients kept ≥ 0 exactly (all
   active sets of the sign constraints are solved and the best feasible one kept). So no
   coefficient needs a grid of its own, and none can be too narrow.
2. L-BFGS-B on the Huber objective from the ``N_STARTS`` best grid points, each at least two grid
   steps from every better start (distinct basins). The best optimum wins; how many starts
   reached it is reported.
3. Trust: an optimum on the boundary is a failed fit, not a result.
   - ``at_bound``: a parameter within 0.1% of its bound interval of a box bound, or a positive
     coefficient whose term is < 1e-4 of every fitted loss (its bound 0, which log space only
     approaches). Such a fit is ``converged: false`` (the floor E excepted, below).
   - ``near_bound``: an exponent whose 95% profile interval reaches a bound
     (:mod:`embtune.scaling.fit_profile`: α = 0.01 with an interval down to 0 says "no N term" as
     loudly as α = 0 does), another parameter with a bound within 2 Gauss-Newton standard errors,
     or a bound reached by more than 2.5% of the bootstrap resamples. Exponents are profiled
     because the linearised errors misjudge them: on the demo's full fine-tuning fit β = 0.163 ±
     0.096 reaches 0 by Gauss-Newton while its profile interval is [0.121, 0.234].
   - ``unidentified``: an exponent whose terms all vanish.
   Any of them, or a failed optimizer, makes the fit ``trustworthy: false``, except the floor E
   at its bound 0: the data show no floor in the fitted range (``findings``; the recipe must not
   extrapolate past that range). ``identified`` names, per parameter, whether its 95% interval
   stays off its bounds.
   A law with more free parameters than the rows carry (fewer than ``ROWS_PER_PARAMETER`` training
   rows per free parameter) is not fitted: its record is ``{"skipped": why}``.
Bootstrap: multinomial weights (identical to resampling rows), each refit warm-started from the
full-data optimum and up to two other distinct optima the multi-start found within 20% of it,
the best kept: a refit is a few L-BFGS iterations, so 1,000 resamples cost seconds, not 1,000
grid searches. Resamples that end at a bound are counted (``n_at_bound``).

The objective, the fit :class:`Problem` and the profile grid (step 1) are
:mod:`embtune.scaling.fit_objective`; the multi-start, trust checks and bootstrap are here.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from scipy.optimize import minimize

from embtune.scaling.fit_objective import (
    S_SPREAD_MIN,
    Problem,
    distinct_starts,
    fixed_parameters,
    objective,
    profile_grid,
)
from embtune.scaling.fit_profile import exponent_intervals, profile_issues
from embtune.scaling.laws import B_S_GRID, EXPONENT_GRID, Features, Law, make_features

NEAR_BOUND = 1e-3        # fraction of a parameter's bound interval that counts as "at the bound"
VANISHING_TERM = 1e-4    # a positive term below this share of every fitted loss: coefficient ≈ 0
NEAR_SE = 2.0            # a bound within this many standard errors: "near a bound"
SAME_OPTIMUM_RTOL = 1e-4  # starts whose objective is within this of the best reached the best
N_STARTS = 8             # L-BFGS starts from distinct grid basins
BOOT_STARTS = 3          # bootstrap refits start from the best optimum + up to 2 other optima
ROWS_PER_PARAMETER = 2   # fewer training rows per free parameter: the residuals have fewer
                         # degrees of freedom than the law has parameters, so the standard errors,
                         # bootstrap and held-out test say nothing (the modified law's 6-8 on ~10 rows)
BOOT_AT_BOUND = 0.025    # share of resamples at a bound above which the 95% interval reaches it
RIVAL_OPTIMUM = 0.2      # ... within 20% of the best objective: resampling moves the objective
                         # by ~1/√rows, so such an optimum can be a resample's best

SEARCH = {  # recorded in fits.json settings: how every fit was searched and judged
    "method": "profile grid over the exponents (coefficients solved exactly), then L-BFGS-B "
              "from the best distinct grid points; best objective wins",
    "exponent_grid": [EXPONENT_GRID[0], EXPONENT_GRID[-1], len(EXPONENT_GRID)],
    "b_s_grid": [B_S_GRID[0], B_S_GRID[-1], len(B_S_GRID)],
    "n_starts": N_STARTS, "bootstrap_starts": BOOT_STARTS, "at_bound": NEAR_BOUND, "near_bound_se": NEAR_SE,
    "exponent_intervals": "least-squares profile on ln L, F-test at 95% (Bates & Watts 1988, 6.1)",
    "vanishing_term": VANISHING_TERM, "rows_per_parameter": ROWS_PER_PARAMETER, "s_spread_min": S_SPREAD_MIN, "bootstrap_at_bound": BOOT_AT_BOUND,
}


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS to one thread while fitting: the matrices are tiny (rows × 8), so threads only
    add overhead, and on a busy 2-core node oversubscription made fits 10-30x slower."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed-up
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


# ---- 2. L-BFGS ---------------------------------------------------------------------------------


def _bounds(prob: Problem) -> list[tuple[float | None, float | None]]:
    return [prob.law.bounds[i] for i in prob.free]


def run_lbfgs(prob: Problem, start: np.ndarray, w: np.ndarray, maxiter: int = 1000) -> Any:
    with np.errstate(all="ignore"):
        return minimize(objective, start, args=(prob, w), jac=True, method="L-BFGS-B",
                        bounds=_bounds(prob), options={"maxiter": maxiter, "ftol": 1e-13, "gtol": 1e-9})


def projected_grad_norm(res: Any, prob: Problem) -> float:
    """Gradient norm ignoring components that push against an active bound."""
    g = np.array(res.jac, float)
    for j, (lo, hi) in enumerate(_bounds(prob)):
        if lo is not None and res.x[j] <= lo + 1e-12 and g[j] > 0:
            g[j] = 0.0
        if hi is not None and res.x[j] >= hi - 1e-12 and g[j] < 0:
            g[j] = 0.0
    return float(np.linalg.norm(g))


# ---- 3. trust ----------------------------------------------------------------------------------


def bound_issues(prob: Problem, theta: np.ndarray) -> dict[str, str]:
    """{paper's parameter name: why it is at a bound} for the free parameters of ``theta``: a box
    bound, or (for a coefficient kept > 0 through its log) a term that vanishes, i.e. bound 0."""
    law, out = prob.law, {}
    for i in prob.free:
        lo, hi = law.bounds[i]
        width = (hi - lo) if lo is not None and hi is not None else max(1.0, abs(lo or hi or 0.0))
        name = law.raw_names[i]
        if lo is not None and theta[i] <= lo + NEAR_BOUND * width:
            out[name] = f"{name}: {law.params[i]} = {theta[i]:.3g} at its lower bound {lo:g}"
        elif hi is not None and theta[i] >= hi - NEAR_BOUND * width:
            out[name] = f"{name}: {law.params[i]} = {theta[i]:.3g} at its upper bound {hi:g}"
    share = term_shares(law, theta, prob.x)
    for j in range(law.n_coef):
        name = law.raw_names[j]
        if law.log_coef[j] and j in prob.free and name not in out and share[j] < VANISHING_TERM:
            out[name] = f"{name}: its term is < {VANISHING_TERM:g} of every fitted loss, i.e. at its bound 0"
    return out


def standard_errors(prob: Problem, theta: np.ndarray) -> np.ndarray:
    """Gauss-Newton standard errors of the free internal parameters: s²·(JᵀJ)⁻¹ with J the
    Jacobian of ln L̂ and s² the residual variance. Columns are scaled to unit norm and inverted
    through the eigenvalues, floored at 1e-12: a direction the data do not constrain gets a huge
    error (a pseudo-inverse would silently give it none)."""
    logp, jac = prob.law.log_and_jacobian(theta, prob.x)
    j = jac[:, prob.free]
    r = prob.y - logp
    s2 = float(r @ r) / max(len(r) - len(prob.free), 1)
    norm = np.sqrt((j * j).sum(axis=0))
    norm = np.where(norm > 0, norm, 1e-300)
    lam, vec = np.linalg.eigh((j / norm).T @ (j / norm))
    var = (vec ** 2 / np.maximum(lam, 1e-12)).sum(axis=1) * s2 / norm ** 2
    return np.sqrt(var)


def near_bound_issues(prob: Problem, theta: np.ndarray, se: np.ndarray, skip: set[str]) -> dict[str, str]:
    """{name: why} for free parameters whose bound lies within ``NEAR_SE`` standard errors: the
    data cannot tell the estimate from the bound value (e.g. α = 0.01 ± 0.03 is 'no N term')."""
    law, out = prob.law, {}
    for k, i in enumerate(prob.free):
        lo, hi = law.bounds[i]
        name = law.raw_names[i]
        if name in skip:
            continue
        for side, bound, gap in (("lower", lo, theta[i] - (lo or 0.0)), ("upper", hi, (hi or 0.0) - theta[i])):
            if bound is not None and gap <= NEAR_SE * se[k]:
                out[name] = (f"{name}: {law.params[i]} = {theta[i]:.3g} ± {se[k]:.2g} (1 s.e.), within "
                             f"{NEAR_SE:g} standard errors of its {side} bound {bound:g}")
                break
    return out


def term_shares(law: Law, theta: np.ndarray, x: Features) -> np.ndarray:
    """max over rows of |c_j·φ_j| / L for each coefficient j."""
    terms = law.terms(theta, x)
    with np.errstate(all="ignore"):
        return np.nan_to_num(np.max(np.abs(terms) / np.abs(terms.sum(axis=1, keepdims=True)), axis=0))


def unidentified(prob: Problem, theta: np.ndarray) -> dict[str, str]:
    """{exponent: why} for free exponents whose terms all vanish (the whole N term, D term or S
    term below ``VANISHING_TERM`` of every loss): the data say nothing about them, wherever they are."""
    law, out = prob.law, {}
    terms = law.terms(theta, prob.x)
    total = np.abs(terms.sum(axis=1))
    for k, group in enumerate(law.exponent_terms):
        i = law.n_coef + k
        if i in prob.fixed:
            continue
        with np.errstate(all="ignore"):
            share = float(np.nan_to_num(np.max(np.abs(terms[:, list(group)].sum(axis=1)) / total)))
        if share < VANISHING_TERM:
            out[law.raw_names[i]] = (f"{law.raw_names[i]}: the terms it shapes are < {VANISHING_TERM:g} "
                                     "of every fitted loss, so it is not identified")
    return out


def judge(prob: Problem, res: Any) -> dict[str, Any]:
    """The trust fields of a fit record (module docstring, point 3). E at (or near) its bound 0
    is reported, but is a finding, not a failed fit (``FLOOR_FINDING``). The exponents are
    judged by their profile intervals (:mod:`embtune.scaling.fit_profile`), the other parameters
    by their Gauss-Newton errors."""
    theta = prob.full(res.x)
    at_bound, loose = bound_issues(prob, theta), unidentified(prob, theta)
    se = standard_errors(prob, theta)
    intervals = exponent_intervals(prob, theta, set(at_bound) | set(loose), NEAR_BOUND) if res.success else {}
    near = near_bound_issues(prob, theta, se, set(at_bound) | set(intervals))
    near.update(profile_issues(intervals))
    floor = _floor_at_zero(prob.law, set(at_bound) | set(near))
    issues = ([f"at bound: {v}" for k, v in at_bound.items() if k not in floor]
              + [f"near bound: {v}" for k, v in near.items() if k not in floor]
              + [f"unidentified: {v}" for v in loose.values()])
    if not res.success:
        issues.append(f"optimizer: {res.message}")
    out = {"converged": bool(res.success and not set(at_bound) - floor),
           "trustworthy": bool(res.success and not issues and np.isfinite(res.fun)),
           "at_bound": sorted(at_bound), "near_bound": sorted(near), "unidentified": sorted(loose),
           "trust_issues": issues, "findings": [FLOOR_FINDING] if floor else [],
           "stderr": {prob.law.params[i]: float(e) for i, e in zip(prob.free, se)}}
    if intervals:
        out["profile_ci95"] = {name: iv["ci95"] for name, iv in intervals.items()}
    out["identified"] = identified(prob.law, out, set(prob.law.raw_names[i] for i in prob.fixed))
    return out


# Paper 1 App. E's laws carry a floor E >= 0. A fit that drives E to 0 says the loss kept falling
# as a power law over every fitted (N, D): the data show no floor, which is a result about the
# range, not a failure of the optimizer; the other parameters are still judged as usual.
FLOOR_FINDING = "E at its bound 0: no loss floor within the fitted range: do not extrapolate past it"


def _floor_at_zero(law: Law, bounded: set[str]) -> set[str]:
    """{'E'} when the floor is a positive coefficient at or near its bound 0, else empty."""
    return {"E"} if "E" in bounded and law.log_coef[law.raw_names.index("E")] else set()


def identified(law: Law, fit: dict[str, Any], fixed: set[str]) -> dict[str, bool]:
    """{parameter: identified}: a parameter is identified only when its 95% interval stays off its
    bounds (not at a bound, not within 2 s.e. of one, not at a bound in > 2.5% of the bootstrap
    resamples), its terms do not vanish, and the data, not a pin, set it."""
    off = set(fit["at_bound"]) | set(fit["near_bound"]) | set(fit["unidentified"]) | fixed
    return {name: name not in off for name in law.raw_names}


def fit_problem(prob: Problem, n_starts: int = N_STARTS) -> tuple[dict[str, Any], list[np.ndarray]]:
    """Profile grid, L-BFGS-B from the ``n_starts`` best distinct grid points; the best optimum
    wins. Returns the fit record and the distinct optima found (best first, free parameters)."""
    w = np.ones_like(prob.y)
    thetas, values, idx = profile_grid(prob)
    starts = distinct_starts(values, idx, n_starts)
    results = sorted((run_lbfgs(prob, thetas[i][prob.free], w) for i in starts), key=lambda r: r.fun)
    best = results[0]
    theta = prob.full(best.x)
    trust = judge(prob, best)
    out = {
        "law": prob.law.formula,
        "params": prob.law.to_raw(theta, prob.x),
        **{k: v for k, v in trust.items() if k != "stderr"},
        "objective": float(best.fun),
        "multistart": {"grid_points": int(len(values)), "n_starts": len(starts),
                       "n_at_best": int(sum(r.fun <= best.fun * (1 + SAME_OPTIMUM_RTOL) + 1e-12 for r in results)),
                       "objectives": [float(r.fun) for r in results]},
        "optimizer_success": bool(best.success),
        "status": int(best.status),
        "message": str(best.message),
        "iterations": int(best.nit),
        "grad_norm": projected_grad_norm(best, prob),
        "internal": {"names": list(prob.law.params), "theta": theta.tolist(), "stderr": trust["stderr"],
                     "ln_n0": prob.x.ln_n0, "ln_d0": prob.x.ln_d0},
        "fixed": {prob.law.raw_names[i]: v for i, v in prob.fixed.items()},
        "n_train": int(len(prob.y)),
        "train_rmse_log": float(np.sqrt(np.mean((prob.y - prob.law.log_predict(theta, prob.x)) ** 2))),
    }
    optima = [best.x]
    for r in results[1:]:
        if (best.fun * (1 + SAME_OPTIMUM_RTOL) < r.fun <= best.fun * (1 + RIVAL_OPTIMUM)
                and all(np.max(np.abs(r.x - o)) > 1e-3 for o in optima)):
            optima.append(r.x)
    return out, optima


def bootstrap(prob: Problem, starts: list[np.ndarray], n: int, seed: int) -> dict[str, Any]:
    """Percentile intervals of the raw parameters over ``n`` multinomial-weight resamples, each
    refitted from every start in ``starts`` (free parameters), the best kept."""
    rng = np.random.default_rng(seed)
    rows, failed, bounded = [], 0, 0
    per_name: dict[str, int] = {}
    for _ in range(n):
        w = rng.multinomial(len(prob.y), np.full(len(prob.y), 1.0 / len(prob.y))).astype(float)
        res = min((run_lbfgs(prob, s, w, maxiter=300) for s in starts), key=lambda r: r.fun)
        theta = prob.full(res.x)
        failed += int(not res.success and res.status != 1)
        hit = bound_issues(prob, theta)
        bounded += int(bool(hit))
        for name in hit:
            per_name[name] = per_name.get(name, 0) + 1
        raw = prob.law.to_raw(theta, prob.x)
        rows.append(list(raw.values()))
    names = list(prob.law.to_raw(prob.full(starts[0]), prob.x))
    lo, med, hi = np.percentile(np.asarray(rows), [2.5, 50, 97.5], axis=0)
    return {"n": n, "seed": seed, "starts": len(starts), "n_not_converged": failed, "n_at_bound": bounded,
            "at_bound_counts": dict(sorted(per_name.items())),
            "ci95": {k: [float(lo[j]), float(hi[j])] for j, k in enumerate(names)},
            "median": {k: float(med[j]) for j, k in enumerate(names)}}


def holdout_metrics(law: Law, params: dict[str, float], N: np.ndarray, D: np.ndarray,
                    S: np.ndarray, loss: np.ndarray) -> dict[str, float]:
    """Prediction error on rows the fit never saw (log residual RMSE, mean |relative error|)."""
    pred = law.loss(params, N, D, S)
    with np.errstate(all="ignore"):
        r = np.log(loss) - np.log(pred)
    return {"n": int(len(loss)), "rmse_log": float(np.sqrt(np.mean(r ** 2))),
            "mean_abs_rel_err": float(np.mean(np.abs(pred / loss - 1.0))),
            "max_abs_rel_err": float(np.max(np.abs(pred / loss - 1.0)))}


def fit_law(law: Law, N: np.ndarray, D: np.ndarray, S: np.ndarray, loss: np.ndarray, *,
            delta: float = 1e-3, holdout: np.ndarray | None = None, n_bootstrap: int = 0,
            seed: int = 0, n_starts: int = N_STARTS, boot_starts: int = BOOT_STARTS) -> dict[str, Any]:
    """Fit ``law`` on the rows not in ``holdout``; report held-out error and bootstrap CIs.

    Returns ``{"skipped": reason}`` when there are too few rows to identify the law."""
    N, D, S, loss = (np.asarray(v, float) for v in (N, D, S, loss))
    hold = np.zeros(len(loss), bool) if holdout is None else np.asarray(holdout, bool)
    train = ~hold
    x = make_features(N[train], D[train], S[train])
    fixed, why = fixed_parameters(law, x)
    n_free = len(law.params) - len(fixed)
    if train.sum() < ROWS_PER_PARAMETER * n_free:
        return {"skipped": f"more free parameters than the data carry: {int(train.sum())} training rows "
                           f"< {ROWS_PER_PARAMETER} x {n_free} free parameters"}
    if np.ptp(x.n) == 0 or np.ptp(x.d) == 0:
        return {"skipped": "no spread in N or in D among the training rows"}
    prob = Problem(law, x, np.log(loss[train]), delta, fixed)
    with single_threaded_blas():
        out, optima = fit_problem(prob, n_starts)
        if why:
            out["fixed_reason"] = why
        if x.n_s_clipped:
            out["n_s_clipped"] = x.n_s_clipped     # rows with S outside [0, 1], treated as 0 or 1
        if hold.any():
            out["holdout"] = holdout_metrics(law, out["params"], N[hold], D[hold], S[hold], loss[hold])
        if n_bootstrap > 0:
            out["bootstrap"] = bootstrap(prob, optima[:boot_starts], n_bootstrap, seed)
            bootstrap_trust(out)
    return out


def bootstrap_trust(fit: dict[str, Any]) -> None:
    """A parameter that ends at a bound in more than 2.5% of the resamples has a 95% percentile
    interval that reaches the bound: near a bound, by the bootstrap's own measure."""
    boot = fit["bootstrap"]
    for name, count in boot["at_bound_counts"].items():
        if count > BOOT_AT_BOUND * boot["n"] and name not in fit["at_bound"] + fit["near_bound"]:
            fit["near_bound"] = sorted(fit["near_bound"] + [name])
            if "identified" in fit:
                fit["identified"][name] = False
            if name == "E":      # only a positive floor has a bound to reach: a finding (FLOOR_FINDING)
                if FLOOR_FINDING not in fit.setdefault("findings", []):
                    fit["findings"].append(FLOOR_FINDING)
                continue
            fit["trust_issues"].append(f"near bound: {name} ends at a bound in {count} of {boot['n']} "
                                       "bootstrap resamples (its 95% interval reaches the bound)")
            fit["trustworthy"] = False
