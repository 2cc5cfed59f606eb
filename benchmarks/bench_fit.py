"""Benchmark: fit-scaling on a synthetic paper-size runs table with 1,000 bootstrap resamples.

Target (issue 5): <= 2 minutes on 2 cores. Prints the table size, the wall time of the whole
``fit_all`` (both laws × 4 methods, held-out largest model, bootstrap of laws and frontier lines)
and whether the fits recovered the generating parameters' exponents.

    .venv/bin/python benchmarks/bench_fit.py [--bootstrap 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from embtune.scaling.fit_cli import fit_all
from embtune.scaling.synthetic import TRUE_PARAMS, synthetic_runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes (the target machine has 2 cores)")
    args = ap.parse_args()
    runs = synthetic_runs(seed=args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    fits = fit_all(runs, n_boot=args.bootstrap, seed=args.seed, workers=args.workers)
    wall, cpu_main = time.perf_counter() - t0, time.process_time() - c0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu_main + children.ru_utime + children.ru_stime
    print(f"rows={runs.height} methods={fits['methods']} bootstrap={args.bootstrap}")
    print(f"fit_all wall time: {wall:.1f} s, CPU time {cpu:.1f} s over {args.workers} worker(s) "
          f"(target <= 120 s on 2 cores; load average now {os.getloadavg()[0]:.1f})")
    for method, laws in fits["laws"].items():
        for law in ("chinchilla", "modified"):
            f = laws[law]
            if "skipped" in f:
                print(f"  {method:6s} {law:10s} skipped: {f['skipped']}")
                continue
            boot = f.get("bootstrap", {})
            print(f"  {method:6s} {law:10s} converged={f['converged']} |grad|={f['grad_norm']:.1e} "
                  f"holdout_rmse_log={f.get('holdout', {}).get('rmse_log', float('nan')):.4f} "
                  f"alpha={f['params']['alpha']:.4f} (true {TRUE_PARAMS[method]['alpha']}) "
                  f"beta={f['params']['beta']:.4f} (true {TRUE_PARAMS[method]['beta']}) "
                  f"boot_not_converged={boot.get('n_not_converged')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
