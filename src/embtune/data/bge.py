"""Stage ``prepare-bge``: FlagEmbedding BGE pairs -> tokenised, deduplicated parquet shards.

Paper 1 fine-tunes on the English part of the BAAI BGE pairs with a fixed context length. Each
JSONL record ``{query, pos: [..], neg: [..]}`` gives one pair (query, first positive).

Bounded memory at 200M-pair scale: pairs are streamed once, filtered, and spilled to hash-range
buckets on disk. The "shuffle" is a seeded keyed hash of the pair text, so the global order is
"sort by key"; range-partitioning by key means buckets, each sorted in memory, concatenate to that
global order. Exact duplicates share a key, so they land in the same bucket and are removed there.
The result depends only on the set of input pairs and the seed (not on file order or bucket count).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from embtune.data.jsonl import DataError, iter_jsonl, run_stage
from embtune.data.sources import expand_files
from embtune.io import atomic_path, provenance, sha256_file, write_json, write_parquet

MAX_DROP_EXAMPLES = 20
BUCKET_TARGET_BYTES = 256 << 20   # input bytes per spill bucket (each bucket is sorted in memory)
TOKENIZE_BATCH = 4096

# Why this heuristic: the BGE dump mixes English with Chinese and other languages; a dependency-free
# check of (a) letters being mostly ASCII and (b) enough common English function words is cheap and
# good enough to separate English from non-English at corpus scale (it is not a language-ID model).
ENGLISH_STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it "
    "its this that these those what which who whom whose when where why how not no do does did "
    "have has had can could will would should may might must shall i you he she we they me him "
    "her us them my your his our their there here than then so such all any each some about into "
    "over after before between under also more most other only very just".split()
)
MIN_ASCII_LETTER_RATIO = 0.9
MIN_STOPWORD_RATIO = 0.15
MIN_WORDS_FOR_STOPWORD_TEST = 8
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def is_english(text: str) -> bool:
    """True when ``text`` looks English: >=90% of letters ASCII and, for texts of >=8 words,
    >=15% of words English stop words (English prose has ~40%, docstrings ~25%, German, Spanish
    or French ~5%; short texts cannot be judged by stop words, so only the letter test applies)."""
    if text.isascii():  # fast path (most of the corpus): every letter is ASCII
        if _ASCII_LETTER.search(text) is None:
            return False
    else:
        letters = [c for c in text if c.isalpha()]
        if not letters or sum(c.isascii() for c in letters) / len(letters) < MIN_ASCII_LETTER_RATIO:
            return False
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < MIN_WORDS_FOR_STOPWORD_TEST:
        return True
    return sum(w in ENGLISH_STOPWORDS for w in words) / len(words) >= MIN_STOPWORD_RATIO


def extract_pair(obj: Any) -> tuple[str, str] | str:
    """Return (query, first positive) or a drop reason (a short, countable string)."""
    if not isinstance(obj, dict):
        return "record is not a JSON object"
    if "query" not in obj:
        return "missing field 'query'"
    if "pos" not in obj:
        return "missing field 'pos'"
    query, pos = obj["query"], obj["pos"]
    if not isinstance(query, str):
        return "'query' is not a string"
    if not isinstance(pos, list):
        return "'pos' is not a list"
    if not pos:
        return "'pos' is empty"
    if not isinstance(pos[0], str):
        return "'pos[0]' is not a string"
    if not query.strip():
        return "empty query"
    if not pos[0].strip():
        return "empty pos"
    return query, pos[0]


def pair_key(seed: int, query: str, pos: str) -> int:
    """Seeded 64-bit key of a pair: the shuffle order and the dedup bucket in one number."""
    h = hashlib.blake2b(digest_size=8, key=str(seed).encode())
    h.update(query.encode("utf-8"))
    h.update(b"\x00")
    h.update(pos.encode("utf-8"))
    return int.from_bytes(h.digest(), "big")


def bucket_of(key: int, n_buckets: int) -> int:
    """Range partition (not modulo), so concatenated sorted buckets are globally sorted."""
    return (key * n_buckets) >> 64


def n_buckets_for(total_bytes: int) -> int:
    return max(1, min(4096, math.ceil(total_bytes / BUCKET_TARGET_BYTES)))


@dataclass
class Stats:
    """Counts for the manifest; drops are counted by reason with a few file:line examples."""

    rows_in: int = 0
    pairs_kept: int = 0
    drops: Counter = field(default_factory=Counter)
    drop_examples: dict[str, list[str]] = field(default_factory=dict)

    def drop(self, reason: str, where: str) -> None:
        self.drops[reason] += 1
        examples = self.drop_examples.setdefault(reason, [])
        if len(examples) < MAX_DROP_EXAMPLES:
            examples.append(where)


def iter_pairs(files: Sequence[str], english_filter: bool, stats: Stats) -> Iterator[tuple[str, str]]:
    """Stream (query, pos) over all files, counting every dropped record with its reason.

    The English test judges query and positive as one text: short queries alone have too few
    words for the stop-word test, and a non-English side pulls the joint ratios below threshold."""
    for path in files:
        for line_no, obj in iter_jsonl(path):
            stats.rows_in += 1
            pair = extract_pair(obj)
            if isinstance(pair, str):
                stats.drop(pair, f"{path}:{line_no}")
                continue
            if english_filter and not is_english(pair[0] + "\n" + pair[1]):
                stats.drop("not English", f"{path}:{line_no}")
                continue
            stats.pairs_kept += 1
            yield pair


def spill(pairs: Iterable[tuple[str, str]], seed: int, n_buckets: int, tmpdir: Path) -> list[Path]:
    """Write each pair as a JSON line ``[key, query, pos]`` to its key-range bucket file."""
    paths = [tmpdir / f"bucket-{i:05d}.jsonl" for i in range(n_buckets)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]
    try:
        for query, pos in pairs:
            key = pair_key(seed, query, pos)
            handles[bucket_of(key, n_buckets)].write(json.dumps([key, query, pos]) + "\n")
    finally:
        for fh in handles:
            fh.close()
    return paths


def read_bucket(path: Path, dedup: bool) -> tuple[list[tuple[str, str]], int]:
    """Sort one bucket by (key, query, pos); drop exact duplicate pairs if asked."""
    with open(path, encoding="utf-8") as fh:
        rows = sorted(tuple(json.loads(line)) for line in fh)
    if not dedup:
        return [(q, p) for _, q, p in rows], 0
    out: list[tuple[str, str]] = []
    prev: tuple[str, str] | None = None
    for _, q, p in rows:
        if (q, p) != prev:
            out.append((q, p))
        prev = (q, p)
    return out, len(rows) - len(out)


def tokenize(tokenizer: Any, texts: list[str], context_length: int) -> tuple[list[list[int]], int]:
    """Token ids truncated to ``context_length`` (no padding) and how many texts were cut.

    Why ``max_length=context_length + 1``: it tells truncated from exactly-fitting texts without
    tokenising whole (possibly very long) passages."""
    ids: list[list[int]] = []
    cut = 0
    for start in range(0, len(texts), TOKENIZE_BATCH):
        batch = tokenizer(texts[start:start + TOKENIZE_BATCH], truncation=True,
                          max_length=context_length + 1, padding=False,
                          return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        for row in batch:
            cut += len(row) > context_length
            ids.append(list(row[:context_length]))
    return ids, cut


def pairs_frame(tokenizer: Any, rows: list[tuple[str, str]], context_length: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Build the output table of one shard (schema of docs/architecture.md)."""
    queries = [q for q, _ in rows]
    positives = [p for _, p in rows]
    q_ids, q_cut = tokenize(tokenizer, queries, context_length)
    p_ids, p_cut = tokenize(tokenizer, positives, context_length)
    frame = pl.DataFrame(
        {
            "query": queries,
            "pos": positives,
            "query_ids": q_ids,
            "pos_ids": p_ids,
            "query_tokens": [len(x) for x in q_ids],
            "pos_tokens": [len(x) for x in p_ids],
        },
        schema={"query": pl.String, "pos": pl.String, "query_ids": pl.List(pl.Int32),
                "pos_ids": pl.List(pl.Int32), "query_tokens": pl.Int32, "pos_tokens": pl.Int32},
    )
    return frame, {"query_truncated": q_cut, "pos_truncated": p_cut}


