"""Paper 2's training triplets (query, positive, negative): where a ``train_data`` set's files
are, reading them with their text checked, and the fixed-size epochs of batches drawn from them.

Why apart from :mod:`embtune.train.query_tower`: the data side is read by the ``tune-query``
stage before any model exists (a bad file fails in seconds, not after loading two encoders), and
its batching is a pure function of (rows, seed, epoch) that the tests pin without a model.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from embtune.core import pnd_sets
from embtune.core.layout import Processed

Triplet = tuple[str, str, str]
_COLUMNS = {"msmarco": ("query", "pos", "neg"), "arxiv": ("anchor", "positive", "negative")}


def triplet_files(data_dir: str | os.PathLike[str], train_data: str) -> tuple[Path, Path, tuple[str, str, str]]:
    """(train file, val file, (query, positive, negative) column names) for ``train_data``
    (the files' paths: :meth:`embtune.core.layout.Processed.query_train_files`)."""
    train, val = Processed(Path(data_dir)).query_train_files(train_data)
    return train, val, _COLUMNS["arxiv" if pnd_sets.arxiv_domain(train_data) else "msmarco"]


def read_triplets(path: Path, columns: tuple[str, str, str]) -> list[Triplet]:
    """(query, positive, negative) rows of a parquet file; a clear error names missing columns."""
    import polars as pl

    from embtune.core.errors import DataError
    from embtune.core.io import read_parquet
    from embtune.data.meaning import check_triplets

    if not path.exists():
        raise FileNotFoundError(f"{path}: triplet file not found")
    frame = read_parquet(path, f"a triplet table with text columns {list(columns)}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing columns {missing} (has {frame.columns})")
    for c in columns:     # never cast: an integer query would become a string silently
        if frame[c].dtype != pl.String or frame[c].null_count():
            raise DataError(f"{path}: column {c!r} has type {frame[c].dtype} with {frame[c].null_count()} nulls; "
                            "expected text in every row")
    check_triplets(path, frame, columns)
    return list(zip(*(frame[c].to_list() for c in columns)))


def epoch_batches(n_rows: int, batch_size: int, batches_per_epoch: int, epoch: int, seed: int) -> list[list[int]]:
    """Row indices of each batch of (0-based) ``epoch``.

    Epochs are fixed-size windows on an endless stream of seeded permutations of the training
    rows, so an epoch is not a data pass (paper 2: 1000 batches of 14 = 14000 samples per epoch)
    and the same (seed, epoch) always gives the same batches."""
    if n_rows < 1:
        raise ValueError("no training triplets")
    start = epoch * batches_per_epoch * batch_size
    perms: dict[int, np.ndarray] = {}
    flat = []
    for pos in range(start, start + batches_per_epoch * batch_size):
        k = pos // n_rows
        if k not in perms:
            perms[k] = np.random.default_rng([seed, k]).permutation(n_rows)
        flat.append(int(perms[k][pos % n_rows]))
    return [flat[i:i + batch_size] for i in range(0, len(flat), batch_size)]
