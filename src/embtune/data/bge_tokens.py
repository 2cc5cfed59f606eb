"""Tokenising BGE pairs for ``prepare-bge``: token-id columns, the shard table, length
histograms and the tokenizer's thread count.

Why a module apart from :mod:`embtune.data.bge`: the one-process stage and the scattered one
(:mod:`embtune.data.bge_scatter`) write their shards with exactly these functions.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from embtune.data.jsonl import DataError

TOKENIZE_BATCH = 4096


def token_ids(tokenizer: Any, texts: Sequence[str], context_length: int) -> tuple[pa.LargeListArray, int]:
    """Token ids truncated to ``context_length`` (no padding) as an Arrow ``large_list<int32>``
    column, and how many texts were cut.

    Why not ``tokenizer(texts, ...)["input_ids"]`` and a list per row: the wrapper turns every
    encoding into Python dicts, the rows were copied again (``list(row[:n])``) and polars then read
    the nested lists element by element: together about a fifth of the stage's single-thread time
    (benchmarks/bench_prepare_bge.py), on top of the Rust encoding. Here one wrapper call on a
    single text configures the backend exactly as the wrapper would (truncation, padding,
    special-token splitting), the Rust backend encodes each batch (on several threads under
    ``TOKENIZERS_PARALLELISM``, see :func:`tokenizer_threads`) and the ids go straight into one
    flat numpy array plus offsets. The ids are the wrapper's, unchanged (tested against it). A
    tokenizer class that overrides the wrapper's encoding methods (it may change the text first)
    keeps the wrapper call.

    Why ``max_length=context_length + 1``: a text of ``context_length + 1`` tokens after truncation
    was cut, one of ``<= context_length`` was not; the extra last id is then dropped (as
    ``row[:context_length]``)."""
    wrapper = functools.partial(tokenizer, truncation=True, max_length=context_length + 1, padding=False,
                                return_attention_mask=False, return_token_type_ids=False)
    if _encodes_like_generic_fast(tokenizer):
        wrapper(list(texts[:1]) or [""])  # sets the backend's truncation/padding as for any batch
        backend = tokenizer.backend_tokenizer

        def encode(batch: list[str]) -> list[list[int]]:
            return [enc.ids for enc in backend.encode_batch(batch, add_special_tokens=True)]
    else:
        def encode(batch: list[str]) -> list[list[int]]:
            return wrapper(batch)["input_ids"]

    chunks: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    for start in range(0, len(texts), TOKENIZE_BATCH):
        rows = encode(list(texts[start:start + TOKENIZE_BATCH]))
        n = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        lengths.append(n)
        chunks.append(np.fromiter(chain.from_iterable(rows), dtype=np.int32, count=int(n.sum())))
    values = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
    full = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    cut_rows = full > context_length
    ends = np.cumsum(full)
    if cut_rows.any():
        keep = np.ones(values.size, dtype=bool)
        keep[ends[cut_rows] - 1] = False
        values = values[keep]
    offsets = np.zeros(full.size + 1, dtype=np.int64)
    np.cumsum(np.minimum(full, context_length), out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values)), int(cut_rows.sum())


def _encodes_like_generic_fast(tokenizer: Any) -> bool:
    """True when no method between ``tokenizer(...)`` and the Rust backend is overridden."""
    from transformers import PreTrainedTokenizerFast

    cls = type(tokenizer)
    return all(getattr(cls, name, None) is getattr(PreTrainedTokenizerFast, name, None)
               for name in ("__call__", "_call_one", "_encode_plus", "_batch_encode_plus",
                            "encode_plus", "batch_encode_plus"))


def pairs_frame(tokenizer: Any, rows: Sequence[tuple[str, str]], context_length: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Build the output table of one shard (schema of docs/architecture.md).

    The id columns are built from Arrow arrays (no Python list per row); the parquet bytes are the
    same as for the frame built from Python lists (checked by benchmarks/bench_prepare_bge.py)."""
    queries = [q for q, _ in rows]
    positives = [p for _, p in rows]
    q_ids, q_cut = token_ids(tokenizer, queries, context_length)
    p_ids, p_cut = token_ids(tokenizer, positives, context_length)
    frame = pl.DataFrame([
        pl.Series("query", queries, dtype=pl.String),
        pl.Series("pos", positives, dtype=pl.String),
        pl.Series("query_ids", q_ids, dtype=pl.List(pl.Int32)),
        pl.Series("pos_ids", p_ids, dtype=pl.List(pl.Int32)),
        pl.Series("query_tokens", _list_lengths(q_ids), dtype=pl.Int32),
        pl.Series("pos_tokens", _list_lengths(p_ids), dtype=pl.Int32),
    ])
    return frame, {"query_truncated": q_cut, "pos_truncated": p_cut}


def _list_lengths(ids: pa.LargeListArray) -> np.ndarray:
    return np.diff(ids.offsets.to_numpy()).astype(np.int32)


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


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    from embtune.core.model_files import check_tokenizer_files

    check_tokenizer_files(path)     # a truncated tokenizer.json is named, not a bare JSON error
    tok = AutoTokenizer.from_pretrained(path, use_fast=True)
    if not tok.is_fast:
        raise DataError(f"{path}: tokenizer is not a fast tokenizer (needed for batched tokenising)")
    return tok


@contextlib.contextmanager
def tokenizer_threads(threads: int | None) -> Iterator[None]:
    """Within the block, let the Rust tokenizer encode a batch on ``threads`` threads (1:
    sequentially; None: leave the environment as it is). The environment is restored after.

    Why environment variables: ``tokenizers`` (0.23) reads ``TOKENIZERS_PARALLELISM`` at every
    batch call (the Makefile sets it to false for every job, which would keep this stage on one
    core) and sizes its rayon pool from ``RAYON_NUM_THREADS`` when the pool starts, i.e. at the
    first parallel encode of the process: in ``embtune prepare-bge``, inside this block. (Newer
    ``tokenizers`` read ``TOKENIZERS_PARALLELISM`` once, at the first encode, and size their
    encode pool from ``TOKENIZERS_NUM_THREADS``; also set, hence the block is entered before the
    tokenizer is loaded.)"""
    if threads is None:
        yield
        return
    names = ("TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS", "TOKENIZERS_NUM_THREADS")
    saved = {var: os.environ.get(var) for var in names}
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    os.environ["RAYON_NUM_THREADS"] = os.environ["TOKENIZERS_NUM_THREADS"] = str(threads)
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
