"""Profile 95% intervals of a law's exponents: whether the data tell an exponent from its bounds.

Why not the Gauss-Newton standard errors alone: they linearise the law at the optimum, and a power
law's exponent enters the loss far from linearly. On the demo's full fine-tuning fit the
linearised α = 0.27 ± 0.83 reaches 0, yet holding α at 0.05 or at 3 and refitting every other
parameter fits the rows measurably worse (docs/fidelity.md#P1-FIT-INTERVALS): the linear
approximation, not the data, puts 0 inside. A profile interval (Bates & Watts 1988, *Nonlinear
Regression Analysis*, §6.1) asks the data directly: hold the exponent at a value, refit the rest
by least squares on log L, and keep the value while the fit is not significantly worse than the
best one (F-test at 95%). It is asymmetric where the law is, and it reaches a bound exactly when
the data cannot tell the exponent from that bound, which is what "identified" means
(:func:`embtune.scaling.fit.identified`).

Least squares on the log residuals, as the Gauss-Newton errors use: the Huber objective with the
paper's δ = 1e-3 is nearly an absolute-deviation fit, whose profile has no standard threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import f as f_dist

from embtune.scaling.fit_objective import Problem, profile_grid

LEVEL = 0.95
STEP = 0.6          # outward walk: each value this factor (or its inverse) from the previous one
BISECTIONS = 6      # refine a crossing to within STEP^(1/2^6), ~0.8% of the value
GRID_STARTS = 2     # the first refit of a walk also starts from the best exponent-grid points


def _box(prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    bounds = [prob.law.bounds[i] for i in prob.free]
    return (np.array([-np.inf if lo is None else lo for lo, _ in bounds]),
            np.array([np.inf if hi is None else hi for _, hi in bounds]))


def least_squares_fit(prob: Problem, start: np.ndarray) -> tuple[float, np.ndarray]:
    """(residual sum of squares of log L, full θ) of the least-squares fit of ``prob``'s free
    parameters from ``start`` (a full θ), within their bounds."""
    lo, hi = _box(prob)
    span = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
    x0 = np.clip(start[prob.free], lo + 1e-9 * span, hi - 1e-9 * span)

    def resid(t: np.ndarray) -> np.ndarray:
        r = prob.law.log_predict(prob.full(t), prob.x) - prob.y
        return np.clip(np.nan_to_num(r, nan=1e3), -1e3, 1e3)

    def jac(t: np.ndarray) -> np.ndarray:
        j = prob.law.log_and_jacobian(prob.full(t), prob.x)[1][:, prob.free]
        return np.clip(np.nan_to_num(j, nan=0.0), -1e6, 1e6)

    with np.errstate(all="ignore"):
        res = least_squares(resid, x0, jac=jac, bounds=(lo, hi), method="trf", x_scale="jac",
                            xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=300)
    return float(2.0 * res.cost), prob.full(res.x)


class Profile:
    """The least-squares profile of one exponent: RSS(v) = min over the other parameters."""

    def __init__(self, prob: Problem, index: int, theta: np.ndarray) -> None:
        self.prob, self.index = prob, index
        self.last = theta            # continuation: each refit starts where the previous ended,
        self.seed_from_grid = True   # and the first of a walk also from the exponent grid's best

    def __call__(self, value: float) -> float:
        held = Problem(self.prob.law, self.prob.x, self.prob.y, self.prob.delta,
                       {**self.prob.fixed, self.index: float(value)})
        starts = [np.where(np.arange(len(self.last)) == self.index, value, self.last)]
        if self.seed_from_grid and len(held.free) > 0:
            thetas, values, _ = profile_grid(held)
            starts += [thetas[i] for i in np.argsort(values)[:GRID_STARTS] if np.isfinite(values[i])]
            self.seed_from_grid = False
        fits = [least_squares_fit(held, s) for s in starts]
        rss, self.last = min(fits, key=lambda f: f[0])
        return rss


def _walk(profile: Profile, start: float, bound: float, limit: float) -> tuple[float, bool]:
    """The crossing of ``limit`` between ``start`` (inside) and ``bound``; (bound, True) when the
    profile stays inside all the way, i.e. the interval reaches the bound."""
    inside, value = start, start
    while True:
        if bound > start:
            value = min(bound, value / STEP if value > 0 else 1e-3)
        else:
            value = bound if value * STEP <= bound + 1e-3 * (start - bound) else value * STEP
        if profile(value) > limit:
            break
        inside = value
        if value == bound:
            return bound, True
    outside = value
    for _ in range(BISECTIONS):
        mid = np.sqrt(inside * outside) if inside > 0 and outside > 0 else 0.5 * (inside + outside)
        if profile(mid) > limit:
            outside = mid
        else:
            inside = mid
    return float(inside), False


def profile_issues(intervals: dict[str, dict[str, Any]]) -> dict[str, str]:
    """{exponent: why} for exponents whose profile interval reaches a bound: the data cannot tell
    the exponent from that bound (α reaching 0: no N term; reaching its cap: any steeper N term
    fits as well)."""
    out = {}
    for name, iv in intervals.items():
        if iv["reaches"]:
            lo, hi = iv["ci95"]
            bounds = " and ".join(f"{b:g}" for b in iv["reaches"])
            out[name] = f"{name}: its 95% profile interval [{lo:.3g}, {hi:.3g}] reaches its bound {bounds}"
    return out


def exponent_intervals(prob: Problem, theta: np.ndarray, skip: set[str] = frozenset(),
                       near: float = 1e-3, level: float = LEVEL) -> dict[str, dict[str, Any]]:
    """{exponent's paper name: {"ci95": [lo, hi], "reaches": [bounds reached]}} for every free
    exponent of ``prob`` around the fit ``theta`` (full internal θ), except those in ``skip``
    (already at a bound: the fit is flagged there whatever the interval says). An end within
    ``near`` of the bound interval's width reaches the bound: the modified law at α = 1e-6 fits
    as well as anywhere inside, while at α = 0 exactly its N term is collinear with the rest."""
    rss_min, best = least_squares_fit(prob, theta)
    dof = len(prob.y) - len(prob.free)
    if dof < 1 or not np.isfinite(rss_min):
        return {}
    limit = rss_min * (1.0 + f_dist.ppf(level, 1, dof) / dof)
    out = {}
    for i in range(prob.law.n_coef, len(prob.law.params)):
        if i in prob.fixed or prob.law.raw_names[i] in skip:
            continue
        lo, hi = prob.law.bounds[i]
        profile = Profile(prob, i, best)
        ends, reached = [], []
        for bound in (lo, hi):
            profile.last, profile.seed_from_grid = best, True
            end, hit = _walk(profile, float(best[i]), float(bound), limit)
            ends.append(end)
            if hit or abs(end - bound) <= near * (hi - lo):
                reached.append(float(bound))
        out[prob.law.raw_names[i]] = {"ci95": ends, "reaches": reached}
    return out
