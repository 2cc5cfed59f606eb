"""``embtune plan``: the training grid as tables — what will run, what is skipped and why, and what
it costs (paper FLOPs, hardware FLOPs, GPU-hours) before anything runs.

Why a stage: a skipped or capped configuration must be visible next to the results (the scaling
analysis reads ``skipped.csv``), not silently absent from the grid; and a study is planned in
GPU-hours (``embtune.cost``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import polars as pl

from embtune import io
from embtune.config import ParamsError, load_params
from embtune.cost import CostError, flops_per_second, run_cost, thin_methods, trim_to_cap
from embtune.sweep import Skipped, query_runs, training_runs

COST_SCHEMA = {"run_id": pl.String, "model": pl.String, "method": pl.String, "budget": pl.Float64,
               "seed": pl.Int64, "status": pl.String, "paper_flops": pl.Float64,
               "hardware_flops": pl.Float64, "gpu_hours": pl.Float64, "two_pass_gradcache": pl.Boolean,
               "checkpointing": pl.Boolean, "flops_per_second": pl.Float64}


def plan_tables(params: dict, fps: float | None = None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(planned runs, skipped and dropped runs, per-run cost of planned + dropped runs).

    ``fps`` is the calibrated hardware FLOP/s per GPU; it is only needed for the cost table and
    the cap, so without it and without a cap the cost table is empty. Same runs as
    ``sweep.training_runs(params)``: the cap is applied here with the same function."""
    runs, skipped = training_runs(params, apply_cap=False)
    cap = params["train"].get("gpu_hours_cap")
    dropped: list[tuple[dict[str, Any], str]] = []
    if fps is None and cap is not None:
        fps = flops_per_second()
    kept = runs
    if cap is not None:
        kept, dropped = trim_to_cap(runs, float(cap), fps)
        skipped = skipped + [Skipped(r["run_id"], reason, "dropped") for r, reason in dropped]
    planned = pl.DataFrame(
        [{"run_id": r["run_id"], "model": r["model"]["name"], "method": r["method"],
          "freeze_fraction": r.get("freeze_fraction"), "lora_rank": r.get("lora_rank"),
          "budget": r["budget"], "seed": r["seed"], "peak_lr": r["peak_lr"],
          "planned_tokens": r["planned"]["tokens"], "planned_steps": r["planned"]["steps"]}
         for r in kept],
        schema={"run_id": pl.String, "model": pl.String, "method": pl.String,
                "freeze_fraction": pl.Float64, "lora_rank": pl.Int64, "budget": pl.Float64,
                "seed": pl.Int64, "peak_lr": pl.Float64, "planned_tokens": pl.Float64,
                "planned_steps": pl.Float64})
    skipped_df = pl.DataFrame([{"run_id": s.run_id, "reason": s.reason, "status": s.status} for s in skipped],
                              schema={"run_id": pl.String, "reason": pl.String, "status": pl.String})
    dropped_ids = {r["run_id"] for r, _ in dropped}
    cost = pl.DataFrame([{**run_cost(r, fps), "status": "dropped" if r["run_id"] in dropped_ids else "planned"}
                         for r in runs] if fps else [], schema=COST_SCHEMA)
    return planned, skipped_df, cost


def cost_summary(cost: pl.DataFrame) -> pl.DataFrame:
    """Per (model, method) and in total: runs, paper FLOPs, hardware FLOPs, GPU-hours (planned only)."""
    planned = cost.filter(pl.col("status") == "planned")
    sums = [pl.len().alias("runs"), pl.col("paper_flops").sum(), pl.col("hardware_flops").sum(),
            pl.col("gpu_hours").sum()]
    rows = planned.group_by("model", "method", maintain_order=True).agg(sums)   # grid order
    total = planned.select(pl.lit("total").alias("model"), pl.lit("").alias("method"), *sums)
    return pl.concat([rows, total.cast(rows.schema)])


def format_summary(summary: pl.DataFrame, fps: float, source: str) -> list[str]:
    width = max([len(m) for m in summary["model"]] + [5])
    lines = [f"Cost at {fps:.3g} hardware FLOP/s per GPU ({source}):",
             f"  {'model':<{width}}  {'method':<6}  {'runs':>5}  {'paper FLOP':>10}  "
             f"{'hardware FLOP':>13}  {'GPU-hours':>10}"]
    for r in summary.iter_rows(named=True):
        lines.append(f"  {r['model']:<{width}}  {r['method']:<6}  {r['runs']:>5}  {r['paper_flops']:>10.3g}  "
                     f"{r['hardware_flops']:>13.3g}  {r['gpu_hours']:>10.4g}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="embtune plan", description=__doc__)
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets")
    ap.add_argument("--params-json", help="already-validated params (models/train/paths) as JSON, "
                    "as the Snakemake rule passes them")
    ap.add_argument("--flops-per-second", type=float, default=None,
                    help="hardware FLOP/s per GPU (default: $EMBTUNE_FLOPS_PER_SECOND, else "
                         "profiles/default/throughput.yaml; the Snakemake rule passes the same value)")
    ap.add_argument("--out-runs", help="CSV of planned training runs")
    ap.add_argument("--out-skipped", help="CSV of configurations skipped at planning time or dropped by the cap")
    ap.add_argument("--out-cost", help="CSV of each planned or dropped run's FLOPs and GPU-hours")
    args = ap.parse_args(argv)
    try:
        params = json.loads(args.params_json) if args.params_json else load_params(args.files)
        fps = args.flops_per_second or flops_per_second()
        if fps <= 0:
            raise CostError(f"--flops-per-second: expected a positive number, got {fps}")
    except (ParamsError, CostError) as err:
        print(err, file=sys.stderr)
        return 1
    source = "--flops-per-second" if args.flops_per_second else "calibrated: embtune.cost.flops_per_second"
    planned, skipped, cost = plan_tables(params, fps)
    n_query = f"; {len(query_runs(params))} query-tuning runs" if "query_tuning" in params else ""
    n_dropped = int((skipped["status"] == "dropped").sum())
    print(f"{planned.height} training runs planned, {skipped.height - n_dropped} skipped, "
          f"{n_dropped} dropped by train.gpu_hours_cap{n_query}")
    for line in format_summary(cost_summary(cost), fps, source):
        print(line)
    cap = params["train"].get("gpu_hours_cap")
    if cap is not None:
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
    for row in skipped.filter(pl.col("status") != "dropped").iter_rows(named=True):
        print(f"  {row['status']} {row['run_id']}: {row['reason']}")
    for (reason,), group in skipped.filter(pl.col("status") == "dropped").group_by(
            "reason", maintain_order=True):
        print(f"  dropped {group.height} runs: {reason}")
    if args.out_runs:
        io.write_text(args.out_runs, planned.write_csv())
    if args.out_skipped:
        io.write_text(args.out_skipped, skipped.write_csv())
    if args.out_cost:
        io.write_text(args.out_cost, cost.write_csv())
    return 0
