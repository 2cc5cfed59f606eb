"""Whether a recipe (paper 1's Algorithm 1, :mod:`embtune.scaling.recipe`) can be trusted, by the
paper's own tests, and which methods Algorithm 1 may return.

A recipe is trustworthy when all three hold (docs/fidelity.md#P1-RECIPE):
1. its budget lies inside the fitted budget range of its method's frontier line;
2. its (method, model) is the same in >= ``AGREEMENT_MIN`` of the bootstrap resamples of the
   frontier: each method's optimal points are resampled with replacement, its frontier line and
   optimal-N line refitted, and the method and the suite model re-chosen exactly as the recipe
   chooses them;
3. its method's Chinchilla law predicts the held-out largest model with RMSE(log) <=
   ``HOLDOUT_RMSE_MAX`` (App. E: "we are able to accurately predict the loss for the bigger
   model").
A law parameter at a bound is reported with the recipe (``law_findings``) but does not fail it:
E at 0 says only that the fitted range shows no floor, which test 1 already confines the recipe to.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from embtune.models import methods as registry

AGREEMENT_MIN = 0.8
HOLDOUT_RMSE_MAX = 0.05
# paper: the methods Algorithm 1 returns (§4.4, the registry's ``in_algorithm1``: full fine-tuning
# and LoRA); any: every fitted method competes.
METHOD_SETS = ("paper", "any")


def allowed_methods(lines: dict[str, dict[str, Any]], method_set: str) -> list[str]:
    """The fitted frontier lines Algorithm 1 may choose from under ``method_set``."""
    if method_set not in METHOD_SETS:
        raise ValueError(f"recipe method set must be one of {list(METHOD_SETS)}, got {method_set!r}")
    keep = registry.algorithm1() if method_set == "paper" else None
    return sorted(m for m, line in lines.items() if "slope" in line and (keep is None or m in keep))


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise least squares y = slope·x + intercept over resamples (n, k); NaN slope where the
    resample holds one x only (no line, as ``isoflop.loglog_line`` skips it)."""
    xm, ym = x.mean(axis=1, keepdims=True), y.mean(axis=1, keepdims=True)
    sxx = ((x - xm) ** 2).sum(axis=1)
    with np.errstate(all="ignore"):
        slope = np.where(sxx > 1e-12, ((x - xm) * (y - ym)).sum(axis=1) / sxx, np.nan)
    return slope, ym[:, 0] - slope * xm[:, 0]


def bootstrap_agreement(points: dict[str, list[dict[str, Any]]], metric: str, methods: list[str],
                        suite: list[dict[str, Any]], budget: float, chosen: tuple[str, str],
                        n: int, seed: int) -> dict[str, Any]:
    """Share of ``n`` frontier resamples whose (method, model) at ``budget`` is ``chosen``.

    Per resample and method: the optimal points drawn with replacement, ln loss and ln N each
    regressed on ln C (one model throughout gives slope 0, i.e. that model, as the recipe's
    ``constant_N``); the method is the lowest predicted loss, the model the suite entry nearest in
    ln N. A resample in which some method's points hold one budget only has no line for it and is
    left out, as ``frontier.fit_line``'s bootstrap leaves it out. Vectorised: O(n · points) per
    method."""
    if n <= 0:
        return {"fraction": None, "method_fraction": None, "n": 0, "seed": seed,
                "skipped": "no bootstrap resamples (analyze.bootstrap is 0)"}
    rng = np.random.default_rng(seed)
    ln_budget = math.log(budget)
    pred_loss, pred_ln_n = {}, {}
    for m in methods:
        pts = [p for p in points.get(m) or [] if p.get(metric) and p.get("N") and p.get("budget")]
        if len(pts) < 2:
            continue
        lc = np.log([p["budget"] for p in pts])
        ll, ln = np.log([p[metric] for p in pts]), np.log([p["N"] for p in pts])
        idx = rng.integers(0, len(pts), (n, len(pts)))
        s, b = _ols(lc[idx], ll[idx])
        sn, bn = _ols(lc[idx], ln[idx])
        pred_loss[m], pred_ln_n[m] = s * ln_budget + b, sn * ln_budget + bn
    if not pred_loss:
        return {"fraction": None, "method_fraction": None, "n": 0, "seed": seed,
                "skipped": "no method has >= 2 optimal points to resample"}
    names = sorted(pred_loss)
    loss = np.stack([pred_loss[m] for m in names])
    valid = np.isfinite(loss).all(axis=0)
    if not valid.any():
        return {"fraction": None, "method_fraction": None, "n": 0, "seed": seed,
                "skipped": "every resample drew a single budget for some method"}
    loss, ln_n_all = loss[:, valid], np.stack([pred_ln_n[m] for m in names])[:, valid]
    pick = np.argmin(loss, axis=0)
    ln_n = ln_n_all[pick, np.arange(loss.shape[1])]
    suite_ln = np.log([s["N"] for s in suite])
    model_idx = np.argmin(np.abs(ln_n[:, None] - suite_ln[None, :]), axis=1)
    method_ok = np.asarray(names)[pick] == chosen[0]
    both = method_ok & (np.asarray([s["name"] for s in suite])[model_idx] == chosen[1])
    return {"fraction": float(both.mean()), "method_fraction": float(method_ok.mean()),
            "n": int(valid.sum()), "n_drawn": int(n), "seed": int(seed)}


