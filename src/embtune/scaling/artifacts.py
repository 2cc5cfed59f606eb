"""Typed readers of the paper-1 artifacts that flow between stages: a run's ``metrics.json``, the
runs table (``runs.parquet``), ``fits.json`` and a recipe, plus the range a contrastive loss can
take.

Why: each of these is written by one stage and read by others, and a hand-edited, truncated or
impossible file must not pass silently (a NaN slope would make ``recipe`` write ``"predicted_loss":
NaN``) nor fail with a traceback from deep inside polars. Each reader checks schema, types and
ranges where the file is read and raises :class:`~embtune.core.errors.DataError` naming the file, the
field and what was expected.

An impossible *measured* value is not an error but an exclusion: a finished run whose loss is
NaN/inf or outside what InfoNCE can take keeps its row, its loss reads as missing (the fits leave
it out), and the ``excluded`` column says why (:func:`apply_exclusions`); collect-runs,
fit-scaling and the report name those runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.errors import DataError
from embtune.core.io import read_json, read_parquet

METRICS_STATUSES = ("ok", "skipped", "failed")
#: metrics.json fields that must be numbers (or null) when present
METRICS_NUMBERS = ("final_train_loss", "val_loss", "flops", "tokens", "steps", "budget", "peak_lr",
                   "n_total", "n_forward", "n_backward", "n_update", "trainable_fraction",
                   "wall_seconds", "world_size")
#: numerical slack on the loss range (float32 losses averaged over a window)
LOSS_SLACK = 1e-3
#: the logit scale assumed when a run's is unknown: twice paper 1's largest inverse temperature
#: (50, App. D.2 grid)
MAX_LOGIT_SCALE = 100.0
#: columns every reader of the runs table needs; a stage adds its loss column
RUNS_REQUIRED = ("run_id", "status", "method", "model", "budget")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_metrics(path: str | Path) -> dict[str, Any]:
    """A run's metrics.json: an object, ``status`` ok | skipped | failed (absent reads ok), and
    every known numeric field a number or null (NaN/inf are read, and excluded later)."""
    p = Path(path)
    try:
        metrics = read_json(p)
    except FileNotFoundError:
        raise DataError(f"{p}: file not found; expected the run's metrics.json") from None
    if not isinstance(metrics, dict):
        raise DataError(f"{p}: a JSON {type(metrics).__name__}; expected an object of run metrics")
    status = metrics.get("status", "ok")
    if status not in METRICS_STATUSES:
        raise DataError(f"{p}: field 'status' is {status!r}; expected one of {', '.join(METRICS_STATUSES)}")
    for key in METRICS_NUMBERS:
        value = metrics.get(key)
        if value is not None and not _is_number(value):
            raise DataError(f"{p}: field {key!r} is {value!r} ({type(value).__name__}); expected a number")
        why = value_range_problem(key, value)
        if why:
            raise DataError(f"{p}: field {key!r} is {value!r}; expected {why}")
    return metrics


#: counts no run can have fewer than zero of (a finite value outside the range is impossible;
#: NaN/inf are measured failures, excluded by name later)
NONNEG_METRICS = ("flops", "tokens", "steps", "n_total", "n_forward", "n_backward", "n_update", "wall_seconds",
                  "N", "N_F", "N_B", "N_U", "C", "D")


def value_range_problem(key: str, value: Any) -> str | None:
    """What a finite ``value`` of ``key`` (a metrics field or runs-table column) must be, when it is not."""
    if not _is_number(value) or not math.isfinite(value):
        return None
    if key in ("trainable_fraction", "S") and not 0 <= value <= 1:
        return "a fraction in [0, 1]"
    if key == "budget" and value <= 0:
        return "a FLOP budget > 0"
    if key in ("world_size", "batch_size") and value < 1:
        return "at least 1"
    if key in NONNEG_METRICS and value < 0:
        return "a count >= 0"
    return None


def check_mteb_record(path: str | Path, record: Any) -> None:
    """An mteb.json: an object whose ``average`` and per-task scores are null or in [0, 1]
    (mteb's main scores are fractions: an average of 5.0 is not a score)."""
    p = Path(path)
    if not isinstance(record, dict):
        raise DataError(f"{p}: a JSON {type(record).__name__}; expected the object evaluate-mteb writes")
    tasks = record.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise DataError(f"{p}: field 'tasks' is {type(tasks).__name__}; expected an object of task -> score")
    for key, value in [("average", record.get("average"))] + [(f"tasks.{k}", v) for k, v in tasks.items()]:
        if value is None:
            continue
        if not _is_number(value) or not (0 <= value <= 1):
            raise DataError(f"{p}: field {key!r} is {value!r}; expected a score in [0, 1] (or null)")


# --------------------------------------------------------------------------- loss range
def loss_bounds(batch_size: Any, logit_scale: Any = None) -> tuple[float, float]:
    """[0, ln(B) + 2·s] + slack for symmetric InfoNCE over a batch of B pairs with logits
    cos·s: each row's cross-entropy is log Σ_j exp(S_ij − S_ii), and with cosines in [−1, 1]
    every difference is at most 2s, so no row exceeds ln(B·e^{2s}); below 0 is impossible.

    Why not ln(2B) (what a model that cannot tell the candidates apart scores): a finished run
    can be worse than chance at τ = 1/40, and paper-like losses of small models exceed it; the
    bound here is what the loss *can* be. ``logit_scale`` unknown (a table without it):
    :data:`MAX_LOGIT_SCALE`. Without a batch size only the lower bound applies."""
    if not (_is_number(batch_size) and batch_size > 0):
        return -LOSS_SLACK, math.inf
    scale = float(logit_scale) if _is_number(logit_scale) and math.isfinite(logit_scale) else MAX_LOGIT_SCALE
    return -LOSS_SLACK, math.log(float(batch_size)) + 2 * scale + LOSS_SLACK


def loss_exclusion(metric: str, value: Any, batch_size: Any, logit_scale: Any = None) -> str | None:
    """Why a finished run's loss ``value`` cannot be used (None when it can)."""
    if value is None:
        return None
    if not _is_number(value) or not math.isfinite(value):
        return f"{metric} {value!r} is not finite"
    lo, hi = loss_bounds(batch_size, logit_scale)
    if value < lo or value > hi:
        return f"{metric} {value!r} outside [0, {hi - LOSS_SLACK:.4g}] (what InfoNCE over batch {batch_size} can be)"
    return None


def apply_exclusions(table: pl.DataFrame) -> pl.DataFrame:
    """Finished runs with an impossible loss: the value becomes null and ``excluded`` says why
    (appended to any reason already there; idempotent)."""
    if "status" not in table.columns:
        return table
    if "excluded" not in table.columns:
        table = table.with_columns(pl.lit(None, dtype=pl.Utf8).alias("excluded"))
    metrics = [m for m in ("final_train_loss", "val_loss") if m in table.columns]
    if not metrics:
        return table
    batch = table["batch_size"].to_list() if "batch_size" in table.columns else [None] * table.height
    scale = table["logit_scale"].to_list() if "logit_scale" in table.columns else [None] * table.height
    status = table["status"].to_list()
    reasons = table["excluded"].to_list()
    columns = {m: table[m].to_list() for m in metrics}
    for i in range(table.height):
        if status[i] != "ok":
            continue
        for m in metrics:
            why = loss_exclusion(m, columns[m][i], batch[i], scale[i])
            if why:
                columns[m][i] = None
                reasons[i] = f"{reasons[i]}; {why}" if reasons[i] else why
    return table.with_columns(*[pl.Series(m, v, dtype=pl.Float64) for m, v in columns.items()],
                              pl.Series("excluded", reasons, dtype=pl.Utf8))


def excluded_runs(table: pl.DataFrame, metric: str | None = None) -> dict[str, Any]:
    """Finished runs left out for an impossible value (``metric``'s only, when given):
    ``{"count", "runs": [{"run_id", "metrics", "reason"}]}``."""
    if "excluded" not in table.columns:
        return {"count": 0, "runs": []}
    rows = table.filter((pl.col("status") == "ok") & pl.col("excluded").is_not_null())
    runs = [{"run_id": r["run_id"], "reason": r["excluded"],
             "metrics": sorted({part.split()[0] for part in r["excluded"].split("; ")})}
            for r in rows.select("run_id", "excluded").iter_rows(named=True)]
    if metric is not None:
        runs = [r for r in runs if metric in r["metrics"]]
    return {"count": len(runs), "runs": runs}


# --------------------------------------------------------------------------- runs table
def read_runs_table(path: str | Path, required: Sequence[str] = RUNS_REQUIRED) -> pl.DataFrame:
    """runs.parquet with the ``required`` columns (numeric ones numeric), impossible losses
    excluded by name (:func:`apply_exclusions`)."""
    p = Path(path)
    table = read_parquet(p, "the runs table collect-runs writes")
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise DataError(f"{p}: runs table lacks column(s) {', '.join(missing)}; expected the columns "
                        f"collect-runs writes ({', '.join(required)}, ...)")
    for col in ("budget", "final_train_loss", "val_loss", "N", "C", "D", "batch_size"):
        if col in table.columns and not table[col].dtype.is_numeric() and table[col].dtype != pl.Null:
            raise DataError(f"{p}: column {col!r} has type {table[col].dtype}; expected numbers")
    bad = table.filter(pl.col("budget").is_not_null() & ~(pl.col("budget").cast(pl.Float64).is_finite()
                                                          & (pl.col("budget").cast(pl.Float64) > 0)))
    if bad.height:
        raise DataError(f"{p}: column 'budget' of run {bad['run_id'][0]} is {bad['budget'][0]}; "
                        "expected a finite FLOP budget > 0")
    _check_rows(p, table)
    return apply_exclusions(table)


def _check_rows(p: Path, table: pl.DataFrame) -> None:
    """One row per run, and counts in range: a duplicated row would count twice in the fits and
    summaries, a negative D or N has no meaning, a finished run trained on D > 0 tokens."""
    dup = table["run_id"].is_duplicated()
    if dup.any():
        rows = [i for i, d in enumerate(dup.to_list()) if d]
        raise DataError(f"{p}: run {table['run_id'][rows[0]]!r} appears in rows {rows[0]} and {rows[1]}; "
                        "expected one row per run (collect-runs writes each run once)")
    for col in ("N", "N_F", "N_B", "N_U", "C", "D", "S", "steps", "batch_size"):
        if col not in table.columns or not table[col].dtype.is_numeric():
            continue
        for i, value in enumerate(table[col].to_list()):
            why = value_range_problem(col, value)
            if why:
                raise DataError(f"{p}: row {i} (run {table['run_id'][i]!r}) column {col!r} is {value!r}; "
                                f"expected {why}")
    if "D" in table.columns and table["D"].dtype.is_numeric():
        for i, (status, d) in enumerate(zip(table["status"].to_list(), table["D"].to_list(), strict=True)):
            if status == "ok" and _is_number(d) and math.isfinite(d) and d <= 0:
                raise DataError(f"{p}: row {i} (run {table['run_id'][i]!r}) is ok with D = {d!r} tokens; "
                                "expected a finished run to have trained on D > 0 tokens")


# --------------------------------------------------------------------------- fits, recipe
def nonfinite_fields(obj: Any, at: str = "") -> Iterator[str]:
    """Dotted paths of every NaN/inf number in a JSON tree."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from nonfinite_fields(v, f"{at}.{k}" if at else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from nonfinite_fields(v, f"{at}[{i}]")
    elif _is_number(obj) and not math.isfinite(obj):
        yield at


def _read_object(p: Path, what: str, required: Sequence[str]) -> dict[str, Any]:
    try:
        obj = read_json(p)
    except FileNotFoundError:
        raise DataError(f"{p}: file not found; expected {what}") from None
    if not isinstance(obj, dict):
        raise DataError(f"{p}: a JSON {type(obj).__name__}; expected {what} (an object)")
    missing = [k for k in required if k not in obj]
    if missing:
        raise DataError(f"{p}: field(s) {', '.join(missing)} missing; expected {what}")
    bad = list(nonfinite_fields(obj))
    if bad:
        raise DataError(f"{p}: field {bad[0]} is NaN/inf" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
                        + f"; expected finite numbers in {what}")
    return obj


def read_fits(path: str | Path) -> dict[str, Any]:
    """fits.json: an object with ``frontier`` (and ``methods``, a list); no NaN/inf anywhere;
    every line's ``slope``/``intercept`` a number."""
    p = Path(path)
    fits = _read_object(p, "the fits.json fit-scaling writes", ("frontier",))
    if not isinstance(fits.get("methods", []), list) or not isinstance(fits["frontier"], dict):
        raise DataError(f"{p}: fields 'methods' (a list) and 'frontier' (an object) have the wrong "
                        "types; expected the fits.json fit-scaling writes")
    _check_lines(p, fits)
    return fits


def _check_lines(p: Path, obj: Any, at: str = "") -> None:
    if isinstance(obj, dict):
        for key in ("slope", "intercept"):
            if key in obj and obj[key] is not None and not _is_number(obj[key]):
                raise DataError(f"{p}: field {at + '.' if at else ''}{key} is {obj[key]!r}; expected a number")
        for k, v in obj.items():
            _check_lines(p, v, f"{at}.{k}" if at else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_lines(p, v, f"{at}[{i}]")


def read_recipe(path: str | Path) -> dict[str, Any]:
    """A recipe.json: an object with ``budget`` (finite, > 0) and ``method`` (or ``skipped``,
    saying why there is no plan); no NaN/inf."""
    p = Path(path)
    recipe = _read_object(p, "a recipe.json the recipe stage writes", ("budget",))
    if "skipped" not in recipe and "method" not in recipe:
        raise DataError(f"{p}: field(s) method missing; expected a recipe.json the recipe stage writes")
    check_budget(recipe["budget"], f"{p}: field budget")
    return recipe


def check_budget(value: Any, where: str = "--budget") -> float:
    """A FLOP budget: a finite number > 0."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise DataError(f"{where} is {value!r}; expected a finite FLOP budget > 0")
    return float(value)
