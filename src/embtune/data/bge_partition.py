"""How the scattered ``prepare-bge`` (:mod:`embtune.data.bge_scatter`) cuts its work into N parts:
byte ranges of the input (spill), key ranges of the seeded pair keys (sort) and row ranges of
the output files (shards), with the part directories' names, the typed arguments of one part (:class:`PartArgs`) and the
schema of the pairs a spill part hands to a sort part.

Why a module of its own: these are pure functions of sizes, keys and counts, which decide that
the N parts together do exactly the one-process stage's work (tested against it); reading and
writing the parts is :mod:`embtune.data.bge_scatter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embtune.data import bge

KEY_SPACE = 1 << 64


def part_name(step: str, part: int, parts: int) -> str:
    """``spill-3-of-7``: the part directory (N in the name, so a new N never reads old parts)."""
    return f"{step}-{part}-of-{parts}"


def key_bound(i: int, n: int) -> int:
    """First key of range ``i`` of ``n`` under ``bge.bucket_of`` (``(key * n) >> 64 == i``)."""
    return -(-i * KEY_SPACE // n)


@dataclass(frozen=True)
class Segment:
    """Bytes ``[start, end)`` of one input file, read by one spill part (gzip: the whole file)."""

    path: str
    start: int
    end: int
    gz: bool


def plan_segments(files: Sequence[str], sizes: Sequence[int], gz: Sequence[bool],
                  parts: int) -> list[list[Segment]]:
    """Split the concatenated input into ``parts`` byte ranges of equal size, per part the file
    segments in input order. A gzip file goes whole to the part holding its first byte."""
    total = sum(sizes)
    lo = [i * total // parts for i in range(parts + 1)]
    out: list[list[Segment]] = [[] for _ in range(parts)]
    offset = 0
    for path, size, zipped in zip(files, sizes, gz):
        if zipped:
            owner = max(i for i in range(parts) if lo[i] <= offset) if total else 0
            out[owner].append(Segment(path, 0, size, True))
        else:
            for i in range(parts):
                a, b = max(lo[i], offset), min(lo[i + 1], offset + size)
                if a < b:
                    out[i].append(Segment(path, a - offset, b - offset, False))
        offset += size
    return out


def file_owner(files: Sequence[str], sizes: Sequence[int], parts: int) -> list[int]:
    """The part that hashes each file (the one holding its first byte): one reader per file."""
    total, offset, owners = sum(sizes), 0, []
    for size in sizes:
        owners.append(min(parts - 1, offset * parts // total) if total else 0)
        offset += size
    return owners


def dedup_sorted(table: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Rows of a (key, query, pos)-sorted table without exact repeats, and the kept mask."""
    n = table.num_rows
    keep = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for name in ("key", "query", "pos"):
            col = table.column(name).combine_chunks()
            same &= pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        keep[1:] = ~same
    return table.filter(pa.array(keep)), keep


def bucket_ids(keys: np.ndarray, n_buckets: int) -> np.ndarray:
    """``bge.bucket_of`` for every key, vectorised (a search among the buckets' first keys)."""
    bounds = np.array([key_bound(b, n_buckets) for b in range(1, n_buckets)], dtype=np.uint64)
    return np.searchsorted(bounds, keys, side="right")


def duplicates_counted(buckets: dict[int, list[int]], max_pairs: int | None) -> tuple[int, int]:
    """(pairs kept, duplicates removed) as ``bge.ordered_pairs`` counts them: buckets in key
    order, each bucket's duplicates counted, stopping after the bucket that reaches max_pairs."""
    remaining, removed, total = max_pairs, 0, 0
    for b in sorted(buckets):
        rows, dups = buckets[b]
        removed += dups
        take = rows if remaining is None else min(rows, remaining)
        total += take
        if remaining is not None:
            remaining -= take
            if remaining == 0:
                break
    return total, removed


def layout(total: int, val_pairs: int, shard_rows: int) -> list[tuple[str, int, int]]:
    """``(name, first row, end row)`` of every output file, as ``bge.write_shards`` cuts them:
    val.parquet (empty when val_pairs is 0), then train shards of shard_rows (the last shorter)."""
    files: list[tuple[str, int, int]] = []
    start = min(val_pairs, total)
    files.append(("val.parquet", 0, start))
    while start < total:
        end = min(start + shard_rows, total)
        files.append((f"train-{len(files) - 1:05d}.parquet", start, end))
        start = end
    return files


def shard_owner(start: int, total: int, parts: int) -> int:
    """The shards part writing the file whose first row is ``start`` (equal row ranges)."""
    return min(parts - 1, start * parts // total) if total else 0


def merged_buckets(records: Sequence[dict[str, Any]]) -> dict[int, list[int]]:
    merged: dict[int, list[int]] = {}
    for rec in records:
        for b, (rows, dups) in rec["buckets"].items():
            cur = merged.setdefault(int(b), [0, 0])
            cur[0] += rows
            cur[1] += dups
    return merged


PAIR_SCHEMA = pa.schema([("key", pa.uint64()), ("query", pa.string()), ("pos", pa.string())])


@dataclass(frozen=True)
class PartArgs:
    """One ``prepare-bge-part`` step: its flags, typed (field = flag name; a step leaves the
    fields of the other steps at their defaults)."""

    step: str
    parts: int
    out: str
    part: int = 0
    files: Sequence[str] = ()
    seed: int = 0
    no_english_filter: bool = False
    no_dedup: bool = False
    inputs: Sequence[str] = ()
    tokenizer: str = ""
    context_length: int = 0
    val_pairs: int = 0
    max_pairs: int | None = None
    shard_rows: int = 0
    threads: int | None = None
    spill: Sequence[str] = ()
    sorted: Sequence[str] = ()
    shards: Sequence[str] = ()

    def settings(self) -> bge.BgeSettings:
        """The one-process stage's settings these flags stand for (checks and the manifest)."""
        return bge.BgeSettings(
            files=self.files, tokenizer=self.tokenizer, context_length=self.context_length,
            val_pairs=self.val_pairs, shard_rows=self.shard_rows, seed=self.seed, out=self.out,
            max_pairs=self.max_pairs, no_english_filter=self.no_english_filter,
            no_dedup=self.no_dedup, threads=self.threads)
