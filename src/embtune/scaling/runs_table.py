"""One row per training run, from the files the train/evaluate stages wrote (stage
``collect-runs``, driver :mod:`embtune.stages.collect_runs`).

Reads ``<runs-dir>/<run_id>/{metrics.json, manifest.json, mteb.json}`` and the planning-time
``skipped.csv`` (run_id, reason). Skipped and failed runs stay in the table with ``status`` and
``skip_reason`` so the analysis can say what is missing instead of silently dropping it.

Columns: run_id, method, model, hidden_size, num_layers, N (non-embedding), N_F, N_B, N_U,
S (trainable fraction N_U/N_F), D (tokens), C (FLOP), budget, each method's hyper-parameter
column (its registry entry: freeze_fraction, lora_rank), lora_alpha, lora_embed_in, peak_lr,
batch_size, steps, tokens_per_pair, final_train_loss, val_loss, mteb_average, mteb_<task>...,
status, skip_reason, seed, nonfinite, excluded, logit_scale, study; and what the run cost: wall_seconds (training
steps), device_seconds (wall_seconds x processes: GPU-seconds on a GPU), device (its name),
hardware_flops (what those seconds executed, ``embtune.plan.cost``), so the plan's estimate can be
checked against reality. Status ``dropped``: cut by ``train.gpu_hours_cap`` at planning time
(skipped.csv's status column).

``study`` is ``main`` for the main grid and a study's name for its own runs (``train.studies``,
paper 1 App. D/F), read from the id (:meth:`embtune.runconfig.RunConfig.parse_id`): the fits,
frontier and recipe use main only (:func:`embtune.scaling.isoflop.ok_rows`).

``nonfinite`` lists (comma-separated) the metrics a run recorded as NaN or inf; they read as
missing (null) in their columns, so the fits leave such a run out. ``excluded`` generalises it:
the reason a finished run's value cannot be used (NaN/inf, or a loss outside what InfoNCE can be:
:func:`embtune.scaling.artifacts.loss_exclusion`); this column, the manifest and the fits'
``excluded`` say which runs and why instead of dropping them silently.

Status ``failed``: the run failed for good and wrote a failure record (:mod:`embtune.train.failures`);
``failure_reason`` is its reason (diverged, oom, time_limit, data_too_small) and ``skip_reason``
``<reason>: <detail>``. :func:`embtune.scaling.failed.failed_runs` lists them; the fits say per
method how many rows they lost (``fits.json`` ``lost_rows``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.errors import DataError
from embtune.core.io import read_json
from embtune.core.layout import MANIFEST_JSON, METRICS_JSON, MTEB_JSON, Runs
from embtune.models import methods as registry
from embtune.plan.cost import measured_hardware_flops
from embtune.runconfig import RunConfig
from embtune.scaling.artifacts import apply_exclusions, check_mteb_record, excluded_runs, read_metrics
from embtune.train.failures import failure_of

FLOAT_COLS = ("N", "N_F", "N_B", "N_U", "S", "D", "C", "budget", "lora_alpha",
              "peak_lr", "steps", "tokens_per_pair", "final_train_loss", "val_loss", "mteb_average",
              "wall_seconds", "device_seconds", "hardware_flops", "logit_scale", "peak_memory_bytes",
              "estimated_peak_memory_bytes")
INT_COLS = ("hidden_size", "num_layers", "batch_size", "seed")
STR_COLS = ("run_id", "method", "model", "status", "skip_reason", "nonfinite", "excluded", "device", "study",
            "failure_reason")
BOOL_COLS = ("lora_embed_in",)
# metrics.json / mteb.json numbers that become columns: a NaN/inf one is reported in ``nonfinite``
CHECKED_METRICS = ("final_train_loss", "val_loss", "flops", "tokens", "steps")


def run_config(manifest: dict[str, Any]) -> dict[str, Any]:
    """The run config inside a run's manifest (nested under a key, or at the top level)."""
    for key in ("run_config", "config", "run"):
        if isinstance(manifest.get(key), dict) and "method" in manifest[key]:
            return manifest[key]
    return manifest


