"""``embtune status``: where a study stands — per study × model × method the jobs done, failed
(with reasons), running, pending, skipped and dropped (training, MTEB, query tuning, PND,
stage-in); GPU-hours measured against the plan; an ETA from the jobs' recorded end times.

Why a driver apart from :mod:`embtune.scaling.status`: the library counts from the plan, the
results tree and SLURM job states it is given; loading the params stack, the calibrated FLOP/s,
asking ``squeue`` (and ``sacct`` with ``--sacct``) when they exist — a cluster without slurmdbd
makes sacct fail, which is a note, never an error — and printing one screen (or ``--json``) live
here. Reads only; changes nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import EXIT_DATA_ERROR
from embtune.core.layout import Layout, Results
from embtune.plan.config import ParamsError, load_params
from embtune.plan.cost import CostError, flops_per_second
from embtune.scaling.status import RUNNING_WINDOW_S, collect_jobs, parse_sacct, parse_squeue, render, summarize

STAGE = "status"
SLURM_TIMEOUT_S = 30


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets (the run's stack)")
    ap.add_argument("--results", type=Path, default=None, help="results directory (default: paths.results)")
    ap.add_argument("--json", action="store_true", help="the summary as JSON (with every job) instead of text")
    ap.add_argument("--sacct", action=argparse.BooleanOptionalAction, default=False,
                    help="also ask sacct for finished jobs' states (needs slurmdbd; a failure is a note)")
    ap.add_argument("--squeue", action=argparse.BooleanOptionalAction, default=True,
                    help="ask squeue for running/pending jobs when the command exists")
    ap.add_argument("--all", action="store_true", help="one line per group even beyond one screen")
    ap.add_argument("--running-window", type=float, default=RUNNING_WINDOW_S,
                    help="seconds: a checkpoint written this recently counts as running")
    return ap


def _slurm(cmd: list[str], notes: list[str]) -> str:
    """A SLURM query's stdout, or '' with a note (no binary, no controller, no slurmdbd)."""
    if shutil.which(cmd[0]) is None:
        return ""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SLURM_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        notes.append(f"{cmd[0]} failed: {err}")
        return ""
    if proc.returncode != 0:
        notes.append(f"{cmd[0]} unavailable: {' '.join(proc.stderr.split())[:200] or f'exit {proc.returncode}'}")
        return ""
    return proc.stdout


def slurm_states(use_squeue: bool, use_sacct: bool, notes: list[str]) -> dict[str, str]:
    """{Snakemake job comment: SLURM state}: sacct's latest job per comment, then squeue on top
    (a job in the queue now says more than an older one's record)."""
    states: dict[str, str] = {}
    if use_sacct:
        states.update(parse_sacct(_slurm(["sacct", "-n", "-P", "-X", "-o", "JobIDRaw,Comment,State"], notes)))
    if use_squeue:
        states.update(parse_squeue(_slurm(["squeue", "-h", "-o", "%k|%T"], notes)))
    return states


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = load_params(args.files)
    except ParamsError as err:
        print(err, file=sys.stderr)
        return EXIT_DATA_ERROR
    notes: list[str] = []
    try:
        fps: float | None = flops_per_second()
    except CostError as err:
        fps = None
        notes.append(f"no GPU-hour estimate: {err}")
    layout = Layout.from_paths(params["paths"])
    results = Results(args.results) if args.results else layout.results
    if not results.root.is_dir():
        notes.append(f"{results.root}: no results yet")
    jobs = collect_jobs(params, results, fps=fps, slurm=slurm_states(args.squeue, args.sacct, notes),
                        running_window_s=args.running_window, store=layout.store)
    summary = summarize(jobs)
    summary["notes"] = notes
    summary["results"] = str(results.root)
    if args.json:
        print(json.dumps({**summary, "jobs": jobs}, indent=1, sort_keys=True))
    else:
        print(f"{results.root}:")
        print(render(summary, every_group=args.all), end="")
        for note in notes:
            print(f"note: {note}")
    return 0
