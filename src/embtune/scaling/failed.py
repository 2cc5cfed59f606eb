"""Runs that failed for good, read from the runs table (status ``failed``, ``failure_reason``;
:mod:`embtune.train.failures` writes the records, :mod:`embtune.scaling.runs_table` the columns):
what fit-scaling writes as ``failed_runs`` / ``lost_rows`` and the report lists.

Why a module apart from the runs table: the figures stage reads these from the table it is given,
and needs none of what builds the table (run-id parsing, the sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from embtune.models import methods as registry


def failed_runs(table: pl.DataFrame, study: str | None = None) -> dict[str, Any]:
    """Runs that failed for good (``study`` only, when given): ``{"count", "by_reason",
    "runs": [{"run_id", "method", "model", "study", "reason", "detail"}]}``."""
    if "failure_reason" not in table.columns:
        return {"count": 0, "by_reason": {}, "runs": []}
    rows = table.filter(pl.col("status") == "failed")
    if study is not None:
        rows = rows.filter(pl.col("study") == study)
    runs = [{"run_id": r["run_id"], "method": r["method"], "model": r["model"], "study": r["study"],
             "reason": r["failure_reason"] or "unknown", "detail": r["skip_reason"]}
            for r in rows.sort("run_id").iter_rows(named=True)]
    by_reason: dict[str, int] = {}
    for r in runs:
        by_reason[r["reason"]] = by_reason.get(r["reason"], 0) + 1
    return {"count": len(runs), "by_reason": dict(sorted(by_reason.items())), "runs": runs}


def lost_rows(table: pl.DataFrame, methods: Sequence[str] = ()) -> dict[str, Any]:
    """Per method (every method with a planned main-grid run, plus ``methods``): how many rows its
    fit lost to failed runs, and which (``{method: {"count", "runs": [{"run_id", "reason"}]}}``)."""
    failed = failed_runs(table, "main")["runs"]
    names = set(methods) | set(table.filter(pl.col("study") == "main")["method"].drop_nulls().to_list())
    out = {m: {"count": 0, "runs": []} for m in registry.ordered(sorted(names))}
    for r in failed:
        entry = out.setdefault(r["method"] or "unknown", {"count": 0, "runs": []})
        entry["count"] += 1
        entry["runs"].append({"run_id": r["run_id"], "reason": r["reason"]})
    return out
