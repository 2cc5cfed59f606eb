"""arxiv difficulty levels for ``evaluate-pnd`` (paper 2, App. H, Fig. 6): dataset ids, level
reading (the files' paths: :meth:`embtune.core.layout.Processed.arxiv_triplets`), and the shared text
codes that let all levels of a flavour be embedded once.

``arxiv-first`` / ``arxiv-title`` are the random level (``--arxiv-random-level``, 21 =
``n_negatives + 1``) used throughout the paper; ``--arxiv-levels`` adds the other levels of each
requested flavour as ``arxiv-first-L7`` etc. All levels of a flavour share one exact text -> code
table (:class:`TextCodes`, polars joins), so each anchor and each abstract is embedded once for all
levels and the 21 files never become Python strings row by row; ``pnd.json["arxiv_levels"]`` maps
flavour -> level -> dataset id. Why a module apart from :mod:`embtune.evaluate.pnd_eval`: these
are pure functions of tables and embeddings; the evaluation there reads the files and embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.io import read_parquet
from embtune.evaluate.pnd import Measure, Ties, indexed_closeness, one_vs_one_errors, prepare, summarise

# Paper 2 evaluates arxiv with its easiest level throughout (the random 21st negative, App. H);
# the harder levels (Fig. 6) are scored with --arxiv-levels.
ARXIV_FLAVOURS = tuple(pnd_sets.get(n).arxiv_flavour for n in pnd_sets.arxiv_sets())   # first, title
ARXIV_RANDOM_LEVEL = 21   # n_negatives + 1 with the paper's 20 (docs/fidelity.md#P2-ARXIV-LEVELS)


def arxiv_dataset_id(flavour: str, level: int, random_level: int = ARXIV_RANDOM_LEVEL) -> str:
    """``arxiv-first`` for the random level (the paper's default set), else ``arxiv-first-L7``
    (docs/fidelity.md#P2-ARXIV-FLAVOURS)."""
    return pnd_sets.arxiv_set(flavour, None if level == random_level else level)


class TextCodes:
    """Exact text -> integer code table, grown with polars hash joins (native, exact string
    equality), so the 21 level files of a flavour (253,140 rows each in the paper) map onto one
    list of unique texts without creating a Python string per row; only new texts are listed."""

    def __init__(self) -> None:
        self._table = pl.DataFrame(schema={"text": pl.String, "code": pl.Int64})

    def __len__(self) -> int:
        return self._table.height

    def codes(self, texts: pl.Series) -> np.ndarray:
        """Codes of ``texts`` in order; unseen texts get the next codes, first occurrence first."""
        frame = texts.cast(pl.String).alias("text").to_frame()
        joined = frame.join(self._table, on="text", how="left", maintain_order="left")
        if joined["code"].null_count():
            new = joined.filter(pl.col("code").is_null()).select("text").unique(maintain_order=True)
            start = self._table.height
            self._table = pl.concat([self._table, new.with_columns(
                pl.int_range(start, start + new.height, dtype=pl.Int64).alias("code"))])
            joined = frame.join(self._table, on="text", how="left", maintain_order="left")
        return joined["code"].to_numpy()

    def texts(self) -> list[str]:
        """Unique texts in code order."""
        return self._table["text"].to_list()


@dataclass(frozen=True)
class CodedTriplets:
    """One arxiv triplet file: row i = (anchor, positive, negative) as codes into the shared
    query-text and document-text tables."""

    anchor: np.ndarray
    positive: np.ndarray
    negative: np.ndarray


def read_arxiv_level(path: Path, exclude_prefix: str | None = None) -> pl.DataFrame:
    """The three text columns of one level file (App. K drops a category prefix first)."""
    cols = ["anchor", "positive", "negative"] + (["categories"] if exclude_prefix else [])
    frame = read_parquet(path, "arxiv triplets from build-arxiv-negatives (is the level in "
                         "data.arxiv.levels?)")
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing columns {missing} (has {frame.columns}); expected the "
                        f"build-arxiv-negatives triplet columns anchor, positive, negative, categories")
    if exclude_prefix:
        frame = frame.filter(~frame["categories"].str.split(" ").list.eval(
            pl.element().str.starts_with(exclude_prefix)).list.any())
    return frame.select("anchor", "positive", "negative")


def code_arxiv_levels(frames: dict[str, pl.DataFrame], queries: TextCodes,
                      docs: TextCodes) -> dict[str, CodedTriplets]:
    """Code every level's columns against the shared tables (anchors -> queries; positives and
    negatives -> docs: a negative is another paper's positive, so it is usually already there)."""
    return {name: CodedTriplets(queries.codes(f["anchor"]), docs.codes(f["positive"]),
                                docs.codes(f["negative"])) for name, f in frames.items()}


def score_levels(q: np.ndarray, d: np.ndarray, coded: dict[str, CodedTriplets],
                 measures: Sequence[Measure], ties: Ties = "error") -> dict[str, dict[str, dict[str, Any]]]:
    """Counts and ranking metrics of coded triplet files: in each row the anchor competes its one
    positive against its one negative.

    Why pairs: across levels the same (anchor, positive) pairs recur in every file and many
    (anchor, negative) pairs too, so each distinct (query row, document row) pair is scored once
    per measure (:func:`indexed_closeness`, bit-identical to :func:`closeness`) and every file
    reads its scores back."""
    n_doc = max(len(d), 1)
    keys = np.concatenate([c.anchor * n_doc + x for c in coded.values() for x in (c.positive, c.negative)])
    pairs, inverse = np.unique(keys, return_inverse=True)
    out: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in coded}
    for m in measures:
        scores = indexed_closeness(prepare(q, m), pairs // n_doc, prepare(d, m), pairs % n_doc, m)[inverse]
        start = 0
        for name, c in coded.items():
            n = len(c.anchor)
            pos, neg = scores[start:start + n], scores[start + n:start + 2 * n]
            start += 2 * n
            counts = summarise(one_vs_one_errors(pos, neg, ties), np.ones(n, np.int64)).as_dict()
            counts.update(one_vs_one_ranking(pos, neg))
            out[name][m] = counts
    return out


def one_vs_one_ranking(pos: np.ndarray, neg: np.ndarray) -> dict[str, float]:
    """:func:`_ranking_scores` when every query has one positive and one negative (arxiv): the
    positive ranks first iff strictly closer (ties pessimistic, as in
    :mod:`embtune.evaluate.ranking`), so MRR = MAP = mean(1 or 1/2) and P@1 = the share ranked
    first; O(n) instead of a sort per level."""
    if not len(pos):
        return {"mrr": float("nan"), "map": float("nan"), "p_at_1": float("nan")}
    first = np.asarray(pos) > np.asarray(neg)
    rr = float(np.mean(np.where(first, 1.0, 0.5)))
    return {"mrr": rr, "map": rr, "p_at_1": float(np.mean(first))}


def arxiv_plan(datasets: Sequence[str], levels: Sequence[int],
               random_level: int = ARXIV_RANDOM_LEVEL) -> dict[str, dict[int, str]]:
    """flavour -> level -> dataset id for the arxiv flavours in ``datasets`` (random level first)."""
    bad = sorted({lv for lv in levels if not 1 <= lv <= random_level})
    if bad:
        raise DataError(f"--arxiv-levels {bad}: levels run from 1 (hardest) to {random_level} "
                        f"(the random negative)")
    plan: dict[str, dict[int, str]] = {}
    for flavour in ARXIV_FLAVOURS:
        if pnd_sets.arxiv_set(flavour) in datasets:
            plan[flavour] = {lv: arxiv_dataset_id(flavour, lv, random_level)
                             for lv in [random_level, *sorted(set(levels) - {random_level})]}
    return plan
