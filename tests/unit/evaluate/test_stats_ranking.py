"""z-test against a hand-computed case; ranking metrics on toy rankings worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embtune.evaluate.ranking import ranking_metrics
from embtune.evaluate.stats import is_significant, pooled_z, relative_improvement, significance_counts


def test_pooled_z_hand_computed() -> None:
    # n0 = 100, n1 = 70 of N = 1000: p0 = .1, p1 = .07, P = .085,
    # SE = sqrt(.085 * .915 * 2 / 1000) = sqrt(1.5555e-4) = 0.0124720..., Z = -.03 / SE = -2.40539
    z = pooled_z(100, 70, 1000)
    assert z == pytest.approx(-0.03 / math.sqrt(0.085 * 0.915 * 0.002), rel=1e-12)
    assert z == pytest.approx(-2.40539, abs=1e-5)
    assert is_significant(100, 70, 1000)
    assert not is_significant(100, 90, 1000)  # Z = -0.7255
    assert pooled_z(70, 100, 1000) == pytest.approx(-z)
    assert pooled_z(0, 0, 10) == 0.0
    with pytest.raises(ValueError):
        pooled_z(5, 11, 10)


def test_relative_improvement_and_counts() -> None:
    assert relative_improvement(0.10, 0.09) == pytest.approx(0.10)   # PND: fewer errors = +10 %
    assert relative_improvement(0.50, 0.55, lower_is_better=False) == pytest.approx(0.10)  # MRR
    assert math.isnan(relative_improvement(0.0, 0.1))
    pairs = [(100, 70, 1000), (100, 130, 1000), (100, 95, 1000), (50, 20, 1000)]
    assert significance_counts(pairs) == (2, 1)


def test_ranking_metrics_toy() -> None:
    scores = np.array([[0.9, 0.8, 0.1, 0.0],    # relevant at ranks 2 and 3
                       [0.2, 0.7, 0.5, 0.0],    # relevant at rank 1 (0.7), pad slot invalid
                       [0.5, 0.5, 0.1, 0.0]])   # tie: irrelevant ranked first -> relevant at 2
    relevant = np.array([[0, 1, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]], bool)
    valid = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]], bool)
    m = ranking_metrics(scores, relevant, valid)
    assert m["mrr"] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    ap = [(1 / 2 + 2 / 3) / 2, 1.0, 1 / 2]
    assert m["map"] == pytest.approx(np.mean(ap))
    assert m["p_at_1"] == pytest.approx(1 / 3)
    assert m["n_queries"] == 3


def test_ranking_skips_queries_without_relevant() -> None:
    m = ranking_metrics(np.array([[1.0, 0.0], [0.3, 0.4]]), np.array([[0, 0], [0, 1]], bool))
    assert m["n_queries"] == 1 and m["mrr"] == 1.0 and m["map"] == 1.0 and m["p_at_1"] == 1.0
    # an invalid (padding) slot marked relevant is ignored
    m = ranking_metrics(np.array([[0.1, 9.0]]), np.array([[1, 1]], bool), np.array([[1, 0]], bool))
    assert m["mrr"] == 1.0


def test_ragged_ranking_in_pnd_eval_matches_per_query() -> None:
    """pnd_eval pads ragged candidate lists; the result must equal averaging single queries."""
    from embtune.evaluate.pnd import closeness
    from embtune.evaluate.pnd_eval import _ranking

    rng = np.random.default_rng(4)
    q = rng.normal(size=(5, 3)).astype(np.float32)
    pos_query, neg_query = np.array([0, 0, 1, 3, 4, 4]), np.array([0, 1, 1, 1, 3, 4, 4, 4])
    p = rng.normal(size=(6, 3)).astype(np.float32)
    n = rng.normal(size=(8, 3)).astype(np.float32)
    got = _ranking(q, p, pos_query, n, neg_query, "cos")
    singles = []
    for i in (0, 1, 3, 4):  # query 2 has no candidates
        sp = closeness(q[pos_query[pos_query == i]], p[pos_query == i], "cos")
        sn = closeness(q[neg_query[neg_query == i]], n[neg_query == i], "cos")
        singles.append(ranking_metrics(np.concatenate([sp, sn])[None],
                                       np.array([[True] * sp.size + [False] * sn.size])))
    for key in ("mrr", "map", "p_at_1"):
        assert got[key] == pytest.approx(np.mean([s[key] for s in singles]))
