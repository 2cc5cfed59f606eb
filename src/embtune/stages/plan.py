"""``embtune plan``: the training grid as tables — what will run, what is skipped and why, and what
it costs (paper FLOPs, hardware FLOPs, GPU-hours) before anything runs.

Why a stage: a skipped or capped configuration must be visible next to the results (the scaling
analysis reads ``skipped.csv``), not silently absent from the grid; and a study is planned in
GPU-hours (``embtune.cost``).

Why a driver apart from :mod:`embtune.plan`: the library builds the planned, skipped and cost
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

from embtune import io
from embtune.config import ParamsError, load_plan
from embtune.cost import CostError, flops_per_second, thin_methods
from embtune.errors import EXIT_DATA_ERROR
from embtune.plan import cost_summary, format_summary, plan_tables
from embtune.sweep import expand

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
    source = "--flops-per-second" if args.flops_per_second else "calibrated: embtune.cost.flops_per_second"
    plan = plan if plan is not None else expand(params, flops_per_second=fps)     # once per invocation
    planned, skipped, cost = plan_tables(params, fps, plan)
    n_query = f"; {len(plan.qruns)} query-tuning runs" if "query_tuning" in params else ""
    n_dropped = int((skipped["status"] == "dropped").sum())
    print(f"{planned.height} training runs planned, {skipped.height - n_dropped} skipped, "
          f"{n_dropped} dropped by train.gpu_hours_cap{n_query}")
    for line in format_summary(cost_summary(cost), fps, source):
        print(line)
    _print_cap(params, cost, n_dropped)
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
