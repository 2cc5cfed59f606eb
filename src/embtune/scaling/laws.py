"""The two loss laws of paper 1 (section 4.3 and App. E), as pure functions of (N, D, S).

Chinchilla (§4.3):  L(N, D)    = E + A/N^α + B/D^β              A, B, E, α, β ∈ ℝ+
Modified   (§4.3):  L(S, N, D) = E + (a_d·ln D + b_d)/N^α + (a_s·(1−S)^b_s + c_s)/D^β
                                  a_d, b_d, a_s, b_s, c_s ∈ ℝ;  E, α, β ≥ 0 as in Chinchilla

(the paper calls the constant C; here it is E, as in Hoffmann et al., because C is the budget.)

Both laws are *linear* in their coefficients once the exponents are fixed:
L = Σ_j c_j·φ_j(x; exponents), with basis functions
  Chinchilla  φ = [1, N^−α, D^−β]                              c = (E, A, B)
  Modified    φ = [1, ln D·N^−α, N^−α, (1−S)^b_s·D^−β, D^−β]    c = (E, a_d, b_d, a_s, c_s)
The fitter uses this twice: a grid over the exponents with the coefficients solved exactly
(variable projection, ``fit.profile_grid``), then L-BFGS on all parameters.

Internal parameters (what the optimiser sees): coefficients first, then exponents, over centred
variables n = ln(N/N0), d = ln(D/D0) (N0, D0 = geometric means of the fitted rows), which keeps
every coefficient O(1). A coefficient that must be positive is stored as its log, so Chinchilla
is exactly Epoch AI's form log L = LSE(e, a − α·n, b − β·d). Results are reported in *raw* units
(the paper's formula on N, D: docs/fidelity.md#P1-LAW-CHINCHILLA, #P1-LAW-MODIFIED) through the exact conversions ``to_raw``/``from_raw``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

TINY = 1e-300


@dataclass(frozen=True)
class Features:
    """Centred log features of the fitted rows (see module docstring)."""

    n: np.ndarray       # ln(N / N0)
    d: np.ndarray       # ln(D / D0)
    s1: np.ndarray      # 1 − S, clipped to [0, 1]: (1 − S)^b_s is undefined for S > 1
    ln_n0: float
    ln_d0: float
    ln_s1: np.ndarray   # ln(1 − S), 0 where S = 1: computed once, (1 − S)^b_s = exp(b_s·ln_s1)
    n_s_clipped: int    # rows whose S was outside [0, 1] (reported by the fit)


def make_features(N: np.ndarray, D: np.ndarray, S: np.ndarray | None = None,
                  ln_n0: float | None = None, ln_d0: float | None = None) -> Features:
    """Centre ln N and ln D on their means (or on given references)."""
    ln_n, ln_d = np.log(np.asarray(N, float)), np.log(np.asarray(D, float))
    s = np.ones_like(ln_n) if S is None else np.asarray(S, float)
    n0 = float(ln_n.mean()) if ln_n0 is None else ln_n0
    d0 = float(ln_d.mean()) if ln_d0 is None else ln_d0
    s1 = np.clip(1.0 - s, 0.0, 1.0)
    return Features(ln_n - n0, ln_d - d0, s1, n0, d0, np.log(np.where(s1 > 0, s1, 1.0)),
                    int(np.sum((s < 0) | (s > 1))))


def s_power(s1: np.ndarray, b_s: Any, ln_s1: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(1−S)^b_s and its derivative in b_s, with 0^b = 0 (full fine-tuning, S = 1; b_s > 0)."""
    ln = np.log(np.where(s1 > 0, s1, 1.0)) if ln_s1 is None else ln_s1
    powv = np.where(s1 > 0, np.exp(b_s * ln), 0.0)
    return powv, powv * ln


# ---- basis functions: nl is (m,) for one fit or (k, m) for k grid points ----------------------