def histogram_stats(hist: Counter, truncated: int) -> dict[str, Any]:
    """Exact mean/percentiles from a length histogram (lengths are bounded by the context)."""
    n = sum(hist.values())
    if n == 0:
        return {"count": 0}
    lengths = sorted(hist)
    out: dict[str, Any] = {"count": n, "mean": round(sum(k * v for k, v in hist.items()) / n, 4),
                           "min": lengths[0], "max": lengths[-1], "truncated": truncated,
                           "total": sum(k * v for k, v in hist.items())}
    for pct in (50, 90, 99):
        rank, seen = math.ceil(pct / 100 * n), 0
        for k in lengths:
            seen += hist[k]
            if seen >= rank:
                out[f"p{pct}"] = k
                break
    return out


def ordered_pairs(buckets: list[Path], dedup: bool, max_pairs: int | None) -> Iterator[tuple[list[tuple[str, str]], int]]:
    """Yield (rows, duplicates removed) per bucket in global shuffled order, up to max_pairs."""
    remaining = max_pairs
    for path in buckets:
        rows, dups = read_bucket(path, dedup)
        path.unlink()
        if remaining is not None:
            rows = rows[:remaining]
            remaining -= len(rows)
        yield rows, dups
        if remaining == 0:
            return


def chunk_rows(stream: Iterable[list[tuple[str, str]]], sizes: Iterator[int]) -> Iterator[list[tuple[str, str]]]:
    """Regroup a stream of row lists into consecutive chunks whose sizes come from ``sizes``."""
    buf: list[tuple[str, str]] = []
    want = next(sizes)
    for rows in stream:
        buf.extend(rows)
        while len(buf) >= want:
            yield buf[:want]
            buf = buf[want:]
            want = next(sizes)
    if buf:
        yield buf


