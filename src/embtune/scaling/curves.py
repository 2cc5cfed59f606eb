"""Every run's curves as one long table per kind, the form an overlay plot reads.

Why: DVC draws one chart per file, so pointing it at each run's tracker folder gave the demo
785 single-run charts (207 of them empty: the folder's timestamps and metrics.json). One table
per curve kind with a ``run`` column gives one chart per kind with a line per run (the
``.dvc/plots/overlay.json`` template colours by ``run``), for training and query tuning alike.

Kinds: paper 1 runs' per-step training loss and learning rate (``curve.csv``: what the tracker
logs, minus nothing); paper 2 query runs' per-epoch validation loss and validation errors (the
PND count early stopping watches), and training loss. And one kind with a point per run, not per
step: paper 1 runs' held-out loss (``val_loss``, measured once, at the end) against the tokens
they trained on, a line per model and variant across budgets (``.dvc/plots/series.json`` colours
by ``series``): the loss-against-data view the scaling laws fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from embtune.core.errors import DataError
from embtune.core.layout import CURVE_CSV, METRICS_JSON
from embtune.runconfig import RunConfig

#: kind -> (column in the run's curve.csv, x column): one overlay chart each
TRAIN_KINDS: Mapping[str, tuple[str, str]] = {"train_loss": ("loss", "step"), "lr": ("lr", "step")}
#: the per-run kind: (column in metrics.json, x column in metrics.json)
HELD_OUT_KIND: Mapping[str, tuple[str, str]] = {"val_loss": ("val_loss", "tokens")}
QUERY_KINDS: Mapping[str, tuple[str, str]] = {"query_val_loss": ("val_loss", "epoch"),
                                             "query_val_errors": ("val_errors", "epoch"),
                                             "query_train_loss": ("train_loss", "epoch")}


def _read_metrics(metrics_path: Path) -> dict:
    try:
        return json.loads(metrics_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{metrics_path}: unreadable run metrics ({err}); expected a run's metrics.json") from None


def read_runs(metrics_paths: Iterable[str | Path]) -> list[tuple[Path, dict]]:
    """Each run's ``metrics.json``, read once for every kind (the curve beside it is read later)."""
    out = []
    for raw in metrics_paths:
        path = Path(raw)
        if path.name != METRICS_JSON:
            raise DataError(f"{path}: expected a run's {METRICS_JSON} (its {CURVE_CSV} is read beside it)")
        out.append((path, _read_metrics(path)))
    return out


def _run_label(metrics_path: Path, query: bool, metrics: dict) -> dict[str, str]:
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


def collect(runs: Sequence[tuple[Path, dict]], kinds: Mapping[str, tuple[str, str]],
            query: bool) -> dict[str, pl.DataFrame]:
    """One long table per kind from :func:`read_runs`: the labels of each run (run, model, ...)
    plus x and the value. A run without a curve (skipped, failed before its first step) adds no rows."""
    rows: dict[str, list[pl.DataFrame]] = {kind: [] for kind in kinds}
    for path, metrics in runs:
        labels = _run_label(path, query, metrics)
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


def _series(path: Path, run_id: str) -> str:
    """``<model> <variant tag>`` (+ the seed when not 0, + the study and its factors): the runs of
    one line differ only in budget; seeds stay lines of their own (their scatter is the noise)."""
    try:
        rid = RunConfig.parse_id(run_id)
    except ValueError as err:
        raise DataError(f"{path}: {err}") from None
    study = [] if rid.study is None else [rid.study, *(f"{k}-{v}" for k, v in rid.factors)]
    return " ".join([rid.model, rid.tag, *([f"s{rid.seed}"] if rid.seed else []), *study])


def held_out(runs: Sequence[tuple[Path, dict]]) -> pl.DataFrame:
    """The held-out loss of every finished paper-1 run (:func:`read_runs`) against its tokens, one
    row per run, sorted by series then tokens. Runs without a finite ``val_loss`` (skipped,
    failed) add no row."""
    col, x = HELD_OUT_KIND["val_loss"]
    rows = []
    for path, metrics in runs:
        labels = _run_label(path, False, metrics)
        value, tokens = metrics.get(col), metrics.get(x)
        if labels["status"] != "ok" or not isinstance(value, (int, float)) or not isinstance(tokens, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        rows.append({"series": _series(path, labels["run"]), **labels, x: int(tokens), col: float(value)})
    schema = {"series": pl.String, "run": pl.String, "model": pl.String, "status": pl.String, "method": pl.String,
              x: pl.Int64, col: pl.Float64}
    return pl.DataFrame(rows, schema=schema).sort("series", x)
