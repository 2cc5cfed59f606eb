"""Training pairs as flat token arrays (CSR layout), memory-mapped once packed.

Why not Python lists of token ids: a Python int in a list costs ~36 bytes, a flat ``int32`` array
4, and Arrow's list layout (values + offsets) becomes one without a Python loop. Packed to
``.npy`` files (stage ``pack-pairs``, driver :mod:`embtune.stages.pack_pairs`), every training
process of the grid maps the same pages of the OS cache instead of decoding the parquet shards
into private memory: 750 runs × N GPUs read the BGE pairs once from disk, and a run only touches
the pages of the pairs it trains on.

Layout of a packed directory (``meta.json`` + one folder per split)::

    train/query_tokens.npy  int32 [T_q]     train/query_offsets.npy  int64 [n + 1]
    train/pos_tokens.npy    int32 [T_p]     train/pos_offsets.npy    int64 [n + 1]
    val/...                 (same)

Pair i's query is ``query_tokens[query_offsets[i]:query_offsets[i + 1]]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtune.core.errors import DataError, one_line

PACK_FORMAT = "embtune-pairs-v1"
SIDES = ("query", "pos")


@dataclass(frozen=True)
class TokenColumn:
    """One side of the pairs: ``tokens[offsets[i]:offsets[i+1]]`` is row i."""

    tokens: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.ndim != 1 or len(self.offsets) == 0 or self.offsets[0] != 0 \
                or self.offsets[-1] != len(self.tokens):
            raise ValueError(f"offsets must start at 0 and end at len(tokens)={len(self.tokens)}")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self, context_length: int, idx: np.ndarray | None = None) -> np.ndarray:
        """Truncated lengths of all rows, or of rows ``idx`` only (per step: O(batch), not O(n))."""
        if idx is None:
            return np.minimum(np.diff(self.offsets), context_length)
        return np.minimum(self.offsets[idx + 1] - self.offsets[idx], context_length)

    def row(self, i: int, context_length: int) -> list[int]:
        start = int(self.offsets[i])
        return self.tokens[start:min(int(self.offsets[i + 1]), start + context_length)].tolist()

    def pad(self, idx: np.ndarray, context_length: int, pad_id: int,
            multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows ``idx`` truncated to ``context_length`` and right-padded to the longest of them
        (dynamic padding), gathered in one vectorised read; returns (ids, attention mask).

        ``multiple`` rounds the width up to a multiple of it (capped at ``context_length``): a
        compiled model then sees at most ceil(context_length / multiple) widths, so it compiles a
        bounded set of static shapes instead of one per distinct longest row."""
        idx = np.asarray(idx, dtype=np.int64)
        starts = self.offsets[idx]
        lengths = self.lengths(context_length, idx)
        width = max(1, int(lengths.max(initial=0)))
        if multiple > 1:
            width = min(-(-width // multiple) * multiple, max(width, context_length))
        cols = np.arange(width)
        mask = cols[None, :] < lengths[:, None]
        if len(self.tokens):
            where = np.where(mask, starts[:, None] + cols[None, :], 0)
            ids = np.where(mask, self.tokens[where], pad_id)
        else:
            ids = np.full(mask.shape, pad_id)
        return torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(mask.astype(np.int64))


def column_from_lists(rows: Sequence[Sequence[int]]) -> TokenColumn:
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = np.fromiter((t for r in rows for t in r), dtype=np.int32, count=int(offsets[-1]))
    return TokenColumn(tokens, offsets)


@dataclass(frozen=True)
class Pairs:
    """Tokenised (query, positive) pairs; every read truncates to ``context_length``."""

    query: TokenColumn
    pos: TokenColumn
    context_length: int

    def __post_init__(self) -> None:
        if len(self.query) != len(self.pos):
            raise ValueError(f"{len(self.query)} queries but {len(self.pos)} positives")

    @classmethod
    def from_lists(cls, query_ids: Sequence[Sequence[int]], pos_ids: Sequence[Sequence[int]],
                   context_length: int = 1 << 30) -> Pairs:
        return cls(column_from_lists(query_ids), column_from_lists(pos_ids), context_length)

    def __len__(self) -> int:
        return len(self.query)

    def side(self, name: str) -> TokenColumn:
        return self.query if name == "query" else self.pos

    def check_vocab(self, vocab_size: int, where: str) -> None:
        """Every token id in [0, vocab_size): an id outside would fail deep inside the embedding
        lookup mid-training (or, negative, index from the end); checked once, before training."""
        for name in SIDES:
            col = self.side(name)
            check_token_ids(np.asarray(col.tokens), col.offsets, f"{where} ({name} tokens)", vocab_size)

    def lengths(self) -> np.ndarray:
        """Real tokens per pair (query + positive) after truncation."""
        return self.query.lengths(self.context_length) + self.pos.lengths(self.context_length)


# --------------------------------------------------------------------------- parquet shards
def _read_column(path: Path, name: str) -> Any:
    """One column of a parquet file as a single Arrow array; a clear error naming file and column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        col = pq.read_table(path, columns=[name]).column(name).combine_chunks()
    except (OSError, KeyError, pa.ArrowException) as exc:
        raise DataError(f"{path}: cannot read column {name!r} ({one_line(exc)}); expected a "
                        "prepare-bge shard (parquet with query_ids, pos_ids, query_tokens, "
                        "pos_tokens)") from None
    if col.null_count:
        raise DataError(f"{path}: column {name!r} has {col.null_count} null rows; expected none")
    return col


def _arrow_column(files: Sequence[Path], name: str) -> TokenColumn:
    """Concatenate a ``List[Int32]`` column of parquet files from Arrow's buffers (no Python ints)."""
    tokens, lengths = [], []
    for f in files:
        col = _read_column(f, name)
        offsets = col.offsets.to_numpy().astype(np.int64)
        values = col.values.to_numpy(zero_copy_only=False)[offsets[0]:offsets[-1]]
        check_token_ids(values, offsets - offsets[0], f"{f}: column {name!r}")
        tokens.append(values.astype(np.int32))
        lengths.append(np.diff(offsets))
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(all_lengths)]).astype(np.int64)
    return TokenColumn(np.concatenate(tokens) if tokens else np.zeros(0, np.int32), offsets)


