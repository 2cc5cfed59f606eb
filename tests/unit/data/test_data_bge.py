"""prepare-bge: parsing, filters, dedup, shuffle, shards, token counts, determinism, bad input."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.data import bge, bge_records, bge_tokens
from embtune.data.jsonl import DataError, iter_jsonl
from embtune.data.sources import expand_files

REPO = Path(__file__).resolve().parents[3]
EN = [
    ("how do I open a file for reading", "Use the open function with the mode set to r and read it."),
    ("what is the capital of France", "Paris is the capital and the most populous city of France."),
    ("why is the sky blue", "Sunlight is scattered by the air, and blue light is scattered the most."),
    ("how to sort a list", "Call the sorted function on the list, or use the sort method in place."),
]


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
    assert bge_records.is_english(text) is expected


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
    assert bge_records.extract_pair(obj) == reason


def test_extract_pair_takes_first_positive() -> None:
    assert bge_records.extract_pair({"query": "q", "pos": ["a", "b"], "neg": ["c"]}) == ("q", "a")


def test_histogram_stats_match_numpy() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=997)
    from collections import Counter
    stats = bge_tokens.histogram_stats(Counter(lengths.tolist()), truncated=5)
    assert stats["count"] == 997 and stats["total"] == int(lengths.sum()) and stats["truncated"] == 5
    assert stats["mean"] == pytest.approx(lengths.mean(), abs=1e-4)
    for pct in (50, 90, 99):
        assert stats[f"p{pct}"] == int(np.percentile(lengths, pct, method="inverted_cdf"))
    assert (stats["min"], stats["max"]) == (int(lengths.min()), int(lengths.max()))


def test_shuffle_order_independent_of_bucket_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bge, "SPILL_BUFFER_PAIRS", 7)  # many appended batches per bucket file
    pairs = [(f"query {i}", f"passage {i}") for i in range(200)] + [("query 3", "passage 3")]
    orders = []
    for n in (1, 3, 7):
        d = tmp_path / f"b{n}"
        d.mkdir()
        buckets = bge.spill(pairs, seed=5, n_buckets=n, tmpdir=d)
        rows = [r for chunk, _ in bge.ordered_pairs([[b] for b in buckets], dedup=True, max_pairs=None)
                for r in chunk]
        orders.append(rows)
    assert orders[0] == orders[1] == orders[2]
    assert sorted(orders[0]) == sorted(set(pairs))          # dedup removed exactly the one repeat
    assert orders[0] != sorted(orders[0], key=lambda r: int(r[0].split()[1]))  # actually shuffled
    assert orders[0] == sorted(set(pairs), key=lambda r: (reference_pair_key(5, *r), r))


def test_buckets_split_in_parts_give_the_same_order(tmp_path: Path) -> None:
    """A bucket spilled as several part files (one per input file) reads back as one."""
    pairs = [(f"q{i}", f"p{i % 50}") for i in range(300)] + [("q1", "p1"), ("q7", "p7")]
    (tmp_path / "whole").mkdir()
    whole = bge.spill(pairs, seed=2, n_buckets=4, tmpdir=tmp_path / "whole")
    parts = []
    for k in range(3):
        (tmp_path / f"part{k}").mkdir()
        parts.append(bge.spill(pairs[k::3], seed=2, n_buckets=4, tmpdir=tmp_path / f"part{k}"))
    one = list(bge.ordered_pairs([[b] for b in whole], dedup=True, max_pairs=None))
    split = list(bge.ordered_pairs([[p[b] for p in parts] for b in range(4)], dedup=True, max_pairs=None))
    assert one == split and sum(d for _, d in split) == 2


def reference_pair_key(seed: int, query: str, pos: str) -> int:
    """The key as first specified: blake2b keyed by the seed over query, NUL, pos."""
    import hashlib

    h = hashlib.blake2b(digest_size=8, key=str(seed).encode())
    h.update(query.encode("utf-8"))
    h.update(b"\x00")
    h.update(pos.encode("utf-8"))
    return int.from_bytes(h.digest(), "big")


def test_pair_key_matches_reference() -> None:
    for seed in (0, 7, 123456):
        for q, p in [("a", "b"), ("", "x"), ("naïve café", "日本語のテキスト"), ("tab\there", "line\nbreak")]:
            assert bge.pair_key(seed, q, p) == reference_pair_key(seed, q, p)


def reference_is_english(text: str) -> bool:
    """The English test as first written (word by word), to check the faster one against."""
    import re

    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isascii() for c in letters) / len(letters) < bge_records.MIN_ASCII_LETTER_RATIO:
        return False
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]
    if len(words) < bge_records.MIN_WORDS_FOR_STOPWORD_TEST:
        return True
    return sum(w in bge_records.ENGLISH_STOPWORDS for w in words) / len(words) >= bge_records.MIN_STOPWORD_RATIO


def test_is_english_matches_reference_on_random_texts() -> None:
    rng = np.random.default_rng(3)
    pieces = ["the", "The", "OF", "and", "is", "it", "cat", "Dog", "sat", "mat", "x1y", "foo_bar", "42",
              "3rd", "__init__", "Der", "und", "die", "café", "naïve", "Straße", "İstanbul", "日本",
              "мир", "!", ",", "-", "\n", "\t", "  ", "'s", "e.g.", "ÆON"]
    for _ in range(3000):
        n = int(rng.integers(0, 30))
        text = "".join(pieces[i] + (" " if rng.random() < 0.7 else "") for i in rng.integers(0, len(pieces), n))
        assert bge_records.is_english(text) is reference_is_english(text), repr(text)


def reference_token_ids(tokenizer: object, texts: list[str], ctx: int) -> tuple[list[list[int]], int]:
    """The wrapper call the stage used first: ``tokenizer(texts)`` one row at a time, then cut."""
    rows = [tokenizer([t], truncation=True, max_length=ctx + 1, padding=False)["input_ids"][0] for t in texts]
    return [r[:ctx] for r in rows], sum(len(r) > ctx for r in rows)


@pytest.mark.parametrize("eos,side", [(False, "right"), (True, "right"), (True, "left")])
def test_token_ids_match_the_wrapper(tokenizer_dir: Path, eos: bool, side: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tokenizers import processors
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    tok.truncation_side = side
    if eos:  # an EOS appended by the post-processor: truncation must leave room for it
        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", tok.eos_token_id)])
    base = [text for text, _ in EN] + [passage for _, passage in EN]
    texts = base + ["", " ", "a", "x" * 200, "<|endoftext|> inside the text", "naïve café 日本語",
                    " ".join(base), "the " * 7, "the " * 8, "the " * 9]
    for ctx in (1, 5, 8, 16):
        expected, expected_cut = reference_token_ids(tok, texts, ctx)
        ids, cut = bge_tokens.token_ids(tok, texts, ctx)
        assert ids.to_pylist() == expected and cut == expected_cut
        assert 0 < cut < len(texts) or ctx == 16
    monkeypatch.setattr(bge_tokens, "TOKENIZE_BATCH", 3)  # several batches
    ids, cut = bge_tokens.token_ids(tok, texts, 8)
    assert (ids.to_pylist(), cut) == reference_token_ids(tok, texts, 8)
    empty, cut = bge_tokens.token_ids(tok, [], 8)
    assert empty.to_pylist() == [] and cut == 0


def test_token_ids_keep_the_wrapper_for_a_customised_class(tokenizer_dir: Path) -> None:
    """A tokenizer class that changes the text before encoding is called through the wrapper."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    base = type(tok)

    class Shouting(base):  # type: ignore[misc, valid-type]
        def _encode_plus(self, text, *args, **kwargs):  # type: ignore[no-untyped-def]
            text = [t.upper() for t in text] if isinstance(text, list) else text.upper()
            return super()._encode_plus(text, *args, **kwargs)

    tok.__class__ = Shouting
    texts = [q for q, _ in EN] + ["the quick brown fox " * 5]
    shouted = bge_tokens.token_ids(tok, texts, 8)[0].to_pylist()
    assert shouted == reference_token_ids(tok, texts, 8)[0]
    assert shouted != bge_tokens.token_ids(base.from_pretrained(str(tokenizer_dir)), texts, 8)[0].to_pylist()


