"""Benchmark: fit-scaling on a synthetic paper-size runs table with 1,000 bootstrap resamples,
the current fitter against the single-grid fitter it replaced (issue 12), in the same run.

Target (issue 5): the whole ``fit_all`` <= 2 minutes on 2 cores. Prints
1. the law fits alone (both laws × 4 methods, held-out largest model, ``--bootstrap`` resamples),
   serially in this process, for the BASELINE (``baseline_fit.py``: the previous code verbatim)
   and the current fitter, in alternating order over ``--repeats``; the best time of each and the
   ratio current / baseline; what each found (objective: lower is better, parameters at a bound,
   what each calls converged / trustworthy);
2. the wall and CPU time of the whole current ``fit_all`` (laws, frontier lines, bootstrap) with
   ``--workers`` processes.
Why the current fitter is not slower although it searches far more: the exponent grid is solved
in a few vectorised least-squares passes, and bootstrap refits are warm-started from the
full-data optimum (plus up to two rival optima within 20% of it), not searched from scratch.

    .venv/bin/python benchmarks/bench_fit.py [--bootstrap 1000] [--seed 0] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from embtune.scaling import fit as current_fit
from embtune.scaling.fit_laws import fit_all, law_rows
from embtune.scaling.laws import LAWS
from embtune.scaling.synthetic import TRUE_PARAMS, synthetic_runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baseline_fit  # noqa: E402  (the previous fitter, verbatim)

METHODS = ("full", "freeze", "bias", "lora")


def law_fits(runs: Any, fitter: str, n_boot: int, seed: int) -> tuple[float, float, dict[tuple[str, str], dict]]:
    """(wall s, CPU s, {(method, law): fit}) of every law fit with one fitter, held-out largest
    model. CPU time is the fair measure on a shared machine: one process, one thread."""
    out = {}
    t0, c0 = time.perf_counter(), time.process_time()
    for method in METHODS:
        rows = law_rows(runs, method, "final_train_loss")
        N, D, S, y = (rows[c].to_numpy() for c in ("N", "D", "S", "final_train_loss"))
        hold = N == N.max()
        for name in LAWS:
            if fitter == "baseline":
                out[method, name] = baseline_fit.fit_law(baseline_fit.LAWS[name], N, D, S, y, holdout=hold,
                                                         n_bootstrap=n_boot, seed=seed)
            else:
                out[method, name] = current_fit.fit_law(LAWS[name], N, D, S, y, holdout=hold,
                                                        n_bootstrap=n_boot, seed=seed)
    return time.perf_counter() - t0, time.process_time() - c0, out


def compare(runs: Any, n_boot: int, seed: int, repeats: int) -> None:
    wall = {"baseline": np.inf, "current": np.inf}
    cpu = dict(wall)
    fits: dict[str, dict] = {}
    for rep in range(repeats):
        order = ("baseline", "current") if rep % 2 == 0 else ("current", "baseline")
        for fitter in order:
            w, c, fits[fitter] = law_fits(runs, fitter, n_boot, seed)
            wall[fitter], cpu[fitter] = min(wall[fitter], w), min(cpu[fitter], c)
    print(f"law fits (8 fits, bootstrap={n_boot}, serial, best of {repeats}): CPU baseline "
          f"{cpu['baseline']:.1f} s, current {cpu['current']:.1f} s, ratio current/baseline = "
          f"{cpu['current'] / cpu['baseline']:.2f} (wall {wall['baseline']:.1f} s vs {wall['current']:.1f} s)")
    print("  method law        | baseline: objective  at_bound  converged | current: objective  at_bound  "
          "converged trustworthy starts@best boot_at_bound")
    for (method, name), new in fits["current"].items():
        old = fits["baseline"][method, name]
        ms, boot = new["multistart"], new.get("bootstrap", {})
        print(f"  {method:6s} {name:10s} | {old['objective']:.8f} {str(old['at_bounds']):10s} "
              f"{str(old['converged']):5s} | {new['objective']:.8f} {str(new['at_bound']):10s} "
              f"{str(new['converged']):5s} {str(new['trustworthy']):5s} {ms['n_at_best']}/{ms['n_starts']} "
              f"{boot.get('n_at_bound')}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes (the target machine has 2 cores)")
    ap.add_argument("--repeats", type=int, default=1, help="alternating baseline/current timings")
    ap.add_argument("--no-baseline", action="store_true", help="only time the current fit_all")
    args = ap.parse_args()
    runs = synthetic_runs(seed=args.seed)
    print(f"rows={runs.height} bootstrap={args.bootstrap} load average {os.getloadavg()[0]:.1f}")
    if not args.no_baseline:
        compare(runs, args.bootstrap, args.seed, args.repeats)
    t0, c0 = time.perf_counter(), time.process_time()
    fits = fit_all(runs, n_boot=args.bootstrap, seed=args.seed, workers=args.workers)
    wall, cpu_main = time.perf_counter() - t0, time.process_time() - c0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu_main + children.ru_utime + children.ru_stime
    print(f"fit_all wall time: {wall:.1f} s, CPU time {cpu:.1f} s over {args.workers} worker(s) "
          f"(target <= 120 s on 2 cores; load average now {os.getloadavg()[0]:.1f})")
    for method, laws in fits["laws"].items():
        for law in LAWS:
            f = laws[law]
            if "skipped" in f:
                print(f"  {method:6s} {law:10s} skipped: {f['skipped']}")
                continue
            print(f"  {method:6s} {law:10s} trustworthy={f['trustworthy']} at_bound={f['at_bound']} "
                  f"holdout_rmse_log={f.get('holdout', {}).get('rmse_log', float('nan')):.4f} "
                  f"alpha={f['params']['alpha']:.4f} (true {TRUE_PARAMS[method]['alpha']}) "
                  f"beta={f['params']['beta']:.4f} (true {TRUE_PARAMS[method]['beta']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
