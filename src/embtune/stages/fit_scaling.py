"""Stage ``fit-scaling``: scaling laws per method, frontier lines, crossovers, optimal-N lines.

Why a driver apart from :mod:`embtune.scaling.fit_laws`: the library fits everything fits.json
holds from a runs table (its docstring lists the keys); the arguments, reading the runs table,
the provenance, the finished runs left out for a NaN/inf loss, writing fits.json and the printed
warnings (untrustworthy fits, crossovers) live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.core.io import provenance, write_json
from embtune.scaling.artifacts import RUNS_REQUIRED, read_runs_table
from embtune.scaling.failed import failed_runs, lost_rows
from embtune.scaling.fit_laws import finite_json, fit_all
from embtune.scaling.runs_table import nonfinite_runs

STAGE = "fit-scaling"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--huber-delta", type=float, default=1e-3)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--holdout", choices=["largest_model", "none"], default="largest_model")
    ap.add_argument("--loss-column", default="final_train_loss", choices=["final_train_loss", "val_loss"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chinchilla-coefficients", choices=["positive", "real"], default="positive",
                    help="A, B, E of the Chinchilla law in R+ (paper 1 §4.3, default) or R (App. E)")
    ap.add_argument("--workers", type=int, default=1, help="processes for the per-method fits")
    ap.add_argument("--out", type=Path, required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs = read_runs_table(args.runs, (*RUNS_REQUIRED, args.loss_column))
    fits = fit_all(runs, metric=args.loss_column, delta=args.huber_delta,
                   n_boot=args.bootstrap, holdout=args.holdout, seed=args.seed,
                   workers=args.workers, chinchilla_coefficients=args.chinchilla_coefficients)
    fits["provenance"] = provenance(stable=True, runs=str(args.runs))
    # finished runs left out for a NaN/inf or impossible loss (``excluded``); the old key stays
    fits["excluded"] = fits["dropped_nonfinite"] = nonfinite_runs(runs, args.loss_column)
    fits["failed_runs"] = failed_runs(runs)             # failed for good: every study, with reasons
    fits["lost_rows"] = lost_rows(runs, fits["methods"])  # per method: main-grid rows lost to them
    write_json(args.out, finite_json(fits))
    for bad in fits["untrustworthy"]:
        print(f"WARNING: untrustworthy fit {bad['method']}/{bad['law']}: {'; '.join(bad['issues'])}")
    for c in fits["frontier"]["crossovers"]:
        print(f"crossover {c['methods']}: {c.get('budget')}")
    print(f"{STAGE}: methods {fits['methods']} -> {args.out}")
    for method, lost in fits["lost_rows"].items():
        if lost["count"]:
            print(f"{STAGE}: {method}: lost {lost['count']} row(s) to failed runs: "
                  + ", ".join(f"{r['run_id']} ({r['reason']})" for r in lost["runs"]))
    if fits["dropped_nonfinite"]["count"]:
        print(f"{STAGE}: left out {fits['dropped_nonfinite']['count']} finished run(s) whose "
              f"{args.loss_column} is NaN/inf or impossible: "
              + "; ".join(f"{r['run_id']} ({r['reason']})" for r in fits['excluded']['runs']))
    return 0