def holdout_check(fits: dict[str, Any], method: str) -> dict[str, Any]:
    """The method's Chinchilla law on the held-out largest model (App. E's test)."""
    laws = (fits.get("laws") or {}).get(method) or {}
    chin = laws.get("chinchilla") or {}
    rmse = (chin.get("holdout") or {}).get("rmse_log")
    out: dict[str, Any] = {"law": "chinchilla", "holdout_model": laws.get("holdout_model"),
                           "rmse_log": rmse, "max": HOLDOUT_RMSE_MAX}
    if "skipped" in chin or "skipped" in laws:
        out["why"] = f"the {method} Chinchilla law was not fitted ({chin.get('skipped') or laws.get('skipped')})"
    elif rmse is None:
        out["why"] = f"the {method} Chinchilla law has no held-out model to predict"
    elif rmse > HOLDOUT_RMSE_MAX:
        out["why"] = (f"the {method} Chinchilla law predicts the held-out {laws.get('holdout_model')} with "
                      f"RMSE(log) {rmse:.3g} > {HOLDOUT_RMSE_MAX}")
    return out


def law_findings(fits: dict[str, Any], method: str) -> dict[str, Any]:
    """Per law of ``method``: which parameters are identified, and its findings (E at 0, ...)."""
    out = {}
    for name, fit in ((fits.get("laws") or {}).get(method) or {}).items():
        if isinstance(fit, dict) and "params" in fit:
            out[name] = {"identified": fit.get("identified", {}), "findings": fit.get("findings", [])}
        elif isinstance(fit, dict) and "skipped" in fit:
            out[name] = {"not_fitted": fit["skipped"]}
    return out


def judge_recipe(recipe: dict[str, Any], fits: dict[str, Any], agreement: dict[str, Any]) -> dict[str, Any]:
    """The ``trust`` record of a recipe: the three tests, and why each failed one failed."""
    held = holdout_check(fits, recipe["method"])
    why = []
    if recipe["extrapolated"]:
        lo, hi = recipe["fitted_budget_range"]
        why.append(f"budget {recipe['budget']:.3g} outside the fitted range [{lo:.3g}, {hi:.3g}]")
    if agreement["fraction"] is None:
        why.append(f"no frontier bootstrap to test the choice: {agreement['skipped']}")
    elif agreement["fraction"] < AGREEMENT_MIN:
        why.append(f"(method, model) = ({recipe['method']}, {recipe['model']}) in {agreement['fraction']:.0%} "
                   f"of {agreement['n']} frontier bootstrap resamples < {AGREEMENT_MIN:.0%}")
    if "why" in held:
        why.append(held["why"])
    return {"trustworthy": not why, "why_not": why, "in_fitted_range": not recipe["extrapolated"],
            "bootstrap_agreement": agreement["fraction"], "agreement_min": AGREEMENT_MIN, "holdout": held}
