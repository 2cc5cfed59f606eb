"""The study's headline numbers as one small JSON for ``dvc metrics diff`` (stage ``summary``,
driver :mod:`embtune.stages.summary`).

Why a separate stage: DVC compares metrics across commits; the full fits and tables are too big
and too nested to diff, so this keeps the few numbers a reader checks first, in full precision.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def training_summary(runs: pl.DataFrame) -> dict[str, Any]:
    """Headline numbers of the main grid; a study's runs (other temperatures, batch 2048, ...)
    would change "best loss per method" without being part of it, so they are only counted."""
    studies = runs.filter(pl.col("study").fill_null("main") != "main") if "study" in runs.columns else runs.clear()
    runs = runs.join(studies.select("run_id"), on="run_id", how="anti")
    ok = runs.filter(pl.col("status") == "ok")
    best = (ok.group_by("method").agg(pl.col("final_train_loss").min().alias("best"))
            .sort("method"))
    return {
        "runs_ok": ok.height,
        "study_runs_ok": int((studies["status"] == "ok").sum()) if studies.height else 0,
        "runs_skipped": runs.height - ok.height,
        "total_flops": float(ok["C"].sum()) if ok.height else 0.0,
        "best_final_train_loss": {r["method"]: _finite(r["best"]) for r in best.iter_rows(named=True)},
        "mean_mteb_average": _finite(float(ok["mteb_average"].mean()))
        if "mteb_average" in ok.columns and ok["mteb_average"].null_count() < ok.height else None,
    }


def laws_summary(fits: dict[str, Any]) -> dict[str, Any]:
    """Per method and law: trustworthy, at_bound and the held-out error (the fit's headline)."""
    out: dict[str, Any] = {}
    for method, laws in sorted(fits.get("laws", {}).items()):
        for name, fit in sorted(laws.items()):
            if isinstance(fit, dict) and "params" in fit:
                out.setdefault(method, {})[name] = {
                    "trustworthy": bool(fit.get("trustworthy", True)), "at_bound": fit.get("at_bound", []),
                    "holdout_rmse_log": _finite(fit.get("holdout", {}).get("rmse_log"))}
    return out


def fits_summary(fits: dict[str, Any]) -> dict[str, Any]:
    lines = fits.get("frontier", {}).get("lines", {})
    return {
        "laws": laws_summary(fits),
        "untrustworthy_fits": [f"{u['method']}/{u['law']}" for u in fits.get("untrustworthy", [])],
        "frontier": {m: {"slope": _finite(v.get("slope")), "intercept": _finite(v.get("intercept"))}
                     for m, v in sorted(lines.items()) if "slope" in v},
        "crossovers": [{"methods": c["methods"], "budget": _finite(c.get("budget"))}
                       for c in fits.get("frontier", {}).get("crossovers", [])],
        "loss_mteb_spearman": _finite(fits.get("mteb", {}).get("spearman_rho")),
    }


def recipes_summary(recipes: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("method", "model", "tokens", "steps", "predicted_loss", "extrapolated", "trustworthy")
    return {f"{r['budget']:.3g}": {**{k: _finite(r.get(k)) for k in keys},
                                   "bootstrap_agreement": _finite((r.get("bootstrap_agreement") or {}).get("fraction"))}
            for r in recipes}


def query_summary(table: pl.DataFrame) -> list[dict[str, Any]]:
    """Table 1's rows (``table1.csv``): the model, the query run and the c%/+/- columns."""
    keep = [c for c in table.columns if c in ("model", "qrun_id") or c.endswith(("_c_pct", "_plus", "_minus"))]
    return [{k: _finite(v) for k, v in row.items()} for row in table.select(keep).iter_rows(named=True)]
