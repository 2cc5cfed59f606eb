"""Stage ``evaluate-mteb``: evaluate a checkpoint on the MTEB subset through mteb.

Why a driver apart from :mod:`embtune.evaluate.mteb_eval`: the library runs mteb on local tasks
and writes mteb's own result folder (its docstring gives the outputs); the arguments, the run's
status (a skipped or failed run gets a record with the same status and reason), loading the checkpoint and the order the three
outputs are replaced in (``mteb.json``, the commit marker collect-runs reads, last) live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.errors import DataError
from embtune.evaluate.mteb_eval import (
    MTEB_RESULTS_DIR,
    TIDY_SCHEMA,
    check_finite,
    evaluate_embedder,
    model_meta,
    model_revision,
    skipped_record,
    with_max_length,
    write_mteb_results,
)
from embtune.io import read_json, write_json, write_parquet

STAGE = "evaluate-mteb"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", type=Path, required=True)
    p.add_argument("--run-metrics", type=Path, default=None,
                   help="the run's metrics.json; status 'skipped' writes a skipped mteb.json")
    p.add_argument("--tasks", nargs="+", required=True)
    p.add_argument("--exclude-from-average", nargs="*", default=[])
    p.add_argument("--data-dir", type=Path, required=True, help="materialise-mteb output")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per text (default: the checkpoint's training context length)")
    p.add_argument("--device", default=None)
    p.add_argument("--out", type=Path, required=True, help="mteb.json (mteb.parquet goes beside it)")
    return p


def _skipped(args: argparse.Namespace, metrics: dict[str, Any], tidy_path: Path, results_dir: Path) -> int:
    """A run training skipped, or that failed for good (embtune.train.failures): empty outputs
    and a record with the run's status and reason, not an error."""
    status = "failed" if metrics.get("status") == "failed" else "skipped"
    write_parquet(tidy_path, pl.DataFrame(schema=TIDY_SCHEMA))
    write_mteb_results(results_dir, [], None, note=f"run {status}: {metrics.get('skip_reason')}")
    write_json(args.out, {**skipped_record(metrics, args.exclude_from_average), "status": status})
    print(f"{STAGE}: run {status} ({metrics.get('skip_reason')}); wrote {args.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    tidy_path = args.out.with_suffix(".parquet")
    results_dir = args.out.parent / MTEB_RESULTS_DIR
    if args.run_metrics and not args.run_metrics.is_file():
        raise DataError(f"--run-metrics {args.run_metrics}: file not found; expected the run's metrics.json")
    # mteb.json is the commit marker (collect-runs reads it): gone before mteb.parquet and
    # mteb_results/ are replaced, back last, so a present mteb.json always has its own beside it.
    args.out.unlink(missing_ok=True)
    metrics = read_json(args.run_metrics) if args.run_metrics else {"status": "ok"}
    if metrics.get("status") in ("skipped", "failed"):
        return _skipped(args, metrics, tidy_path, results_dir)
    if not args.model_dir.is_dir():
        raise DataError(f"--model-dir {args.model_dir}: directory not found; expected the run's model/ folder")
    from embtune.models.embedder import load_embedder

    embedder = load_embedder(args.model_dir, device=args.device)
    check_finite(embedder.model, args.model_dir)
    if args.max_length is not None:
        embedder.config = with_max_length(embedder.config, args.max_length)
    run_id = metrics.get("run_id") or args.model_dir.resolve().parent.name
    meta = model_meta(embedder, f"embtune/{run_id}", model_revision(args.model_dir))
    task_results: list[Any] = []
    record, tidy = evaluate_embedder(embedder, args.tasks, args.data_dir, args.batch_size,
                                     args.exclude_from_average, meta, task_results)
    record.update(max_length=int(embedder.config.max_length), mteb_model_name=meta.name,
                  mteb_revision=meta.revision, mteb_results=MTEB_RESULTS_DIR)
    write_parquet(tidy_path, tidy)
    write_mteb_results(results_dir, task_results, meta)
    write_json(args.out, record)
    for task, value in record["tasks"].items():
        print(f"{task:<28} {value:.4f}")
    average = "n/a" if record["average"] is None else f"{record['average']:.4f}"
    print(f"{'average':<28} {average}  ({record['n_texts_encoded']} texts, {record['seconds']:.1f} s)")
    return 0
