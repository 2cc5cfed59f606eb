"""Stage ``evaluate-mteb``: evaluate a checkpoint, or a batch of them, on the MTEB subset through mteb.

Why a driver apart from :mod:`embtune.evaluate.mteb_eval`: the library runs mteb on local tasks
and writes mteb's own result folder (its docstring gives the outputs); the arguments, the run's
status (a skipped or failed run gets a record with the same status and reason), loading the checkpoint and the order the three
outputs are replaced in (``mteb.json``, the commit marker collect-runs reads, last) live here.

Batches (``--runs-json``, rule ``evaluate_mteb_batch``): one process evaluates many checkpoints,
so mteb, torch and transformers are imported once (~8 s of a ~10 s single evaluation at demo
scale) and a SLURM job starts once per batch. Each run's record carries ``eval_key``: a hash of
its weights (the mteb revision), the evaluation settings, this stage's code version and the
materialised data. A member whose previous ``mteb.json`` (``previous``) has the same key is
reused (its three outputs copied), not re-evaluated: a changed run does not re-evaluate its
batch-mates.

The run's ``model/`` (``--model-out``, or a batch run's ``model_out``): training's files
(``trained/``; LoRA: ``trained_merged/``) as hard links and the card with ``model-index`` from these
scores (:func:`embtune.evaluate.publish.model_folder`), the folder to load and to upload, rebuilt
on every call (links and a card: milliseconds). Why here: the scores exist only now, and
training's ``trained/`` is training's output, which no later stage may rewrite.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, dir_fingerprint, json_sha256, read_json, write_json, write_parquet
from embtune.evaluate.mteb_eval import (
    MTEB_RESULTS_DIR,
    TIDY_SCHEMA,
    check_finite,
    evaluate_embedder,
    model_meta,
    model_revision,
    mteb_data_source,
    skipped_record,
    with_max_length,
    write_mteb_results,
)

STAGE = "evaluate-mteb"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", type=Path, default=None, help="one checkpoint (or --runs-json)")
    p.add_argument("--run-metrics", type=Path, default=None,
                   help="the run's metrics.json; status 'skipped' writes a skipped mteb.json")
    p.add_argument("--tasks", nargs="+", required=True)
    p.add_argument("--exclude-from-average", nargs="*", default=[])
    p.add_argument("--data-dir", type=Path, required=True, help="materialise-mteb output")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per text (default: the checkpoint's training context length)")
    p.add_argument("--device", default=None)
    p.add_argument("--out", type=Path, default=None, help="mteb.json (mteb.parquet goes beside it)")
    p.add_argument("--model-out", type=Path, default=None,
                   help="also write the run's model/ (the checkpoint's files + card with model-index); "
                        "needs --run-metrics in the run directory")
    p.add_argument("--runs-json", default=None,
                   help='a batch: JSON list of {"model_dir", "run_metrics", "out", "previous", "model_out"} '
                        "(previous: the run's current mteb.json, reused when its eval_key still matches; "
                        "model_out: as --model-out)")
    p.add_argument("--code-version", default="", help="this stage's code hash (part of eval_key)")
    return p


def _withdraw(out: Path) -> None:
    """mteb.json is the commit marker (collect-runs reads it): removed only once its replacement
    and the two outputs beside it are ready to be renamed into place (inputs checked, the model
    evaluated), and back last, so a present mteb.json always has its own beside it and a failure
    before this point leaves the previous result whole."""
    out.unlink(missing_ok=True)


def _skipped(out: Path, excluded: list[str], metrics: dict[str, Any], tidy_path: Path, results_dir: Path) -> None:
    """A run training skipped, or that failed for good (embtune.train.failures): empty outputs
    and a record with the run's status and reason, not an error."""
    status = "failed" if metrics.get("status") == "failed" else "skipped"
    _withdraw(out)
    write_parquet(tidy_path, pl.DataFrame(schema=TIDY_SCHEMA))
    write_mteb_results(results_dir, [], None, note=f"run {status}: {metrics.get('skip_reason')}")
    write_json(out, {**skipped_record(metrics, excluded), "status": status})
    print(f"{STAGE}: run {status} ({metrics.get('skip_reason')}); wrote {out}")


