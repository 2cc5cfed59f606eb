"""prepare-bge: parsing, filters, dedup, shuffle, shards, token counts, determinism, bad input."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import polars as pl
import pytest
from helpers_tokenizer import build_tiny_tokenizer

from embtune.cli import main as cli_main
from embtune.data import bge
from embtune.data.jsonl import DataError, iter_jsonl
from embtune.data.sources import expand_files

REPO = Path(__file__).resolve().parents[1]
EN = [
    ("how do I open a file for reading", "Use the open function with the mode set to r and read it."),
    ("what is the capital of France", "Paris is the capital and the most populous city of France."),
    ("why is the sky blue", "Sunlight is scattered by the air, and blue light is scattered the most."),
    ("how to sort a list", "Call the sorted function on the list, or use the sort method in place."),
]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_tokenizer(tmp_path_factory.mktemp("tok") / "tok")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def english_pairs(n: int) -> list[str]:
    """n distinct English records in FlagEmbedding form."""
    return [json.dumps({"query": f"{q} (case {i})", "pos": [f"{p} This is case {i}."], "neg": ["Nothing here."]})
            for i in range(n) for q, p in [EN[i % len(EN)]]]


def run_stage(files: list[Path], out: Path, tok: Path, *extra: str, val: int = 3, shard: int = 4,
              ctx: int = 16, seed: int = 0) -> int:
    return cli_main(["prepare-bge", "--files", *map(str, files), "--tokenizer", str(tok),
                     "--context-length", str(ctx), "--val-pairs", str(val), "--shard-rows", str(shard),
                     "--seed", str(seed), "--out", str(out), *extra])


# --- jsonl reader -------------------------------------------------------------------------------

def test_iter_jsonl_plain_and_gz_skip_blank_lines(tmp_path: Path) -> None:
    text = '{"a": 1}\n\n[1, 2]\n'
    (tmp_path / "x.jsonl").write_text(text)
    with gzip.open(tmp_path / "x.jsonl.gz", "wt") as fh:
        fh.write(text)
    for name in ("x.jsonl", "x.jsonl.gz"):
        assert list(iter_jsonl(tmp_path / name)) == [(1, {"a": 1}), (3, [1, 2])]


def test_iter_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", ['{"a": 1}', '{"a": '])
    with pytest.raises(DataError, match=r"bad\.jsonl:2: invalid JSON"):
        list(iter_jsonl(path))
    with pytest.raises(DataError, match="file not found"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))


def test_expand_files_sorted_and_errors_on_no_match(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.jsonl"):
        (tmp_path / name).write_text("")
    assert expand_files([str(tmp_path / "*.jsonl")]) == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    with pytest.raises(DataError, match=r"nomatch-\*\.jsonl: no file matches"):
        expand_files([str(tmp_path / "nomatch-*.jsonl")])


# --- pure helpers -------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("Return the absolute value of the argument, which is an integer or a float.", True),
    ("how to sort a list", True),  # short: only the letter test applies
    ("Der Hund schläft in der Küche und die Katze sitzt auf dem Tisch neben dem Fenster.", False),
    ("El perro duerme en la cocina y el gato está sentado en la mesa junto a la ventana.", False),
    ("那个男人正在街上弹吉他，他的朋友在旁边听。", False),
    ("Мужчина играет на гитаре на улице.", False),
    ("12345 !!!", False),
])
def test_is_english(text: str, expected: bool) -> None:
    assert bge.is_english(text) is expected


@pytest.mark.parametrize("obj,reason", [
    ([1, 2], "record is not a JSON object"),
    ({"pos": ["x"]}, "missing field 'query'"),
    ({"query": "q"}, "missing field 'pos'"),
    ({"query": 3, "pos": ["x"]}, "'query' is not a string"),
    ({"query": "q", "pos": "x"}, "'pos' is not a list"),
    ({"query": "q", "pos": []}, "'pos' is empty"),
    ({"query": "q", "pos": [None]}, "'pos[0]' is not a string"),
    ({"query": "  ", "pos": ["x"]}, "empty query"),
    ({"query": "q", "pos": [""]}, "empty pos"),
])
def test_extract_pair_reasons(obj: object, reason: str) -> None:
    assert bge.extract_pair(obj) == reason


def test_extract_pair_takes_first_positive() -> None:
    assert bge.extract_pair({"query": "q", "pos": ["a", "b"], "neg": ["c"]}) == ("q", "a")


def test_histogram_stats_match_numpy() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=997)
    from collections import Counter
    stats = bge.histogram_stats(Counter(lengths.tolist()), truncated=5)
    assert stats["count"] == 997 and stats["total"] == int(lengths.sum()) and stats["truncated"] == 5
    assert stats["mean"] == pytest.approx(lengths.mean(), abs=1e-4)
    for pct in (50, 90, 99):
        assert stats[f"p{pct}"] == int(np.percentile(lengths, pct, method="inverted_cdf"))
    assert (stats["min"], stats["max"]) == (int(lengths.min()), int(lengths.max()))


def test_shuffle_order_independent_of_bucket_count(tmp_path: Path) -> None:
    pairs = [(f"query {i}", f"passage {i}") for i in range(200)] + [("query 3", "passage 3")]
    orders = []
    for n in (1, 3, 7):
        d = tmp_path / f"b{n}"
        d.mkdir()
        buckets = bge.spill(pairs, seed=5, n_buckets=n, tmpdir=d)
        rows = [r for chunk, _ in bge.ordered_pairs(buckets, dedup=True, max_pairs=None) for r in chunk]
        orders.append(rows)
    assert orders[0] == orders[1] == orders[2]
    assert sorted(orders[0]) == sorted(set(pairs))          # dedup removed exactly the one repeat
    assert orders[0] != sorted(orders[0], key=lambda r: int(r[0].split()[1]))  # actually shuffled


# --- the stage end to end -----------------------------------------------------------------------

def test_stage_counts_drops_dedup_shards_and_tokens(tmp_path: Path, tokenizer_dir: Path) -> None:
    good = english_pairs(10)
    bad = [
        good[0],                                                     # exact duplicate
        json.dumps({"query": "q only"}),                             # missing pos
        json.dumps({"query": "", "pos": ["text"]}),                  # empty query
        json.dumps(["not", "a", "dict"]),                            # wrong type
        json.dumps({"query": "Der Hund schläft in der Küche und die Katze sitzt auf dem Tisch.",
                    "pos": ["Die Katze sitzt auf dem Tisch neben dem Fenster und schläft."]}),  # not English
        "",                                                          # blank: ignored, not a row
    ]
    f1 = write_lines(tmp_path / "a.jsonl", good[:6] + bad)
    f2 = tmp_path / "b.jsonl.gz"
    with gzip.open(f2, "wt", encoding="utf-8") as fh:
        fh.write("".join(x + "\n" for x in good[6:]))
    out = tmp_path / "out"
    assert run_stage([f1, f2], out, tokenizer_dir, val=3, shard=4, ctx=8) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["rows_in"] == 15
    assert m["drops"] == {"empty query": 1, "missing field 'pos'": 1, "not English": 1,
                          "record is not a JSON object": 1}
    assert m["drop_examples"]["missing field 'pos'"] == [f"{f1}:8"]
    assert m["duplicates_removed"] == 1
    assert (m["rows_out"], m["val_rows"], m["train_rows"]) == (10, 3, 7)
    assert m["train_shards"] == ["train-00000.parquet", "train-00001.parquet"]
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "train-00000.parquet",
                                                     "train-00001.parquet", "val.parquet"]

    frames = [pl.read_parquet(out / n) for n in ("val.parquet", *m["train_shards"])]
    assert [f.height for f in frames] == [3, 4, 3]
    both = pl.concat(frames)
    assert both.schema == {"query": pl.String, "pos": pl.String, "query_ids": pl.List(pl.Int32),
                           "pos_ids": pl.List(pl.Int32), "query_tokens": pl.Int32, "pos_tokens": pl.Int32}
    expected = {(json.loads(x)["query"], json.loads(x)["pos"][0]) for x in good}
    assert set(zip(both["query"], both["pos"])) == expected and both.height == len(expected)

    from transformers import AutoTokenizer
    ref = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    for row in both.iter_rows(named=True):
        for col in ("query", "pos"):
            full = ref(row[col])["input_ids"]
            assert row[f"{col}_ids"] == full[:8]
            assert row[f"{col}_tokens"] == min(len(full), 8)
    n_cut = sum(len(ref(q)["input_ids"]) > 8 for q in both["query"])
    assert m["tokens"]["query"]["truncated"] == n_cut
    assert m["tokens"]["pos"]["total"] == int(both["pos_tokens"].sum())
    assert m["tokens"]["query"]["max"] <= 8


def test_stage_is_deterministic_and_input_order_free(tmp_path: Path, tokenizer_dir: Path) -> None:
    lines = english_pairs(12)
    fwd = write_lines(tmp_path / "fwd.jsonl", lines)
    rev = write_lines(tmp_path / "rev.jsonl", lines[::-1])
    outs = [tmp_path / "o1", tmp_path / "o2", tmp_path / "o3", tmp_path / "o4"]
    assert run_stage([fwd], outs[0], tokenizer_dir) == 0
    assert run_stage([fwd], outs[1], tokenizer_dir) == 0
    assert run_stage([rev], outs[2], tokenizer_dir) == 0
    assert run_stage([fwd], outs[3], tokenizer_dir, seed=1) == 0
    names = sorted(p.name for p in outs[0].iterdir())
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
        if name.endswith(".parquet"):
            assert (outs[0] / name).read_bytes() == (outs[2] / name).read_bytes()
    q0 = pl.read_parquet(outs[0] / "val.parquet")["query"].to_list()
    q1 = pl.read_parquet(outs[3] / "val.parquet")["query"].to_list()
    assert q0 != q1  # another seed, another shuffle


def test_flags_max_pairs_no_dedup_no_filter(tmp_path: Path, tokenizer_dir: Path) -> None:
    lines = english_pairs(10) + english_pairs(2) + [json.dumps({"query": "你好世界", "pos": ["世界你好"]})]
    f = write_lines(tmp_path / "p.jsonl", lines)
    assert run_stage([f], tmp_path / "a", tokenizer_dir, "--no-dedup", "--no-english-filter") == 0
    m = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert (m["rows_out"], m["duplicates_removed"], m["drops"]) == (13, 0, {})
    assert run_stage([f], tmp_path / "c", tokenizer_dir, val=0) == 0
    assert pl.read_parquet(tmp_path / "c" / "val.parquet").height == 0
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["train_rows"] == 10
    assert run_stage([f], tmp_path / "b", tokenizer_dir, "--max-pairs", "5") == 0
    m = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert (m["rows_out"], m["val_rows"], m["train_rows"], m["drops"]) == (5, 3, 2, {"not English": 1})


def test_errors_are_clear(tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_lines(tmp_path / "p.jsonl", english_pairs(3) + ["{oops"])
    assert run_stage([f], tmp_path / "o", tokenizer_dir) == 2
    assert f"{f}:4: invalid JSON" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing half-written
    g = write_lines(tmp_path / "q.jsonl", english_pairs(3))
    assert run_stage([g], tmp_path / "o", tokenizer_dir, val=5) == 2
    assert "--val-pairs 5" in capsys.readouterr().err
    assert run_stage([tmp_path / "none-*.jsonl"], tmp_path / "o", tokenizer_dir) == 2
    assert "no file matches" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# --- the shipped demo file ----------------------------------------------------------------------

def test_demo_pairs_file_is_clean_and_big_enough() -> None:
    path = REPO / "data" / "demo" / "bge" / "pairs.jsonl"
    n = 0
    for _, obj in iter_jsonl(path):
        pair = bge.extract_pair(obj)
        assert not isinstance(pair, str), pair
        assert isinstance(obj.get("neg"), list)
        n += 1
    assert n >= 6000
