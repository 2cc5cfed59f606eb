"""Exact Jensen-Shannon divergence between word distributions, block by block, and top-k.

Why a module of its own: arxiv-negatives (paper 2, App. B.2 step 3.3) ranks each paper's
candidates by the Jensen-Shannon distance between the abstracts' word distributions; the kernel
is independent of how candidates are found (category prefixes), so it lives here and is
tested against scipy on its own.

Jensen-Shannon uses the **natural log** (scipy's ``jensenshannon`` default): the distance is
``sqrt(JSD)`` with ``JSD <= ln 2``. Words are lower-cased runs of letters/digits. Over sparse
supports only shared words need work: with ``f(x) = x ln x``,

    JSD(p, q) = ln 2 - 1/2 * sum_{w: p_w > 0, q_w > 0} [f(p_w + q_w) - f(p_w) - f(q_w)]

(a word only in ``p`` contributes ``p_w/2 ln 2`` and the shared words' ``m``-terms collect the
rest, so the probability masses add up to the constant ``ln 2``). This is exact; it is evaluated
as a sparse "product" of a batch of query rows against the candidate block's column-major (CSC)
copy, accumulated with ``np.bincount``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

LN2 = math.log(2.0)
DEFAULT_WORK = 1_000_000  # expanded (query word x candidate) entries per batch: bounds memory
WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The tokens whose distribution is compared: lower-cased runs of letters/digits."""
    return WORD.findall(text.lower())


def word_distributions(texts: Sequence[str]) -> sp.csr_matrix:
    """Row-normalised word counts (float64 CSR, sorted indices); vocabulary in first-seen order."""
    vocab: dict[str, int] = {}
    cols: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        toks = words(text)
        cols.extend(vocab.setdefault(t, len(vocab)) for t in toks)
        lengths[i] = len(toks)
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    counts = sp.csr_matrix((np.ones(len(cols)), (rows, np.asarray(cols, dtype=np.int64))),
                           shape=(len(texts), max(len(vocab), 1)))
    counts.sum_duplicates()
    counts.sort_indices()
    totals = np.maximum(lengths, 1).astype(np.float64)
    counts.data /= np.repeat(totals, np.diff(counts.indptr))
    return counts


def xlogx(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.where(x > 0, x, 1.0))


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)


@dataclass
class Block:
    """A candidate block: rows ``members`` of the distribution matrix, column-major, local vocab."""

    members: np.ndarray          # global row indices, sorted
    csr: sp.csr_matrix           # members x local vocab
    csc: sp.csc_matrix           # same, column-major (who has word w)
    csc_xlogx: np.ndarray        # f(q) for every stored q of csc


def make_block(dist: sp.csr_matrix, members: np.ndarray) -> Block:
    """Slice the candidate rows and compress the vocabulary to the words they use.

    Why compress: a CSC over the full vocabulary (millions of words) would cost an indptr of that
    length per block, and there are many small blocks."""
    sub = dist[members]
    vocab, local = np.unique(sub.indices, return_inverse=True)
    csr = sp.csr_matrix((sub.data, local.ravel(), sub.indptr), shape=(len(members), len(vocab)))
    csc = csr.tocsc()
    csc.sort_indices()
    return Block(members, csr, csc, xlogx(csc.data))


def block_jsd(block: Block, rows: np.ndarray) -> np.ndarray:
    """Exact JSD (nats) of block rows ``rows`` against every block member: (len(rows), n) array."""
    n = len(block.members)
    csr, csc = block.csr, block.csc
    starts, ends = csr.indptr[rows], csr.indptr[rows + 1]
    nz = _ranges(starts, ends - starts)
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), ends - starts)
    vocab, p = csr.indices[nz], csr.data[nz]
    df = (csc.indptr[vocab + 1] - csc.indptr[vocab]).astype(np.int64)
    pos = _ranges(csc.indptr[vocab].astype(np.int64), df)
    # g = f(p + q) - f(p) - f(q) over the shared words, in place (this loop is the hot spot)
    s = np.repeat(p, df)
    s += csc.data[pos]
    g = np.log(s)  # p + q > 0 on shared words: no guard needed
    g *= s
    del s
    fpq = np.repeat(xlogx(p), df)
    fpq += block.csc_xlogx[pos]
    g -= fpq
    del fpq
    flat = np.repeat(owner * n, df)
    flat += csc.indices[pos]
    shared = np.bincount(flat, weights=g, minlength=len(rows) * n).reshape(len(rows), n)
    return np.maximum(LN2 - 0.5 * shared, 0.0)


def query_batches(block: Block, rows: np.ndarray, work: int) -> Iterator[np.ndarray]:
    """Split ``rows`` so each batch expands to about ``work`` entries (bounded memory).

    A row costs the summed document frequencies of its words (entries of the sparse product)
    plus the block size (its row of the dense accumulator)."""
    csr, csc = block.csr, block.csc
    df = np.diff(csc.indptr)
    row_cost = np.add.reduceat(df[csr.indices], csr.indptr[:-1])  # rows are never empty
    cum = np.cumsum(row_cost[rows] + len(block.members))
    cuts = np.searchsorted(cum, np.arange(work, int(cum[-1]), work), side="right")
    edges = np.unique(np.concatenate([[0], cuts, [len(rows)]]))
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            yield rows[a:b]


def top_k(jsd: np.ndarray, members: np.ndarray, self_cols: np.ndarray, k: int) -> np.ndarray:
    """Per row, the ``k`` nearest members (excluding self) by (JSD, global index), padded with
    the last one when fewer than ``k`` exist (App. B.2: "fill to 20 by the last one").

    Why the explicit tie rule: ``argpartition`` alone picks arbitrarily among equal distances at
    the cut; sorting the tied boundary by global index makes the answer unique."""
    jsd = jsd.copy()
    jsd[np.arange(len(jsd)), self_cols] = np.inf
    avail = jsd.shape[1] - 1
    out = np.empty((len(jsd), k), dtype=np.int64)
    if avail <= 0:
        raise ValueError("a candidate block needs at least one member besides the paper itself")
    kk = min(k, avail)
    for i, row in enumerate(jsd):
        cut = np.partition(row, kk - 1)[kk - 1] if kk < len(row) else np.inf
        near = np.flatnonzero(row <= cut)
        near = near[np.isfinite(row[near])]
        order = np.lexsort((members[near], row[near]))[:kk]
        chosen = members[near[order]]
        out[i, :kk] = chosen
        out[i, kk:] = chosen[-1]
    return out
