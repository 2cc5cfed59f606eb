"""Paper 1's Algorithm 1 from our own fits — budget in, training plan out (stage ``recipe``,
driver :mod:`embtune.stages.recipe`).

1. method  = lowest predicted loss among the frontier lines at C of full fine-tuning and LoRA,
             the two methods Algorithm 1 returns (``method_set="any"``: every fitted method);
             not a hard-coded threshold: the paper's 9.06e16 does not follow from its own
             rounded lines (docs/fidelity.md#P1-RECIPE);
2. model   = the suite model nearest in ln N to that method's optimal-N line at C;
3. tokens  = C / FLOP-per-token of (model, method, hyper-parameter) from the analytic counts;
4. pairs, steps = tokens / tokens-per-pair (measured in the runs), / batch size;
5. hyper-parameter = the best LoRA rank / frozen fraction observed at the nearest budget;
6. predicted loss with a bootstrap interval; ``extrapolated`` when C is outside the fitted range;
7. the method's scaling-law fits predict the loss of the plan too (a cross-check of the frontier
   line); an untrustworthy law fit is named (``fit_trust``, a warning), with each law's
   identified parameters and findings (``law_findings``);
8. ``trustworthy`` by paper 1's own tests (:mod:`embtune.scaling.recipe_trust`): inside the
   fitted range, the same (method, model) in >= 80% of the frontier's bootstrap resamples
   (``bootstrap_agreement``), and the method's Chinchilla law predicting the held-out model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from embtune.models import methods as registry
from embtune.models.methods import model_counts
from embtune.scaling.frontier import best_method, predict_interval, predict_log
from embtune.scaling.isoflop import isoflop, ok_rows
from embtune.scaling.laws import LAWS
from embtune.scaling.recipe_trust import allowed_methods, bootstrap_agreement, judge_recipe, law_findings


def suite_from_runs(runs: pl.DataFrame) -> list[dict[str, Any]]:
    """The models seen in the runs table (name, hidden_size, num_layers, N)."""
    cols = ["model", "hidden_size", "num_layers", "N"]
    rows = runs.filter(pl.col("status") == "ok").drop_nulls(cols).select(cols).unique("model")
    return [{"name": r["model"], "hidden_size": r["hidden_size"], "num_layers": r["num_layers"],
             "N": r["N"]} for r in rows.sort("N").to_dicts()]


def with_n(model: dict[str, Any]) -> dict[str, Any]:
    """A suite entry with its non-embedding N (counted from dims when not given)."""
    if model.get("N"):
        return model
    n = model_counts(model, "full").n_total
    return {**model, "N": float(n)}


def optimal_n(fits: dict[str, Any], method: str, budget: float) -> tuple[float | None, str]:
    """N* at C from the method's optimal-N line; else the constant optimum if that is all we saw."""
    line = fits.get("optimal_n", {}).get(method, {})
    if "slope" in line:
        return math.exp(line["slope"] * math.log(budget) + line["intercept"]), "optimal_n line"
    if "constant_N" in line:
        return float(line["constant_N"]), "same optimal model at every fitted budget"
    return None, line.get("skipped", "no optimal-N fit")


def nearest_model(suite: list[dict[str, Any]], n_star: float) -> dict[str, Any]:
    return min(suite, key=lambda m: abs(math.log(m["N"]) - math.log(n_star)))


def best_hyper(runs: pl.DataFrame, method: str, model: str, budget: float,
               metric: str) -> dict[str, Any]:
    """Best frozen fraction / LoRA rank at the observed budget nearest (in ln C) to ``budget``,
    for ``model`` if it was run, else over all models at that budget."""
    prof = ok_rows(runs, metric).filter(pl.col("method") == method)
    if prof.is_empty():
        return {}
    budgets = prof["budget"].unique().to_numpy()
    near = float(budgets[np.argmin(np.abs(np.log(budgets) - math.log(budget)))])
    at = prof.filter(pl.col("budget") == near)
    mine = at.filter(pl.col("model") == model)
    best = (mine if not mine.is_empty() else at).sort(metric).row(0, named=True)
    out: dict[str, Any] = {"observed_budget": near, "observed_run": best["run_id"],
                           "observed_model": best["model"]}
    m = registry.get(method)
    if m.hyper is not None:
        out[m.hyper.column] = best[m.hyper.column]
    for key in m.settings.recipe_keys():      # the rest of the setting the loss was measured with (LoRA's alpha, ...)
        if key not in out and best.get(key) is not None:
            out[key] = best[key]
    return out


def measured_tokens_per_pair(runs: pl.DataFrame) -> float | None:
    vals = ok_rows(runs, "tokens_per_pair")["tokens_per_pair"] if "tokens_per_pair" in runs.columns else []
    return float(np.mean(vals.to_numpy())) if len(vals) else None


def plan_tokens(model: dict[str, Any], method: str, hyper: dict[str, Any], budget: float) -> dict[str, Any]:
    """D = C / (2·(N_F + N_B + N_U)) for this model, method and hyper-parameter."""
    complete = registry.get(method).complete
    if complete is not None:        # e.g. freeze: the frozen blocks of this model at that fraction
        complete(model, hyper)
    counts = registry.planned_counts(model, registry.method_config({**hyper, "method": method}))
    return {"tokens": budget / counts.per_token, "flop_per_token": counts.per_token,
            "n_total": counts.n_total, "n_update": counts.n_update,
            "trainable_fraction": counts.trainable_fraction}