def check_token_ids(values: np.ndarray, offsets: np.ndarray, where: str, vocab_size: int | None = None) -> None:
    """Token ids are integers in [0, vocab_size) (in [0, 2^31) when the vocabulary is unknown:
    they are stored as int32, and a larger id would wrap silently); the error names the row."""
    if values.dtype.kind not in "iu":
        raise DataError(f"{where}: token ids of type {values.dtype}; expected integers")
    if not len(values):
        return
    limit = vocab_size if vocab_size is not None else int(np.iinfo(np.int32).max) + 1
    bad = np.flatnonzero((values < 0) | (values >= limit))
    if len(bad):
        row = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise DataError(f"{where}: row {row} holds token id {int(values[bad[0]])}; expected ids in "
                        f"[0, {limit})" + (" (the tokenizer's vocabulary)" if vocab_size is not None else ""))


def read_pairs(files: Sequence[Path], context_length: int) -> Pairs:
    """Pairs of prepare-bge parquet shards, in file order, into memory."""
    if not files:
        raise FileNotFoundError("no training shards given")
    return Pairs(_arrow_column(files, "query_ids"), _arrow_column(files, "pos_ids"), context_length)


def train_shards(train_dir: str | Path) -> list[Path]:
    shards = sorted(Path(train_dir).glob("train-*.parquet"))
    if not shards:
        raise DataError(f"{train_dir}: no train-*.parquet shards (run prepare-bge first)")
    return shards


def val_shard(bge_dir: str | Path) -> Path:
    """prepare-bge's ``val.parquet``. It always writes one (empty when ``val_pairs`` is 0), so a
    missing file means an incomplete or wrong directory, not "no validation pairs"."""
    path = Path(bge_dir) / "val.parquet"
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected the validation pairs prepare-bge writes "
                        "beside the train-*.parquet shards (run prepare-bge again)")
    return path


