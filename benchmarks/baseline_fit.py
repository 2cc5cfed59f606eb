"""BASELINE for benchmarks/bench_fit.py: the scaling-law fitter as it was before issue 12, kept
verbatim (laws.py, then fit.py, of commit ef84445; module docstrings dropped, imports merged).

It searched a fixed grid of 3-4 starting values per internal parameter (the ``grid`` field of
each law), ran L-BFGS-B from the 6 best grid points and reported ``converged`` from scipy alone,
even with a parameter at its bound. bench_fit.py times it against the current fitter on the same
table in the same process and compares what both found. Not imported by the package.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.optimize import minimize

TINY = 1e-300


@dataclass(frozen=True)
class Features:
    """Centred log features of the fitted rows (see module docstring)."""

    n: np.ndarray       # ln(N / N0)
    d: np.ndarray       # ln(D / D0)
    s1: np.ndarray      # 1 − S, clipped to [0, 1]: high-rank LoRA on a tiny model has S > 1,
                        # where (1 − S)^b_s is undefined; it is treated as S = 1 (no penalty)
    ln_n0: float
    ln_d0: float

    def column(self) -> "Features":
        """The same features as (n, 1) columns, for broadcasting against k parameter vectors."""
        return Features(self.n[:, None], self.d[:, None], self.s1[:, None], self.ln_n0, self.ln_d0)


def make_features(N: np.ndarray, D: np.ndarray, S: np.ndarray | None = None,
                  ln_n0: float | None = None, ln_d0: float | None = None) -> Features:
    """Centre ln N and ln D on their means (or on given references)."""
    ln_n, ln_d = np.log(np.asarray(N, float)), np.log(np.asarray(D, float))
    s = np.ones_like(ln_n) if S is None else np.asarray(S, float)
    n0 = float(ln_n.mean()) if ln_n0 is None else ln_n0
    d0 = float(ln_d.mean()) if ln_d0 is None else ln_d0
    return Features(ln_n - n0, ln_d - d0, np.clip(1.0 - s, 0.0, 1.0), n0, d0)


# ---- Chinchilla, internal theta = (a, b, e, alpha, beta) ------------------------------------

CHINCHILLA_PARAMS = ("a", "b", "e", "alpha", "beta")


def chinchilla_log_terms(theta: Any, x: Features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, e, alpha, beta = theta
    return a - alpha * x.n, b - beta * x.d, e + 0.0 * x.n


def chinchilla_log_predict(theta: Any, x: Features) -> np.ndarray:
    """log L = LSE(a − α·n, b − β·d, e)."""
    t1, t2, t3 = chinchilla_log_terms(theta, x)
    m = np.maximum(np.maximum(t1, t2), t3)
    return m + np.log(np.exp(t1 - m) + np.exp(t2 - m) + np.exp(t3 - m))


def chinchilla_log_and_jacobian(theta: Any, x: Features) -> tuple[np.ndarray, np.ndarray]:
    """(log L, d log L / d theta of shape (rows, 5)): softmax weights of the three LSE terms."""
    t = np.stack(chinchilla_log_terms(theta, x), axis=1)
    m = t.max(axis=1, keepdims=True)
    w = np.exp(t - m)
    total = w.sum(axis=1, keepdims=True)
    w /= total
    logp = (m + np.log(total))[:, 0]
    return logp, np.stack([w[:, 0], w[:, 1], w[:, 2], -x.n * w[:, 0], -x.d * w[:, 1]], axis=1)


def chinchilla_to_raw(theta: Any, x: Features) -> dict[str, float]:
    """Internal (centred, log) -> the paper's E, A, B, α, β on raw N and D."""
    a, b, e, alpha, beta = (float(v) for v in theta)
    return {"E": float(np.exp(e)), "A": float(np.exp(a + alpha * x.ln_n0)),
            "B": float(np.exp(b + beta * x.ln_d0)), "alpha": alpha, "beta": beta}


def chinchilla_from_raw(p: dict[str, float], x: Features) -> np.ndarray:
    return np.array([np.log(p["A"]) - p["alpha"] * x.ln_n0, np.log(p["B"]) - p["beta"] * x.ln_d0,
                     np.log(p["E"]), p["alpha"], p["beta"]])