def law_check(fits: dict[str, Any], method: str, plan: dict[str, Any]) -> dict[str, Any]:
    """The method's law fits at the planned (N, D, S): predicted loss and trust of each."""
    checked, bad, predicted = [], [], {}
    for name, fit in (fits.get("laws", {}).get(method) or {}).items():
        if name not in LAWS or not isinstance(fit, dict) or "params" not in fit:
            continue
        checked.append(name)
        loss = LAWS[name].loss(fit["params"], plan["n_total"], plan["tokens"], plan["trainable_fraction"])
        predicted[name] = {"loss": float(loss), "trustworthy": bool(fit.get("trustworthy", True))}
        if not fit.get("trustworthy", True):
            bad.append({"law": name, "at_bound": fit.get("at_bound", []), "issues": fit.get("trust_issues", [])})
    return {"fit_trust": {"trustworthy": not bad, "method": method, "checked": checked, "untrustworthy": bad},
            "predicted_loss_by_law": predicted}


def make_recipe(budget: float, fits: dict[str, Any], runs: pl.DataFrame, *,
                suite: list[dict[str, Any]] | None = None, batch_size: int | None = None,
                tokens_per_pair: float | None = None, method_set: str = "paper",
                n_bootstrap: int | None = None) -> dict[str, Any]:
    """The compute-optimal plan for ``budget`` FLOP (pure; see the module docstring).
    ``n_bootstrap`` frontier resamples judge it (default: fits.json's ``settings.bootstrap``)."""
    all_lines = fits["frontier"]["lines"]
    metric = fits["settings"]["loss_column"]
    allowed = allowed_methods(all_lines, method_set)
    if not allowed:
        reasons = {m: v.get("skipped", "not in the method set") for m, v in all_lines.items()}
        return {"budget": budget, "method_set": method_set,
                "skipped": f"no fitted frontier line in method set {method_set!r}: {reasons}", "warnings": []}
    lines = {m: all_lines[m] for m in allowed}
    method, loss = best_method(lines, budget)
    line = lines[method]
    models = [with_n(m) for m in (suite or suite_from_runs(runs))]
    n_star, n_source = optimal_n(fits, method, budget)
    if n_star is None:
        prof = isoflop(runs, method, metric)
        n_star, n_source = float(prof.sort(metric)["N"][0]), f"best observed model ({n_source})"
    model = nearest_model(models, n_star)
    hyper = best_hyper(runs, method, model["name"], budget, metric)
    plan = plan_tokens(model, method, hyper, budget)
    tpp = tokens_per_pair or measured_tokens_per_pair(runs)
    if batch_size is None and "batch_size" in runs.columns and runs["batch_size"].drop_nulls().len():
        batch_size = int(runs["batch_size"].drop_nulls().mode()[0])
    pairs = plan["tokens"] / tpp if tpp else None
    lo, hi = line["x_min"], line["x_max"]
    extrapolated = not lo <= budget <= hi
    recipe = {
        "budget": budget, "method_set": method_set, "methods_considered": allowed,
        "method": method, "model": model["name"], "model_N": model["N"],
        "optimal_N": n_star, "optimal_N_source": n_source,
        "hyperparameters": {k: hyper[k] for k in registry.get(method).settings.recipe_keys() if k in hyper},
        "hyperparameter_source": {k: hyper[k] for k in ("observed_budget", "observed_run", "observed_model") if k in hyper},
        **plan,
        "tokens_per_pair": tpp, "pairs": pairs, "batch_size": batch_size,
        "steps": pairs / batch_size if pairs and batch_size else None,
        "predicted_loss": loss, "predicted_loss_ci95": predict_interval(line, budget),
        "predicted_loss_by_method": {m: math.exp(predict_log(v, budget))
                                     for m, v in all_lines.items() if "slope" in v},
        "fitted_budget_range": [lo, hi], "extrapolated": extrapolated,
        **law_check(fits, method, plan),
        "law_findings": law_findings(fits, method),
        "warnings": [],
    }
    n_boot = int(fits["settings"].get("bootstrap", 1000) if n_bootstrap is None else n_bootstrap)
    agreement = bootstrap_agreement(fits.get("optimal_points") or {}, metric, allowed, models, budget,
                                    (method, model["name"]), n_boot, int(fits["settings"].get("seed", 0)))
    recipe["bootstrap_agreement"] = agreement
    recipe["trust"] = judge_recipe(recipe, fits, agreement)
    recipe["trustworthy"] = recipe["trust"]["trustworthy"]
    for why in recipe["trust"]["why_not"]:
        recipe["warnings"].append(f"UNTRUSTWORTHY RECIPE: {why}")
    for bad in recipe["fit_trust"]["untrustworthy"]:
        recipe["warnings"].append(f"UNTRUSTWORTHY FIT: the {bad['law']} law of {method} "
                                  f"({'; '.join(bad['issues'])}); its parameters must not be read")
    if extrapolated:
        recipe["warnings"].append(f"budget {budget:.3g} is outside the fitted range [{lo:.3g}, {hi:.3g}] "
                                  f"of the {method} frontier line: extrapolation")
    if recipe["predicted_loss_ci95"] is None:
        recipe["warnings"].append("no bootstrap interval (too few optimal points)")
    return recipe
