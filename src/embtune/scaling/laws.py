"""The two loss laws of paper 1 (section 4.3, App. E), as pure functions of (N, D, S).

Chinchilla:  L(N, D)    = E + A/N^α + B/D^β
Modified:    L(S, N, D) = E + (a_d·ln D + b_d)/N^α + (a_s·(1−S)^b_s + c_s)/D^β

Why two parameterisations per law: the fitter works on *internal* parameters over centred
variables n = ln(N/N0), d = ln(D/D0) (N0, D0 = geometric means of the fitted rows), which keeps
every coefficient O(1) so L-BFGS is well conditioned, and on the LSE form of Chinchilla
(log L = LSE(a − α·n, b − β·d, e)) as in Epoch AI's replication. Results are reported in *raw*
units (the paper's formula on N, D) through the exact conversions ``*_to_raw``.

Internal functions broadcast: ``theta[i]`` may be scalars (one fit) or arrays of shape (k,) with
features of shape (n, 1) (vectorised evaluation of a grid of starting points).
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
