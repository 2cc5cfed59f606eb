"""Stage ``train-batch``: several training runs of one base model, one after another, in one process.

Why: a demo-sized run trains in ~10 s, while starting its process (torch, transformers,
sentence-transformers, the tracker) and loading the base model takes ~8 s more; at paper scale a
run is GPU-hours and ``train.runs_per_job`` stays 1 (rule ``train_contrastive``, one job per run).
With ``train.runs_per_job`` > 1 the rule ``train_batch`` runs this stage for a batch
(:func:`embtune.plan.sweep.run_batches`) and ``train_contrastive`` hard-links each member's outputs
out of the batch's transient folder (``embtune link-outputs``), where every reader expects them.

Each member is trained exactly as ``embtune train`` trains it (:func:`embtune.stages.train._train`:
the same loop, checkpoints, failure records and exit codes), into ``<checkpoint>.done/``, beside
its resumable state, and then linked into the batch folder. A member is **reused, not retrained**,
when finished outputs with the same run identity (:mod:`embtune.core.run_identity`) and the same code
version already exist: in ``<checkpoint>.done/`` (a batch stopped by a pre-emption and retried)
or in the run's own folder (a batch re-run because another member changed). So a changed run
re-trains itself alone, and a pre-empted batch resumes where it stopped. The ``.done`` folders go
when the whole batch has finished. When a member ends with a ``time_limit`` record (SLURM's signal
on the last attempt), the members after it get one too without starting: the job has no time left.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError
from embtune.core.layout import CURVE_CSV, MANIFEST_JSON, METRICS_JSON, TRAINED_DIR, TRAINED_MERGED_DIR
from embtune.jobs import batch_members, progress

STAGE = "train-batch"
MEMBER_KEYS = ("run", "stage", "checkpoint", "previous", "previous_tracking")
# What `embtune train` writes into a run folder (LoRA adds trained_merged/ beside trained/)
RUN_FILES = (METRICS_JSON, CURVE_CSV, TRAINED_DIR, TRAINED_MERGED_DIR, MANIFEST_JSON)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--batch-json", required=True,
                    help="JSON list (or a file holding it) of members: {run: the run's identity, stage: its folder "
                         "in the batch's output, checkpoint: its checkpoint dir, previous: its run folder, "
                         "previous_tracking: its tracker folder}")
    ap.add_argument("--runtime-json", default=None,
                    help="JSON object run_id -> that run's runtime settings (embtune.core.run_identity.runtime)")
    ap.add_argument("--code-version", required=True, help="the train stage's code version (reuse needs the same)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--log-with", default=None, help="tracker, as `embtune train --log-with`")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--attempt", type=int, default=1, help="Snakemake's attempt (1 = first)")
    ap.add_argument("--retries", type=int, default=None, help="Snakemake's --retries, as `embtune train`")
    ap.add_argument("--stop-after-steps", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args(list(argv))


def read_members(raw: str) -> list[dict[str, Any]]:
    """The ``--batch-json`` members, each checked for its keys: a data error names what is missing."""
    return batch_members.read_members(raw, MEMBER_KEYS, RUN_FILES)


def done_dir(checkpoint: str | Path) -> Path:
    """Where a member's finished outputs wait until the whole batch has finished."""
    return Path(f"{Path(checkpoint)}.done")


def up_to_date(run_dir: Path, identity: dict[str, Any], code_version: str) -> bool:
    """Whether ``run_dir`` holds a finished run (ok or a failure record) of this identity, made by
    this code version. Runs made by ``embtune train`` record no code version: never reused."""
    from embtune.core.run_identity import identity as identity_of

    return batch_members.up_to_date(run_dir, code_version, lambda manifest: identity_of(manifest["run"]) == identity)


def _member_args(args: argparse.Namespace, member: dict[str, Any], runtime: dict[str, Any] | None):
    """(run config, ``embtune train``'s arguments) of one member, writing into its ``.done`` folder."""
    from embtune.stages import train

    try:        # the same reader as `embtune train --run-config-json --runtime-json`
        run = train.read_run_config(json.dumps(member["run"]), json.dumps(runtime) if runtime else None)
    except DataError as err:
        raise DataError(f"--batch-json: run {member['run'].get('run_id')}: {err}") from None
    done = done_dir(member["checkpoint"])
    one = argparse.Namespace(out_dir=str(done / "run"), tracking_dir=str(done / "tracking"),
                             checkpoint_dir=member["checkpoint"], code_version=args.code_version,
                             attempt=args.attempt, retries=args.retries, log_with=args.log_with,
                             stop_after_steps=args.stop_after_steps)
    return run, one


def _train_member(args: argparse.Namespace, member: dict[str, Any], runtime: dict[str, Any] | None) -> int:
    """``embtune train`` on one member, writing into its ``.done`` folder; its exit code."""
    from embtune.core.model_files import check_model_folder
    from embtune.core.stage_paths import exclusive_lock
    from embtune.stages import train

    run, one = _member_args(args, member, runtime)
    check_model_folder(run.base_model_dir)
    with exclusive_lock(member["checkpoint"], f"run {run.run_id}"):
        return train._train(one, run)


def _timed_out(member: dict[str, Any]) -> bool:
    """Whether the member just wrote a ``time_limit`` record: the job's time is up."""
    metrics = done_dir(member["checkpoint"]) / "run" / METRICS_JSON
    return metrics.is_file() and (json.loads(metrics.read_text()).get("failure") or {}).get("reason") == "time_limit"


def _time_limit_record(args: argparse.Namespace, member: dict[str, Any], runtime: dict[str, Any] | None,
                       after: str) -> None:
    """The ``time_limit`` record of a member the job had no time left for (the last attempt, after
    ``after`` got SLURM's signal): not started, so the batch's output is whole and the job ends."""
    from embtune.stages import train
    from embtune.train.loop import StopFlag

    run, one = _member_args(args, member, runtime)
    train._failed(one, run, StopFlag(), "time_limit",
                  f"not started: the job's time ran out while {after} trained (attempt {args.attempt})", None)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.no_progress:
        progress.disable()
    members = read_members(args.batch_json)
    runtimes = json.loads(args.runtime_json) if args.runtime_json else {}
    trained = reused = 0
    timed_out: str | None = None    # the member whose time_limit record ended the job's time
    for member in members:
        run_id = member["run"].get("run_id")
        done, previous = done_dir(member["checkpoint"]), Path(member["previous"])
        tracking_name = Path(member["previous_tracking"]).name
        if up_to_date(done / "run", member["run"], args.code_version):
            src, src_tracking = done / "run", done / "tracking"
            reused += 1
        elif up_to_date(previous, member["run"], args.code_version):
            src, src_tracking = previous, Path(member["previous_tracking"])
            reused += 1
        elif timed_out:
            _time_limit_record(args, member, runtimes.get(run_id), timed_out)
            src, src_tracking = done / "run", done / "tracking"
        else:
            code = _train_member(args, member, runtimes.get(run_id))
            if code:               # pre-empted (75) or a checkpoint to refuse (3): the batch stops
                print(f"{STAGE}: stopped at {run_id} (exit {code}); {trained} trained, {reused} reused before it",
                      file=sys.stderr)
                return code
            src, src_tracking = done / "run", done / "tracking"
            trained += 1
            timed_out = run_id if _timed_out(member) else None
        batch_members.stage_member(src, src_tracking, Path(member["stage"]), tracking_name, RUN_FILES)
    for member in members:
        shutil.rmtree(done_dir(member["checkpoint"]), ignore_errors=True)
    print(f"{STAGE}: {len(members)} runs: {trained} trained, {reused} reused (up to date)")
    return 0