def parse_run_id(run_id: str) -> dict[str, Any]:
    """What a run id tells (:meth:`embtune.runconfig.RunConfig.parse_id`): model, method and its
    hyper column, budget, seed, and ``study`` (``main``, or a study's name: paper 1 App. D/F);
    nothing for a directory name that is not a run id."""
    try:
        return RunConfig.parse_id(run_id).columns()
    except ValueError:
        return {}


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def run_row(run_id: str, metrics: dict[str, Any], manifest: dict[str, Any],
            mteb: dict[str, Any] | None) -> dict[str, Any]:
    """One table row from a run's three JSON files (pure)."""
    cfg = run_config(manifest)
    model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
    parsed = parse_run_id(run_id)
    n_total, n_forward = _num(metrics.get("n_total")), _num(metrics.get("n_forward"))
    n_update = _num(metrics.get("n_update"))
    s = _num(metrics.get("trainable_fraction"))
    if s is None and n_forward and n_update is not None:
        s = n_update / n_forward            # S = N_U / N_F (embtune.models.flops)
    tokens, steps = _num(metrics.get("tokens")), _num(metrics.get("steps"))
    batch = (cfg.get("train") or {}).get("batch_size") or metrics.get("batch_size")
    row: dict[str, Any] = {
        "run_id": run_id,
        "method": metrics.get("method") or cfg.get("method") or parsed.get("method"),
        "model": (metrics.get("model") if isinstance(metrics.get("model"), str) else None)
                 or model.get("name") or parsed.get("model"),
        "hidden_size": model.get("hidden_size"), "num_layers": model.get("num_layers"),
        "N": n_total, "N_F": n_forward, "N_B": _num(metrics.get("n_backward")),
        "N_U": n_update, "S": s, "D": tokens, "C": _num(metrics.get("flops")),
        "budget": _num(metrics.get("budget")) or _num(cfg.get("budget")) or parsed.get("budget"),
        "lora_alpha": _num(cfg.get("lora_alpha")),
        "lora_embed_in": cfg.get("lora_embed_in") if isinstance(cfg.get("lora_embed_in"), bool) else None,
        "peak_lr": _num(metrics.get("peak_lr")) or _num(cfg.get("peak_lr")),
        "batch_size": batch, "steps": steps,
        "tokens_per_pair": tokens / (steps * batch) if tokens and steps and batch else None,
        "final_train_loss": _num(metrics.get("final_train_loss")),
        "val_loss": _num(metrics.get("val_loss")),
        "status": metrics.get("status", "ok"), "skip_reason": metrics.get("skip_reason"),
        "seed": cfg.get("seed", parsed.get("seed")),
        "mteb_average": None,
        **cost_columns(metrics, cfg),
        "study": parsed.get("study", "main"),
        "logit_scale": run_logit_scale(cfg),
        "failure_reason": (failure_of(metrics) or {}).get("reason"),
    }
    nonfinite = [k for k in CHECKED_METRICS if _is_nonfinite(metrics.get(k))]
    if mteb and mteb.get("status", "ok") == "ok":
        row["mteb_average"] = _num(mteb.get("average"))
        nonfinite += ["mteb_average"] if _is_nonfinite(mteb.get("average")) else []
        for task, score in sorted((mteb.get("tasks") or {}).items()):
            row[f"mteb_{task}"] = _num(score)
            nonfinite += [f"mteb_{task}"] if _is_nonfinite(score) else []
    row["nonfinite"] = ",".join(nonfinite) or None
    row["excluded"] = "; ".join(f"{k} is NaN/inf" for k in nonfinite) or None
    for col in registry.hyper_columns():        # each method's own column (lora_rank, freeze_fraction)
        row[col] = registry.hyper_value(col, _num(cfg.get(col, parsed.get(col))))
    return row


def run_logit_scale(cfg: dict[str, Any]) -> float | None:
    """The factor on the cosine the run's loss used (1/τ, or exp(τ) for ``logit_scale: exp``):
    with the batch size it bounds the loss (:func:`embtune.scaling.artifacts.loss_bounds`)."""
    train = cfg.get("train") if isinstance(cfg.get("train"), dict) else {}
    tau = _num(train.get("temperature"))
    if tau is None:
        return None
    if train.get("logit_scale", "inverse") == "exp":
        return math.exp(tau)
    return 1.0 / tau if tau > 0 else None


