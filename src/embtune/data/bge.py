"""FlagEmbedding BGE pairs -> tokenised, deduplicated parquet shards (``embtune prepare-bge``; its
driver is :mod:`embtune.stages.prepare_bge`).

Paper 1 fine-tunes on the English part of the BAAI BGE pairs with a fixed context length. Each
JSONL record ``{query, pos: [..], neg: [..]}`` gives one pair (query, first positive).

Bounded memory at 200M-pair scale: pairs are streamed once, filtered, and spilled to hash-range
buckets on disk. The "shuffle" is a seeded keyed hash of the pair text, so the global order is
"sort by key"; range-partitioning by key means buckets, each sorted in memory, concatenate to that
global order. Exact duplicates share a key, so they land in the same bucket and are removed there.
The result depends only on the set of input pairs and the seed (not on file order or bucket count).

Speed (``--threads N``): input files are filtered and spilled by up to N worker processes (one file
per task, each into its own bucket part files; a bucket is sorted as a whole, so the parts' order
does not matter), and the Rust tokenizer encodes each batch on N threads. Neither changes a byte
of the output: the outputs for 1 and N threads are identical (tested).

Scale-out: the workflow runs this stage as 3N + 1 separate jobs (embtune.data.bge_scatter: byte
ranges of the input, key ranges of the sort, row ranges of the output), built from the functions
here and byte-identical to this one-process stage (tested); this module stays the reference.

The record filters are :mod:`embtune.data.bge_records`, the tokenising :mod:`embtune.data.bge_tokens`
(both shared with the scattered stage).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import multiprocessing
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embtune.core.io import atomic_path, provenance, sha256_file, write_json, write_parquet
from embtune.data.bge_records import Stats, iter_pairs
from embtune.data.bge_tokens import histogram_stats, load_tokenizer, pairs_frame, tokenizer_threads
from embtune.data.jsonl import DataError, drop_summary
from embtune.data.sources import expand_files
from embtune.jobs.progress import iterate

BUCKET_TARGET_BYTES = 256 << 20   # input bytes per spill bucket (each bucket is sorted in memory)
SPILL_BUFFER_PAIRS = 100_000  # pairs held in memory (all buckets together) before appending to disk


def pair_key(seed: int, query: str, pos: str) -> int:
    """Seeded 64-bit key of a pair: the shuffle order and the dedup bucket in one number.

    The keyed blake2b of ``utf8(query) + b"\\x00" + utf8(pos)``; the keyed state is built once per
    seed and copied (cheaper than re-keying for every pair)."""
    h = _keyed_blake2b(seed).copy()
    h.update(f"{query}\x00{pos}".encode())
    return int.from_bytes(h.digest(), "big")


@functools.lru_cache(maxsize=8)
def _keyed_blake2b(seed: int) -> Any:
    return hashlib.blake2b(digest_size=8, key=str(seed).encode())


def bucket_of(key: int, n_buckets: int) -> int:
    """Range partition (not modulo), so concatenated sorted buckets are globally sorted."""
    return (key * n_buckets) >> 64


def n_buckets_for(total_bytes: int) -> int:
    return max(1, min(4096, math.ceil(total_bytes / BUCKET_TARGET_BYTES)))


def spill(pairs: Iterable[tuple[str, str]], seed: int, n_buckets: int, tmpdir: Path) -> list[Path]:
    """Append each pair as ``(key, query, pos)`` to its key-range bucket file.

    Why one JSON line per *batch* rather than per pair: (de)serialising a whole list in one
    ``json.dumps``/``loads`` call runs in C, several times faster than a call per pair; and JSON,
    not pickle, because nothing in embtune is loaded with pickle (a temp dir on a shared
    filesystem is writable by others). JSON keeps the 64-bit keys exact. Pairs are buffered in memory
    (at most ``SPILL_BUFFER_PAIRS``) and a bucket file is only opened to append a batch, so even
    thousands of buckets never hit the open-file limit. A bucket that got no pair has no file."""
    paths = [tmpdir / f"bucket-{i:05d}.jsonl" for i in range(n_buckets)]
    buffers: list[list[tuple[int, str, str]]] = [[] for _ in range(n_buckets)]
    buffered = 0
    for query, pos in pairs:
        key = pair_key(seed, query, pos)
        buffers[bucket_of(key, n_buckets)].append((key, query, pos))
        buffered += 1
        if buffered >= SPILL_BUFFER_PAIRS:
            _flush(paths, buffers)
            buffered = 0
    _flush(paths, buffers)
    return paths


def _flush(paths: list[Path], buffers: list[list[tuple[int, str, str]]]) -> None:
    for path, buf in zip(paths, buffers):
        if buf:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(buf))   # ASCII escapes: lone surrogates survive
                fh.write("\n")
            buf.clear()


@dataclass(frozen=True)
class SpillJob:
    """One input file to filter and spill into its own bucket part files under ``tmpdir``."""

    path: str
    english_filter: bool
    seed: int
    n_buckets: int
    tmpdir: Path


def spill_file(job: SpillJob) -> tuple[list[Path], Stats]:
    """Filter and spill one file (a worker process task); return its bucket paths and counts."""
    job.tmpdir.mkdir()
    stats = Stats()
    paths = spill(iter_pairs([job.path], job.english_filter, stats), job.seed, job.n_buckets, job.tmpdir)
    return paths, stats


def spill_all(files: Sequence[str], english_filter: bool, seed: int, n_buckets: int, tmpdir: Path,
              threads: int) -> tuple[list[list[Path]], Stats]:
    """Filter and spill every file; return each bucket's part files and the counts of all files.

    With ``threads > 1`` files are spread over that many worker processes (JSON parsing and the
    English test are pure Python, so threads would not run in parallel). Why ``spawn``: forking a
    process that has started polars' thread pool can deadlock the child. Results are merged in
    file order, so counts and drop examples are the same as for one process."""
    jobs = [SpillJob(f, english_filter, seed, n_buckets, tmpdir / f"part-{i:05d}") for i, f in enumerate(files)]
    if threads > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(threads, len(jobs)), mp_context=ctx) as pool:
            results = list(pool.map(spill_file, jobs))
    else:
        results = [spill_file(job) for job in jobs]
    stats = Stats()
    for _, part in results:
        stats.merge(part)
    return [[paths[b] for paths, _ in results] for b in range(n_buckets)], stats


def read_bucket(paths: Sequence[Path], dedup: bool) -> tuple[list[tuple[str, str]], int]:
    """Sort one bucket (all its part files) by (key, query, pos); drop exact duplicates if asked."""
    rows: list[list[Any]] = []   # [key, query, pos]: lists sort like tuples
    for path in paths:
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                rows.extend(json.loads(line))
    rows.sort()
    if not dedup:
        return [(q, p) for _, q, p in rows], 0
    out: list[tuple[str, str]] = []
    prev: tuple[str, str] | None = None
    for _, q, p in rows:
        if (q, p) != prev:
            out.append((q, p))
        prev = (q, p)
    return out, len(rows) - len(out)


def ordered_pairs(buckets: Sequence[Sequence[Path]], dedup: bool,
                  max_pairs: int | None) -> Iterator[tuple[list[tuple[str, str]], int]]:
    """Yield (rows, duplicates removed) per bucket (a list of part files) in global shuffled
    order, up to max_pairs."""
    remaining = max_pairs
    for paths in buckets:
        rows, dups = read_bucket(paths, dedup)
        for path in paths:
            path.unlink(missing_ok=True)
        if remaining is not None:
            rows = rows[:remaining]
            remaining -= len(rows)
        yield rows, dups
        if remaining == 0:
            return


def chunk_rows(stream: Iterable[list[tuple[str, str]]], sizes: Iterator[int]) -> Iterator[list[tuple[str, str]]]:
    """Regroup a stream of row lists into consecutive chunks whose sizes come from ``sizes``.

    The rows already handed out are cut off the buffer once per incoming list, not once per chunk:
    a bucket of n rows cut into k-row chunks costs O(n), not O(n^2 / k)."""
    buf: list[tuple[str, str]] = []
    start = 0
    want = next(sizes)
    for rows in stream:
        del buf[:start]
        start = 0
        buf.extend(rows)
        while len(buf) - start >= want:
            yield buf[start:start + want]
            start += want
            want = next(sizes)
    if len(buf) > start:
        yield buf[start:]


def _sizes(first: int, rest: int) -> Iterator[int]:
    if first > 0:
        yield first
    while True:
        yield rest


@dataclass(frozen=True)
class BgeSettings:
    """One prepare-bge run: the ``embtune prepare-bge`` flags, typed (field = flag name)."""

    files: Sequence[str]
    tokenizer: str
    context_length: int
    val_pairs: int
    shard_rows: int
    seed: int
    out: str
    max_pairs: int | None = None
    no_english_filter: bool = False
    no_dedup: bool = False
    threads: int | None = None


def _check_args(args: BgeSettings) -> None:
    if args.context_length < 1:
        raise DataError("--context-length must be >= 1")
    if args.val_pairs < 0 or args.shard_rows < 1:
        raise DataError("--val-pairs must be >= 0 and --shard-rows >= 1")
    if args.max_pairs is not None and args.max_pairs < 1:
        raise DataError("--max-pairs must be >= 1")
    if args.threads is not None and args.threads < 1:
        raise DataError("--threads must be >= 1")


@dataclass
class Written:
    """What ``write_shards`` wrote: row counts, shard names and token-length histograms."""

    val_rows: int = 0
    train_rows: int = 0
    shards: list[str] = field(default_factory=list)
    hist: dict[str, Counter] = field(default_factory=lambda: {"query": Counter(), "pos": Counter()})
    cut: Counter = field(default_factory=Counter)


def write_shards(out: Path, tokenizer: Any, rows: Iterable[list[tuple[str, str]]],
                 val_pairs: int, shard_rows: int, context_length: int) -> Written:
    """Tokenise and write ``val.parquet`` (first ``val_pairs`` rows) then ``train-NNNNN`` shards.

    One shard is in memory at a time; val.parquet always exists (empty when ``val_pairs`` is 0)."""
    done = Written()
    if val_pairs == 0:
        write_parquet(out / "val.parquet", pairs_frame(tokenizer, [], context_length)[0])
    for i, chunk in enumerate(chunk_rows(rows, _sizes(val_pairs, shard_rows))):
        frame, cuts = pairs_frame(tokenizer, chunk, context_length)
        done.cut.update(cuts)
        done.hist["query"].update(frame["query_tokens"].to_list())
        done.hist["pos"].update(frame["pos_tokens"].to_list())
        if i == 0 and val_pairs > 0:
            name, done.val_rows = "val.parquet", len(chunk)
        else:
            name = f"train-{len(done.shards):05d}.parquet"
            done.train_rows += len(chunk)
            done.shards.append(name)
        write_parquet(out / name, frame)
    check_split(done.val_rows, val_pairs, len(done.shards))
    return done


def check_split(val_rows: int, val_pairs: int, train_shards: int) -> None:
    """Fail when the pairs left do not fill the validation slice plus at least one training row."""
    if val_rows < val_pairs:
        raise DataError(f"only {val_rows} pairs left after filtering; --val-pairs {val_pairs} "
                        "needs more (and train needs at least one)")
    if not train_shards:
        raise DataError(f"no training pairs left after the {val_rows} validation pairs")


def no_pairs_message(files: Sequence[str], stats: Stats) -> str:
    """Why nothing is left: every drop reason with its count and a few ``file:line`` examples."""
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    if stats.rows_in == 0:
        return f"{shown}: no records (every line blank); expected JSONL records {{query, pos: [...]}}"
    return (f"{shown}: all {stats.rows_in} records dropped, no pair left; expected JSON objects "
            "{query: non-empty string, pos: [non-empty string, ...]}"
            + (" in English (--no-english-filter turns that test off)" if "not English" in stats.drops else "")
            + f"; dropped: {drop_summary(stats.drops, stats.drop_examples)}")


def run(args: BgeSettings) -> dict[str, Any]:
    """Do the whole stage inside one atomically renamed output directory; return the manifest."""
    _check_args(args)
    with tokenizer_threads(args.threads):  # before the tokenizer is loaded or used
        return _run(args)


def _run(args: BgeSettings) -> dict[str, Any]:
    files = expand_files(args.files)
    tokenizer = load_tokenizer(args.tokenizer)
    english, dedup = not args.no_english_filter, not args.no_dedup
    duplicates: Counter = Counter()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bge-spill.", dir=out.parent) as tmp, \
            atomic_path(out) as final:
        final.mkdir()
        n_buckets = n_buckets_for(sum(os.path.getsize(f) for f in files))
        buckets, stats = spill_all(files, english, args.seed, n_buckets, Path(tmp),
                                   args.threads or 1)
        if stats.pairs_kept == 0:
            raise DataError(no_pairs_message(files, stats))

        def ordered() -> Iterator[list[tuple[str, str]]]:
            for rows, dups in iterate(ordered_pairs(buckets, dedup, args.max_pairs), "prepare-bge",
                                      total=len(buckets), unit="bucket"):
                duplicates["removed"] += dups
                yield rows

        try:
            done = write_shards(final, tokenizer, ordered(), args.val_pairs, args.shard_rows,
                                args.context_length)
        except DataError as err:  # too few pairs: say what the filters dropped
            raise too_few_pairs(err, files, stats) from None
        inputs = [{"path": f, "bytes": os.path.getsize(f), "sha256": sha256_file(f)} for f in files]
        manifest = build_manifest(args, inputs, stats, duplicates["removed"], done)
        write_json(final / "manifest.json", manifest)
    return manifest


def too_few_pairs(err: DataError, files: Sequence[str], stats: Stats) -> DataError:
    """``check_split``'s error with what the filters dropped (the user's next question)."""
    return DataError(f"{err}; {len(files)} input file(s), {stats.rows_in} records, dropped: "
                     f"{drop_summary(stats.drops, stats.drop_examples)}")


def build_manifest(args: BgeSettings, inputs: list[dict[str, Any]], stats: Stats,
                   duplicates_removed: int, done: Written) -> dict[str, Any]:
    """The stage's manifest; one function for the one-process and the scattered stage
    (embtune.data.bge_scatter), whose manifests must be byte-identical."""
    return provenance(
        stable=True, stage="prepare-bge", inputs=inputs,
        tokenizer=args.tokenizer, context_length=args.context_length, seed=args.seed,
        english_filter=not args.no_english_filter, dedup=not args.no_dedup, max_pairs=args.max_pairs,
        val_pairs=args.val_pairs, shard_rows=args.shard_rows,
        rows_in=stats.rows_in, pairs_after_filters=stats.pairs_kept,
        duplicates_removed=duplicates_removed, rows_out=done.val_rows + done.train_rows,
        val_rows=done.val_rows, train_rows=done.train_rows, train_shards=done.shards,
        drops=dict(sorted(stats.drops.items())), drop_examples=stats.drop_examples,
        lone_surrogates_replaced=stats.fixes["lone_surrogates_replaced"],
        tokens={"query": histogram_stats(done.hist["query"], done.cut["query_truncated"]),
                "pos": histogram_stats(done.hist["pos"], done.cut["pos_truncated"])},
    )
