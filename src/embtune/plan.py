"""``embtune plan``: the training grid as tables — what will run and what is skipped, and why.

Why a stage: a skipped configuration must be visible next to the results (the scaling analysis
reads ``skipped.csv``), not silently absent from the grid.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import polars as pl

from embtune import io
from embtune.config import ParamsError, load_params
from embtune.sweep import query_runs, training_runs


def plan_tables(params: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    runs, skipped = training_runs(params)
    planned = pl.DataFrame(
        [{"run_id": r["run_id"], "model": r["model"]["name"], "method": r["method"],
          "freeze_fraction": r.get("freeze_fraction"), "lora_rank": r.get("lora_rank"),
          "budget": r["budget"], "seed": r["seed"], "peak_lr": r["peak_lr"],
          "planned_tokens": r["planned"]["tokens"], "planned_steps": r["planned"]["steps"]}
         for r in runs],
        schema={"run_id": pl.String, "model": pl.String, "method": pl.String,
                "freeze_fraction": pl.Float64, "lora_rank": pl.Int64, "budget": pl.Float64,
                "seed": pl.Int64, "peak_lr": pl.Float64, "planned_tokens": pl.Float64,
                "planned_steps": pl.Float64})
    skipped_df = pl.DataFrame([{"run_id": s.run_id, "reason": s.reason} for s in skipped],
                              schema={"run_id": pl.String, "reason": pl.String})
    return planned, skipped_df


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="embtune plan", description=__doc__)
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets")
    ap.add_argument("--params-json", help="already-validated params (models/train/paths) as JSON, "
                    "as the Snakemake rule passes them")
    ap.add_argument("--out-runs", help="CSV of planned training runs")
    ap.add_argument("--out-skipped", help="CSV of configurations skipped at planning time")
    args = ap.parse_args(argv)
    try:
        params = json.loads(args.params_json) if args.params_json else load_params(args.files)
    except ParamsError as err:
        print(err, file=sys.stderr)
        return 1
    planned, skipped = plan_tables(params)
    n_query = f"; {len(query_runs(params))} query-tuning runs" if "query_tuning" in params else ""
    print(f"{planned.height} training runs planned, {skipped.height} skipped{n_query}")
    for row in skipped.iter_rows(named=True):
        print(f"  skipped {row['run_id']}: {row['reason']}")
    if args.out_runs:
        io.write_text(args.out_runs, planned.write_csv())
    if args.out_skipped:
        io.write_text(args.out_skipped, skipped.write_csv())
    return 0
