"""IsoFLOP profiles and optimal points (paper 1, Figs 2, 4, 6, 12, 13).

The runs table has one row per (model, method variant, budget, seed). A method's IsoFLOP profile
keeps, for each (model, budget), the best hyper-parameter (frozen fraction, LoRA rank): the paper
plots "the optimal choice" per point. The optimal point of a budget is the best model on that
profile; its N against C gives the optimal-model-size lookup line ln N* = a·ln C + b.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from embtune.models import methods as registry


def ok_rows(runs: pl.DataFrame, metric: str, study: str | None = "main") -> pl.DataFrame:
    """Finished runs of the main grid with a finite, positive value of ``metric``.

    A study's own runs (``study`` column, paper 1 App. D/F: other temperatures, batch 2048, ...)
    are left out, so the fits, frontier and recipe see the main grid only; ``study=None`` keeps
    every study, a name keeps that one."""
    if metric not in runs.columns:
        return runs.clear()
    keep = (pl.col("status") == "ok") & pl.col(metric).is_not_null() & pl.col(metric).is_finite() \
        & (pl.col(metric) > 0)
    if study is not None and "study" in runs.columns:
        keep = keep & (pl.col("study").fill_null("main") == study)
    return runs.filter(keep)


def isoflop(runs: pl.DataFrame, method: str, metric: str = "final_train_loss",
            maximize: bool = False) -> pl.DataFrame:
    """Best row per (model, budget) of one method (min loss, or max for a score like MTEB)."""
    rows = ok_rows(runs, metric).filter(pl.col("method") == method)
    if rows.is_empty():
        return rows
    key = pl.col(metric) * (-1.0 if maximize else 1.0)
    return (rows.sort(key).group_by(["model", "budget"], maintain_order=True).first()
            .sort(["budget", "N"]))


def optimal_points(runs: pl.DataFrame, method: str, metric: str = "final_train_loss",
                   maximize: bool = False) -> pl.DataFrame:
    """The best (model, hyper-parameter) of one method at each budget."""
    prof = isoflop(runs, method, metric, maximize)
    if prof.is_empty():
        return prof
    key = pl.col(metric) * (-1.0 if maximize else 1.0)
    return prof.sort(key).group_by("budget", maintain_order=True).first().sort("budget")


def loglog_line(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Least-squares ln y = slope·ln x + intercept, full precision; skipped if under-determined."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(np.unique(x)) < 2:
        return {"skipped": f"needs >= 2 distinct budgets, got {len(np.unique(x))}"}
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    resid = np.log(y) - (slope * np.log(x) + intercept)
    return {"slope": float(slope), "intercept": float(intercept), "n_points": int(len(x)),
            "x_min": float(x.min()), "x_max": float(x.max()),
            "rmse_log": float(np.sqrt(np.mean(resid ** 2)))}


def optimal_n_fit(points: pl.DataFrame) -> dict[str, Any]:
    """ln N* = slope·ln C + intercept over a method's optimal points (lookup, as in Fig. 6)."""
    if points.is_empty():
        return {"skipped": "no finished runs"}
    if points["N"].n_unique() < 2:
        return {"skipped": "the optimal model is the same at every budget (no trend to fit)",
                "constant_N": float(points["N"][0])}
    return loglog_line(points["budget"].to_numpy(), points["N"].to_numpy())


def points_records(points: pl.DataFrame, metric: str) -> list[dict[str, Any]]:
    """JSON rows for fits.json: what the optimum was and which hyper-parameter achieved it."""
    keep = [c for c in ("run_id", "model", "budget", "C", "N", "D", metric, *registry.hyper_columns())
            if c in points.columns]
    return points.select(keep).to_dicts()
