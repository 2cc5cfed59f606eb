"""Stage ``train``: contrastive fine-tuning of one run config (paper 1, sections 3-4).

Why a driver apart from :mod:`embtune.train.loop`: the loop trains and returns a
:class:`~embtune.train.loop.Result`; reading the run config (checked as a
:class:`~embtune.runconfig.RunConfig`), the SIGTERM/SIGUSR1 handler, the
run directory (built in a temporary sibling and renamed into place, ``manifest.json`` last), the
exit codes of a pre-empted run (75, requeue) or a refused checkpoint (3) live here, and so does the
choice of writing a failure record (:mod:`embtune.train.failures`: diverged, data too small, or out
of memory / time limit on the last attempt, ``--attempt`` of ``--retries`` + 1) and exiting 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from embtune.core.errors import DataError, one_line
from embtune.core.io import check_replaceable
from embtune.core.layout import (
    CURVE_CSV,
    MANIFEST_JSON,
    METRICS_JSON,
    MODEL_DIR,
    MTEB_RESULTS,
    TRAINED_DIR,
    TRAINED_MERGED_DIR,
)
from embtune.core.model_files import check_model_folder
from embtune.core.stage_paths import exclusive_lock
from embtune.jobs import progress
from embtune.runconfig import RunConfig
from embtune.train import failures, tracking
from embtune.train.checkpoint import CheckpointError
from embtune.train.loop import Result, StopFlag, base_metrics, train_run

STAGE = "train"
EXIT_PREEMPTED = 75  # EX_TEMPFAIL: checkpoint saved, requeue the job
EXIT_BAD_CHECKPOINT = 3  # a checkpoint that must not be resumed: a person decides (not requeued)


def curve_csv(curve: Sequence[dict[str, float]]) -> str:
    lines = ["step,loss,lr,tokens,flops"]
    lines += [f"{r['step']},{r['loss']!r},{r['lr']!r},{r['tokens']},{r['flops']}" for r in curve]
    return "\n".join(lines) + "\n"


RUN_SUBDIRS = (TRAINED_DIR, TRAINED_MERGED_DIR, MTEB_RESULTS, MODEL_DIR)   # a run directory's own sub-folders


def save_model_dir(path: Path, result: Result, run: RunConfig, card: str) -> None:
    """A sentence-transformers folder (``embtune.models.st_export``: Transformer + Pooling,
    ``max_seq_length`` = context length, model card) plus ``embedding_config.json`` for
    :mod:`embtune.models.embedder`. LoRA: ``trained/`` stays the peft adapter on the base dir (it
    loads as is) and ``trained_merged/`` beside it holds the merged sentence-transformers folder."""
    from transformers import AutoTokenizer

    from embtune.core.io import write_json
    from embtune.models import st_export

    model = result.model
    pooling, context = run.train.pooling, run.train.context_length
    if hasattr(model, "peft_config"):
        for cfg in model.peft_config.values():
            cfg.base_model_name_or_path = run.base_model_dir
        model.save_pretrained(str(path), safe_serialization=True)
        AutoTokenizer.from_pretrained(run.base_model_dir).save_pretrained(str(path))
        (path / st_export.CARD).write_text(card, encoding="utf-8")
        st_export.save_merged_adapter(path, path.parent / TRAINED_MERGED_DIR, pooling=pooling,
                                      max_seq_length=context, card=card)
    else:
        st_export.save_run_model(model, path, run.base_model_dir, pooling=pooling,
                                 max_seq_length=context, card=card)
    write_json(path / "embedding_config.json", {"pooling": pooling, "max_length": context})


def write_outputs(out_dir: Path, result: Result, run: RunConfig, code_version: str | None = None) -> None:
    """The run directory appears whole or not at all: built in a temporary sibling and renamed
    onto ``out_dir`` (an older run directory, with any evaluation of the old model in it, goes
    with it); ``manifest.json`` is written last."""
    from embtune.core.io import atomic_dir, provenance, write_json, write_text
    from embtune.models.st_export import training_card

    check_replaceable(out_dir, RUN_SUBDIRS, stage=STAGE)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    as_json = run.to_dict()              # the config's JSON form, as the manifest records it
    extra = {"code_version": code_version} if code_version else {}   # train-batch's reuse check
    manifest = provenance(stage="train", run=as_json, seed=run.seed, device=device,
                          threads=torch.get_num_threads(), **extra)
    with atomic_dir(out_dir) as tmp:
        (tmp / TRAINED_DIR).mkdir()
        if result.status == "ok":
            save_model_dir(tmp / TRAINED_DIR, result, run, training_card(result.metrics, as_json, manifest))
        else:
            (tmp / TRAINED_DIR / "README.txt").write_text(failures.readme(result.metrics))
        write_text(tmp / CURVE_CSV, curve_csv(result.curve))
        write_json(tmp / METRICS_JSON, result.metrics)
        write_json(tmp / MANIFEST_JSON, manifest)


def _json_arg(raw: str) -> Any:
    return json.loads(Path(raw).read_text() if raw.lstrip()[:1] not in "{[" else raw)


def read_run_config(raw: str, runtime: str | None = None) -> RunConfig:
    """The ``--run-config-json`` argument (JSON, or a file holding it), joined with the
    ``--runtime-json`` settings when given (``embtune.core.run_identity``), read by
    :meth:`RunConfig.from_dict`: a missing, unknown or mistyped key is a data error naming it,
    before any training. Returns the typed config the training loop reads."""
    from embtune.core.run_identity import merge

    try:
        run = _json_arg(raw)
        if runtime:
            run = merge(run, _json_arg(runtime))
        return RunConfig.from_dict(run)
    except ValueError as err:       # json.JSONDecodeError is one too
        raise DataError(f"--run-config-json: {one_line(err)}") from None


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--run-config-json", required=True, help="one run config from sweep.training_runs")
    ap.add_argument("--out-dir", required=True, help="the run's own directory; replaced as a whole")
    ap.add_argument("--runtime-json", default=None,
                    help="settings that change no result (log/checkpoint intervals, GradCache chunk, paths)")
    ap.add_argument("--checkpoint-dir", required=True,
                    help="resumable state; refused (exit 3) if made by another config or data")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--tracking-dir", default=None,
                    help="where the experiment tracker's files go when the run ends (embtune.train.tracking)")
    ap.add_argument("--log-with", default=None, help="tracker: dvclive | tensorboard | mlflow | wandb | none "
                    "(default: $EMBTUNE_LOG_WITH, else dvclive); not part of the run's identity")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar / periodic progress lines")
    ap.add_argument("--attempt", type=int, default=1, help="Snakemake's attempt (1 = first)")
    ap.add_argument("--retries", type=int, default=None,
                    help="Snakemake's --retries: out of memory / time limit is final on attempt retries+1 "
                         "(without it they never are: exit 75 / the error, as before)")
    ap.add_argument("--stop-after-steps", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    run = read_run_config(args.run_config_json, args.runtime_json)
    if args.no_progress:
        progress.disable()
    # before training, not after it; a folder whose manifest names this stage is its own, whatever
    # evaluation put beside the model
    check_replaceable(args.out_dir, RUN_SUBDIRS, stage=STAGE)
    check_model_folder(run.base_model_dir)            # sizes checked before any model is built
    if int(os.environ.get("RANK", "0")) != 0:         # a distributed run: rank 0 holds the lock
        return _train(args, run)
    with exclusive_lock(args.checkpoint_dir, f"run {run.run_id}"):   # one writer per run
        return _train(args, run)


def _train(args: argparse.Namespace, run: RunConfig) -> int:
    stop = StopFlag()
    stop.install()
    t0 = time.time()
    try:
        result = train_run(run, Path(args.checkpoint_dir), stop=stop, stop_after_steps=args.stop_after_steps,
                           log_with=args.log_with)
    except CheckpointError as err:
        print(f"embtune train: {err}", file=sys.stderr)
        return EXIT_BAD_CHECKPOINT
    except failures.Diverged as err:
        return _failed(args, run, stop, "diverged", str(err), err.partial)
    except Exception as err:
        if not (failures.is_oom(err) and _final("oom", args)):
            raise                           # not ours, or the next attempt gets more memory
        return _failed(args, run, stop, "oom", f"{err} ({_tried(args, run)})", None)
    if result.status == "preempted" and os.environ.get("SLURM_JOB_ID") and _final("time_limit", args):
        # under SLURM only: a local signal is someone stopping the run (Snakemake's Ctrl-C), not a limit
        return _failed(args, run, stop, "time_limit",
                       f"signal {stop.signum or 'test-stop'} at step {result.metrics['steps']} on the last "
                       f"attempt ({args.attempt} of {(args.retries or 0) + 1}); checkpoint kept in {args.checkpoint_dir}",
                       None)
    if result.status == "skipped" and int(result.metrics.get("n_pairs", 0)) < int(run.train.batch_size):
        return _failed(args, run, stop, "data_too_small", str(result.metrics.get("skip_reason")), None)
    if result.status == "preempted":
        print(f"train: pre-empted at step {result.metrics['steps']}; checkpoint in {args.checkpoint_dir}",
              file=sys.stderr)
        return EXIT_PREEMPTED
    from accelerate import PartialState

    if PartialState().is_main_process:
        result.metrics["wall_seconds_total"] = time.time() - t0
        write_outputs(Path(args.out_dir), result, run, getattr(args, "code_version", None))
        if args.tracking_dir:
            tracking.publish(Path(args.checkpoint_dir) / tracking.DIR, Path(args.tracking_dir))
        shutil.rmtree(args.checkpoint_dir, ignore_errors=True)
    print(f"train: {run.run_id} {result.status} "
          + (f"loss {result.metrics['final_train_loss']:.4f} C {result.metrics['flops']:.3g}"
             if result.status == "ok" else result.metrics["skip_reason"]))
    return 0


def _tried(args: argparse.Namespace, run: RunConfig) -> str:
    """What this attempt ran with: the workflow's retries halve the GradCache chunk and move to a
    larger GPU class (embtune.plan.gpus.escalate), so the record says which rung failed last."""
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return f"attempt {args.attempt}: GradCache chunk {run.train.gradcache_chunk} on {device}"


def _final(reason: str, args: argparse.Namespace) -> bool:
    return args.retries is not None and failures.is_final(reason, args.attempt, args.retries)


def _failed(args: argparse.Namespace, run: RunConfig, stop: StopFlag, reason: str, detail: str,
            partial: dict[str, Any] | None) -> int:
    """A run that failed for good: its directory with the failure record (exit 0, so the
    workflow goes on). The checkpoint of a deterministic failure is deleted (a rerun would fail
    the same way, or refuse it under a changed config); a transient one's is kept to resume."""
    from accelerate import PartialState

    prog = stop.progress
    curve = list(prog.curve) if prog else []
    partial = partial or failures.partial_metrics(curve, prog.wall if prog else 0.0)
    metrics = failures.failure_metrics(base_metrics(run, None), reason, args.attempt, args.retries or 0,
                                       " ".join(detail.split()), partial)
    metrics["world_size"] = PartialState().num_processes
    if PartialState().is_main_process:
        write_outputs(Path(args.out_dir), Result("failed", metrics, curve), run, getattr(args, "code_version", None))
        if args.tracking_dir:           # a declared output: what the tracker saw before the failure
            tracking.publish(Path(args.checkpoint_dir) / tracking.DIR, Path(args.tracking_dir))
        if reason in failures.DETERMINISTIC:
            shutil.rmtree(args.checkpoint_dir, ignore_errors=True)
    print(f"train: {run.run_id} failed for good: {reason}: {metrics['failure']['detail'][:300]}",
          file=sys.stderr)
    return 0