# --------------------------------------------------------------------------- packed store
def is_packed(path: str | Path) -> bool:
    meta = Path(path) / "meta.json"
    if not meta.exists():
        return False
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("format") == PACK_FORMAT
    except (ValueError, AttributeError) as err:
        raise DataError(f"{meta}: unreadable ({one_line(err)}); expected the JSON object "
                        "pack-pairs writes (run pack-pairs again)") from None


def pack_pairs(bge_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Pack prepare-bge's ``train-*.parquet`` and ``val.parquet`` into memory-mappable arrays.

    Shard by shard, so memory is bounded by one shard: a first pass sums the lengths from the
    ``*_tokens`` columns, a second writes each shard's tokens into preallocated ``.npy`` files."""
    from embtune.core.io import atomic_path, provenance, sha256_file, write_json

    bge_dir = Path(bge_dir)
    splits = {"train": train_shards(bge_dir), "val": [val_shard(bge_dir)]}
    source_manifest = bge_dir / "manifest.json"
    source_digest = sha256_file(source_manifest) if source_manifest.exists() else None
    # The source's manifest digest ties the pack to the exact prepare-bge output (inputs' sha256,
    # seed, filters), so a resumed training run can tell repacked data by this file alone.
    meta: dict[str, Any] = {"format": PACK_FORMAT, "source": str(bge_dir), "splits": {},
                            "source_manifest_sha256": source_digest,
                            "provenance": provenance(stage="pack-pairs", stable=True)}
    with atomic_path(Path(out_dir)) as tmp:
        for split, files in splits.items():
            (tmp / split).mkdir(parents=True)
            info: dict[str, Any] = {"shards": [f.name for f in files]}
            for side in SIDES:
                lengths = [_read_column(f, f"{side}_tokens").to_numpy().astype(np.int64) for f in files]
                flat = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
                offsets = np.concatenate([[0], np.cumsum(flat)]).astype(np.int64)
                out = np.lib.format.open_memmap(tmp / split / f"{side}_tokens.npy", mode="w+",
                                                dtype=np.int32, shape=(int(offsets[-1]),))
                at = 0
                for f in files:
                    col = _arrow_column([f], f"{side}_ids")
                    if len(col.tokens) and at + len(col.tokens) > len(out):
                        raise DataError(f"{f}: {side}_ids holds more tokens than its {side}_tokens column says")
                    out[at:at + len(col.tokens)] = col.tokens
                    at += len(col.tokens)
                if at != len(out):
                    raise DataError(f"{bge_dir}/{split}: {side}_ids hold {at} tokens, "
                                     f"{side}_tokens columns say {len(out)}")
                out.flush()
                del out
                np.save(tmp / split / f"{side}_offsets.npy", offsets)
                info[f"{side}_tokens"] = int(offsets[-1])
            info["pairs"] = len(offsets) - 1
            meta["splits"][split] = info
        write_json(tmp / "meta.json", meta)
    return meta


def open_pairs(path: str | Path, split: str, context_length: int) -> Pairs:
    """``split`` ("train" or "val") of a packed directory (memory-mapped, read-only) or of a
    prepare-bge directory (parquet, read into memory)."""
    path = Path(path)
    if is_packed(path):
        return Pairs(*(_packed_column(path / split, side) for side in SIDES), context_length)
    return read_pairs(train_shards(path) if split == "train" else [val_shard(path)], context_length)


def _packed_column(split_dir: Path, side: str) -> TokenColumn:
    """One side of a packed split; a missing, truncated or inconsistent array names its file."""
    tokens, offsets = split_dir / f"{side}_tokens.npy", split_dir / f"{side}_offsets.npy"
    try:
        return TokenColumn(np.load(tokens, mmap_mode="r"), np.load(offsets))
    except (OSError, ValueError, EOFError) as err:
        raise DataError(f"{split_dir}: cannot read {tokens.name}/{offsets.name} ({one_line(err)}); "
                        "expected the arrays pack-pairs writes (run pack-pairs again)") from None
