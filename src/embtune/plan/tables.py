"""The training grid as tables — what will run, what is skipped and why, and what it costs
(paper FLOPs, hardware FLOPs, GPU-hours) before anything runs (stage ``plan``, driver
:mod:`embtune.stages.plan`).

Why a stage: a skipped or capped configuration must be visible next to the results (the scaling
analysis reads ``skipped.csv``), not silently absent from the grid; and a study is planned in
GPU-hours (``embtune.plan.cost``).
"""

from __future__ import annotations

import polars as pl

from embtune.models import methods as registry
from embtune.plan.cost import flops_per_second, run_cost, trim_to_cap
from embtune.plan.sweep import Skipped, StudyPlan, expand
from embtune.runconfig import RunConfig

COST_SCHEMA = {"run_id": pl.String, "model": pl.String, "method": pl.String, "budget": pl.Float64,
               "seed": pl.Int64, "status": pl.String, "paper_flops": pl.Float64,
               "hardware_flops": pl.Float64, "gpu_hours": pl.Float64, "two_pass_gradcache": pl.Boolean,
               "checkpointing": pl.Boolean, "flops_per_second": pl.Float64}


def plan_tables(params: dict, fps: float | None = None, plan: StudyPlan | None = None,
                ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(planned runs, skipped and dropped runs, per-run cost of planned + dropped runs).

    ``fps`` is the calibrated hardware FLOP/s per GPU; it is only needed for the cost table and
    the cap, so without it and without a cap the cost table is empty. ``plan`` is the params'
    plan when the caller has it (else it is expanded here); the cap is applied here, at ``fps``,
    with the same function as ``sweep.expand_training``."""
    plan = plan if plan is not None else expand(params, flops_per_second=fps)
    runs = plan.candidates
    skipped = [s for s in plan.skipped if s.status != "dropped"]
    cap = params["train"].get("gpu_hours_cap")
    dropped: list[tuple[RunConfig, str]] = []
    if fps is None and cap is not None:
        fps = flops_per_second()
    kept = runs
    if cap is not None:
        kept, dropped = trim_to_cap(runs, float(cap), fps)
        skipped = skipped + [Skipped(r.run_id, reason, "dropped") for r, reason in dropped]
    hyper = registry.hyper_types()        # each method's own column (its registry entry)
    planned = pl.DataFrame(
        [{"run_id": r.run_id, "model": r.model.name, "method": r.method,
          **{col: registry.hyper_value(col, r.settings.to_dict().get(col)) for col in hyper},
          "budget": r.budget, "seed": r.seed, "peak_lr": r.peak_lr,
          "planned_tokens": r.planned.tokens, "planned_steps": r.planned.steps}
         for r in kept],
        schema={"run_id": pl.String, "model": pl.String, "method": pl.String,
                **{col: pl.Int64 if integer else pl.Float64 for col, integer in hyper.items()},
                "budget": pl.Float64,
                "seed": pl.Int64, "peak_lr": pl.Float64, "planned_tokens": pl.Float64,
                "planned_steps": pl.Float64})
    skipped_df = pl.DataFrame([{"run_id": s.run_id, "reason": s.reason, "status": s.status} for s in skipped],
                              schema={"run_id": pl.String, "reason": pl.String, "status": pl.String})
    dropped_ids = {r.run_id for r, _ in dropped}
    cost = pl.DataFrame([{**run_cost(r, fps), "status": "dropped" if r.run_id in dropped_ids else "planned"}
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
