"""prepare-xnli: hub-layout directory -> long table; alignment across languages is enforced."""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.data import xnli
from embtune.data.jsonl import DataError

REPO = Path(__file__).resolve().parents[3]
DEMO_LANGS = ["ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"]
LABELS = [0, 1, 2, 2, 0, 1]


def write_lang(root: Path, lang: str, labels: list[int] | None = None, premise: list[str] | None = None,
               label_dtype: pl.DataType = pl.Int64) -> None:
    labels = LABELS if labels is None else labels
    premise = [f"{lang} premise {i}" for i in range(len(labels))] if premise is None else premise
    frame = pl.DataFrame({"premise": premise, "hypothesis": [f"{lang} hyp {i}" for i in range(len(labels))],
                          "label": labels}, schema={"premise": pl.String, "hypothesis": pl.String,
                                                    "label": label_dtype})
    path = root / lang / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)


def run(source: Path | str, out: Path, langs: list[str]) -> int:
    return cli_main(["prepare-xnli", "--source", str(source), "--split", "test", "--languages", *langs,
                     "--out", str(out)])


def test_long_table(tmp_path: Path) -> None:
    for lang in ("en", "de", "zh"):
        write_lang(tmp_path / "src", lang)
    out = tmp_path / "xnli" / "test.parquet"
    assert run(tmp_path / "src", out, ["zh", "en", "de"]) == 0
    t = pl.read_parquet(out)
    assert t.columns == ["pair_id", "label", "language", "premise", "hypothesis"]
    assert t.schema["pair_id"] == pl.Int64
    names = {0: "entailment", 1: "neutral", 2: "contradiction"}
    expected = [(i, names[lab], lang, f"{lang} premise {i}", f"{lang} hyp {i}")
                for lang in ("zh", "en", "de") for i, lab in enumerate(LABELS)]
    assert t.rows() == expected
    m = json.loads((out.parent / "manifest.json").read_text())
    assert (m["pairs_per_language"], m["rows_out"]) == (6, 18)
    assert m["label_counts"] == {"entailment": 2, "neutral": 2, "contradiction": 2}


def test_rerun_byte_identical(tmp_path: Path) -> None:
    for lang in ("en", "fr"):
        write_lang(tmp_path / "src", lang)
    a, b = tmp_path / "a" / "test.parquet", tmp_path / "b" / "test.parquet"
    assert run(tmp_path / "src", a, ["en", "fr"]) == 0 and run(tmp_path / "src", b, ["en", "fr"]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert (a.parent / "manifest.json").read_bytes() == (b.parent / "manifest.json").read_bytes()


@pytest.mark.parametrize("setup,message", [
    (lambda r: write_lang(r, "fr", labels=[0, 1, 2, 2, 1, 1]), "language 'fr': pair 4 has label 1, 'en' has 0"),
    (lambda r: write_lang(r, "fr", labels=LABELS[:5]), "language 'fr' has 5 pairs, 'en' has 6"),
    (lambda r: write_lang(r, "fr", premise=["a", "b", " ", "d", "e", "f"]), "(fr): row 2: empty premise"),
    (lambda r: write_lang(r, "fr", labels=[0, 1, 2, 7, 0, 1]), "(fr): row 3: label 7 not in 0/1/2"),
    (lambda r: write_lang(r, "fr", label_dtype=pl.Float64), "column 'label' has type Float64"),
    (lambda r: None, "fr/test-00000-of-00001.parquet: file not found"),
])
def test_errors_name_the_language(tmp_path: Path, capsys: pytest.CaptureFixture[str], setup, message: str) -> None:
    write_lang(tmp_path / "src", "en")
    setup(tmp_path / "src")
    out = tmp_path / "o" / "test.parquet"
    assert run(tmp_path / "src", out, ["en", "fr"]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_hub_source_downloads_per_language_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for lang in ("en", "sw"):
        write_lang(tmp_path / "cache", lang)
    calls = []

    def fake_download(repo_id: str, filename: str, repo_type: str) -> str:
        calls.append((repo_id, filename, repo_type))
        return str(tmp_path / "cache" / filename)

    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    out = tmp_path / "o" / "test.parquet"
    assert run("hf://datasets/facebook/xnli", out, ["en", "sw"]) == 0
    assert calls == [("facebook/xnli", f"{lang}/test-00000-of-00001.parquet", "dataset") for lang in ("en", "sw")]
    assert pl.read_parquet(out).height == 12
    with pytest.raises(DataError):
        xnli.hub_resolver("hf://datasets/facebook")


def test_shipped_demo_is_aligned_in_15_languages(tmp_path: Path) -> None:
    out = tmp_path / "test.parquet"
    assert run(REPO / "data" / "demo" / "xnli", out, DEMO_LANGS) == 0
    t = pl.read_parquet(out)
    counts = t.filter(pl.col("language") == "en")["label"].value_counts()
    per_label = dict(counts.iter_rows())
    assert set(per_label) == {"entailment", "neutral", "contradiction"} and len(set(per_label.values())) == 1
    assert min(per_label.values()) >= 40
    # real translations: no language repeats another's text, and no text is empty
    by_lang = {lang: t.filter(pl.col("language") == lang)["hypothesis"].to_list() for lang in DEMO_LANGS}
    assert len({tuple(v) for v in by_lang.values()}) == 15
    # the pair structure holds in every language: 3 hypotheses share one premise
    for lang in DEMO_LANGS:
        prem = t.filter(pl.col("language") == lang)["premise"].to_list()
        assert all(prem[i] == prem[i + 1] == prem[i + 2] for i in range(0, len(prem), 3))


def test_max_premises_keeps_the_first_premises_with_all_their_hypotheses(tmp_path: Path) -> None:
    # three premises, each with its three hypotheses (rows 0-2, 3-5, 6-8), as XNLI pairs them
    labels = [0, 1, 2] * 3
    for lang in ("en", "de"):
        write_lang(tmp_path / "src", lang, labels, [f"{lang} premise {i // 3}" for i in range(9)])
    out = tmp_path / "xnli" / "test.parquet"
    assert cli_main(["prepare-xnli", "--source", str(tmp_path / "src"), "--languages", "en", "de",
                     "--max-premises", "2", "--out", str(out)]) == 0
    t = pl.read_parquet(out)
    for lang in ("en", "de"):          # by hand: premises 0 and 1, rows 0-5, renumbered 0-5
        rows = t.filter(pl.col("language") == lang)
        assert rows["pair_id"].to_list() == list(range(6))
        assert rows["premise"].to_list() == [f"{lang} premise {i // 3}" for i in range(6)]
        assert rows["hypothesis"].to_list() == [f"{lang} hyp {i}" for i in range(6)]
    m = json.loads((out.parent / "manifest.json").read_text())
    assert (m["max_premises"], m["pairs_per_language"], m["rows_out"]) == (2, 6, 12)
    assert cli_main(["prepare-xnli", "--source", str(tmp_path / "src"), "--languages", "en",
                     "--max-premises", "0", "--out", str(out)]) == 2
