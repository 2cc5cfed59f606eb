"""Benchmark the training-pair store: load time and resident memory of N tokenised pairs, and the
time to pad a step's chunks, for the previous list-of-lists reader (baseline, kept verbatim below)
against the columnar parquet reader and the packed, memory-mapped store the train stage uses.

    .venv/bin/python benchmarks/bench_pairs.py [--pairs 1000000] [--batch 1024] [--chunk 64]

Each reader runs in its own subprocess so its peak RSS is its own. Lengths follow a BGE-like
shape (queries 4-40 tokens, passages 16-75, context 75); shards of 100K rows as prepare-bge writes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_shards(root: Path, n: int, shard_rows: int = 100_000, seed: int = 0) -> None:
    """prepare-bge-shaped shards built straight from Arrow buffers (fast to generate)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)

    def column(lengths: np.ndarray) -> pa.ListArray:
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        values = rng.integers(2, 50_000, size=int(offsets[-1]), dtype=np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))

    for i, start in enumerate(range(0, n, shard_rows)):
        rows = min(shard_rows, n - start)
        ql, pl_ = rng.integers(4, 41, rows), rng.integers(16, 76, rows)
        table = pa.table({"query": pa.array(["q"] * rows), "pos": pa.array(["p"] * rows),
                          "query_ids": column(ql), "pos_ids": column(pl_),
                          "query_tokens": pa.array(ql.astype(np.int32)), "pos_tokens": pa.array(pl_.astype(np.int32))})
        pq.write_table(table, root / f"train-{i:05d}.parquet")


# --------------------------------------------------------------------------- baseline (previous code)
def lists_read_pairs(files: list[Path], context_length: int) -> tuple[list[list[int]], list[list[int]]]:
    """The previous ``read_pairs``: token ids as Python lists."""
    import polars as pl

    frame = pl.concat([pl.read_parquet(f, columns=["query_ids", "pos_ids"]) for f in files])
    cut = lambda col: [list(x[:context_length]) for x in frame[col].to_list()]  # noqa: E731
    return cut("query_ids"), cut("pos_ids")


def lists_pad_chunk(seqs, pad_id: int):
    """The previous ``pad_chunk``: one row at a time."""
    import torch

    width = max(1, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids, mask


# --------------------------------------------------------------------------- one measurement
def _rss_mb() -> dict[str, float]:
    """Private (anonymous) and file-backed resident memory now, from /proc/self/status: mapped
    pages are file-backed and shared by every process that maps the same files."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {k: int(fields[k].split()[0]) / 1024 for k in ("RssAnon", "RssFile")}


def worker(cfg: dict) -> dict:
    from embtune.train.loop import length_sorted_chunks
    from embtune.train.pairs import open_pairs, read_pairs, train_shards

    files, ctx = train_shards(cfg["data"]), 75
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    if cfg["mode"] == "lists":
        q, p = lists_read_pairs(files, ctx)
        n = len(q)
    else:
        pairs = read_pairs(files, ctx) if cfg["mode"] == "parquet" else open_pairs(cfg["packed"], "train", ctx)
        lengths = pairs.lengths()                      # what plan_steps needs up front
        n = len(pairs)
    load = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    batches = [rng.choice(n, cfg["batch"], replace=False) for _ in range(cfg["steps"])]
    t0 = time.perf_counter()
    for idx in batches:                                  # one training step's chunks
        if cfg["mode"] == "lists":
            for side in (q, p):
                seqs = [side[i] for i in idx]
                [lists_pad_chunk(seqs[s:s + cfg["chunk"]], 1) for s in range(0, len(seqs), cfg["chunk"])]
        else:
            length_sorted_chunks(pairs, idx, cfg["chunk"], 1)
    pad = (time.perf_counter() - t0) / cfg["steps"]
    if cfg["mode"] != "lists":
        assert len(lengths) == n
    rss = _rss_mb()
    return {**cfg, "pairs": n, "load_s": load, "pad_ms_per_step": 1000 * pad,
            "private_mb": rss["RssAnon"] - rss0["RssAnon"], "shared_mb": rss["RssFile"] - rss0["RssFile"]}


def _spawn(cfg: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(cfg)], capture_output=True,
                         text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    from embtune.train.pairs import pack_pairs

    with tempfile.TemporaryDirectory() as tmp:
        data, packed = Path(tmp) / "bge", Path(tmp) / "packed"
        make_shards(data, args.pairs)
        t0 = time.perf_counter()
        meta = pack_pairs(data, packed)
        pack_s = time.perf_counter() - t0
        tokens = meta["splits"]["train"]["query_tokens"] + meta["splits"]["train"]["pos_tokens"]
        common = {"data": str(data), "packed": str(packed), "batch": args.batch, "chunk": args.chunk,
                  "steps": args.steps}
        res = {m: _spawn({**common, "mode": m}) for m in ("lists", "parquet", "packed")}
    print(f"{args.pairs} pairs, {tokens} tokens; pack-pairs took {pack_s:.1f} s (once per dataset)")
    print(f"{'reader':<34} {'load s':>8} {'private MB':>11} {'shared MB':>10} {'pad ms/step':>12}")
    labels = {"lists": "Python lists (previous, baseline)", "parquet": "columnar from parquet",
              "packed": "packed, memory-mapped (train)"}
    for mode, r in res.items():
        print(f"{labels[mode]:<34} {r['load_s']:8.2f} {r['private_mb']:11.1f} {r['shared_mb']:10.1f} "
              f"{r['pad_ms_per_step']:12.1f}")
    base = res["lists"]
    for mode in ("parquet", "packed"):
        r = res[mode]
        print(f"{labels[mode]}: load {base['load_s'] / r['load_s']:.0f}x faster, "
              f"{base['private_mb'] / max(r['private_mb'], 0.1):.0f}x less private memory, "
              f"step padding {base['pad_ms_per_step'] / r['pad_ms_per_step']:.1f}x faster "
              f"(batch {args.batch}, chunk {args.chunk})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
