"""The columnar pair store: vectorised padding against a per-row reference, parquet vs packed
(memory-mapped) reads, length-sorted chunks, and bad input."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from embtune.cli import main as cli_main
from embtune.train.loop import length_sorted_chunks, make_chunks
from embtune.train.pairs import (
    Pairs,
    TokenColumn,
    column_from_lists,
    is_packed,
    open_pairs,
    pack_pairs,
    read_pairs,
    train_shards,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from helpers_train import make_shards  # noqa: E402


def main(argv: list[str]) -> int:
    """``embtune pack-pairs`` through the dispatcher (its exit status and one-line error)."""
    return cli_main(["pack-pairs", *argv])


def _reference_pad(rows: list[list[int]], ctx: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row by row, the obvious way."""
    cut = [r[:ctx] for r in rows]
    width = max(1, max((len(r) for r in cut), default=0))
    ids = torch.full((len(cut), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(cut), width), dtype=torch.long)
    for i, r in enumerate(cut):
        ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, :len(r)] = 1
    return ids, mask


def _rows(n: int, seed: int = 0, max_len: int = 15) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(2, 500) for _ in range(rng.randint(0, max_len))] for _ in range(n)]


@pytest.mark.parametrize("ctx", [1, 7, 100])
def test_pad_equals_row_by_row_reference(ctx: int) -> None:
    rows = _rows(40)
    col = column_from_lists(rows)
    rng = np.random.default_rng(0)
    for _ in range(20):
        idx = rng.choice(len(rows), size=rng.integers(1, 12), replace=False)
        ids, mask = col.pad(idx, ctx, 1)
        ref_ids, ref_mask = _reference_pad([rows[i] for i in idx], ctx, 1)
        assert torch.equal(ids, ref_ids) and torch.equal(mask, ref_mask)
    assert col.row(3, ctx) == rows[3][:ctx]
    assert col.lengths(ctx).tolist() == [min(len(r), ctx) for r in rows]


def test_pad_of_empty_rows_and_empty_column() -> None:
    ids, mask = column_from_lists([[], []]).pad(np.array([0, 1]), 5, 9)
    assert ids.tolist() == [[9], [9]] and mask.tolist() == [[0], [0]]


def test_bad_offsets_are_rejected() -> None:
    with pytest.raises(ValueError, match="offsets"):
        TokenColumn(np.arange(5, dtype=np.int32), np.array([0, 2, 4]))
    with pytest.raises(ValueError, match="queries but"):
        Pairs(column_from_lists([[1]]), column_from_lists([]), 4)


def test_parquet_and_packed_reads_equal_the_shards(tmp_path: Path) -> None:
    data = make_shards(tmp_path / "bge", 250, 7, 300, 12, shard_rows=100)   # 3 shards
    frames = [pl.read_parquet(f) for f in train_shards(data)]
    expect_q = [r for f in frames for r in f["query_ids"].to_list()]
    expect_p = [r for f in frames for r in f["pos_ids"].to_list()]
    val = pl.read_parquet(data / "val.parquet")

    parquet = read_pairs(train_shards(data), 9)
    meta = pack_pairs(data, tmp_path / "packed")
    assert is_packed(tmp_path / "packed") and not is_packed(data)
    assert meta["splits"]["train"]["pairs"] == 250 and meta["splits"]["val"]["pairs"] == 7
    packed = open_pairs(tmp_path / "packed", "train", 9)
    assert isinstance(packed.query.tokens, np.memmap)           # mapped, not read into memory
    for pairs in (parquet, packed, open_pairs(data, "train", 9)):
        assert len(pairs) == 250
        assert [pairs.query.row(i, 9) for i in range(250)] == [r[:9] for r in expect_q]
        assert [pairs.pos.row(i, 9) for i in range(250)] == [r[:9] for r in expect_p]
        assert pairs.lengths().tolist() == [min(len(q), 9) + min(len(p), 9) for q, p in zip(expect_q, expect_p)]
    for pairs in (open_pairs(tmp_path / "packed", "val", 9), open_pairs(data, "val", 9)):
        assert [pairs.pos.row(i, 9) for i in range(len(pairs))] == [r[:9] for r in val["pos_ids"].to_list()]
    assert main(["--bge-dir", str(data), "--out", str(tmp_path / "again")]) == 0
    for f in ("train/query_tokens.npy", "train/pos_offsets.npy", "val/pos_tokens.npy"):
        assert (tmp_path / "again" / f).read_bytes() == (tmp_path / "packed" / f).read_bytes()
    meta = json.loads((tmp_path / "again" / "meta.json").read_text())
    assert meta["splits"]["train"]["shards"] == [f.name for f in train_shards(data)]


def test_pack_rejects_a_bad_shard_and_leaves_nothing(tmp_path: Path, capsys) -> None:
    data = make_shards(tmp_path / "bge", 20, 2, 300, 12)
    pl.DataFrame({"query": ["q"], "pos": ["p"]}).write_parquet(data / "train-00001.parquet")
    assert main(["--bge-dir", str(data), "--out", str(tmp_path / "packed")]) == 2
    err = capsys.readouterr().err
    assert "train-00001.parquet" in err and "query_tokens" in err
    assert not (tmp_path / "packed").exists()
    assert main(["--bge-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "packed")]) == 2
    assert "no train-*.parquet" in capsys.readouterr().err


def test_length_sorted_chunks_restore_the_batch_order() -> None:
    pairs = Pairs.from_lists(_rows(30, 1), _rows(30, 2), 11)
    idx = [29, 3, 17, 8, 0, 22, 5, 11, 14, 2, 27]
    plain = make_chunks(pairs, idx, 4, 1)
    chunks, restore = length_sorted_chunks(pairs, idx, 4, 1)
    assert len(chunks) == len(plain) == 6

    def rows(cs):
        return [r[m.bool()].tolist() for ids, m in cs for r, m in zip(ids, m)]

    assert [rows(chunks)[i] for i in restore.tolist()] == rows(plain)
    padded = lambda cs: sum(ids.numel() for ids, _ in cs)  # noqa: E731
    assert padded(chunks) < padded(plain)              # less padding is the point
