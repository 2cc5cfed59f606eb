"""The shipped demo XNLI files are the build script's output from the source TSV, aligned in all
15 languages, and large enough for the z-test to see a few-percent change in one language pair."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import polars as pl
import pytest

from embtune.data.xnli import LABELS, check_aligned, read_language
from embtune.evaluate.stats import is_significant, min_detectable_difference

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "data/demo/xnli-source/pairs.tsv"
SHIPPED = ROOT / "data/demo/xnli"


def _builder():
    spec = importlib.util.spec_from_file_location("build_demo_xnli", ROOT / "workflow/scripts/build_demo_xnli.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def built():
    b = _builder()
    return b, b.language_frames(b.read_source(SOURCE))


def test_shipped_parquet_equals_build_from_tsv(built):
    b, frames = built
    assert sorted(frames) == sorted(b.LANGUAGES)
    for lang, frame in frames.items():
        shipped = pl.read_parquet(SHIPPED / lang / "test-00000-of-00001.parquet")
        assert shipped.schema == frame.schema, lang
        assert shipped.equals(frame), f"{lang}: data/demo/xnli differs from build_demo_xnli.py output"


def test_languages_aligned_with_same_premises_and_labels(built):
    _, frames = built
    # The loader's own validation and alignment check must pass on the shipped files.
    read = {lang: read_language(SHIPPED / lang / "test-00000-of-00001.parquet", lang) for lang in frames}
    check_aligned(read)
    en = frames["en"]
    n_items = en.height // 3
    assert n_items >= 200
    # Hand-derived structure: rows 3k, 3k+1, 3k+2 share one premise and carry labels 0, 1, 2.
    assert en["label"].to_list() == [0, 1, 2] * n_items
    for lang, f in frames.items():
        prem = f["premise"].to_list()
        assert all(prem[3 * k] == prem[3 * k + 1] == prem[3 * k + 2] for k in range(n_items)), lang
        assert len(set(prem)) == n_items, f"{lang}: premises must be distinct"
        assert f["hypothesis"].n_unique() > 0.95 * f.height, lang
    counts = en.group_by("label").len().sort("label")["len"].to_list()
    assert counts == [n_items] * len(LABELS)


def test_translations_use_their_script(built):
    _, frames = built
    assert "Der Mann spielt auf der Straße Gitarre." in frames["de"]["premise"].to_list()
    first = {lang: f["premise"][0] for lang, f in frames.items()}
    assert any("\u0600" <= c <= "\u06ff" for c in first["ar"] + first["ur"])
    assert any("\u0e00" <= c <= "\u0e7f" for c in first["th"])
    assert any("\u0900" <= c <= "\u097f" for c in first["hi"])
    assert any("\u0370" <= c <= "\u03ff" for c in first["el"])
    assert any("\u4e00" <= c <= "\u9fff" for c in first["zh"])
    assert first["en"] != first["de"] != first["ru"]


def test_source_errors_name_line_and_column(tmp_path):
    b = _builder()
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    bad = lines[:5]
    cols = bad[3].split("\t")
    cols[4] = "This is English, not Bulgarian."  # the bg column
    bad[3] = "\t".join(cols)
    p = tmp_path / "pairs.tsv"
    p.write_text("\n".join(bad) + "\n", encoding="utf-8")
    with pytest.raises(b.SourceError, match=r"pairs.tsv:4 \(bg\)"):
        b.read_source(p)
    p.write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")  # item 1 lacks its contradiction
    with pytest.raises(b.SourceError, match="incomplete"):
        b.read_source(p)
    swapped = [lines[0], lines[2], lines[1], *lines[3:5]]
    p.write_text("\n".join(swapped) + "\n", encoding="utf-8")
    with pytest.raises(b.SourceError, match="pairs.tsv:2"):
        b.read_source(p)


def test_min_detectable_difference_closed_form():
    # (1.96 + 0.8416) * sqrt(2 * 0.2 * 0.8 / 40000) = 2.8016 * 0.0028284 = 0.0079241
    assert min_detectable_difference(40_000, 0.2) == pytest.approx(0.0079241, abs=1e-6)
    assert min_detectable_difference(1_600, 0.2) == pytest.approx(2.8016 * math.sqrt(0.32 / 1600), rel=1e-9)
    with pytest.raises(ValueError):
        min_detectable_difference(0, 0.2)


def test_demo_size_detects_four_percent_relative_change_in_one_pair():
    """With 200 per label, errors 20 % -> 19.2 % (4 % relative) is significant; with 40 it is not."""
    total = 200 * 200
    assert is_significant(8000, 7680, total)       # hand: z = -0.008 / sqrt(2 * .196 * .804 / 40000) = -2.85
    assert not is_significant(320, 307, 40 * 40)   # 20 % -> 19.2 % of 1,600
