"""Stage ``appendix-tables``: paper 1 App. D tables and App. F predicted-vs-actual (Fig. 20).

Why a driver apart from :mod:`embtune.scaling.appendix`: the library builds each study's tables,
fit and figure (its docstring lists the files); the arguments, the plan's memberships from the
params, reading the runs table and the output folder (appears whole, ``manifest.json`` last)
live here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from embtune.core.io import atomic_dir, provenance, read_json, write_json
from embtune.plan.sweep import training_plan
from embtune.scaling.appendix import finite_json, write_study
from embtune.scaling.artifacts import RUNS_REQUIRED, read_runs_table

STAGE = "appendix-tables"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True, help="{results}/analysis/runs.parquet")
    ap.add_argument("--params-json", required=True,
                    help="validated params (models, train, paths) as JSON, as the rule passes them")
    ap.add_argument("--plan", type=Path, default=None,
                    help="the plan stage's --out-plan JSON (the studies' memberships); default: "
                         "expanded from --params-json")
    ap.add_argument("--huber-delta", type=float, default=1e-3)
    ap.add_argument("--loss-column", default="final_train_loss", choices=["final_train_loss", "val_loss"])
    ap.add_argument("--out", type=Path, required=True, help="{results}/analysis/appendix")
    return ap


def save_transfer_figure(points: pl.DataFrame, title: str, path: Path) -> None:
    """Fig. 20 as a PNG (the plotting layer is the driver's to call, not the scaling library's)."""
    import matplotlib.pyplot as plt

    from embtune.plots.figures import transfer_figure

    fig = transfer_figure(points, title)
    try:
        fig.savefig(path, format="png", dpi=130)
    finally:
        plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs = read_runs_table(args.runs, (*RUNS_REQUIRED, args.loss_column))
    params = json.loads(args.params_json)
    if args.plan is not None:
        members = read_json(args.plan)["members"]
    else:
        _, _, members = training_plan(params)
    studies = params["train"].get("studies") or []
    with atomic_dir(args.out) as tmp:
        done = {s["name"]: write_study(tmp, runs, members, s, args.loss_column, args.huber_delta,
                                          save_transfer_figure)
                for s in studies}
        write_json(tmp / "manifest.json", finite_json(provenance(stage=STAGE, studies=done, runs=str(args.runs))))
    print(f"{STAGE}: {len(studies)} studies -> {args.out}")
    for name, entry in done.items():
        print(f"  {name}: {entry['finished']}/{entry['runs']} runs finished")
    return 0
