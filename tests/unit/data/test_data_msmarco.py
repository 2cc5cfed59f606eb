"""split-msmarco (positional split, both line forms, all-pairs count) and fetch (hf:// URIs)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.data import msmarco, sources
from embtune.data.jsonl import DataError, iter_jsonl

REPO = Path(__file__).resolve().parents[3]


def synthetic_rows(n: int) -> list[object]:
    """Row i: list form when i % 3 == 0, else dict form with (i % 2 + 1) positives and i % 5 + 1
    negatives. Texts encode their row, so expectations can be computed independently."""
    rows: list[object] = []
    for i in range(n):
        if i % 3 == 0:
            rows.append([f"q{i}", f"p{i}.0", f"n{i}.0"])
        else:
            rows.append({"query": f"q{i}", "pos": [f"p{i}.{k}" for k in range(i % 2 + 1)],
                         "neg": [f"n{i}.{k}" for k in range(i % 5 + 1)]})
    return rows


def write_gz(path: Path, rows: list[object], extra: str = "") -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows) + extra)
    return path


def n_pos(i: int) -> int:
    return 1 if i % 3 == 0 else i % 2 + 1


def n_neg(i: int) -> int:
    return 1 if i % 3 == 0 else i % 5 + 1


def split(path: Path, out: Path, train: int, val: int, ev: int, hard: int = 3) -> int:
    return cli_main(["split-msmarco", "--file", str(path), "--train-size", str(train), "--val-size",
                     str(val), "--eval-size", str(ev), "--hard-negatives", str(hard), "--out", str(out)])


def test_split_sizes_positions_and_all_pairs(tmp_path: Path) -> None:
    f = write_gz(tmp_path / "t.jsonl.gz", synthetic_rows(30), extra="\n")  # trailing blank line
    out = tmp_path / "out"
    assert split(f, out, train=12, val=5, ev=8, hard=3) == 0
    train = pl.read_parquet(out / "train.parquet")
    val = pl.read_parquet(out / "val.parquet")
    ev = pl.read_parquet(out / "eval.parquet")
    hard = pl.read_parquet(out / "eval_hard.parquet")
    assert train.columns == ["query", "pos", "neg"] and val.columns == ["query", "pos", "neg"]
    assert train.rows() == [(f"q{i}", f"p{i}.0", f"n{i}.0") for i in range(12)]
    assert val["query"].to_list() == [f"q{i}" for i in range(12, 17)]
    assert ev.schema == {"sample_id": pl.Int64, "query": pl.String, "positives": pl.List(pl.String),
                         "negatives": pl.List(pl.String)}
    assert ev["sample_id"].to_list() == list(range(22, 30))  # the LAST 8; rows 17..21 unused
    for row in ev.iter_rows(named=True):
        i = row["sample_id"]
        assert row["positives"] == [f"p{i}.{k}" for k in range(n_pos(i))]
        assert row["negatives"] == [f"n{i}.{k}" for k in range(n_neg(i))]
    assert hard["sample_id"].to_list() == [i for i in range(22, 30) if n_neg(i) >= 3]
    m = json.loads((out / "manifest.json").read_text())
    assert (m["rows"], m["train_rows"], m["val_rows"], m["eval_rows"], m["unused_rows"]) == (30, 12, 5, 8, 5)
    assert m["eval_triplets"] == sum(n_pos(i) * n_neg(i) for i in range(22, 30))
    assert m["eval_hard_triplets"] == sum(n_pos(i) * n_neg(i) for i in range(22, 30) if n_neg(i) >= 3)
    assert m["eval_hard_rows"] == hard.height


def test_exact_fit_and_too_few_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_gz(tmp_path / "t.jsonl.gz", synthetic_rows(10))
    assert split(f, tmp_path / "ok", 5, 2, 3) == 0
    assert json.loads((tmp_path / "ok" / "manifest.json").read_text())["unused_rows"] == 0
    assert pl.read_parquet(tmp_path / "ok" / "eval.parquet")["sample_id"].to_list() == [7, 8, 9]
    assert split(f, tmp_path / "no", 5, 2, 4) == 2
    assert "file has 10 samples" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("line,reason", [
    ('["q", "p"]', "list form needs [anchor, positive, negative]"),
    ('{"query": "q", "pos": ["p"]}', "missing field(s) 'neg'"),
    ('{"query": "q", "pos": [], "neg": ["n"]}', "'pos' is empty"),
    ('{"query": "q", "pos": ["p"], "neg": [3]}', "'neg[0]' is not a string"),
    ('{"query": "", "pos": ["p"], "neg": ["n"]}', "query is not a non-empty string"),
    ('"just a string"', "record is a JSON str"),
    ('{"query": "q", "pos": ["p"], "neg": ["n"', "invalid JSON"),
])
def test_bad_sample_names_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows(3)) + line + "\n")
    with pytest.raises(DataError) as err:
        list(msmarco.iter_samples(str(f)))
    assert str(err.value).startswith(f"{f}:4: ") and reason in str(err.value)


def test_bare_string_pos_is_one_item() -> None:
    s = msmarco.parse_sample({"query": "q", "pos": "p", "neg": ["a", "b"]}, 7)
    assert s == msmarco.Sample(7, "q", ("p",), ("a", "b"))


def test_paper_split_arithmetic() -> None:
    """Paper 2 App. A: 499,184 samples; 487,983 + 4,200 + 7,000 leave exactly one unused."""
    samples = (msmarco.Sample(i, "q", ("p",), ("n",)) for i in range(499_184))
    s = msmarco.split_samples(samples, 487_983, 4_200, 7_000)
    assert (len(s.train), len(s.val), len(s.eval), s.unused) == (487_983, 4_200, 7_000, 1)
    assert s.eval[0].sample_id == 499_184 - 7_000


def test_rerun_is_byte_identical(tmp_path: Path) -> None:
    f = write_gz(tmp_path / "t.jsonl.gz", synthetic_rows(20))
    assert split(f, tmp_path / "a", 8, 4, 6) == 0 and split(f, tmp_path / "b", 8, 4, 6) == 0
    for p in (tmp_path / "a").iterdir():
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes()


def test_demo_file_matches_the_demo_preset() -> None:
    path = REPO / "data" / "demo" / "msmarco" / "msmarco-triplets.jsonl.gz"
    forms = {"list": 0, "dict": 0}
    for _, obj in iter_jsonl(path):
        forms["list" if isinstance(obj, list) else "dict"] += 1
    samples = list(msmarco.iter_samples(str(path)))
    assert len(samples) >= 900 and forms["list"] > 0 and forms["dict"] > 0
    tail = samples[-150:]
    assert sum(len(s.negatives) >= 8 for s in tail) >= 10
    assert any(len(s.positives) > 1 for s in samples)


# --- fetch / hf:// URIs -------------------------------------------------------------------------

def test_parse_hf_uri() -> None:
    ref = sources.parse_hf_uri("hf://datasets/sentence-transformers/embedding-training-data/msmarco-triplets.jsonl.gz")
    assert ref == sources.HubFile("sentence-transformers/embedding-training-data", "msmarco-triplets.jsonl.gz")
    assert sources.parse_hf_uri("hf://datasets/o/n/a/b.parquet").filename == "a/b.parquet"
    for bad in ("hf://models/o/n/f", "hf://datasets/o/n", "hf://datasets/o//f", "/local/file"):
        with pytest.raises(DataError):
            sources.parse_hf_uri(bad)


def test_fetch_copies_hub_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = tmp_path / "cache" / "f.jsonl.gz"
    cached.parent.mkdir()
    cached.write_bytes(b"payload")
    calls = []

    def fake_download(repo_id: str, filename: str, repo_type: str, revision: str) -> str:
        calls.append((repo_id, filename, repo_type, revision))
        return str(cached)

    import types

    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    # fetch pins the file at the commit the revision resolves to (tests/unit/data/test_stage_in.py runs it
    # against a loopback hub); here the metadata call answers that commit
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url: types.SimpleNamespace(commit_hash="c0ffee"))
    out = tmp_path / "raw" / "hf" / "o" / "n" / "f.jsonl.gz"
    assert cli_main(["fetch", "--uri", "hf://datasets/o/n/f.jsonl.gz", "--out", str(out)]) == 0
    assert out.read_bytes() == b"payload" and calls == [("o/n", "f.jsonl.gz", "dataset", "c0ffee")]
    assert cli_main(["fetch", "--uri", "hf://datasets/o/n", "--out", str(out)]) == 2
