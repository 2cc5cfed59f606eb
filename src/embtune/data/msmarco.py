"""Stage ``split-msmarco``: MSMARCO triplets -> positional train/val/eval splits (paper 2, App. A).

Paper 2 keeps the first 487,983 samples for tuning, the next 4,200 for validation and the *last*
7,000 for evaluation (all positives x all negatives: 357,642 triplets). The file length is not
known up front, so the last ``eval_size`` samples are kept in a bounded deque while streaming.
Rows are never dropped (that would shift the positional split): a malformed sample is an error.
"""

from __future__ import annotations

import argparse
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from embtune.data.jsonl import DataError, iter_jsonl, run_stage
from embtune.io import atomic_path, provenance, sha256_file, write_json, write_parquet


@dataclass(frozen=True)
class Sample:
    """One MSMARCO sample: its 0-based position in the file, query, positives and negatives."""

    sample_id: int
    query: str
    positives: tuple[str, ...]
    negatives: tuple[str, ...]


def _text_list(value: Any, field: str) -> tuple[str, ...] | str:
    """A non-empty list of non-empty strings (a bare string is one item), else an error reason."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return f"'{field}' is not a list or string"
    if not items:
        return f"'{field}' is empty"
    for i, item in enumerate(items):
        if not isinstance(item, str):
            return f"'{field}[{i}]' is not a string"
        if not item.strip():
            return f"'{field}[{i}]' is empty text"
    return tuple(items)


def parse_sample(obj: Any, sample_id: int) -> Sample | str:
    """Accept ``{query, pos[], neg[]}`` or ``[anchor, positive, negative]``; else a reason."""
    if isinstance(obj, list):
        if len(obj) != 3:
            return f"list form needs [anchor, positive, negative], got {len(obj)} items"
        query, pos, neg = obj
    elif isinstance(obj, dict):
        missing = [k for k in ("query", "pos", "neg") if k not in obj]
        if missing:
            return f"missing field(s) {', '.join(repr(k) for k in missing)}"
        query, pos, neg = obj["query"], obj["pos"], obj["neg"]
    else:
        return f"record is a JSON {type(obj).__name__}, expected object or list"
    if not isinstance(query, str) or not query.strip():
        return "query is not a non-empty string"
    positives = _text_list(pos, "pos")
    if isinstance(positives, str):
        return positives
    negatives = _text_list(neg, "neg")
    if isinstance(negatives, str):
        return negatives
    return Sample(sample_id, query, positives, negatives)


def iter_samples(path: str) -> Iterator[Sample]:
    """Stream samples; a malformed one raises ``DataError`` naming file and line."""
    for sample_id, (line_no, obj) in enumerate(iter_jsonl(path)):
        sample = parse_sample(obj, sample_id)
        if isinstance(sample, str):
            raise DataError(f"{path}:{line_no}: {sample}")
        yield sample


def first_only(sample: Sample) -> Sample:
    """Keep only what train/val use (first positive, first negative): ~65x less memory."""
    return Sample(sample.sample_id, sample.query, sample.positives[:1], sample.negatives[:1])


@dataclass
class Split:
    train: list[Sample]
    val: list[Sample]
    eval: list[Sample]
    rows: int
    unused: int


def split_samples(samples: Iterator[Sample], train_size: int, val_size: int, eval_size: int) -> Split:
    """First ``train_size`` -> train, next ``val_size`` -> val, last ``eval_size`` -> eval.

    Memory: train/val hold only what they keep; eval is a deque of at most ``eval_size``."""
    train: list[Sample] = []
    val: list[Sample] = []
    tail: deque[Sample] = deque(maxlen=eval_size)
    rows = 0
    for sample in samples:
        if rows < train_size:
            train.append(first_only(sample))
        elif rows < train_size + val_size:
            val.append(first_only(sample))
        elif eval_size:
            tail.append(sample)
        rows += 1
    need = train_size + val_size + eval_size
    if rows < need:
        raise DataError(f"file has {rows} samples but train+val+eval = {train_size}+{val_size}+{eval_size}"
                        f" = {need} are required")
    return Split(train, val, list(tail), rows, rows - need)


def triplet_frame(samples: list[Sample]) -> pl.DataFrame:
    """Train/val: one triplet per sample, first positive and first negative (paper 2, App. A)."""
    return pl.DataFrame(
        {"query": [s.query for s in samples], "pos": [s.positives[0] for s in samples],
         "neg": [s.negatives[0] for s in samples]},
        schema={"query": pl.String, "pos": pl.String, "neg": pl.String},
    )


def eval_frame(samples: list[Sample]) -> pl.DataFrame:
    """Eval: whole samples; the evaluator expands all positives x all negatives."""
    return pl.DataFrame(
        {"sample_id": [s.sample_id for s in samples], "query": [s.query for s in samples],
         "positives": [list(s.positives) for s in samples],
         "negatives": [list(s.negatives) for s in samples]},
        schema={"sample_id": pl.Int64, "query": pl.String, "positives": pl.List(pl.String),
                "negatives": pl.List(pl.String)},
    )


def expanded_triplets(samples: list[Sample]) -> int:
    """Number of (query, positive, negative) triplets the evaluator will form."""
    return sum(len(s.positives) * len(s.negatives) for s in samples)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="embtune split-msmarco", description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="msmarco-triplets.jsonl(.gz)")
    ap.add_argument("--train-size", type=int, required=True)
    ap.add_argument("--val-size", type=int, required=True)
    ap.add_argument("--eval-size", type=int, required=True)
    ap.add_argument("--hard-negatives", type=int, required=True,
                    help="eval_hard keeps eval samples with at least this many negatives")
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Split, write the four tables and the manifest into one atomically renamed directory."""
    if min(args.train_size, args.val_size, args.eval_size) < 0 or args.hard_negatives < 1:
        raise DataError("sizes must be >= 0 and --hard-negatives >= 1")
    split = split_samples(iter_samples(args.file), args.train_size, args.val_size, args.eval_size)
    hard = [s for s in split.eval if len(s.negatives) >= args.hard_negatives]
    with atomic_path(args.out) as out:
        out.mkdir()
        write_parquet(out / "train.parquet", triplet_frame(split.train))
        write_parquet(out / "val.parquet", triplet_frame(split.val))
        write_parquet(out / "eval.parquet", eval_frame(split.eval))
        write_parquet(out / "eval_hard.parquet", eval_frame(hard))
        manifest = provenance(
            stable=True, stage="split-msmarco",
            input={"path": args.file, "sha256": sha256_file(args.file)},
            rows=split.rows, train_rows=len(split.train), val_rows=len(split.val),
            eval_rows=len(split.eval), unused_rows=split.unused,
            eval_first_sample_id=split.eval[0].sample_id if split.eval else None,
            eval_triplets=expanded_triplets(split.eval), hard_negatives=args.hard_negatives,
            eval_hard_rows=len(hard), eval_hard_triplets=expanded_triplets(hard),
        )
        write_json(out / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    return run_stage("split-msmarco", run, _parser().parse_args(argv), lambda m: (
        f"split-msmarco: {m['rows']} samples -> train {m['train_rows']}, val {m['val_rows']}, "
        f"eval {m['eval_rows']} ({m['eval_triplets']} triplets), eval_hard {m['eval_hard_rows']} "
        f"({m['eval_hard_triplets']} triplets), unused {m['unused_rows']}"))
