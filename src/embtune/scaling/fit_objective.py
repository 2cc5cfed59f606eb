"""The law objective of :mod:`embtune.scaling.fit` and its profile grid (search step 1).

A fit :class:`Problem` (law, features, losses, bounds, fixed parameters), the weighted Huber
objective in log space with its analytic gradient (docs/fidelity.md#P1-FIT), and the profile
grid: for every point of a grid over the exponents the coefficients are solved exactly by
relative least squares, so the L-BFGS starts cover every basin inside the grid's range.

Why a module apart from :mod:`embtune.scaling.fit`: this is what is minimised and where it
starts; the multi-start L-BFGS, the trust checks and the bootstrap are there.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from embtune.scaling.laws import TINY, Features, Law

START_FLOOR = 0.01       # a positive coefficient starts at >= this share of the smallest loss
GRID_CHUNK = 512
RIDGE = 1e-10
S_SPREAD_MIN = 0.01      # spread of 1 − S below which b_s (the curvature in S) is not identified


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


def fixed_parameters(law: Law, x: Features) -> tuple[dict[int, float], str | None]:
    """Parameters the data cannot identify, pinned, with the reason.

    No spread in 1−S (full fine-tuning alone): a_s·(1−S)^b_s + c_s is one constant, so a_s = 0
    and b_s = 1. A spread below ``S_SPREAD_MIN`` (bias tuning: S ≈ 1e-3 for every model): the
    curvature of (1−S)^b_s changes no loss by more than ~b_s²·spread²/2, so a_s and b_s are not
    separately identified; b_s = 1 makes the S term linear in S and a_s is still fitted."""
    if law.name != "modified":
        return {}, None
    spread = float(np.ptp(x.s1))
    a_s, b_s = law.params.index("a_s"), law.params.index("b_s")
    if spread < 1e-9:
        return {a_s: 0.0, b_s: 1.0}, "no spread in S: a_s = 0, b_s = 1 (only c_s is fitted)"
    if spread < S_SPREAD_MIN:
        return {b_s: 1.0}, (f"S spans {spread:.2g} < {S_SPREAD_MIN}: the curvature b_s is not "
                            "identified, so b_s = 1 (the S term is linear in S)")
    return {}, None


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


# ---- 1. profile grid ---------------------------------------------------------------------------


def exponent_grid(prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    """(values (k, m), integer grid index (k, m)) of every exponent grid point; a fixed exponent
    has the single value it is fixed at."""
    law = prob.law
    axes = [np.array([prob.fixed[law.n_coef + j]]) if law.n_coef + j in prob.fixed else np.asarray(g, float)
            for j, g in enumerate(law.grid)]
    idx = np.stack(np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij"), -1).reshape(-1, len(axes))
    return np.stack([a[idx[:, j]] for j, a in enumerate(axes)], axis=1), idx


def solve_coefficients(phi: np.ndarray, loss: np.ndarray, fixed: dict[int, float],
                       nonneg: tuple[bool, ...]) -> np.ndarray:
    """Coefficients c (k, p) minimising Σ_i ((L_i − φ_i·c)/L_i)² for each of k bases φ (k, n, p),
    with ``fixed`` coefficients held and c_j ≥ 0 where ``nonneg``: every active set of the sign
    constraints is solved and the best feasible solution kept, which is the exact constrained
    optimum of this convex problem (at most 2³ small solves)."""
    k, _, p = phi.shape
    free = [j for j in range(p) if j not in fixed]
    target = np.ones(phi.shape[:2])
    for j, v in fixed.items():
        target -= v * phi[..., j] / loss
    z = phi[..., free] / loss[:, None]
    scale = np.sqrt((z * z).sum(axis=1))
    scale = np.where(scale > 0, scale, 1.0)
    z = z / scale[:, None, :]
    zt = z.transpose(0, 2, 1)
    gram = zt @ z                                  # batched matmul: ~10x faster than einsum here
    h = (zt @ target[..., None])[..., 0]
    tt = (target * target).sum(axis=1)
    signs = [nonneg[j] for j in free]
    best_rss, best = np.full(k, np.inf), np.zeros((k, len(free)))
    for active in itertools.product(*[(True, False) if s else (True,) for s in signs]):
        cols = [i for i, a in enumerate(active) if a]
        c = np.zeros((k, len(free)))
        if cols:
            g = gram[:, cols][:, :, cols] + RIDGE * np.eye(len(cols))
            c[:, cols] = np.linalg.solve(g, h[:, cols][..., None])[..., 0]
        feasible = np.ones(k, bool)
        for i in cols:
            if signs[i]:
                feasible &= c[:, i] >= 0
        rss = tt - 2 * (c * h).sum(axis=1) + (c * (gram @ c[..., None])[..., 0]).sum(axis=1)
        better = feasible & (rss < best_rss)
        best_rss[better], best[better] = rss[better], c[better]
    coef = np.zeros((k, p))
    coef[:, free] = best / scale
    for j, v in fixed.items():
        coef[:, j] = v
    return coef


def internal_from_coefficients(law: Law, coef: np.ndarray, nl: np.ndarray, floor: float) -> np.ndarray:
    """Internal θ (k, P) from coefficients and exponents: logs of positive coefficients, at least
    ``floor``, clipped into their bounds. Why the floor: a coefficient the least squares set to 0
    would start at log 0 → its lower bound, where its gradient is e^−30 ≈ 0 and L-BFGS could never
    bring the term back; at 1% of the smallest loss it is negligible but alive."""
    lin = np.where(law.log_coef, np.log(np.maximum(coef, floor)), coef)
    for j in range(law.n_coef):
        lo, hi = law.bounds[j]
        lin[:, j] = np.clip(lin[:, j], -np.inf if lo is None else lo, np.inf if hi is None else hi)
    return np.concatenate([lin, nl], axis=1)


def profile_grid(prob: Problem, chunk: int = GRID_CHUNK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every exponent grid point with its exact coefficients: (θ (k, P), Huber objective (k,),
    grid index (k, m))."""
    law = prob.law
    nl, idx = exponent_grid(prob)
    loss = np.exp(prob.y)
    fixed_coef = {i: (float(np.exp(v)) if law.log_coef[i] else v) for i, v in prob.fixed.items()
                  if i < law.n_coef}
    thetas = np.empty((len(nl), len(law.params)))
    values = np.empty(len(nl))
    for lo in range(0, len(nl), chunk):
        block = nl[lo:lo + chunk]
        phi, _ = law.basis(block, prob.x)
        coef = solve_coefficients(phi, loss, fixed_coef, law.log_coef)
        theta = internal_from_coefficients(law, coef, block, START_FLOOR * float(loss.min()))
        pred = (phi @ law.coefficients(theta)[..., None])[..., 0]
        with np.errstate(all="ignore"):
            r = prob.y - np.log(np.maximum(pred, TINY))
        thetas[lo:lo + chunk] = theta
        values[lo:lo + chunk] = np.nan_to_num(huber(r, prob.delta).mean(axis=1) / prob.delta,
                                              nan=np.inf)
    return thetas, values, idx


def distinct_starts(values: np.ndarray, idx: np.ndarray, n: int) -> list[int]:
    """The best grid point, then repeatedly the best one at least two grid steps (Chebyshev
    distance in grid indices) from every start already taken: one start per basin."""
    free_pt = np.isfinite(values)
    chosen: list[int] = []
    while len(chosen) < n and free_pt.any():
        i = int(np.flatnonzero(free_pt)[np.argmin(values[free_pt])])
        chosen.append(i)
        free_pt &= np.max(np.abs(idx - idx[i]), axis=1) > 1
    return chosen