def _is_nonfinite(value: Any) -> bool:
    """A number that is NaN or inf (JSON ``NaN``/``Infinity`` parse to these); not a missing one."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isfinite(value)


def nonfinite_runs(table: pl.DataFrame, metric: str | None = None) -> dict[str, Any]:
    """Finished runs (status ok) left out for a NaN/inf or impossible metric (``metric`` only,
    when given): ``{"count", "runs": [{"run_id", "metrics", "reason"}]}``; a fit of ``metric``
    leaves them out (:func:`embtune.scaling.artifacts.excluded_runs`)."""
    return excluded_runs(apply_exclusions(table), metric)


def cost_columns(metrics: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """Measured time of the training steps and the hardware FLOPs they executed (None if unknown)."""
    wall = _num(metrics.get("wall_seconds"))
    procs = _num(metrics.get("world_size")) or 1.0
    device = metrics.get("device_name") or metrics.get("device")
    return {"wall_seconds": wall, "device_seconds": wall * procs if wall is not None else None,
            "device": str(device) if device is not None else None,
            "hardware_flops": measured_hardware_flops(metrics, cfg) if metrics.get("status", "ok") == "ok" else None,
            "peak_memory_bytes": _num(metrics.get("peak_memory_bytes")),
            "estimated_peak_memory_bytes": _num(metrics.get("estimated_peak_memory_bytes"))}


def skipped_row(run_id: str, reason: str, status: str = "skipped") -> dict[str, Any]:
    """A planning-time skip (or a run dropped by the GPU-hour cap): what the id tells, the status,
    no measured numbers."""
    return {"run_id": run_id, "study": "main", **parse_run_id(run_id), "status": status or "skipped",
            "skip_reason": reason}


def build_table(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows -> a typed DataFrame with every standard column present (nulls where unknown)."""
    tasks = sorted({k for r in rows for k in r if k.startswith("mteb_") and k != "mteb_average"})
    schema: dict[str, Any] = {c: pl.Utf8 for c in STR_COLS}
    schema.update({c: pl.Float64 for c in FLOAT_COLS})
    schema.update({c: pl.Int64 for c in INT_COLS})
    schema.update({c: pl.Boolean for c in BOOL_COLS})
    schema.update({c: pl.Int64 if integer else pl.Float64 for c, integer in registry.hyper_types().items()})
    schema.update({t: pl.Float64 for t in tasks})
    data = {c: [r.get(c) for r in rows] for c in schema}
    return apply_exclusions(pl.DataFrame(data, schema=schema).sort("run_id"))


def read_skipped_csv(path: Path) -> list[tuple[str, str, str]]:
    """(run_id, reason, status) per row; status ``skipped`` when the file has no status column."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [(r["run_id"], r.get("reason", ""), r.get("status") or "skipped") for r in csv.DictReader(fh)]


def _read(path: Path) -> dict[str, Any]:
    return read_json(path) if path.exists() else {}


def collect(runs_dir: Path | None, skipped: Sequence[tuple[str, ...]],
            metrics_files: Sequence[Path] = ()) -> list[dict[str, Any]]:
    """Rows for the given runs' metrics.json (or every run directory under ``runs_dir``), plus the
    planning-time skips. The workflow passes the planned runs explicitly, so runs left over from
    an earlier grid in the same results folder never leak into the fits."""
    rows = []
    seen = set()
    paths = sorted(metrics_files) if metrics_files else sorted(runs_dir.glob(f"*/{METRICS_JSON}")) if runs_dir else []
    for metrics_path in paths:
        runs, run_id = Runs(metrics_path.parent.parent), metrics_path.parent.name  # runs/<run_id>/
        if run_id in seen:
            raise DataError(f"{metrics_path}: run {run_id!r} is given twice; expected each run's "
                            "metrics.json once (a duplicated row counts twice in the fits and summaries)")
        mteb = _read(runs.file(run_id, MTEB_JSON)) or None
        if mteb is not None:
            check_mteb_record(runs.file(run_id, MTEB_JSON), mteb)
        rows.append(run_row(run_id, read_metrics(metrics_path), _read(runs.file(run_id, MANIFEST_JSON)), mteb))
        seen.add(run_id)
    rows += [skipped_row(rid, reason, *status) for rid, reason, *status in skipped if rid not in seen]
    return rows


#: The final values of a run `dvc metrics show` lists (table column -> its name there).
FINAL_METRICS = {"status": "status", "study": "study", "method": "method", "model": "model", "budget": "budget",
                 "C": "flops", "D": "tokens", "steps": "steps", "final_train_loss": "final_train_loss",
                 "val_loss": "val_loss", "mteb_average": "mteb_average"}


def final_metrics(table: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """run_id -> its final values, unknown ones left out: one small file per run
    (collect-runs' ``run_metrics/<run_id>.json``), so `dvc metrics show` has a row per run."""
    cols = [c for c in FINAL_METRICS if c in table.columns]
    return {row["run_id"]: {FINAL_METRICS[c]: row[c] for c in cols if row[c] is not None}
            for row in table.select("run_id", *cols).iter_rows(named=True)}

