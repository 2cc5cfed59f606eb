"""Compute-optimal frontier (paper 1, section 4.4, Fig. 1): per-method power laws and crossovers.

Per method, ln(loss) = a·ln(C) + b through that method's optimal points; the frontier is the
minimum over methods at each C, and a crossover is where two lines meet:
a1·lnC + b1 = a2·lnC + b2  =>  lnC = (b2 − b1)/(a1 − a2), solved exactly from full-precision fits.

Why full precision matters (docs/fidelity.md#P1-FRONTIER): the paper's rounded lines, ln L = −0.21·ln C + 8.39 (full) and
ln L = −0.22·ln C + 8.93 (LoRA), cross at ln C = 0.54/0.01 = 54, i.e. C ≈ 2.8e23 FLOP — not the
9.06e16 FLOP the paper states (and uses in Algorithm 1). Two-digit slopes cannot locate a
crossover of nearly parallel lines; we therefore store and use unrounded coefficients.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from embtune.scaling.isoflop import loglog_line


def fit_line(budgets: np.ndarray, losses: np.ndarray, n_bootstrap: int = 0,
             seed: int = 0) -> dict[str, Any]:
    """ln loss = slope·ln C + intercept, with bootstrap (slope, intercept) samples when n >= 3."""
    line = loglog_line(budgets, losses)
    if "skipped" in line or n_bootstrap <= 0:
        return line
    if len(budgets) < 3:
        line["bootstrap"] = {"skipped": "needs >= 3 optimal points for a bootstrap interval"}
        return line
    rng = np.random.default_rng(seed)
    lx, ly = np.log(np.asarray(budgets, float)), np.log(np.asarray(losses, float))
    slopes, intercepts = [], []
    for _ in range(n_bootstrap):
        idx = rng.integers(0, len(lx), len(lx))
        if len(np.unique(lx[idx])) < 2:
            continue
        s, i = np.polyfit(lx[idx], ly[idx], 1)
        slopes.append(float(s))
        intercepts.append(float(i))
    line["bootstrap"] = {"slopes": slopes, "intercepts": intercepts, "seed": seed}
    return line


def predict_log(line: dict[str, Any], budget: float) -> float:
    return line["slope"] * math.log(budget) + line["intercept"]


def predict_interval(line: dict[str, Any], budget: float, level: float = 0.95) -> list[float] | None:
    """Percentile interval of the predicted loss at ``budget`` over the bootstrap lines."""
    boot = line.get("bootstrap") or {}
    if not boot.get("slopes"):
        return None
    vals = np.exp(np.asarray(boot["slopes"]) * math.log(budget) + np.asarray(boot["intercepts"]))
    tail = 50 * (1 - level)
    return [float(np.percentile(vals, tail)), float(np.percentile(vals, 100 - tail))]


def crossover(l1: dict[str, Any], l2: dict[str, Any]) -> float | None:
    """Exact budget where two lines meet; None when they are parallel."""
    ds = l1["slope"] - l2["slope"]
    if ds == 0:
        return None
    return math.exp(min((l2["intercept"] - l1["intercept"]) / ds, 709.0))


def crossovers(lines: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair's crossover, with which method is better below and above it."""
    out = []
    fitted = {m: line for m, line in lines.items() if "slope" in line}
    for a, b in combinations(sorted(fitted), 2):
        c = crossover(fitted[a], fitted[b])
        if c is None:
            out.append({"methods": [a, b], "budget": None, "note": "parallel lines"})
            continue
        below = a if fitted[a]["slope"] < fitted[b]["slope"] else b  # steeper descent wins late
        above = b if below == a else a
        ln_c = (fitted[b]["intercept"] - fitted[a]["intercept"]) / (fitted[a]["slope"] - fitted[b]["slope"])
        lo = max(fitted[a].get("x_min", 0.0), fitted[b].get("x_min", 0.0))
        hi = min(fitted[a].get("x_max", math.inf), fitted[b].get("x_max", math.inf))
        out.append({"methods": [a, b], "budget": c, "ln_budget": ln_c,
                    "better_below": above, "better_above": below, "in_fitted_range": lo <= c <= hi})
    return out


def best_method(lines: dict[str, dict[str, Any]], budget: float) -> tuple[str, float]:
    """(method, predicted loss) with the lowest predicted loss at ``budget``."""
    fitted = {m: line for m, line in lines.items() if "slope" in line}
    if not fitted:
        raise ValueError("no fitted frontier line")
    method = min(sorted(fitted), key=lambda m: predict_log(fitted[m], budget))
    return method, math.exp(predict_log(fitted[method], budget))


def frontier_curve(lines: dict[str, dict[str, Any]], budgets: np.ndarray) -> list[dict[str, Any]]:
    """The compute-optimal frontier sampled at ``budgets``: min over methods."""
    return [{"budget": float(c), "method": best_method(lines, c)[0], "loss": best_method(lines, c)[1]}
            for c in budgets]
