"""Stage ``mark-failed``: failure records for jobs killed from outside, so the analysis goes on.

Why: a run that fails inside its own process (diverged, out of memory or a time limit on the
last attempt) writes its failure record itself (:mod:`embtune.train.failures`). A job killed
from outside (a cgroup OOM kill, a node failure, ``kill -9``, SLURM's hard time limit) writes
nothing, and every reader downstream (runs table, fits, query tables) would wait for it. The
workflow's ``onerror`` handler (workflow/rules/failures.smk) reads Snakemake's log for the jobs
it gave up on (:mod:`embtune.jobs.failed_jobs`), resolves them to the units they would have written
(a training run, a query run, one run's MTEB scores, one PND evaluation) and calls this stage,
which writes each unit's outputs as a failure record with reason ``killed``. The next
``snakemake`` then finds every input and writes the analysis without those runs; the report
lists them with their reason. Deleting a record (its run folder) makes Snakemake try it again.

``--jobs-json``: a JSON list (or a file holding one) of units, each ``{kind, detail, ...}``:

- ``train``: ``run`` (the run config), ``out_dir``, ``tracking_dir``
- ``query``: ``run`` (the query run config), ``out_dir``, ``tracking_dir``
- ``mteb``: ``scores``, ``table``, ``results``, ``hub`` (the paths of rule evaluate_mteb's outputs)
- ``pnd``: ``pnd``, ``xnli`` (rule evaluate_pnd_base / evaluate_pnd_query's outputs)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError

STAGE = "mark-failed"
REASON = "killed"
KINDS = ("train", "query", "mteb", "pnd")
_KEYS = {"train": ("run", "out_dir", "tracking_dir"), "query": ("run", "out_dir", "tracking_dir"),
         "mteb": ("scores", "table", "results", "model"), "pnd": ("pnd", "xnli")}


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--jobs-json", required=True, help="JSON list of units (or a file holding it); see the module doc")
    ap.add_argument("--retries", type=int, default=None,
                    help="Snakemake's --retries (recorded: the failure came after attempt retries+1); "
                         "default $EMBTUNE_SNAKEMAKE_RETRIES, else 0")
    return ap.parse_args(list(argv))


def read_units(raw: str) -> list[dict[str, Any]]:
    """The ``--jobs-json`` units, each checked for its kind and keys, and (when ``raw`` is a file)
    that no unit's output is that file: a data error names what is wrong."""
    from embtune.core.stage_paths import _resolved, overlaps

    from_file = raw.lstrip()[:1] not in "[{"
    try:
        units = json.loads(Path(raw).read_text() if from_file else raw)
    except (OSError, ValueError) as err:
        raise DataError(f"--jobs-json: {err}") from None
    if not isinstance(units, list):
        raise DataError(f"--jobs-json: expected a JSON list of units, got {type(units).__name__}")
    for i, unit in enumerate(units):
        kind = unit.get("kind") if isinstance(unit, dict) else None
        if kind not in KINDS:
            raise DataError(f"--jobs-json: unit {i}: kind {kind!r} is not one of {', '.join(KINDS)}")
        missing = [k for k in _KEYS[kind] if k not in unit]
        if missing:
            raise DataError(f"--jobs-json: unit {i} ({kind}): missing key(s) {', '.join(missing)}")
        for key in _KEYS[kind][1:] if kind in ("train", "query") else _KEYS[kind]:
            how = overlaps(_resolved(unit[key]), _resolved(raw)) if from_file else None
            if how:
                raise DataError(f"--jobs-json: unit {i} ({kind}): {key} {unit[key]} {how} the units file {raw}; "
                                "expected outputs apart from it")
    return units


def _train(unit: dict[str, Any], attempt: int, retries: int) -> str:
    from embtune.runconfig import RunConfig
    from embtune.stages.train import write_outputs
    from embtune.train import failures
    from embtune.train.loop import Result, base_metrics

    run = RunConfig.from_dict(unit["run"])
    metrics = failures.failure_metrics(base_metrics(run, None), REASON, attempt, retries, unit.get("detail", ""),
                                       failures.partial_metrics([]))
    write_outputs(Path(unit["out_dir"]), Result("failed", metrics, []), run)
    Path(unit["tracking_dir"]).mkdir(parents=True, exist_ok=True)
    return run.run_id


def _query(unit: dict[str, Any], attempt: int, retries: int) -> str:
    from embtune.runconfig import QueryRunConfig
    from embtune.stages.tune_query import _failed

    run = QueryRunConfig.from_dict(unit["run"])
    args = argparse.Namespace(attempt=attempt, retries=retries, tracking_dir=unit["tracking_dir"])
    _failed(run, Path(unit["out_dir"]), args, REASON, unit.get("detail", ""), {})
    return run.qrun_id


def _mteb(unit: dict[str, Any], attempt: int, retries: int) -> str:
    from embtune.core.io import read_json, write_json
    from embtune.evaluate.publish import nothing_to_publish
    from embtune.stages.evaluate_mteb import _skipped

    detail = unit.get("detail", "")
    scores = Path(unit["scores"])
    _skipped(scores, [], {"status": "failed", "skip_reason": f"{REASON}: {detail}"}, Path(unit["table"]),
             Path(unit["results"]))
    # its own failure (embtune status counts it), unlike the record of a run training lost
    record = {**read_json(scores), "failure": {"reason": REASON, "attempt": attempt, "retries": retries,
                                               "detail": detail}}
    nothing_to_publish(unit["model"], f"MTEB evaluation failed ({REASON}: {detail}): no card with scores yet; "
                                      "the trained model is in ../trained/. Delete mteb.json to evaluate again.")
    write_json(scores, record)        # the commit marker, last
    return str(scores)


def _pnd(unit: dict[str, Any], attempt: int, retries: int) -> str:
    import polars as pl

    from embtune.core.io import write_json, write_parquet
    from embtune.evaluate.pnd_eval import XNLI_COUNT_SCHEMA

    pnd, xnli = Path(unit["pnd"]), Path(unit["xnli"])
    pnd.unlink(missing_ok=True)                  # the commit marker goes first, comes back last
    write_parquet(xnli, pl.DataFrame(schema=XNLI_COUNT_SCHEMA))
    detail = unit.get("detail", "")
    write_json(pnd, {"status": "failed", "skip_reason": f"{REASON}: {detail}",
                     "failure": {"reason": REASON, "attempt": attempt, "retries": retries, "detail": detail}})
    return str(pnd)


WRITERS = {"train": _train, "query": _query, "mteb": _mteb, "pnd": _pnd}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    retries = args.retries if args.retries is not None else int(os.environ.get("EMBTUNE_SNAKEMAKE_RETRIES") or 0)
    for unit in read_units(args.jobs_json):
        what = WRITERS[unit["kind"]](unit, retries + 1, retries)
        print(f"{STAGE}: {unit['kind']} {what}: failure record ({REASON}: {unit.get('detail', '')[:200]})")
    return 0