def chinchilla_loss(p: dict[str, float], N: Any, D: Any, S: Any = None) -> np.ndarray:
    """L = E + A/N^α + B/D^β in raw units (S is ignored; accepted for a uniform signature)."""
    N, D = np.asarray(N, float), np.asarray(D, float)
    return p["E"] + p["A"] / N ** p["alpha"] + p["B"] / D ** p["beta"]


# ---- Modified law, internal theta = (e, a_d, b_d, alpha, a_s, b_s, c_s, beta) ---------------

MODIFIED_PARAMS = ("e", "a_d", "b_d", "alpha", "a_s", "b_s", "c_s", "beta")


def _s_pow(s1: np.ndarray, b_s: Any) -> tuple[np.ndarray, np.ndarray]:
    """(1−S)^b_s and its derivative in b_s, with 0^b = 0 (full fine-tuning, S = 1)."""
    pos = s1 > 0
    safe = np.where(pos, s1, 1.0)
    powv = np.where(pos, safe ** b_s, 0.0)
    return powv, np.where(pos, powv * np.log(safe), 0.0)


def modified_value(theta: Any, x: Features) -> np.ndarray:
    e, a_d, b_d, alpha, a_s, b_s, c_s, beta = theta
    powv, _ = _s_pow(x.s1, b_s)
    return np.exp(e) + (a_d * x.d + b_d) * np.exp(-alpha * x.n) + (a_s * powv + c_s) * np.exp(-beta * x.d)


def modified_log_predict(theta: Any, x: Features) -> np.ndarray:
    """log of the modified law (clamped at a tiny positive value: the law is not sign-constrained)."""
    return np.log(np.maximum(modified_value(theta, x), TINY))


def modified_log_and_jacobian(theta: Any, x: Features) -> tuple[np.ndarray, np.ndarray]:
    """(log L, d log L / d theta of shape (rows, 8))."""
    e, a_d, b_d, alpha, a_s, b_s, c_s, beta = theta
    u, v = np.exp(-alpha * x.n), np.exp(-beta * x.d)
    powv, dpow = _s_pow(x.s1, b_s)
    num_n, num_d = a_d * x.d + b_d, a_s * powv + c_s
    value = np.maximum(np.exp(e) + num_n * u + num_d * v, TINY)
    cols = [np.exp(e) + 0 * x.n, x.d * u, u, -x.n * num_n * u, powv * v, a_s * dpow * v, v, -x.d * num_d * v]
    return np.log(value), np.stack(cols, axis=1) / value[:, None]


def modified_to_raw(theta: Any, x: Features) -> dict[str, float]:
    """Exact conversion: (a_d·(lnD − lnD0) + b_d)·N0^α/N^α etc. -> the paper's coefficients."""
    e, a_d, b_d, alpha, a_s, b_s, c_s, beta = (float(v) for v in theta)
    kn, kd = np.exp(alpha * x.ln_n0), np.exp(beta * x.ln_d0)
    return {"E": float(np.exp(e)), "a_d": float(a_d * kn), "b_d": float((b_d - a_d * x.ln_d0) * kn),
            "alpha": alpha, "a_s": float(a_s * kd), "b_s": b_s, "c_s": float(c_s * kd), "beta": beta}


def modified_from_raw(p: dict[str, float], x: Features) -> np.ndarray:
    kn, kd = np.exp(p["alpha"] * x.ln_n0), np.exp(p["beta"] * x.ln_d0)
    a_d = p["a_d"] / kn
    return np.array([np.log(p["E"]), a_d, p["b_d"] / kn + a_d * x.ln_d0, p["alpha"],
                     p["a_s"] / kd, p["b_s"], p["c_s"] / kd, p["beta"]])


def modified_loss(p: dict[str, float], N: Any, D: Any, S: Any) -> np.ndarray:
    """L = E + (a_d·ln D + b_d)/N^α + (a_s·(1−S)^b_s + c_s)/D^β in raw units."""
    N, D = np.asarray(N, float), np.asarray(D, float)
    s1 = np.clip(1.0 - np.asarray(S, float), 0.0, 1.0)
    powv, _ = _s_pow(s1, p["b_s"])
    return (p["E"] + (p["a_d"] * np.log(D) + p["b_d"]) / N ** p["alpha"]
            + (p["a_s"] * powv + p["c_s"]) / D ** p["beta"])


