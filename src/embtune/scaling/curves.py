"""Every run's curves as one long table per kind, the form an overlay plot reads.

Why: DVC draws one chart per file, so pointing it at each run's tracker folder gave the demo
785 single-run charts (207 of them empty: the folder's timestamps and metrics.json). One table
per curve kind with a ``run`` column gives one chart per kind with a line per run (the
``.dvc/plots/overlay.json`` template colours by ``run``), for training and query tuning alike.

Kinds: paper 1 runs' per-step training loss and learning rate (``curve.csv``: what the tracker
logs, minus nothing); paper 2 query runs' per-epoch validation loss and validation errors (the
PND count early stopping watches), and training loss.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl

from embtune.core.errors import DataError
from embtune.core.layout import CURVE_CSV, METRICS_JSON

#: kind -> (column in the run's curve.csv, x column): one overlay chart each
TRAIN_KINDS: Mapping[str, tuple[str, str]] = {"train_loss": ("loss", "step"), "lr": ("lr", "step")}
QUERY_KINDS: Mapping[str, tuple[str, str]] = {"query_val_loss": ("val_loss", "epoch"),
                                             "query_val_errors": ("val_errors", "epoch"),
                                             "query_train_loss": ("train_loss", "epoch")}


def _run_label(metrics_path: Path, query: bool) -> dict[str, str]:
    try:
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{metrics_path}: unreadable run metrics ({err}); expected a run's metrics.json") from None
    if query:
        run = f"{metrics_path.parent.parent.name}/{metrics_path.parent.name}"
        return {"run": run, "model": metrics_path.parent.parent.name, "status": str(metrics.get("status", "ok"))}
    return {"run": str(metrics.get("run_id") or metrics_path.parent.name), "model": str(metrics.get("model", "")),
            "method": str(metrics.get("method", "")), "status": str(metrics.get("status", "ok"))}


def _read_curve(path: Path, columns: Iterable[str]) -> pl.DataFrame | None:
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        frame = pl.read_csv(path, infer_schema_length=None)
    except Exception as err:  # noqa: BLE001 - polars raises several kinds; the message names the file
        raise DataError(f"{path}: unreadable curve ({err}); expected a run's curve.csv") from None
    missing = sorted(set(columns) - set(frame.columns))
    if missing:
        raise DataError(f"{path}: missing columns {missing}; expected {sorted(columns)}")
    return frame


def collect(metrics_paths: Iterable[str | Path], kinds: Mapping[str, tuple[str, str]],
            query: bool) -> dict[str, pl.DataFrame]:
    """One long table per kind: the labels of each run (run, model, ...) plus x and the value.
    A run without a curve (skipped, failed before its first step) adds no rows."""
    rows: dict[str, list[pl.DataFrame]] = {kind: [] for kind in kinds}
    for raw in metrics_paths:
        path = Path(raw)
        if path.name != METRICS_JSON:
            raise DataError(f"{path}: expected a run's {METRICS_JSON} (its {CURVE_CSV} is read beside it)")
        labels = _run_label(path, query)
        needed = {col for col, _ in kinds.values()} | {x for _, x in kinds.values()}
        curve = _read_curve(path.parent / CURVE_CSV, needed)
        if curve is None:
            continue
        for kind, (col, x) in kinds.items():
            part = curve.select(pl.col(x).cast(pl.Int64), pl.col(col).cast(pl.Float64)).drop_nulls()
            rows[kind].append(part.with_columns(**{k: pl.lit(v) for k, v in labels.items()}))
    out = {}
    for kind, (col, x) in kinds.items():
        label_cols = ["run", "model", "status"] + ([] if query else ["method"])
        empty = pl.DataFrame(schema={**{c: pl.String for c in label_cols}, x: pl.Int64, col: pl.Float64})
        frame = pl.concat(rows[kind], how="diagonal") if rows[kind] else empty
        out[kind] = frame.select(*label_cols, x, col).sort("run", x)
    return out
