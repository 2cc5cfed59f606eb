"""Benchmark the scattered BGE preparation: N parallel jobs against one job, same input, same run.

    HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false .venv/bin/python benchmarks/bench_bge_scatter.py \
        [--pairs 60000] [--files 4] [--parts N (default: CPU count)]

Input: the synthetic FlagEmbedding records of benchmarks/bench_prepare_bge.py (demo pairs made
unique, a quarter of the positives several passages long, 1-3 negatives per record, ~1%
non-English, ~0.5% duplicates, ~0.2% malformed), and its 4096-token byte-level BPE tokenizer.

"One job" is ``embtune prepare-bge --threads 1`` in one process (what a single SLURM job with one
core does). "N parallel jobs" runs the Snakemake rules' commands as separate processes, the N
parts of each step at once (spill, then sort, then shards, then the gather): ``embtune
prepare-bge-part ... --threads 1``, as the cluster runs them with one core per job. Every job is
a fresh process (imports and tokenizer load included, as on the cluster). It prints both wall
times, their ratio and the time of each step, and checks the outputs are byte-identical (exit
status 1 otherwise). On a machine with fewer free cores than N the parts queue for CPU, so the
ratio is bounded by the free cores (on 2 cores: at most 2x, less the serial gather and the
per-process start-up). Hence it also prints each job's CPU seconds and the CPU critical path (the
slowest job of each step, summed): the wall time the N jobs take on N free cores, a number that
other load on a shared machine does not change much.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_prepare_bge import synthetic_files, train_tokenizer  # noqa: E402  (sys.path above)

from embtune.data.bge_partition import part_name  # noqa: E402

CTX, VAL, SHARD, SEED = "128", "1000", "10000", "0"


def embtune(*argv: str) -> subprocess.Popen:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "embtune.cli", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_all(procs: list[subprocess.Popen]) -> list[float]:
    """Wait for every job; return each one's CPU seconds (user + system, from wait4)."""
    cpu = []
    for p in procs:
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"job failed ({p.args[3:5]}): {err[-2000:]}")
        cpu.append(usage.ru_utime + usage.ru_stime)
    return cpu


def one_job(files: list[str], tok: Path, out: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    cpu = wait_all([embtune("prepare-bge", "--files", *files, "--tokenizer", str(tok), "--context-length", CTX,
                      "--val-pairs", VAL, "--shard-rows", SHARD, "--seed", SEED, "--threads", "1",
                      "--out", str(out))])
    return time.perf_counter() - t0, cpu[0]


def parallel_jobs(files: list[str], tok: Path, work: Path,
                  parts: int) -> tuple[float, dict[str, float], dict[str, list[float]]]:
    dirs = {s: [str(work / part_name(s, i, parts)) for i in range(parts)] for s in ("spill", "sort", "shards")}
    n = ["--parts", str(parts)]
    steps = {
        "spill": [["prepare-bge-part", "spill", "--files", *files, "--seed", SEED, *n, "--part", str(i),
                   "--out", dirs["spill"][i]] for i in range(parts)],
        "sort": [["prepare-bge-part", "sort", "--inputs", *dirs["spill"], *n, "--part", str(i),
                  "--out", dirs["sort"][i]] for i in range(parts)],
        "shards": [["prepare-bge-part", "shards", "--inputs", *dirs["sort"], "--tokenizer", str(tok),
                    "--context-length", CTX, "--val-pairs", VAL, "--shard-rows", SHARD, "--threads", "1",
                    *n, "--part", str(i), "--out", dirs["shards"][i]] for i in range(parts)],
        "gather": [["prepare-bge-part", "gather", "--files", *files, "--seed", SEED, "--tokenizer", str(tok),
                    "--context-length", CTX, "--val-pairs", VAL, "--shard-rows", SHARD, *n,
                    "--spill", *dirs["spill"], "--sorted", *dirs["sort"], "--shards", *dirs["shards"],
                    "--out", str(work / "bge")]],
    }
    times, cpu = {}, {}
    t0 = time.perf_counter()
    for step, jobs in steps.items():
        t = time.perf_counter()
        cpu[step] = wait_all([embtune(*argv) for argv in jobs])
        times[step] = time.perf_counter() - t
    return time.perf_counter() - t0, times, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=60_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--parts", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bge-scatter.") as tmp_:
        tmp = Path(tmp_)
        files = [str(f) for f in synthetic_files(tmp, a.pairs, a.files, seed=0)]
        tok = train_tokenizer(tmp / "tok")
        size = sum(os.path.getsize(f) for f in files)
        print(f"input: {a.pairs} records, {a.files} files, {size / 1e6:.1f} MB; {os.cpu_count()} CPUs")
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        t_one, cpu_one = one_job(files, tok, tmp / "one")
        t_par, steps, cpu = parallel_jobs(files, tok, tmp / "work", a.parts)
        critical = sum(max(c) for c in cpu.values())
        ref, got = tmp / "one", tmp / "work" / "bge"
        names = sorted(p.name for p in ref.iterdir())
        same = names == sorted(p.name for p in got.iterdir()) and all(
            (ref / n).read_bytes() == (got / n).read_bytes() for n in names)
        print(f"one job:          {t_one:7.2f} s wall, {cpu_one:6.2f} s CPU  ({a.pairs / t_one:,.0f} records/s)")
        print(f"{a.parts} parallel jobs:  {t_par:7.2f} s wall, {sum(map(sum, cpu.values())):6.2f} s CPU  "
              f"({a.pairs / t_par:,.0f} records/s)")
        for step, wall in steps.items():
            print(f"  {step:<7} {wall:6.2f} s wall; CPU s per job: " + " ".join(f"{c:.2f}" for c in cpu[step]))
        print(f"speed-up: {t_one / t_par:.2f}x  (wall time of one job / of {a.parts} parallel jobs)")
        print(f"CPU critical path: {critical:.2f} s (the slowest job of each step, summed): "
              f"{cpu_one / critical:.2f}x with {a.parts} free cores (on a loaded machine the wall "
              f"ratio is lower; load average now {os.getloadavg()[0]:.1f})")
        print(f"outputs byte-identical: {same} ({len(names)} files)")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
