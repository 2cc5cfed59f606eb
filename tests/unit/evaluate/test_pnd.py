"""PND counts against an independent O(n^2) brute force, with deliberate exact ties."""

from __future__ import annotations

import numpy as np
import pytest

from embtune.evaluate.pnd import closeness, count_not_closer, grouped_errors, triplet_set_pnd, xnli_pnd


def brute_sim(q: np.ndarray, t: np.ndarray, measure: str) -> float:
    """Reference similarity of two vectors, written independently (python floats, math)."""
    q, t = [float(v) for v in q], [float(v) for v in t]
    if measure == "cos":
        nq = sum(v * v for v in q) ** 0.5
        nt = sum(v * v for v in t) ** 0.5
        return sum(a * b for a, b in zip(q, t)) / (nq * nt)
    return -sum((a - b) ** 2 for a, b in zip(q, t)) ** 0.5


def brute_errors(pos: list[float], neg: list[float]) -> int:
    return sum(1 for p in pos for n in neg if not p > n)


def test_count_not_closer_ties_are_errors() -> None:
    assert count_not_closer(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.5])) == 2 + 2 + 0
    assert count_not_closer(np.array([0.0]), np.array([-0.0])) == 1  # signed zero is a tie
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 5, 300).astype(float), rng.integers(0, 5, 200).astype(float)
    assert count_not_closer(pos, neg) == brute_errors(list(pos), list(neg))


def test_grouped_errors_matches_brute() -> None:
    rng = np.random.default_rng(1)
    pos, neg = rng.integers(0, 4, 80).astype(float), rng.integers(0, 4, 120).astype(float)
    pg, ng = rng.integers(0, 7, 80), rng.integers(0, 7, 120)
    errors, totals = grouped_errors(pos, pg, neg, ng, 8)
    for g in range(8):
        p, n = list(pos[pg == g]), list(neg[ng == g])
        assert errors[g] == brute_errors(p, n)
        assert totals[g] == len(p) * len(n)
    assert errors[7] == 0 and totals[7] == 0


def _data_with_ties(rng: np.random.Generator, n_q: int = 12, d: int = 6):
    """Random triplet set where some negatives duplicate positives (exact ties)."""
    q = rng.normal(size=(n_q, d)).astype(np.float32)
    pos_query = rng.integers(0, n_q, 40)
    neg_query = np.concatenate([rng.integers(0, n_q, 50), pos_query[:15]])
    pos = rng.normal(size=(40, d)).astype(np.float32)
    neg = np.concatenate([rng.normal(size=(50, d)).astype(np.float32), pos[:15]])  # ties
    return q, pos, pos_query, neg, neg_query


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_triplet_set_pnd_matches_brute_force(measure: str) -> None:
    rng = np.random.default_rng(2)
    q, pos, pq, neg, nq = _data_with_ties(rng)
    res = triplet_set_pnd(q, pos, pq, neg, nq, measure)
    errors, totals, rates = 0, 0, []
    for i in range(len(q)):
        ps = [brute_sim(q[i], p, measure) for p in pos[pq == i]]
        ns = [brute_sim(q[i], n, measure) for n in neg[nq == i]]
        e, t = brute_errors(ps, ns), len(ps) * len(ns)
        errors, totals = errors + e, totals + t
        if t:
            rates.append(e / t)
    assert (res.errors, res.total) == (errors, totals)
    assert res.per_query_rate == pytest.approx(np.mean(rates))
    assert res.n_queries == len(rates)
    assert isinstance(res.errors, int) and isinstance(res.total, int)
    # the 15 duplicated texts tie with themselves and must all be errors
    assert res.errors >= 15


def test_closeness_values() -> None:
    q = np.array([[1.0, 0.0], [3.0, 4.0]], np.float32)
    t = np.array([[0.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_allclose(closeness(q, t, "cos"), [0.0, 1.0])
    np.testing.assert_allclose(closeness(q, t, "dist"), [-np.sqrt(5.0), 0.0])
    with pytest.raises(ValueError):
        closeness(q, t, "dot")  # type: ignore[arg-type]


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_xnli_pnd_matches_brute_force(measure: str) -> None:
    rng = np.random.default_rng(3)
    n, d, langs = 30, 5, ["en", "de", "fr"]
    labels = np.array(["entailment", "neutral", "contradiction"] * (n // 3))
    prem = {lang: rng.normal(size=(n, d)).astype(np.float32) for lang in langs}
    hyp = {lang: rng.normal(size=(n, d)).astype(np.float32) for lang in langs}
    hyp["fr"] = prem["en"].copy()  # en->fr: identical sentences, distance exactly 0 everywhere
    hyp["de"][labels == "neutral"] = hyp["de"][labels == "entailment"]  # bit-identical ties
    prem_de = prem["de"].copy()
    prem_de[labels == "neutral"] = prem_de[labels == "entailment"]
    prem["de"] = prem_de
    rows = xnli_pnd(prem, hyp, labels, (measure,))
    assert len(rows) == len(langs) ** 2 * 2
    for row in rows:
        a, b, rel = row["query_lang"], row["text_lang"], row["relation"]
        # Ties are defined on the float64 scores (an ulp apart is not a tie), so the O(n^2)
        # reference counts on closeness(); closeness itself is checked against math below.
        sims = list(closeness(prem[a], hyp[b], measure))
        ref = [brute_sim(prem[a][k], hyp[b][k], measure) for k in range(n)]
        np.testing.assert_allclose(sims, ref, rtol=1e-12, atol=1e-12)
        ent = [s for s, lab in zip(sims, labels) if lab == "entailment"]
        oth = [s for s, lab in zip(sims, labels) if lab == rel]
        assert row["errors"] == brute_errors(ent, oth), row
        assert row["total"] == len(ent) * len(oth)
        if (a, b) == ("en", "fr") and measure == "dist":
            assert row["errors"] == row["total"]  # all distances exactly 0: all ties
        if (a, b) == ("de", "de") and rel == "neutral":
            assert row["errors"] >= len(ent)  # each entailment pair ties with its neutral copy