def test_stats_merge_equals_one_pass(tmp_path: Path) -> None:
    """Counts and the first drop examples from per-file passes merged == one pass over all."""
    files = []
    for k in range(3):
        lines = english_pairs(5) + [json.dumps({"query": f"only {k} {i}"}) for i in range(9)]
        lines += [json.dumps({"query": "", "pos": ["x"]})] * k
        files.append(str(write_lines(tmp_path / f"f{k}.jsonl", lines[::-1] if k == 1 else lines)))
    one = bge_records.Stats()
    list(bge_records.iter_pairs(files, True, one))
    merged = bge_records.Stats()
    for f in files:
        part = bge_records.Stats()
        list(bge_records.iter_pairs([f], True, part))
        merged.merge(part)
    assert merged == one
    assert list(merged.drop_examples) == list(one.drop_examples)  # same first-seen order
    assert len(one.drop_examples["missing field 'pos'"]) == bge_records.MAX_DROP_EXAMPLES


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


def test_output_independent_of_thread_count(tmp_path: Path, tokenizer_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--threads 1 and --threads 3 (process pool over 4 files, parallel tokenizer) write the same
    bytes, manifest included; so does leaving --threads out."""
    pools = []

    class CountedPool(bge.ProcessPoolExecutor):
        def __init__(self, workers: int, **kwargs: object) -> None:
            pools.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(bge, "ProcessPoolExecutor", CountedPool)
    lines = english_pairs(40)
    lines += lines[:3] + [json.dumps({"query": "q only"}), json.dumps({"query": "", "pos": ["text"]}),
                          json.dumps({"query": "Der Hund schläft in der Küche und die Katze sitzt auf dem Tisch.",
                                      "pos": ["Die Katze sitzt auf dem Tisch neben dem Fenster und schläft."]})]
    files = [write_lines(tmp_path / f"in{k}.jsonl", lines[k::4]) for k in range(4)]
    outs = {}
    for name, extra in (("t1", ["--threads", "1"]), ("t3", ["--threads", "3"]), ("default", [])):
        outs[name] = tmp_path / name
        assert run_stage(files, outs[name], tokenizer_dir, *extra, val=5, shard=9, ctx=8) == 0
    m = json.loads((outs["t1"] / "manifest.json").read_text())
    assert m["duplicates_removed"] == 3 and sum(m["drops"].values()) == 3 and len(m["train_shards"]) == 4
    names = sorted(p.name for p in outs["t1"].iterdir())
    for other in ("t3", "default"):
        assert sorted(p.name for p in outs[other].iterdir()) == names
        for name in names:
            assert (outs["t1"] / name).read_bytes() == (outs[other] / name).read_bytes(), (other, name)
    assert pools == [3]  # only --threads 3 used worker processes
    assert os.environ.get("TOKENIZERS_PARALLELISM") == "false"  # restored after the stage


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
        pair = bge_records.extract_pair(obj)
        assert not isinstance(pair, str), pair
        assert isinstance(obj.get("neg"), list)
        n += 1
    assert n >= 6000


def test_chunk_rows_regroups_any_stream_exactly() -> None:
    """Chunks of the requested sizes, in order, whatever the incoming lists' sizes (brute-force
    reference: concatenate everything, then cut)."""
    rng = random.Random(0)
    for _ in range(50):
        stream = [[(f"q{i}-{j}", "p") for j in range(rng.randint(0, 30))] for i in range(rng.randint(1, 8))]
        sizes = [rng.randint(1, 12) for _ in range(200)]
        flat = list(itertools.chain.from_iterable(stream))
        want, at = [], 0
        for size in sizes:
            if at >= len(flat):
                break
            want.append(flat[at:at + size])
            at += size
        assert list(bge.chunk_rows(iter(stream), iter(sizes))) == want
