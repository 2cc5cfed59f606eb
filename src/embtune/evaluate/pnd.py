"""Positive-negative discrepancy (PND, paper 2, section 2 and Appendix F).

An *error* is a (positive, negative) comparison in which the positive is **not closer** to the
query than the negative; ties count as errors (§2.3, App. F, App. G's triplet wording). App. G's
XNLI sentence says "farther", under which a tie is no error: ``ties="not_error"`` counts only
strictly-farther positives (docs/fidelity.md#P2-PND-TIES). "Closer" is measured by cosine
similarity (higher is closer) or by euclidean distance (lower is closer).

Exactness and ties. All scores are computed in float64 from the float32 embeddings, one row-wise
reduction per (query, text) pair (``np.sum(a * b, axis=-1)``, never a BLAS matrix product, whose
blocking can round identical rows differently). Two identical text embeddings (the embedding
cache guarantees that one text always has one embedding) therefore give bit-identical scores,
and such ties are counted as errors exactly as the brute-force definition says. Distances are
turned into "closeness" by negation, which is exact in IEEE arithmetic, so one counting routine
serves both measures. A tie is bit-equality of these float64 scores: two mathematically equal
scores computed from *different* vectors (e.g. the cosine of two different self-pairs, 1 +- 1 ulp)
are not forced together — no tolerance is applied, as in the plain ``pos > neg`` definition.

Counting is O(n log n): negatives are sorted once and each positive is located with
``np.searchsorted``; the n_pos x n_neg comparison matrix is never materialised (XNLI has
1,670 x 1,670 comparisons per language pair and relation).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np

Measure = Literal["cos", "dist"]
MEASURES: tuple[Measure, ...] = ("cos", "dist")
Ties = Literal["error", "not_error"]
TIES: tuple[Ties, ...] = ("error", "not_error")


def _side(ties: Ties) -> Literal["left", "right"]:
    """searchsorted side: negatives strictly below a positive are never errors ("left"); with
    ``not_error`` the equal ones are not errors either ("right")."""
    if ties not in TIES:
        raise ValueError(f"unknown ties rule {ties!r} (expected one of {', '.join(TIES)})")
    return "left" if ties == "error" else "right"


@dataclass(frozen=True)
class PndCounts:
    """Integer error/comparison counts; rates are derived, never stored alone."""

    errors: int
    total: int
    per_query_rate: float  # mean over queries of errors_q / total_q (queries with total_q > 0)
    n_queries: int

    @property
    def rate(self) -> float:
        return self.errors / self.total if self.total else float("nan")

    def as_dict(self) -> dict[str, float | int]:
        return {"errors": self.errors, "total": self.total, "rate": self.rate,
                "per_query_rate": self.per_query_rate, "n_queries": self.n_queries}


def closeness(queries: np.ndarray, texts: np.ndarray, measure: Measure) -> np.ndarray:
    """Row-wise closeness of ``queries[i]`` to ``texts[i]`` in float64 (higher = closer).

    cos: dot product of the L2-normalised rows; dist: minus the euclidean distance."""
    q = np.asarray(queries, dtype=np.float64)
    t = np.asarray(texts, dtype=np.float64)
    if q.shape != t.shape or q.ndim != 2:
        raise ValueError(f"closeness: shapes {q.shape} and {t.shape} must be equal (n, d)")
    return _prepared_closeness(_prepared(q, measure), _prepared(t, measure), measure)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return x / np.where(norms == 0.0, 1.0, norms)


def count_not_closer(pos: np.ndarray, neg: np.ndarray, ties: Ties = "error") -> int:
    """#{(i, j): pos[i] <= neg[j]} for closeness scores (``pos[i] < neg[j]`` with
    ``ties="not_error"``), in O(n log n)."""
    side = _side(ties)
    pos, neg = _finite(pos), _finite(neg)
    sorted_neg = np.sort(neg)
    # negatives before the insertion point are not errors; everything from there on is.
    below = np.searchsorted(sorted_neg, pos, side=side)
    return int(sorted_neg.size * pos.size - below.sum(dtype=np.int64))


def grouped_errors(pos: np.ndarray, pos_group: np.ndarray, neg: np.ndarray,
                   neg_group: np.ndarray, n_groups: int, ties: Ties = "error") -> tuple[np.ndarray, np.ndarray]:
    """Per-group errors and comparisons: positives compete only with negatives of their group.

    Why ranks: scores are replaced by exact dense ranks over all scores (``np.unique``; equal
    floats share a rank), so (group, rank) packs into one int64 key and a single sorted
    ``searchsorted`` handles all queries at once, ties included."""
    side = _side(ties)
    pos, neg = _finite(pos), _finite(neg)
    pos_group, neg_group = np.asarray(pos_group, np.int64), np.asarray(neg_group, np.int64)
    _, inverse = np.unique(np.concatenate([pos, neg]), return_inverse=True)
    n_ranks = int(inverse.max()) + 1 if inverse.size else 1
    pos_key = pos_group * n_ranks + inverse[: pos.size]
    neg_key = np.sort(neg_group * n_ranks + inverse[pos.size:])
    group_end = np.searchsorted(neg_key, (pos_group + 1) * n_ranks, side="left")
    counted = group_end - np.searchsorted(neg_key, pos_key, side=side)
    errors = np.bincount(pos_group, weights=counted, minlength=n_groups).astype(np.int64)
    n_pos = np.bincount(pos_group, minlength=n_groups).astype(np.int64)
    n_neg = np.bincount(neg_group, minlength=n_groups).astype(np.int64)
    return errors, n_pos * n_neg


def _finite(x: np.ndarray) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).ravel()
    if not np.all(np.isfinite(arr)):
        raise ValueError("PND scores must be finite (NaN/inf in embeddings?)")
    return arr


def summarise(errors: np.ndarray, totals: np.ndarray) -> PndCounts:
    """Pool per-query counts; the per-query average skips queries without comparisons."""
    has = totals > 0
    per_query = float(np.mean(errors[has] / totals[has])) if has.any() else float("nan")
    return PndCounts(int(errors.sum()), int(totals.sum()), per_query, int(has.sum()))


def triplet_set_pnd(query_emb: np.ndarray, pos_emb: np.ndarray, pos_query: np.ndarray,
                    neg_emb: np.ndarray, neg_query: np.ndarray, measure: Measure,
                    ties: Ties = "error") -> PndCounts:
    """PND of a triplet set: every positive of a query against every negative of that query.

    ``pos_query[k]`` / ``neg_query[k]`` give the row of ``query_emb`` that positive/negative k
    belongs to (MSMARCO eval: lists per sample; arxiv: one positive and one negative per row)."""
    pos_query, neg_query = np.asarray(pos_query, np.int64), np.asarray(neg_query, np.int64)
    pos_score = pair_closeness(query_emb, pos_query, pos_emb, measure)
    neg_score = pair_closeness(query_emb, neg_query, neg_emb, measure)
    errors, totals = grouped_errors(pos_score, pos_query, neg_score, neg_query, len(query_emb), ties)
    return summarise(errors, totals)


def pair_closeness(queries: np.ndarray, q_index: np.ndarray, texts: np.ndarray, measure: Measure,
                   chunk: int = 1024) -> np.ndarray:
    """``closeness(queries[q_index], texts)`` chunk by chunk, bit-identical to it (every row goes
    through the same operations). Why: a full-size set (App. D's multi-hop passages: ~780k negatives) would
    otherwise hold several float64 copies of all its pairs at once (~10 GB at dimension 384)."""
    q_index = np.asarray(q_index, np.int64)
    if q_index.shape[0] != len(texts):
        raise ValueError(f"pair_closeness: {q_index.shape[0]} query indices for {len(texts)} texts")
    out = np.empty(q_index.shape[0], dtype=np.float64)

    def part(start: int, stop: int) -> None:
        out[start:stop] = closeness(queries[q_index[start:stop]], texts[start:stop], measure)

    _in_chunks(q_index.shape[0], chunk, part)
    return out


def workers() -> int:
    """Threads for the chunked scoring loops: ``OMP_NUM_THREADS`` when set (Snakemake sets it
    to a rule's ``threads``), else the cores this process may run on."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _in_chunks(n: int, chunk: int, part: Callable[[int, int], None]) -> None:
    """Run ``part(start, stop)`` over [0, n) in chunks, on :func:`workers` threads. Each chunk
    writes its own slice and numpy releases the GIL in the gathers and reductions, so threads
    scale; results do not depend on the split (every row's operations are the same)."""
    spans = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    n_workers = min(workers(), len(spans))

    def run(group: list[tuple[int, int]]) -> None:
        for start, stop in group:
            part(start, stop)

    if n_workers <= 1:
        run(spans)
        return
    size = -(-len(spans) // n_workers)       # one contiguous run of chunks per thread
    with ThreadPoolExecutor(n_workers) as pool:
        for future in [pool.submit(run, spans[i:i + size]) for i in range(0, len(spans), size)]:
            future.result()


def xnli_pnd(premises: dict[str, np.ndarray], hypotheses: dict[str, np.ndarray],
             labels: np.ndarray, measures: tuple[Measure, ...] = MEASURES,
             relations: tuple[str, ...] = ("neutral", "contradiction"),
             ties: Ties = "error") -> list[dict[str, object]]:
    """XNLI PND for every (query language, text language) pair (paper 2, Appendix F).

    Row k of ``premises[a]`` / ``hypotheses[b]`` is pair k (aligned by pair id) with label
    ``labels[k]``; query = premise in language a, text = hypothesis in language b. An error is an
    entailment pair whose sentences are not closer than those of a pair of ``relation``; all
    n_entail x n_relation comparisons are counted. Inputs are converted to float64 (and unit
    rows for cos) once per language, so the per-pair work is one row-wise reduction + sorts."""
    labels = np.asarray(labels)
    entail = labels == "entailment"
    masks = {rel: labels == rel for rel in relations}
    rows: list[dict[str, object]] = []
    for measure in measures:
        prem = {lang: _prepared(x, measure) for lang, x in premises.items()}
        hyp = {lang: _prepared(x, measure) for lang, x in hypotheses.items()}
        for a, q in prem.items():
            for b, t in hyp.items():
                score = _prepared_closeness(q, t, measure)
                ent = score[entail]
                for rel, mask in masks.items():
                    rows.append({"query_lang": a, "text_lang": b, "relation": rel,
                                 "measure": measure,
                                 "errors": count_not_closer(ent, score[mask], ties),
                                 "total": int(entail.sum()) * int(mask.sum())})
    return rows


def _prepared(x: np.ndarray, measure: Measure) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    return _unit(x64) if measure == "cos" else x64


def _prepared_closeness(q: np.ndarray, t: np.ndarray, measure: Measure,
                        chunk: int = 512) -> np.ndarray:
    """Same float64 operations as :func:`closeness`, on inputs already passed through _prepared.

    Rows are processed in cache-sized chunks with one reused buffer (2-3x faster than whole-array
    temporaries); each row's reduction is unchanged, so results are bit-identical."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r} (expected cos or dist)")
    out = np.empty(q.shape[0], dtype=np.float64)
    buf = np.empty((min(chunk, q.shape[0]), q.shape[1]), dtype=np.float64)
    for start in range(0, q.shape[0], chunk):
        stop = min(start + chunk, q.shape[0])
        part = buf[: stop - start]
        if measure == "cos":
            np.multiply(q[start:stop], t[start:stop], out=part)
        else:
            np.subtract(q[start:stop], t[start:stop], out=part)
            np.multiply(part, part, out=part)
        out[start:stop] = part.sum(axis=-1)
    return out if measure == "cos" else -np.sqrt(out)


def indexed_closeness(queries: np.ndarray, q_index: np.ndarray, texts: np.ndarray,
                      t_index: np.ndarray, measure: Measure, chunk: int = 1024) -> np.ndarray:
    """``closeness(queries[q_index], texts[t_index])`` for inputs already passed through
    :func:`prepare` (float64, unit rows for cos), gathering rows chunk by chunk.

    Why: arxiv's 21 difficulty levels pair the same few hundred thousand embeddings millions of
    times; preparing each table once and gathering in chunks avoids a float64 copy of every pair
    list, and 1024-row chunks stay in cache between the gather and the reduction (2.4x faster
    than 8192 rows in benchmarks/bench_eval_fullsize.py's setting). Every row goes through the same operations as in :func:`closeness`, so the scores are
    bit-identical to it."""
    q_index, t_index = np.asarray(q_index, np.int64), np.asarray(t_index, np.int64)
    if q_index.shape != t_index.shape:
        raise ValueError(f"indexed_closeness: {q_index.shape} query and {t_index.shape} text indices")
    out = np.empty(q_index.size, dtype=np.float64)

    def part(start: int, stop: int) -> None:
        out[start:stop] = _prepared_closeness(queries[q_index[start:stop]],
                                              texts[t_index[start:stop]], measure)

    _in_chunks(q_index.size, chunk, part)
    return out


def prepare(x: np.ndarray, measure: Measure, chunk: int = 1024) -> np.ndarray:
    """float64 rows as :func:`closeness` uses them (unit-normalised for cos), filled chunk by
    chunk into one array: a 253,140 x 384 table needs one float64 copy, not three temporaries."""
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=np.float64)

    def part(start: int, stop: int) -> None:
        out[start:stop] = _prepared(x[start:stop], measure)

    _in_chunks(x.shape[0] if x.ndim else 0, chunk, part)
    return out


def one_vs_one_errors(pos: np.ndarray, neg: np.ndarray, ties: Ties = "error") -> np.ndarray:
    """Per-query errors when each query has exactly one positive and one negative (arxiv): the
    O(n) special case of :func:`grouped_errors` (no sort), under the same tie rule."""
    _side(ties)
    pos, neg = _finite(pos), _finite(neg)
    if pos.shape != neg.shape:
        raise ValueError(f"one_vs_one_errors: {pos.shape} positives and {neg.shape} negatives")
    return (pos <= neg if ties == "error" else pos < neg).astype(np.int64)
