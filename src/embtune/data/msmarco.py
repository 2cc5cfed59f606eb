"""MSMARCO triplets -> positional train/val/eval splits (paper 2, App. A); the ``split-msmarco``
stage (driver: :mod:`embtune.stages.split_msmarco`).

Paper 2 keeps the first 487,983 samples for tuning, the next 4,200 for validation and the *last*
7,000 for evaluation (all positives x all negatives: 357,642 triplets). The file length is not
known up front, so the last ``eval_size`` samples are kept in a bounded deque while streaming.
Rows are never dropped (that would shift the positional split): a malformed sample is an error.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from embtune.data.jsonl import DataError, iter_jsonl
from embtune.data.meaning import normalised


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
    clash = {normalised(p) for p in positives} & {normalised(n) for n in negatives}
    if clash:
        return (f"a positive is also a negative ({next(iter(clash))[:60]!r}, compared ignoring case and "
                "whitespace); expected every positive to differ from the sample's negatives")
    return Sample(sample_id, query, positives, negatives)


def iter_samples(path: str, fixes: Counter | None = None) -> Iterator[Sample]:
    """Stream samples; a malformed one raises ``DataError`` naming file and line (lone
    surrogates replaced, counted in ``fixes``)."""
    for sample_id, (line_no, obj) in enumerate(iter_jsonl(path, fixes)):
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


def check_disjoint(split: Split, path: str) -> None:
    """No eval query may also be a train or val query: paper 2's eval numbers must be measured
    on samples the query tower never saw (a dump with repeated lines would leak them)."""
    seen = {normalised(s.query): (name, s.sample_id) for name, part in (("train", split.train), ("val", split.val))
            for s in part}
    for s in split.eval:
        if normalised(s.query) in seen:
            name, sid = seen[normalised(s.query)]
            raise DataError(f"{path}: sample {s.sample_id} (eval) has the same query as sample {sid} ({name}) "
                            f"up to case and whitespace: {s.query[:60]!r}; expected eval queries apart from "
                            "train and val")


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
