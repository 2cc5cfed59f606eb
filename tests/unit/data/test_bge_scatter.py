"""prepare-bge-part: the scattered BGE preparation writes exactly the bytes of `prepare-bge`.

The reference is the one-process stage (embtune.data.bge) run on the same files; every output
file (shards, val.parquet, manifest.json) is compared byte for byte. Counts that the parts add up
(duplicates, drops, file:line examples) are also checked against hand counts."""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from embtune.cli import main as cli_main
from embtune.data import bge, bge_partition, bge_scatter
from embtune.data.jsonl import DataError, iter_jsonl, iter_jsonl_range

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "data/demo/bge/pairs.jsonl"


def output_args(tok: Path, val: int, shard: int, ctx: int = 24) -> list[str]:
    return ["--tokenizer", str(tok), "--context-length", str(ctx), "--val-pairs", str(val),
            "--shard-rows", str(shard)]


def one_process(files: list[Path], out: Path, tok: Path, *flags: str, seed: int = 3, val: int = 50,
                shard: int = 300) -> None:
    assert cli_main(["prepare-bge", "--files", *map(str, files), "--seed", str(seed),
                     *output_args(tok, val, shard), *flags, "--out", str(out)]) == 0


def scattered(files: list[Path], work: Path, tok: Path, parts: int, *flags: str, seed: int = 3,
              val: int = 50, shard: int = 300) -> Path:
    """Every step of every part, as the Snakemake rules call them (one process per call here)."""
    spill_flags = [f for f in flags if f == "--no-english-filter"]
    dedup_flags = [f for f in flags if f == "--no-dedup"]
    max_flags = [f for i, f in enumerate(flags) if f == "--max-pairs" or (i and flags[i - 1] == "--max-pairs")]
    dirs = {step: [str(work / bge_partition.part_name(step, i, parts)) for i in range(parts)]
            for step in ("spill", "sort", "shards")}
    files_ = [str(f) for f in files]
    for i in range(parts):
        assert cli_main(["prepare-bge-part", "spill", "--files", *files_, "--seed", str(seed), *spill_flags,
                         "--parts", str(parts), "--part", str(i), "--out", dirs["spill"][i]]) == 0
    for i in range(parts):
        assert cli_main(["prepare-bge-part", "sort", "--inputs", *dirs["spill"], *dedup_flags,
                         "--parts", str(parts), "--part", str(i), "--out", dirs["sort"][i]]) == 0
    for i in range(parts):
        assert cli_main(["prepare-bge-part", "shards", "--inputs", *dirs["sort"], *output_args(tok, val, shard),
                         *max_flags, "--parts", str(parts), "--part", str(i), "--out", dirs["shards"][i]]) == 0
    out = work / "bge"
    assert cli_main(["prepare-bge-part", "gather", "--files", *files_, "--seed", str(seed),
                     *output_args(tok, val, shard), *flags, "--parts", str(parts), "--spill", *dirs["spill"],
                     "--sorted", *dirs["sort"], "--shards", *dirs["shards"], "--out", str(out)]) == 0
    return out


def assert_same_bytes(ref: Path, got: Path) -> None:
    names = sorted(p.name for p in ref.iterdir())
    assert names == sorted(p.name for p in got.iterdir())
    assert "manifest.json" in names and "val.parquet" in names
    for name in names:
        assert (ref / name).read_bytes() == (got / name).read_bytes(), name