@dataclass(frozen=True)
class Law:
    """Everything the generic fitter needs about one law."""

    name: str
    params: tuple[str, ...]
    log_predict: Callable[[Any, Features], np.ndarray]
    log_and_jacobian: Callable[[Any, Features], tuple[np.ndarray, np.ndarray]]
    to_raw: Callable[[Any, Features], dict[str, float]]
    from_raw: Callable[[dict[str, float], Features], np.ndarray]
    loss: Callable[..., np.ndarray]
    grid: tuple[tuple[float, ...], ...]         # starting values per internal parameter
    bounds: tuple[tuple[float | None, float | None], ...]


CHINCHILLA = Law(
    "chinchilla", CHINCHILLA_PARAMS, chinchilla_log_predict, chinchilla_log_and_jacobian,
    chinchilla_to_raw, chinchilla_from_raw, chinchilla_loss,
    grid=((-4.0, -2.0, -1.0, 0.0), (-4.0, -2.0, -1.0, 0.0), (-3.0, -1.5, -0.5, 0.5),
          (0.05, 0.2, 0.5, 1.0), (0.05, 0.2, 0.5, 1.0)),
    # ln E >= -15 (E >= 3e-7, i.e. "zero"): an unbounded e runs to -700 where exp() underflows
    # into subnormal floats, which are ~20x slower and change nothing in the fit.
    bounds=((-30.0, 30.0), (-30.0, 30.0), (-15.0, 5.0), (0.0, 3.0), (0.0, 3.0)),
)

MODIFIED = Law(
    "modified", MODIFIED_PARAMS, modified_log_predict, modified_log_and_jacobian,
    modified_to_raw, modified_from_raw, modified_loss,
    grid=((-3.0, -1.5, -0.5), (-0.05, 0.0, 0.05), (0.05, 0.3, 1.0), (0.1, 0.4, 0.8),
          (0.0, 0.3, 1.0), (0.5, 1.0, 2.0), (0.05, 0.3, 1.0), (0.1, 0.4, 0.8)),
    bounds=((-15.0, 5.0), (None, None), (None, None), (0.0, 3.0),
            (None, None), (0.01, 10.0), (None, None), (0.0, 3.0)),
)

LAWS = {law.name: law for law in (CHINCHILLA, MODIFIED)}


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS to one thread while fitting: the matrices are tiny (rows × 8), so threads only
    add overhead, and on a busy 2-core node oversubscription made fits 10-30x slower."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed-up
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


@dataclass(frozen=True)
class Problem:
    """One fitting problem: a law, features, observed log losses, and fixed parameters."""

    law: Law
    x: Features
    y: np.ndarray                  # observed log loss
    delta: float
    fixed: dict[int, float]        # internal parameter index -> fixed value

    @property
    def free(self) -> list[int]:
        return [i for i in range(len(self.law.params)) if i not in self.fixed]

    def full(self, theta_free: np.ndarray) -> np.ndarray:
        theta = np.empty(len(self.law.params))
        theta[self.free] = theta_free
        for i, v in self.fixed.items():
            theta[i] = v
        return theta


def fixed_parameters(law: Law, x: Features) -> dict[int, float]:
    """Parameters the data cannot identify, pinned: with no spread in 1−S (full or bias tuning
    alone) a_s·(1−S)^b_s + c_s is one constant, so a_s = 0 and b_s = 1 and only c_s is fitted."""
    if law.name == "modified" and np.ptp(x.s1) < 1e-9:
        return {law.params.index("a_s"): 0.0, law.params.index("b_s"): 1.0}
    return {}


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def objective(theta_free: np.ndarray, prob: Problem, w: np.ndarray) -> tuple[float, np.ndarray]:
    """Weighted mean Huber loss / δ and its gradient in the free parameters."""
    logp, jac = prob.law.log_and_jacobian(prob.full(theta_free), prob.x)
    r = prob.y - logp
    scale = 1.0 / (prob.delta * w.sum())
    value = float(np.sum(w * huber(r, prob.delta)) * scale)
    psi = np.clip(r, -prob.delta, prob.delta) * w
    grad = -(psi @ jac[:, prob.free]) * scale
    if not np.isfinite(value):
        return 1e300, np.zeros_like(theta_free)
    return value, grad