def _sizes(first: int, rest: int) -> Iterator[int]:
    if first > 0:
        yield first
    while True:
        yield rest


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, use_fast=True)
    if not tok.is_fast:
        raise DataError(f"{path}: tokenizer is not a fast tokenizer (needed for batched tokenising)")
    return tok


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="embtune prepare-bge", description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True, help="JSONL(.gz) files or globs")
    ap.add_argument("--tokenizer", required=True, help="HF tokenizer directory")
    ap.add_argument("--context-length", type=int, required=True)
    ap.add_argument("--val-pairs", type=int, required=True)
    ap.add_argument("--max-pairs", type=int, default=None,
                    help="keep at most N pairs (val + train), a uniform sample of the shuffled set")
    ap.add_argument("--shard-rows", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--no-english-filter", action="store_true")
    ap.add_argument("--no-dedup", action="store_true")
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def _check_args(args: argparse.Namespace) -> None:
    if args.context_length < 1:
        raise DataError("--context-length must be >= 1")
    if args.val_pairs < 0 or args.shard_rows < 1:
        raise DataError("--val-pairs must be >= 0 and --shard-rows >= 1")
    if args.max_pairs is not None and args.max_pairs < 1:
        raise DataError("--max-pairs must be >= 1")


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
    if done.val_rows < val_pairs:
        raise DataError(f"only {done.val_rows} pairs left after filtering; --val-pairs {val_pairs} "
                        "needs more (and train needs at least one)")
    if not done.shards:
        raise DataError(f"no training pairs left after the {done.val_rows} validation pairs")
    return done


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Do the whole stage inside one atomically renamed output directory; return the manifest."""
    _check_args(args)
    files = expand_files(args.files)
    tokenizer = load_tokenizer(args.tokenizer)
    english, dedup = not args.no_english_filter, not args.no_dedup
    stats, duplicates = Stats(), Counter()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bge-spill.", dir=out.parent) as tmp, \
            atomic_path(out) as final:
        final.mkdir()
        n_buckets = n_buckets_for(sum(os.path.getsize(f) for f in files))
        buckets = spill(iter_pairs(files, english, stats), args.seed, n_buckets, Path(tmp))

        def ordered() -> Iterator[list[tuple[str, str]]]:
            for rows, dups in ordered_pairs(buckets, dedup, args.max_pairs):
                duplicates["removed"] += dups
                yield rows

        done = write_shards(final, tokenizer, ordered(), args.val_pairs, args.shard_rows, args.context_length)
        manifest = provenance(
            stable=True, stage="prepare-bge",
            inputs=[{"path": f, "bytes": os.path.getsize(f), "sha256": sha256_file(f)} for f in files],
            tokenizer=args.tokenizer, context_length=args.context_length, seed=args.seed,
            english_filter=english, dedup=dedup, max_pairs=args.max_pairs,
            val_pairs=args.val_pairs, shard_rows=args.shard_rows,
            rows_in=stats.rows_in, pairs_after_filters=stats.pairs_kept,
            duplicates_removed=duplicates["removed"], rows_out=done.val_rows + done.train_rows,
            val_rows=done.val_rows, train_rows=done.train_rows, train_shards=done.shards,
            drops=dict(sorted(stats.drops.items())), drop_examples=stats.drop_examples,
            tokens={"query": histogram_stats(done.hist["query"], done.cut["query_truncated"]),
                    "pos": histogram_stats(done.hist["pos"], done.cut["pos_truncated"])},
        )
        write_json(final / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    return run_stage("prepare-bge", run, _parser().parse_args(argv), lambda m: (
        f"prepare-bge: {m['rows_in']} rows in, {m['rows_out']} pairs out "
        f"({m['val_rows']} val, {len(m['train_shards'])} train shards), "
        f"drops {m['drops']}, duplicates {m['duplicates_removed']}"))