def split_demo(tmp: Path, lines_per_file: list[int]) -> list[Path]:
    """The demo pairs spread over several files, with malformed and blank lines mixed in (drop
    examples must name the right file:line) and the last file gzip-compressed (read whole)."""
    lines = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    files, at = [], 0
    for k, n in enumerate(lines_per_file):
        chunk = lines[at:at + n]
        at += n
        chunk[5:5] = ["\n", '{"query": "q", "pos": []}\n', "[1, 2]\n"]
        body = "".join(chunk)
        if k == len(lines_per_file) - 1:
            path = tmp / f"part-{k}.jsonl.gz"
            path.write_bytes(gzip.compress(body.encode()))
        else:
            path = tmp / f"part-{k}.jsonl"
            path.write_text(body, encoding="utf-8")
        files.append(path)
    return files


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_scattered_output_is_byte_identical(tmp_path: Path, tokenizer_dir: Path, parts: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    files = split_demo(tmp_path, [500, 700, 300, 400])
    # several one-process spill buckets (the duplicates count depends on them under --max-pairs)
    monkeypatch.setattr(bge, "BUCKET_TARGET_BYTES", 200_000)
    one_process(files, tmp_path / "ref", tokenizer_dir)
    # many Arrow batches per spill file and several sort slices per key range
    monkeypatch.setattr(bge, "SPILL_BUFFER_PAIRS", 97)
    monkeypatch.setattr(bge_scatter, "SORT_SLICE_BYTES", 30_000)
    got = scattered(files, tmp_path / "work", tokenizer_dir, parts)
    assert_same_bytes(tmp_path / "ref", got)
    manifest = json.loads((got / "manifest.json").read_text())
    # hand count: 4 files x (1 record without positive + 1 non-object) of 1900 + 8 records
    assert manifest["rows_in"] == 1908
    assert manifest["drops"]["'pos' is empty"] == 4 and manifest["drops"]["record is not a JSON object"] == 4
    # the inserted lines are lines 7 and 8 of every file (a blank line 6 before them)
    assert manifest["drop_examples"]["'pos' is empty"] == [f"{f}:7" for f in files]
    assert manifest["drop_examples"]["record is not a JSON object"] == [f"{f}:8" for f in files]


@pytest.mark.parametrize("parts", [2, 5])
def test_scattered_flags_match_one_process(tmp_path: Path, tokenizer_dir: Path, parts: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    files = split_demo(tmp_path, [400, 400])
    monkeypatch.setattr(bge, "BUCKET_TARGET_BYTES", 50_000)
    for k, flags in enumerate([("--max-pairs", "333"), ("--no-dedup", "--no-english-filter"),
                               ("--max-pairs", "60", "--no-dedup")]):
        one_process(files, tmp_path / f"ref{k}", tokenizer_dir, *flags, val=40, shard=70)
        got = scattered(files, tmp_path / f"work{k}", tokenizer_dir, parts, *flags, val=40, shard=70)
        assert_same_bytes(tmp_path / f"ref{k}", got)


def test_duplicate_in_two_files_is_dropped_once(tmp_path: Path, tokenizer_dir: Path) -> None:
    lines = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)[:300]
    twin = lines[123]
    a = tmp_path / "a.jsonl"
    a.write_text("".join(lines[:150]), encoding="utf-8")
    b = tmp_path / "b.jsonl"
    b.write_text("".join(lines[150:]) + twin + twin, encoding="utf-8")  # 3 copies in all, 2 files
    distinct = {(o["query"], o["pos"][0]) for _, o in iter_jsonl(a)} | {(o["query"], o["pos"][0]) for _, o in iter_jsonl(b)}
    one_process([a, b], tmp_path / "ref", tokenizer_dir, val=20, shard=100)
    for parts in (2, 3):
        got = scattered([a, b], tmp_path / f"work{parts}", tokenizer_dir, parts, val=20, shard=100)
        assert_same_bytes(tmp_path / "ref", got)
        manifest = json.loads((got / "manifest.json").read_text())
        dropped = sum(manifest["drops"].values())
        assert manifest["rows_out"] == manifest["pairs_after_filters"] - manifest["duplicates_removed"]
        assert manifest["duplicates_removed"] >= 2
        assert manifest["rows_out"] + dropped <= len(distinct) + manifest["drops"].get("not English", 0)
        import polars as pl
        frames = [pl.read_parquet(p) for p in sorted(got.glob("*.parquet"))]
        rows = [r for f in frames for r in zip(f["query"].to_list(), f["pos"].to_list())]
        assert len(rows) == len(set(rows))  # no pair twice
        twin_pair = (json.loads(twin)["query"], json.loads(twin)["pos"][0])
        assert rows.count(twin_pair) == 1


def test_range_reader_reads_every_line_once(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": 2}\r\n{"a": "\xc3\xa9"}\n  \n{"a": 4}')  # CRLF, blank, no final newline
    whole = [obj for _, obj in iter_jsonl(path)]
    size = path.stat().st_size
    for cut1 in range(size + 1):
        for cut2 in range(cut1, size + 1):
            got = [obj for a, b in ((0, cut1), (cut1, cut2), (cut2, size))
                   for _, obj in iter_jsonl_range(path, a, b)]
            assert got == whole, (cut1, cut2)
            counts = []
            for a, b in ((0, cut1), (cut1, cut2), (cut2, size)):
                reader = iter_jsonl_range(path, a, b)
                while True:
                    try:
                        next(reader)
                    except StopIteration as stop:
                        counts.append(stop.value)
                        break
            assert sum(counts) == 6, (cut1, cut2, counts)  # every line, blank ones included, once


def test_range_reader_errors_name_the_file_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n\n{"a": \n{"b": 1}\n\xff\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:4: invalid JSON"):
        list(iter_jsonl_range(path, 19, 40))
    assert list(iter_jsonl_range(path, 20, 34)) == [(1, {"b": 1})]  # line 4 starts before byte 20
    with pytest.raises(DataError, match=r"bad\.jsonl:6: invalid UTF-8 byte 0xff .*byte offset 35"):
        list(iter_jsonl_range(path, 34, 40))


def test_bucket_ids_match_bucket_of() -> None:
    rng = random.Random(0)
    keys = [0, 1, (1 << 64) - 1, 1 << 63, (1 << 63) - 1] + [rng.getrandbits(64) for _ in range(5000)]
    for n in (1, 2, 3, 7, 1000, 4096):
        edges = [bge_partition.key_bound(b, n) + d for b in range(1, min(n, 50)) for d in (-1, 0)]
        ks = sorted(keys + edges)
        got = bge_partition.bucket_ids(np.array(ks, dtype=np.uint64), n)
        assert got.tolist() == [(k * n) >> 64 for k in ks]


def test_duplicates_counted_stops_like_the_one_process_stage() -> None:
    buckets = {0: [5, 1], 2: [3, 2], 3: [4, 7]}   # bucket: [rows kept, duplicates]
    assert bge_partition.duplicates_counted(buckets, None) == (12, 10)
    assert bge_partition.duplicates_counted(buckets, 8) == (8, 3)     # reached in bucket 2
    assert bge_partition.duplicates_counted(buckets, 6) == (6, 3)
    assert bge_partition.duplicates_counted(buckets, 5) == (5, 1)     # reached at the end of bucket 0
    assert bge_partition.duplicates_counted(buckets, 100) == (12, 10)


def test_layout_matches_hand_cut() -> None:
    assert bge_partition.layout(10, 3, 4) == [("val.parquet", 0, 3), ("train-00000.parquet", 3, 7),
                                            ("train-00001.parquet", 7, 10)]
    assert bge_partition.layout(5, 0, 5) == [("val.parquet", 0, 0), ("train-00000.parquet", 0, 5)]
    assert bge_partition.layout(2, 3, 4) == [("val.parquet", 0, 2)]


def test_segments_cover_the_input_once() -> None:
    files, sizes, gz = ["a", "b", "c", "d"], [10, 0, 7, 5], [False, False, True, False]
    for parts in (1, 2, 3, 7, 30):
        segs = bge_partition.plan_segments(files, sizes, gz, parts)
        covered = {f: [] for f in files}
        for part in segs:
            for s in part:
                covered[s.path].extend(range(s.start, s.end))
        assert covered["a"] == list(range(10)) and covered["d"] == list(range(5))
        assert covered["c"] == list(range(7))
        assert sum(s.path == "c" for part in segs for s in part) == 1  # gzip: one part, whole


def test_parts_of_other_settings_are_refused(tmp_path: Path, tokenizer_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    files = split_demo(tmp_path, [200, 200])
    work = tmp_path / "work"
    scattered(files, work, tokenizer_dir, 2)
    spill = [str(work / bge_partition.part_name("spill", i, 2)) for i in range(2)]
    sort = [str(work / bge_partition.part_name("sort", i, 2)) for i in range(2)]
    shards = [str(work / bge_partition.part_name("shards", i, 2)) for i in range(2)]
    argv = ["prepare-bge-part", "gather", "--files", *map(str, files), "--seed", "4",  # not 3
            *output_args(tokenizer_dir, 50, 300), "--parts", "2", "--spill", *spill, "--sorted", *sort,
            "--shards", *shards, "--out", str(tmp_path / "out")]
    assert cli_main(argv) == 2
    assert "spill-0-of-2: built with settings" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert cli_main(["prepare-bge-part", "sort", "--inputs", spill[1], spill[0], "--parts", "2", "--part", "0",
                     "--out", str(tmp_path / "s")]) == 2
    assert "expected spill part 0 of 2" in capsys.readouterr().err


def test_errors_and_tiny_inputs_match_the_one_process_stage(tmp_path: Path, tokenizer_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing left / too few pairs: the same one-line error as prepare-bge, from the gather;
    a part with no rows at all (7 parts, 12 records) is fine."""
    lines = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    few = tmp_path / "few.jsonl"
    few.write_text("".join(lines[:12]) + '{"query": "x"}\n')
    for files, val in (([empty], 5), ([few], 20), ([few], 12)):
        assert cli_main(["prepare-bge", "--files", *map(str, files), "--seed", "3", *output_args(tokenizer_dir, val, 5),
                         "--out", str(tmp_path / "ref")]) == 2
        # the last line: a progress line (embtune.jobs.progress, not a terminal) may come before it
        ref = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("embtune prepare-bge: error: ")
        with pytest.raises(AssertionError):
            scattered(files, tmp_path / f"work-{val}", tokenizer_dir, 3, val=val, shard=5)
        got = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("embtune prepare-bge-part: error: ")
        assert got == ref and ("no records" in ref or "pairs left" in ref or "no training pairs" in ref)
        assert not (tmp_path / f"work-{val}" / "bge").exists()
    one_process([few], tmp_path / "ref", tokenizer_dir, val=2, shard=5)
    assert_same_bytes(tmp_path / "ref", scattered([few], tmp_path / "work7", tokenizer_dir, 7, val=2, shard=5))
