"""Stage ``tune-query-batch``: several query runs of one encoder, tuned one after another in one process.

Why: a demo query run tunes in ~5 s while its process spends ~10 s importing
sentence-transformers, transformers and torch; at paper scale a query run is hours and
``query_tuning.runs_per_job`` stays 1 (rule ``tune_query``, one job per run). Above 1, the rule
``tune_query_batch`` runs this stage for a batch (:func:`embtune.plan.sweep.query_run_batches`) and
``tune_query`` hard-links each member's outputs out of the batch's transient folder
(``embtune link-outputs``), where every reader expects them: the same layout as training batches
(:mod:`embtune.stages.train_batch`).

Each member is tuned exactly as ``embtune tune-query`` tunes it
(:func:`embtune.stages.tune_query.tune_one`: the same outputs, failure records and exit codes),
into ``<batch folder>/<qrun_id>/``. A member is **reused, not re-tuned**, when its run folder
already holds a finished run (ok or a failure record) of the same config and tune-query code
version, so a changed run re-tunes itself alone. Two trade-offs, both bounded by one batch:

- Snakemake re-runs every consumer of a re-run job, so a changed or added run also re-plans its
  batch mates' link jobs and PND evaluations; those re-score from the embedding cache (a relinked
  model has the same content fingerprint: no forward pass). Measured on presets/test.yaml's
  finished pipeline: one run added to a batch of 8 took 65 s in all, the batch, 8 links and 8
  evaluations, tables and figures. At paper scale ``runs_per_job`` is 1: no batch mates.
- Query runs keep no resumable state, so a batch that fails (or is pre-empted) part-way tunes its
  unfinished members again on the retry.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError, one_line
from embtune.core.layout import CURVE_CSV, LAYER_CHANGES, MANIFEST_JSON, METRICS_JSON, MODEL_DIR
from embtune.jobs import batch_members, progress

STAGE = "tune-query-batch"
MEMBER_KEYS = ("run", "stage", "previous", "previous_tracking")
# What `embtune tune-query` writes into a run folder (not the evaluations evaluate-pnd adds)
RUN_FILES = (METRICS_JSON, CURVE_CSV, LAYER_CHANGES, "layer_changes_doc.csv", MODEL_DIR, MANIFEST_JSON)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--batch-json", required=True,
                    help="JSON list (or a file holding it) of members: {run: the query run config, stage: its "
                         "folder in the batch's output, previous: its run folder, previous_tracking: its "
                         "tracker folder}")
    ap.add_argument("--code-version", required=True, help="tune-query's code version (reuse needs the same)")
    ap.add_argument("--data-dir", required=True, help="as `embtune tune-query --data-dir`")
    ap.add_argument("--cache-dir", required=True, help="the encoder's document-embedding cache")
    ap.add_argument("--precision", default="fp32", help="as `embtune tune-query --precision`")
    ap.add_argument("--doc-batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--attempt", type=int, default=1, help="Snakemake's attempt (1 = first)")
    ap.add_argument("--retries", type=int, default=None, help="Snakemake's --retries, as `embtune tune-query`")
    ap.add_argument("--no-progress", action="store_true")
    return ap.parse_args(list(argv))


def read_members(raw: str) -> list[dict[str, Any]]:
    """The ``--batch-json`` members, each checked for its keys: a data error names what is missing."""
    return batch_members.read_members(raw, MEMBER_KEYS, RUN_FILES)


def up_to_date(run_dir: Path, run: Any, code_version: str) -> bool:
    """Whether ``run_dir`` holds a finished query run (ok or a failure record) of this run config
    (a :class:`~embtune.runconfig.QueryRunConfig`, compared typed), made by this code version.
    Runs made by ``embtune tune-query`` record none: never reused."""
    from embtune.runconfig import QueryRunConfig

    return batch_members.up_to_date(run_dir, code_version,
                                    lambda manifest: QueryRunConfig.from_dict(manifest["run_config"]) == run)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    import torch

    from embtune.runconfig import QueryRunConfig
    from embtune.stages import tune_query

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.no_progress:
        progress.disable()
    members = read_members(args.batch_json)
    tuned = reused = 0
    for member in members:
        try:
            run = QueryRunConfig.from_dict(member["run"])
        except ValueError as err:
            raise DataError(f"--batch-json: run {member['run'].get('qrun_id')}: {one_line(err)}") from None
        stage = Path(member["stage"])
        previous, previous_tracking = Path(member["previous"]), Path(member["previous_tracking"])
        if up_to_date(previous, run, args.code_version):
            batch_members.stage_member(previous, previous_tracking, stage, previous_tracking.name, RUN_FILES)
            reused += 1
            continue
        tracking = stage.parent / ".tracking" / stage.name    # beside: the run folder is replaced whole
        shutil.rmtree(tracking, ignore_errors=True)
        one = argparse.Namespace(**{**vars(args), "tracking_dir": str(tracking)})
        code = tune_query.tune_one(run, stage, one)
        if code:
            return code
        tracking.mkdir(parents=True, exist_ok=True)
        tracking.rename(stage / previous_tracking.name)
        tuned += 1
    shutil.rmtree(Path(members[0]["stage"]).parent / ".tracking", ignore_errors=True)
    print(f"{STAGE}: {len(members)} query runs: {tuned} tuned, {reused} reused (up to date)")
    return 0
