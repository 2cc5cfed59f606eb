"""MRR, MAP and P@1 from score matrices with relevance labels (paper 2, Table 2).

Ties are broken pessimistically (an irrelevant candidate with the same score ranks above a
relevant one), consistent with PND where a tie is an error. Ragged candidate lists are padded and
marked with ``valid``. Queries without any relevant (valid) candidate are skipped.
"""

from __future__ import annotations

import numpy as np


def ranked_relevance(scores: np.ndarray, relevant: np.ndarray,
                     valid: np.ndarray | None = None) -> np.ndarray:
    """Relevance flags in rank order per row (higher score first; invalid slots last, False)."""
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    valid = np.ones_like(relevant) if valid is None else np.asarray(valid, dtype=bool)
    if scores.shape != relevant.shape or scores.shape != valid.shape or scores.ndim != 2:
        raise ValueError("scores, relevant and valid must be equal-shaped 2-D arrays")
    rel = relevant & valid
    # lexsort: last key is primary -> invalid last, then score descending, then irrelevant first.
    order = np.lexsort((rel, -np.where(valid, scores, 0.0), ~valid), axis=-1)
    return np.take_along_axis(rel, order, axis=-1)


def ranking_metrics(scores: np.ndarray, relevant: np.ndarray,
                    valid: np.ndarray | None = None) -> dict[str, float | int]:
    """Mean reciprocal rank, mean average precision and precision at 1 over queries."""
    ranked = ranked_relevance(scores, relevant, valid)
    keep = ranked.any(axis=1)
    ranked = ranked[keep]
    if not ranked.shape[0]:
        return {"mrr": float("nan"), "map": float("nan"), "p_at_1": float("nan"), "n_queries": 0}
    positions = np.arange(1, ranked.shape[1] + 1)
    first = np.argmax(ranked, axis=1) + 1
    hits = np.cumsum(ranked, axis=1)
    avg_prec = (np.where(ranked, hits / positions, 0.0).sum(axis=1) / ranked.sum(axis=1))
    return {"mrr": float(np.mean(1.0 / first)), "map": float(np.mean(avg_prec)),
            "p_at_1": float(np.mean(ranked[:, 0])), "n_queries": int(ranked.shape[0])}