def _batch(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The runs of ``--runs-json`` (or the one of --model-dir/--out), each checked for its keys."""
    if args.runs_json is None:
        if args.model_dir is None or args.out is None:
            raise DataError("evaluate-mteb: give --model-dir and --out, or --runs-json")
        return [{"model_dir": args.model_dir, "run_metrics": args.run_metrics, "out": args.out, "previous": None,
                 "model_out": args.model_out}]
    try:
        runs = json.loads(args.runs_json)
    except json.JSONDecodeError as err:
        raise DataError(f"--runs-json: invalid JSON ({err.msg}); expected a list of runs") from None
    if not isinstance(runs, list) or not runs:
        raise DataError("--runs-json: expected a non-empty JSON list of runs")
    out = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not {"model_dir", "out"} <= set(run):
            raise DataError(f"--runs-json[{i}]: expected an object with model_dir and out "
                            "(run_metrics, previous optional)")
        out.append({"model_dir": Path(run["model_dir"]), "out": Path(run["out"]),
                    "run_metrics": Path(run["run_metrics"]) if run.get("run_metrics") else None,
                    "previous": Path(run["previous"]) if run.get("previous") else None,
                    "model_out": Path(run["model_out"]) if run.get("model_out") else None})
    return out


def _check_model_outs(runs: list[dict[str, Any]], batch: bool) -> list[dict[str, Any]]:
    """Before any work: a run's model/ is written from the run directory holding metrics.json."""
    for i, run in enumerate(runs):
        if run["model_out"] is not None and run["run_metrics"] is None:
            label = f"--runs-json[{i}].model_out" if batch else "--model-out"
            raise DataError(f"{label}: needs the run's metrics.json (--run-metrics, or run_metrics in "
                            "--runs-json): the card is written from the run directory that holds it")
    return runs


def _write_model(run: dict[str, Any]) -> None:
    """The run's model/ with its card, from the scores just written beside its ``out``."""
    from embtune.evaluate.publish import model_folder

    if run["model_out"] is None:
        return
    what = model_folder(run["run_metrics"].parent, run["out"].parent, run["model_out"])
    print(f"{STAGE}: {run['model_out']}: {what}")


def eval_key(revision: str, args: argparse.Namespace, data: str) -> str:
    """What an MTEB result depends on: weights and model configs (the revision), the settings,
    this stage's code and the materialised data. Equal keys give the same result."""
    return json_sha256({"revision": revision, "tasks": args.tasks, "exclude": args.exclude_from_average,
                        "batch_size": args.batch_size, "max_length": args.max_length,
                        "code": args.code_version, "data": data})


def _reuse(previous: Path | None, out: Path, key: str) -> bool:
    """Copy a previous, up-to-date result (same ``eval_key``) to ``out``; False if there is none."""
    if previous is None or previous.resolve() == out.resolve() or not previous.is_file():
        return False
    try:
        record = read_json(previous)
    except DataError:
        return False
    tidy, results = previous.with_suffix(".parquet"), previous.parent / MTEB_RESULTS_DIR
    if record.get("eval_key") != key or not tidy.is_file() or not results.is_dir():
        return False
    _withdraw(out)
    with atomic_path(out.with_suffix(".parquet")) as tmp:
        shutil.copyfile(tidy, tmp)
    with atomic_path(out.parent / MTEB_RESULTS_DIR) as tmp:
        shutil.copytree(results, tmp)
    write_json(out, record)
    return True


def evaluate_run(args: argparse.Namespace, run: dict[str, Any], data: str | None) -> str:
    """One checkpoint's three outputs; returns what was done (evaluated / reused / skipped)."""
    out, model_dir = run["out"], run["model_dir"]
    tidy_path = out.with_suffix(".parquet")
    results_dir = out.parent / MTEB_RESULTS_DIR
    if run["run_metrics"] and not run["run_metrics"].is_file():
        raise DataError(f"--run-metrics {run['run_metrics']}: file not found; expected the run's metrics.json")
    metrics = read_json(run["run_metrics"]) if run["run_metrics"] else {"status": "ok"}
    if metrics.get("status") in ("skipped", "failed"):
        _skipped(out, args.exclude_from_average, metrics, tidy_path, results_dir)
        return "skipped"
    if not model_dir.is_dir():
        raise DataError(f"--model-dir {model_dir}: directory not found; expected the run's trained/ folder")
    revision = model_revision(model_dir)
    key = eval_key(revision, args, data) if data is not None else None
    if key is not None and _reuse(run["previous"], out, key):
        print(f"{STAGE}: {model_dir}: up to date (eval_key {key[:12]}), reused {run['previous']}")
        return "reused"
    from embtune.models.embedder import load_embedder

    embedder = load_embedder(model_dir, device=args.device)
    check_finite(embedder.model, model_dir)
    if args.max_length is not None:
        embedder.config = with_max_length(embedder.config, args.max_length)
    run_id = metrics.get("run_id") or model_dir.resolve().parent.name
    meta = model_meta(embedder, f"embtune/{run_id}", revision)
    task_results: list[Any] = []
    record, tidy = evaluate_embedder(embedder, args.tasks, args.data_dir, args.batch_size,
                                     args.exclude_from_average, meta, task_results)
    record.update(max_length=int(embedder.config.max_length), mteb_model_name=meta.name,
                  mteb_revision=meta.revision, mteb_results=MTEB_RESULTS_DIR,
                  data_source=mteb_data_source(args.data_dir),
                  finished_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"))  # embtune status
    if key is not None:
        record["eval_key"] = key
    _withdraw(out)
    write_parquet(tidy_path, tidy)
    write_mteb_results(results_dir, task_results, meta)
    write_json(out, record)
    print(f"{run_id}:")
    for task, value in record["tasks"].items():
        print(f"  {task:<28} {value:.4f}")
    average = "n/a" if record["average"] is None else f"{record['average']:.4f}"
    print(f"  {'average':<28} {average}  ({record['n_texts_encoded']} texts, {record['seconds']:.1f} s)")
    return "evaluated"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs = _check_model_outs(_batch(args), batch=args.runs_json is not None)
    # the data's fingerprint enters every run's eval_key (a batch only: one run has nothing to reuse)
    data = dir_fingerprint(args.data_dir) if args.runs_json is not None and args.data_dir.is_dir() else None
    done = []
    for run in runs:
        done.append(evaluate_run(args, run, data))
        _write_model(run)
    if len(runs) > 1:
        print(f"{STAGE}: {len(runs)} runs: " + ", ".join(f"{done.count(k)} {k}" for k in
                                                        ("evaluated", "reused", "skipped")))
    return 0