def grid_values(prob: Problem, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """All grid starting points (free parameters only) and their objective values, vectorised."""
    axes = [np.asarray(prob.law.grid[i], float) for i in prob.free]
    points = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    xc = prob.x.column()
    values = np.empty(len(points))
    for lo in range(0, len(points), chunk):
        block = points[lo:lo + chunk]
        theta = [None] * len(prob.law.params)
        for j, i in enumerate(prob.free):
            theta[i] = block[:, j]
        for i, v in prob.fixed.items():
            theta[i] = np.full(len(block), v)
        with np.errstate(all="ignore"):
            r = prob.y[:, None] - prob.law.log_predict(theta, xc)
        values[lo:lo + chunk] = np.nan_to_num(huber(r, prob.delta).mean(axis=0), nan=np.inf)
    return points, values


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


def fit_problem(prob: Problem, n_starts: int = 6) -> dict[str, Any]:
    """Grid search, then L-BFGS-B from the best ``n_starts`` grid points; the best optimum wins."""
    w = np.ones_like(prob.y)
    points, values = grid_values(prob)
    best = None
    for idx in np.argsort(values)[:n_starts]:
        res = run_lbfgs(prob, points[idx], w)
        if best is None or res.fun < best.fun:
            best = res
    theta = prob.full(best.x)
    resid = prob.y - prob.law.log_predict(theta, prob.x)
    at_bounds = [prob.law.params[i] for i, (lo, hi) in zip(prob.free, _bounds(prob))
                 if (lo is not None and theta[i] <= lo + 1e-4 * max(1.0, abs(lo)))
                 or (hi is not None and theta[i] >= hi - 1e-4 * max(1.0, abs(hi)))]
    return {
        "at_bounds": at_bounds,   # internal parameters stuck at a bound: the optimum is not interior
        "params": prob.law.to_raw(theta, prob.x),
        "internal": {"theta": theta.tolist(), "ln_n0": prob.x.ln_n0, "ln_d0": prob.x.ln_d0},
        "fixed": {prob.law.params[i]: v for i, v in prob.fixed.items()},
        "objective": float(best.fun),
        "converged": bool(best.success),
        "status": int(best.status),
        "message": str(best.message),
        "iterations": int(best.nit),
        "grad_norm": projected_grad_norm(best, prob),
        "grid_size": int(len(points)),
        "n_starts": int(min(n_starts, len(points))),
        "n_train": int(len(prob.y)),
        "train_rmse_log": float(np.sqrt(np.mean(resid ** 2))),
    }


def bootstrap(prob: Problem, theta: np.ndarray, n: int, seed: int) -> dict[str, Any]:
    """Percentile intervals of the raw parameters over ``n`` multinomial-weight resamples."""
    rng = np.random.default_rng(seed)
    start = theta[prob.free]
    rows, failed = [], 0
    for _ in range(n):
        w = rng.multinomial(len(prob.y), np.full(len(prob.y), 1.0 / len(prob.y))).astype(float)
        res = run_lbfgs(prob, start, w, maxiter=300)
        if not res.success and res.status != 1:
            failed += 1
        raw = prob.law.to_raw(prob.full(res.x), prob.x)
        rows.append([raw[k] for k in raw])
    names = list(prob.law.to_raw(theta, prob.x))
    arr = np.asarray(rows)
    lo, med, hi = np.percentile(arr, [2.5, 50, 97.5], axis=0)
    return {"n": n, "seed": seed, "n_not_converged": failed,
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
            seed: int = 0, n_starts: int = 6) -> dict[str, Any]:
    """Fit ``law`` on the rows not in ``holdout``; report held-out error and bootstrap CIs.

    Returns ``{"skipped": reason}`` when there are too few rows to identify the law."""
    N, D, S, loss = (np.asarray(v, float) for v in (N, D, S, loss))
    hold = np.zeros(len(loss), bool) if holdout is None else np.asarray(holdout, bool)
    train = ~hold
    x = make_features(N[train], D[train], S[train])
    fixed = fixed_parameters(law, x)
    n_free = len(law.params) - len(fixed)
    if train.sum() < n_free + 2:
        return {"skipped": f"{int(train.sum())} training rows < {n_free} free parameters + 2"}
    if np.ptp(x.n) == 0 or np.ptp(x.d) == 0:
        return {"skipped": "no spread in N or in D among the training rows"}
    prob = Problem(law, x, np.log(loss[train]), delta, fixed)
    with single_threaded_blas():
        out = fit_problem(prob, n_starts)
        theta = np.asarray(out["internal"]["theta"])
        if hold.any():
            out["holdout"] = holdout_metrics(law, out["params"], N[hold], D[hold], S[hold], loss[hold])
        if n_bootstrap > 0:
            out["bootstrap"] = bootstrap(prob, theta, n_bootstrap, seed)
    return out