def chinchilla_basis(nl: np.ndarray, x: Features, c: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
    """φ of shape (..., rows, 3); with coefficients ``c``, also ∂(φ·c)/∂(α, β) (rows, 2)."""
    alpha, beta = nl[..., 0, None], nl[..., 1, None]
    u, v = np.exp(-alpha * x.n), np.exp(-beta * x.d)
    phi = np.stack([np.ones_like(u), u, v], axis=-1)
    if c is None:
        return phi, None
    return phi, np.stack([-x.n * c[1] * u, -x.d * c[2] * v], axis=1)


def modified_basis(nl: np.ndarray, x: Features, c: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
    """φ of shape (..., rows, 5); with coefficients ``c``, also ∂(φ·c)/∂(α, β, b_s) (rows, 3)."""
    alpha, beta, b_s = nl[..., 0, None], nl[..., 1, None], nl[..., 2, None]
    u, v = np.exp(-alpha * x.n), np.exp(-beta * x.d)
    powv, dpow = s_power(x.s1, b_s, x.ln_s1)
    phi = np.stack([np.ones_like(u), x.d * u, u, powv * v, v], axis=-1)
    if c is None:
        return phi, None
    n_term, d_term = (c[1] * x.d + c[2]) * u, (c[3] * powv + c[4]) * v
    return phi, np.stack([-x.n * n_term, -x.d * d_term, c[3] * dpow * v], axis=1)


# ---- raw <-> internal conversions (exact) ------------------------------------------------------


def chinchilla_to_raw(law: "Law", theta: Any, x: Features) -> dict[str, float]:
    """Internal (centred) -> the paper's E, A, B, α, β on raw N and D: A = A'·N0^α, B = B'·D0^β
    (docs/fidelity.md#P1-LAW-CHINCHILLA)."""
    E, A, B = (float(c) for c in law.coefficients(theta))
    alpha, beta = float(theta[3]), float(theta[4])
    return {"E": E, "A": A * float(np.exp(alpha * x.ln_n0)), "B": B * float(np.exp(beta * x.ln_d0)),
            "alpha": alpha, "beta": beta}


def chinchilla_from_raw(law: "Law", p: dict[str, float], x: Features) -> np.ndarray:
    c = np.array([p["E"], p["A"] * np.exp(-p["alpha"] * x.ln_n0), p["B"] * np.exp(-p["beta"] * x.ln_d0)])
    lin = np.where(law.log_coef, np.log(np.where(law.log_coef, c, 1.0)), c)
    return np.concatenate([lin, [p["alpha"], p["beta"]]])


def chinchilla_loss(p: dict[str, float], N: Any, D: Any, S: Any = None) -> np.ndarray:
    """L = E + A/N^α + B/D^β in raw units (S is ignored; accepted for a uniform signature)."""
    N, D = np.asarray(N, float), np.asarray(D, float)
    return p["E"] + p["A"] / N ** p["alpha"] + p["B"] / D ** p["beta"]


def modified_to_raw(law: "Law", theta: Any, x: Features) -> dict[str, float]:
    """(a_d'·(ln D − ln D0) + b_d')·(N/N0)^−α = (a_d·ln D + b_d)/N^α with a_d = a_d'·N0^α,
    b_d = (b_d' − a_d'·ln D0)·N0^α; the S-term coefficients scale by D0^β."""
    E, a_d, b_d, a_s, c_s = (float(c) for c in law.coefficients(theta))
    alpha, beta, b_s = (float(v) for v in theta[5:8])
    kn, kd = float(np.exp(alpha * x.ln_n0)), float(np.exp(beta * x.ln_d0))
    return {"E": E, "a_d": a_d * kn, "b_d": (b_d - a_d * x.ln_d0) * kn, "alpha": alpha,
            "a_s": a_s * kd, "b_s": b_s, "c_s": c_s * kd, "beta": beta}


def modified_from_raw(law: "Law", p: dict[str, float], x: Features) -> np.ndarray:
    kn, kd = np.exp(p["alpha"] * x.ln_n0), np.exp(p["beta"] * x.ln_d0)
    a_d = p["a_d"] / kn
    c = np.array([p["E"], a_d, p["b_d"] / kn + a_d * x.ln_d0, p["a_s"] / kd, p["c_s"] / kd])
    lin = np.where(law.log_coef, np.log(np.where(law.log_coef, c, 1.0)), c)
    return np.concatenate([lin, [p["alpha"], p["beta"], p["b_s"]]])


def modified_loss(p: dict[str, float], N: Any, D: Any, S: Any) -> np.ndarray:
    """L = E + (a_d·ln D + b_d)/N^α + (a_s·(1−S)^b_s + c_s)/D^β in raw units (natural log)."""
    N, D = np.asarray(N, float), np.asarray(D, float)
    powv, _ = s_power(np.clip(1.0 - np.asarray(S, float), 0.0, 1.0), p["b_s"])
    return (p["E"] + (p["a_d"] * np.log(D) + p["b_d"]) / N ** p["alpha"]
            + (p["a_s"] * powv + p["c_s"]) / D ** p["beta"])


# ---- the law object ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Law:
    """Everything the generic fitter needs about one law (see the module docstring)."""

    name: str
    formula: str                                   # as reported in fits.json
    params: tuple[str, ...]                        # internal names: coefficients, then exponents
    raw_names: tuple[str, ...]                     # the paper's name of each internal parameter
    log_coef: tuple[bool, ...]                     # coefficient stored as its log (kept > 0)
    basis: Callable[..., tuple[np.ndarray, Any]]     # (exponents, Features[, c]) -> φ, ∂L/∂exponents
    to_raw_fn: Callable[..., dict[str, float]]
    from_raw_fn: Callable[..., np.ndarray]
    loss: Callable[..., np.ndarray]
    grid: tuple[tuple[float, ...], ...]            # starting grid per exponent (plausible range)
    bounds: tuple[tuple[float | None, float | None], ...]
    exponent_terms: tuple[tuple[int, ...], ...]    # per exponent: the coefficients whose terms it
                                                   # shapes (if they all vanish it is not identified)

    @property
    def n_coef(self) -> int:
        return len(self.log_coef)

    def coefficients(self, theta: np.ndarray) -> np.ndarray:
        """c_j = exp(θ_j) for log-stored coefficients, θ_j otherwise (theta may be (k, P))."""
        lin = np.asarray(theta, float)[..., :self.n_coef]
        return np.where(self.log_coef, np.exp(np.where(self.log_coef, lin, 0.0)), lin)

    def value(self, theta: Any, x: Features) -> np.ndarray:
        theta = np.asarray(theta, float)
        phi, _ = self.basis(theta[..., self.n_coef:], x)
        return (phi @ self.coefficients(theta)[..., None])[..., 0]

    def log_predict(self, theta: Any, x: Features) -> np.ndarray:
        """log L (clamped at a tiny positive value: the modified law is not sign-constrained)."""
        return np.log(np.maximum(self.value(theta, x), TINY))

    def log_and_jacobian(self, theta: Any, x: Features) -> tuple[np.ndarray, np.ndarray]:
        """(log L, d log L / d theta of shape (rows, P)) for one parameter vector."""
        theta = np.asarray(theta, float)
        c = self.coefficients(theta)
        phi, d_nl = self.basis(theta[self.n_coef:], x, c)
        value = np.maximum(phi @ c, TINY)
        d_coef = phi * np.where(self.log_coef, c, 1.0)       # ∂L/∂θ_j: c_j·φ_j (log) or φ_j
        return np.log(value), np.concatenate([d_coef, d_nl], axis=1) / value[:, None]

    def terms(self, theta: Any, x: Features) -> np.ndarray:
        """c_j·φ_j per row (rows, n_coef): how much each coefficient's term contributes."""
        theta = np.asarray(theta, float)
        phi, _ = self.basis(theta[self.n_coef:], x)
        return phi * self.coefficients(theta)

    def to_raw(self, theta: Any, x: Features) -> dict[str, float]:
        return self.to_raw_fn(self, theta, x)

    def from_raw(self, p: dict[str, float], x: Features) -> np.ndarray:
        return self.from_raw_fn(self, p, x)


# Exponent grid: 0.02 to 4 in 24 geometric steps (26% apart) covers Kaplan's 0.05-0.1, Chinchilla's
# 0.28-0.34 and anything a fine-tuning run could plausibly show; L-BFGS refines between points.
EXPONENT_GRID = tuple(float(v) for v in np.geomspace(0.02, 4.0, 24))
EXPONENT_BOUNDS = (0.0, 6.0)
B_S_GRID = tuple(float(v) for v in np.geomspace(0.05, 16.0, 10))
B_S_BOUNDS = (0.01, 25.0)          # b_s > 0: (1 − S)^b_s must be 0, not ∞ or 1, at S = 1
LOG_COEF_BOUNDS = (-30.0, 30.0)    # centred log coefficient: e^−30 is "no such term"
LINEAR_COEF_BOUNDS = (None, None)


def chinchilla_law(coefficients: str = "positive") -> Law:
    """Chinchilla with A, B, E ∈ ℝ+ (§4.3, the default) or ∈ ℝ (App. E's wording: 'real')."""
    if coefficients not in ("positive", "real"):
        raise ValueError(f"chinchilla coefficients must be 'positive' or 'real', got {coefficients!r}")
    pos = coefficients == "positive"
    coef_bounds = LOG_COEF_BOUNDS if pos else LINEAR_COEF_BOUNDS
    return Law(
        "chinchilla", "L = E + A/N^alpha + B/D^beta" + ("" if pos else " (A, B, E real)"),
        ("e", "a", "b", "alpha", "beta") if pos else ("E", "A", "B", "alpha", "beta"),
        ("E", "A", "B", "alpha", "beta"), (pos, pos, pos), chinchilla_basis,
        chinchilla_to_raw, chinchilla_from_raw, chinchilla_loss,
        grid=(EXPONENT_GRID, EXPONENT_GRID),
        bounds=(coef_bounds,) * 3 + (EXPONENT_BOUNDS, EXPONENT_BOUNDS),
        exponent_terms=((1,), (2,)),
    )


CHINCHILLA = chinchilla_law("positive")

MODIFIED = Law(
    "modified", "L = E + (a_d*ln(D) + b_d)/N^alpha + (a_s*(1-S)^b_s + c_s)/D^beta",
    ("e", "a_d", "b_d", "a_s", "c_s", "alpha", "beta", "b_s"),
    ("E", "a_d", "b_d", "a_s", "c_s", "alpha", "beta", "b_s"),
    (True, False, False, False, False), modified_basis, modified_to_raw, modified_from_raw, modified_loss,
    grid=(EXPONENT_GRID, EXPONENT_GRID, B_S_GRID),
    bounds=(LOG_COEF_BOUNDS,) + (LINEAR_COEF_BOUNDS,) * 4 + (EXPONENT_BOUNDS, EXPONENT_BOUNDS, B_S_BOUNDS),
    exponent_terms=((1, 2), (3, 4), (3,)),
)

LAWS = {law.name: law for law in (CHINCHILLA, MODIFIED)}


def laws(chinchilla_coefficients: str = "positive") -> dict[str, Law]:
    """The laws fitted per method, with the Chinchilla coefficient reading chosen."""
    return {"chinchilla": chinchilla_law(chinchilla_coefficients), "modified": MODIFIED}
