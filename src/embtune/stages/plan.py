"""``embtune plan``: the training grid as tables — what will run, what is skipped and why, and what
it costs (paper FLOPs, hardware FLOPs, GPU-hours) before anything runs.

Why a stage: a skipped or capped configuration must be visible next to the results (the scaling
analysis reads ``skipped.csv``), not silently absent from the grid; and a study is planned in
GPU-hours (``embtune.plan.cost``).

Why a driver apart from :mod:`embtune.plan.tables`: the library builds the planned, skipped and cost
tables from validated params; reading the params (files or the rule's JSON), the calibrated
FLOP/s, the printed report and the CSV outputs live here. A params or cost error is printed on
stderr and exits 1 (as ``embtune validate-params`` does).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import polars as pl

from embtune.core import io
from embtune.core.errors import EXIT_DATA_ERROR
from embtune.plan.config import ParamsError, load_plan
from embtune.plan.cost import CostError, flops_per_second, thin_methods
from embtune.plan.gpus import GpuClassError, check, read_classes
from embtune.plan.sweep import StudyPlan, expand
from embtune.plan.tables import cost_summary, format_summary, plan_tables

STAGE = "plan"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description="\n\n".join(__doc__.split("\n\n")[:2]))
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets")
    ap.add_argument("--params-json", help="already-validated params (models/train/paths) as JSON, "
                    "as the Snakemake rule passes them")
    ap.add_argument("--flops-per-second", type=float, default=None,
                    help="hardware FLOP/s per GPU (default: $EMBTUNE_FLOPS_PER_SECOND, else "
                         "profiles/default/throughput.yaml; the Snakemake rule passes the same value)")
    ap.add_argument("--out-runs", help="CSV of planned training runs")
    ap.add_argument("--out-skipped", help="CSV of configurations skipped at planning time or dropped by the cap")
    ap.add_argument("--out-cost", help="CSV of each planned or dropped run's FLOPs and GPU-hours")
    ap.add_argument("--out-plan", help="JSON of the training plan the stages after this one read "
                                       "(runs, study memberships, skipped): appendix-tables --plan")
    return ap


def _print_cap(params: dict[str, Any], cost: pl.DataFrame, n_dropped: int) -> None:
    """What the GPU-hour cap dropped, and a warning for each method it thins below two budgets."""
    cap = params["train"].get("gpu_hours_cap")
    if cap is None:
        return
    grid = cost["gpu_hours"].sum()
    print(f"GPU-hour cap {cap:g}: grid {grid:.4g} GPU-h, {n_dropped} runs dropped "
          f"({cost.filter(pl.col('status') == 'dropped')['gpu_hours'].sum():.4g} GPU-h), largest budgets first")
    methods = params["train"]["methods"]
    before = thin_methods(cost.to_dicts(), methods)
    after = thin_methods(cost.filter(pl.col("status") == "planned").to_dicts(), methods)
    for method, n in after.items():
        if n < before.get(method, 2):
            print(f"  warning: {method} keeps {n} budget(s) under the cap: no frontier line "
                  f"or law over D for it", file=sys.stderr)


def gpu_class_lines(params: dict[str, Any], plan: StudyPlan, run_ids: list[str]) -> list[str]:
    """Planned runs per GPU class (embtune.plan.gpus); a GpuClassError when one fits none."""
    keep = set(run_ids)
    classes = read_classes()
    fits = check([r for r in plan.candidates if r.run_id in keep], params, classes)
    counts: dict[str, int] = {}
    for f in fits.values():
        counts[f.gpu_class.name] = counts.get(f.gpu_class.name, 0) + 1
    peak = max((f.estimate.peak for f in fits.values()), default=0.0)
    return [f"GPU classes ({classes.source}): " + ", ".join(f"{n} on {c}" for c, n in counts.items())
            + f"; largest peak-memory estimate {peak / 2**30:.1f} GiB"]


def whole_study_lines(params: dict[str, Any], plan: StudyPlan, run_ids: list[str], fps: float) -> list[str]:
    """GPU-hours of every phase and the disk the study writes (embtune.plan.study_cost), from the one plan."""
    from pathlib import Path

    from embtune.plan.study_cost import study_lines
    from embtune.plan.sweep import mteb_run_ids

    keep = set(run_ids)
    runs = [r.to_dict() for r in plan.runs if r.run_id in keep]
    qruns = [q.to_dict() for q in plan.qruns]
    return study_lines(runs, mteb_run_ids(params, runs, plan.members), qruns, params, fps, Path.cwd())


def _gpu_classes_refused(params: dict[str, Any], plan: StudyPlan, run_ids: list[str]) -> bool:
    """Print the runs per GPU class; True (after naming it) when a run fits none."""
    try:
        for line in gpu_class_lines(params, plan, run_ids):
            print(line)
    except GpuClassError as err:      # a run that fits no GPU class: refused before any GPU time
        print(f"embtune plan: {err}", file=sys.stderr)
        return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params, plan = (json.loads(args.params_json), None) if args.params_json else load_plan(args.files)
        fps = args.flops_per_second or flops_per_second()
        if fps <= 0:
            raise CostError(f"--flops-per-second: expected a positive number, got {fps}")
    except (ParamsError, CostError) as err:
        print(err, file=sys.stderr)
        return EXIT_DATA_ERROR
    source = "--flops-per-second" if args.flops_per_second else "calibrated: embtune.plan.cost.flops_per_second"
    plan = plan if plan is not None else expand(params, flops_per_second=fps)     # once per invocation
    planned, skipped, cost = plan_tables(params, fps, plan)
    if _gpu_classes_refused(params, plan, planned["run_id"].to_list()):
        return EXIT_DATA_ERROR
    n_query = f"; {len(plan.qruns)} query-tuning runs" if "query_tuning" in params else ""
    n_dropped = int((skipped["status"] == "dropped").sum())
    print(f"{planned.height} training runs planned, {skipped.height - n_dropped} skipped, "
          f"{n_dropped} dropped by train.gpu_hours_cap{n_query}")
    for line in format_summary(cost_summary(cost), fps, source):
        print(line)
    _print_cap(params, cost, n_dropped)
    if "query_tuning" in params and "evaluate" in params:     # the whole study (embtune.plan.study_cost)
        for line in whole_study_lines(params, plan, planned["run_id"].to_list(), fps):
            print(line)
    for row in skipped.filter(pl.col("status") != "dropped").iter_rows(named=True):
        print(f"  {row['status']} {row['run_id']}: {row['reason']}")
    for (reason,), group in skipped.filter(pl.col("status") == "dropped").group_by(
            "reason", maintain_order=True):
        print(f"  dropped {group.height} runs: {reason}")
    for path, table in ((args.out_runs, planned), (args.out_skipped, skipped), (args.out_cost, cost)):
        if path:
            io.write_text(path, table.write_csv())
    if args.out_plan:
        io.write_json(args.out_plan, plan.training_json())
    return 0
