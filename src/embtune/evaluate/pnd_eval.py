"""Stage ``evaluate-pnd``: PND of a dual encoder on MSMARCO / arxiv triplets / XNLI (paper 2).

Queries (MSMARCO queries, arxiv anchors, XNLI premises) go through the query tower with
``query_prefix``; documents (positives, negatives, XNLI hypotheses) through the frozen document
tower (the base model) with ``doc_prefix`` — for XNLI hypotheses, with ``query_prefix`` instead
when ``--xnli-text-prefix query`` (E5's advice for symmetric tasks; docs/fidelity.md#P2-XNLI-PREFIX).
Ties count as errors unless ``--ties not_error`` (docs/fidelity.md#P2-PND-TIES). All embeddings go
through :class:`EmbedCache`, so the document side is embedded once per base model however many
query towers are evaluated. Both towers embed in ``--precision`` (``evaluate.pnd.precision``):
float32 by default, because bf16 rounding flips near-tied PND decisions (see
:mod:`embtune.evaluate.embed_cache`).

Datasets (``TRIPLET_FILES``): MSMARCO eval and its "65 negatives" variant (App. A), arxiv-first /
arxiv-title (App. B), and paper 2's Table 2 sets, SQuAD v2 sentences (App. C, ``prepare-squad``)
and HotpotQA passages by level (App. D, ``prepare-hotpotqa``), all but arxiv stored one row per
query with its ``positives`` and ``negatives`` lists.

App. K (narrow-domain tuning): ``--exclude-domains math ...`` adds, for each arxiv dataset, an entry
``<dataset>!<domain>`` scored on the rows without a category ``<domain>.*``. The workflow passes the
same domains to the base and every tuned evaluation, so a run tuned on arxiv-math is compared with
the untuned encoder on exactly the same rows (:mod:`embtune.evaluate.query_table`). The subsets
reuse the full set's embeddings from the cache: no text is embedded twice.

Outputs (``--out DIR``): ``pnd.json`` — per triplet dataset and measure the integer ``errors`` and
``total`` plus ``rate``, ``per_query_rate``, ``n_queries`` and ranking metrics (``mrr``, ``map``,
``p_at_1``); ``xnli`` — per measure and relation the errors/totals summed over all language pairs;
``encoder_calls`` — texts requested / encoded and forward passes. ``xnli_counts.parquet`` — one
row per (query_lang, text_lang, relation, measure) with integer ``errors`` and ``total``.
``pnd_manifest.json`` (not ``manifest.json``: ``DIR`` is a query run's directory, whose
``manifest.json`` is tune-query's and records the run config). ``pnd.json`` is written last and
an old one is removed first, so ``pnd.json`` present means the other two files belong to it.

arxiv difficulty levels (App. H, Fig. 6): ``arxiv-first`` / ``arxiv-title`` are the random level
(``--arxiv-random-level``, 21 = ``n_negatives + 1``) used throughout the paper; ``--arxiv-levels``
adds the other levels of each requested flavour as ``arxiv-first-L7`` etc. All levels of a flavour
share one exact text -> code table (:class:`TextCodes`, polars joins), so each anchor and each
abstract is embedded once for all levels and the 21 files never become Python strings row by row;
``pnd.json["arxiv_levels"]`` maps flavour -> level -> dataset id.

Query runs: tune-query saves ONE sentence-transformers model with a ``Router``; ``--query-model-dir``
embeds through its ``query`` route. Both towers tuned (App. L, Fig. 11a): ``--doc-model-dir`` (the
same folder) replaces the base model as the document tower, through its ``document`` route; its
cache store is keyed by that folder's fingerprint, so the frozen base's document embeddings are
never reused for it.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from embtune.errors import DataError
from embtune.evaluate.embed_cache import PRECISIONS, EmbedCache, Encoder, check_precision, model_fingerprint
from embtune.evaluate.pnd import (
    MEASURES,
    TIES,
    Measure,
    Ties,
    grouped_errors,
    indexed_closeness,
    one_vs_one_errors,
    pair_closeness,
    prepare,
    summarise,
    xnli_pnd,
)
from embtune.evaluate.ranking import ranking_metrics
from embtune.io import provenance, read_parquet, write_json, write_parquet

# Paper 2 evaluates arxiv with its easiest level throughout (the random 21st negative, App. H);
# the harder levels (Fig. 6) are scored with --arxiv-levels.
ARXIV_FLAVOURS = ("first", "title")
ARXIV_RANDOM_LEVEL = 21   # n_negatives + 1 with the paper's 20 (docs/fidelity.md#P2-ARXIV-LEVELS)
TRIPLET_FILES = {
    "msmarco": "msmarco/eval.parquet",
    "msmarco-hard": "msmarco/eval_hard.parquet",      # App. A: samples with >= 65 negatives
    "arxiv-first": "arxiv/triplets_first_L21.parquet",
    "arxiv-title": "arxiv/triplets_title_L21.parquet",
    "squad": "squad/eval.parquet",                    # App. C
    "squad-min5": "squad/eval_min5.parquet",          # App. C: >= 5 candidate sentences
    "hotpotqa-easy": "hotpotqa/eval_easy.parquet",    # App. D, by HotpotQA's level label
    "hotpotqa-medium": "hotpotqa/eval_medium.parquet",
    "hotpotqa-hard": "hotpotqa/eval_hard.parquet",
}
# One (anchor, positive, negative) triplet per row with the paper's arxiv categories: the only
# datasets with App. K domain exclusions. The others hold one query per row with candidate lists.
ARXIV_DATASETS = ("arxiv-first", "arxiv-title")
ARXIV_COLUMNS = ("anchor", "positive", "negative", "categories")
GROUPED_COLUMNS = ("query", "positives", "negatives")
XNLI_FILE = "xnli/test.parquet"
XNLI_COUNT_SCHEMA = {"query_lang": pl.String, "text_lang": pl.String, "relation": pl.String,
                     "measure": pl.String, "errors": pl.Int64, "total": pl.Int64}
DATASETS = (*TRIPLET_FILES, "xnli")


@dataclass(frozen=True)
class TripletSet:
    """Queries with flattened positives/negatives; ``*_query`` index into ``queries``."""

    queries: list[str]
    positives: list[str]
    pos_query: np.ndarray
    negatives: list[str]
    neg_query: np.ndarray


@dataclass(frozen=True)
class XnliTable:
    """Premises/hypotheses per language, rows aligned by pair id, one label per pair."""

    pair_ids: np.ndarray
    labels: np.ndarray
    premises: dict[str, list[str]]
    hypotheses: dict[str, list[str]]


@dataclass
class Towers:
    """The two encoders with their cache identities."""

    query: Encoder
    query_fp: str
    doc: Encoder
    doc_fp: str
    query_prefix: str
    doc_prefix: str


def narrow_domain(train_data: str | None) -> str | None:
    """The arxiv domain a run was tuned on (``arxiv-math`` -> ``math``); None for other data."""
    return train_data.removeprefix("arxiv-") if train_data and train_data.startswith("arxiv-") else None


def excluded_key(dataset: str, domain: str) -> str:
    """pnd.json key of ``dataset`` scored without the rows of arxiv ``domain`` (App. K)."""
    return f"{dataset}!{domain}"


# ---------------------------------------------------------------- data -> pure structures
def grouped_triplets(frame: pl.DataFrame) -> TripletSet:
    """One query per row (MSMARCO eval, SQuAD, HotpotQA): all positives x all negatives of it."""
    pos, neg = frame["positives"].to_list(), frame["negatives"].to_list()
    return TripletSet(
        queries=frame["query"].to_list(),
        positives=[p for row in pos for p in row],
        pos_query=np.repeat(np.arange(len(pos)), [len(r) for r in pos]),
        negatives=[n for row in neg for n in row],
        neg_query=np.repeat(np.arange(len(neg)), [len(r) for r in neg]),
    )


msmarco_triplets = grouped_triplets  # the name it had when MSMARCO was the only such dataset


def arxiv_triplets(frame: pl.DataFrame, exclude_domain: str | None = None) -> TripletSet:
    """arxiv triplets (one positive, one negative per row). App. K: ``exclude_domain`` drops rows
    with a category starting with ``<domain>.`` (the rule that selects the narrow tuning data)."""
    if exclude_domain:
        frame = frame.filter(~frame["categories"].str.split(" ").list.eval(
            pl.element().str.starts_with(f"{exclude_domain}.")).list.any())
    idx = np.arange(frame.height)
    return TripletSet(frame["anchor"].to_list(), frame["positive"].to_list(), idx,
                      frame["negative"].to_list(), idx)


def xnli_table(frame: pl.DataFrame, languages: Sequence[str] | None = None) -> XnliTable:
    """Align the long XNLI table by pair id across languages (pairs present in all of them)."""
    langs = list(languages) if languages else sorted(frame["language"].unique().to_list())
    missing = sorted(set(langs) - set(frame["language"].unique().to_list()))
    if missing:
        raise ValueError(f"{XNLI_FILE}: languages {missing} not in the table")
    frame = frame.filter(pl.col("language").is_in(langs))
    common = (frame.group_by("pair_id").agg(pl.col("language").n_unique().alias("n"))
              .filter(pl.col("n") == len(langs))["pair_id"].sort())
    frame = frame.filter(pl.col("pair_id").is_in(common.to_list())).sort("language", "pair_id")
    labels = frame.group_by("pair_id").agg(pl.col("label").n_unique().alias("n"),
                                           pl.col("label").first()).sort("pair_id")
    if (labels["n"] > 1).any():
        raise ValueError(f"{XNLI_FILE}: a pair_id has different labels in different languages")
    by_lang = {lang: frame.filter(pl.col("language") == lang) for lang in langs}
    return XnliTable(labels["pair_id"].to_numpy(), labels["label"].to_numpy(),
                     {k: v["premise"].to_list() for k, v in by_lang.items()},
                     {k: v["hypothesis"].to_list() for k, v in by_lang.items()})


def arxiv_dataset_id(flavour: str, level: int, random_level: int = ARXIV_RANDOM_LEVEL) -> str:
    """``arxiv-first`` for the random level (the paper's default set), else ``arxiv-first-L7``
    (docs/fidelity.md#P2-ARXIV-FLAVOURS)."""
    return f"arxiv-{flavour}" if level == random_level else f"arxiv-{flavour}-L{level}"


def arxiv_level_file(flavour: str, level: int) -> str:
    """The build-arxiv-negatives output holding one flavour and difficulty level."""
    return f"arxiv/triplets_{flavour}_L{level}.parquet"


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


def evaluate_arxiv_levels(paths: dict[str, Path], cache: EmbedCache, towers: Towers,
                          batch_size: int, measures: Sequence[Measure], ties: Ties = "error",
                          exclude_prefix: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """PND and ranking metrics of several arxiv level files (dataset id -> file) sharing their
    texts: each unique anchor / document is embedded once (and read from ``cache``), then every
    level is counted from row gathers of the two embedding tables."""
    queries, docs = TextCodes(), TextCodes()
    coded = {}
    for name, path in paths.items():   # one file in memory at a time; only codes are kept
        coded |= code_arxiv_levels({name: read_arxiv_level(path, exclude_prefix)}, queries, docs)
    q = cache.embed(towers.query, towers.query_fp, "query", towers.query_prefix, queries.texts(),
                    batch_size)
    d = cache.embed(towers.doc, towers.doc_fp, "doc", towers.doc_prefix, docs.texts(), batch_size)
    return score_levels(q, d, coded, measures, ties)


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


# ---------------------------------------------------------------- evaluation
def evaluate_triplets(ts: TripletSet, cache: EmbedCache, towers: Towers, batch_size: int,
                      measures: Sequence[Measure], ties: Ties = "error") -> dict[str, dict[str, Any]]:
    """PND counts and ranking metrics of one triplet set for each measure."""
    q = cache.embed(towers.query, towers.query_fp, "query", towers.query_prefix, ts.queries, batch_size)
    p = cache.embed(towers.doc, towers.doc_fp, "doc", towers.doc_prefix, ts.positives, batch_size)
    n = cache.embed(towers.doc, towers.doc_fp, "doc", towers.doc_prefix, ts.negatives, batch_size)
    return score_triplets(q, p, ts.pos_query, n, ts.neg_query, measures, ties)


def score_triplets(q: np.ndarray, p: np.ndarray, pos_query: np.ndarray, n: np.ndarray,
                   neg_query: np.ndarray, measures: Sequence[Measure],
                   ties: Ties = "error") -> dict[str, dict[str, Any]]:
    """PND counts (as :func:`embtune.evaluate.pnd.triplet_set_pnd`) and ranking metrics of a
    triplet set, from its embeddings; scores are computed once per measure and shared."""
    out: dict[str, dict[str, Any]] = {}
    for m in measures:
        pos, neg = pair_closeness(q, pos_query, p, m), pair_closeness(q, neg_query, n, m)
        counts = summarise(*grouped_errors(pos, pos_query, neg, neg_query, len(q), ties)).as_dict()
        counts.update(_ranking_scores(pos, pos_query, neg, neg_query, len(q)))
        out[m] = counts
    return out


def _ranking(q: np.ndarray, p: np.ndarray, pos_query: np.ndarray, n: np.ndarray,
             neg_query: np.ndarray, measure: Measure) -> dict[str, float]:
    """MRR/MAP/P@1 with each query's positives and negatives as its candidate list."""
    return _ranking_scores(pair_closeness(q, pos_query, p, measure), pos_query,
                           pair_closeness(q, neg_query, n, measure), neg_query, len(q))


def _ranking_scores(pos_score: np.ndarray, pos_query: np.ndarray, neg_score: np.ndarray,
                    neg_query: np.ndarray, n_queries: int) -> dict[str, float]:
    """:func:`_ranking` from closeness scores already computed."""
    if not n_queries:
        return {"mrr": float("nan"), "map": float("nan"), "p_at_1": float("nan")}
    group = np.concatenate([pos_query, neg_query])
    score = np.concatenate([pos_score, neg_score])
    rel = np.concatenate([np.ones(len(pos_query), bool), np.zeros(len(neg_query), bool)])
    order = np.argsort(group, kind="stable")
    group, score, rel = group[order], score[order], rel[order]
    sizes = np.bincount(group, minlength=n_queries)
    slot = np.arange(len(group)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    shape = (n_queries, int(sizes.max(initial=0)))
    mats = [np.zeros(shape), np.zeros(shape, bool), np.zeros(shape, bool)]
    for mat, values in zip(mats, (score, rel, np.ones_like(rel))):
        mat[group, slot] = values
    metrics = ranking_metrics(*mats)
    return {k: metrics[k] for k in ("mrr", "map", "p_at_1")}


def evaluate_xnli(table: XnliTable, cache: EmbedCache, towers: Towers, batch_size: int,
                  measures: Sequence[Measure], ties: Ties = "error",
                  text_prefix: str = "doc") -> list[dict[str, Any]]:
    """Rows of xnli_counts for all (query language, text language) pairs.

    App. F: the first sentence (premise) is the query, embedded by the query tower; the second
    (hypothesis) is the text, embedded by the document tower with the model's ``doc_prefix``
    (``text_prefix="doc"``) or its ``query_prefix`` (``"query"``)."""
    if text_prefix not in ("doc", "query"):
        raise ValueError(f"unknown XNLI text prefix {text_prefix!r} (expected doc or query)")
    prefix = towers.doc_prefix if text_prefix == "doc" else towers.query_prefix
    prem = {lang: cache.embed(towers.query, towers.query_fp, "query", towers.query_prefix, texts,
                              batch_size) for lang, texts in table.premises.items()}
    hyp = {lang: cache.embed(towers.doc, towers.doc_fp, "doc", prefix, texts,
                             batch_size) for lang, texts in table.hypotheses.items()}
    return xnli_pnd(prem, hyp, table.labels, tuple(measures), ties=ties)


def evaluate_datasets(names: Sequence[str], data_dir: Path, cache: EmbedCache, towers: Towers,
                      batch_size: int, measures: Sequence[Measure], *,
                      exclude_domains: Sequence[str] = (), xnli_languages: Sequence[str] | None = None,
                      ties: Ties = "error", xnli_text_prefix: str = "doc",
                      levels: dict[str, dict[int, str]] | None = None,
                      log: Any = print) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """pnd.json's dataset entries and the XNLI count rows for ``names``.

    An arxiv flavour in ``levels`` (:func:`arxiv_plan`) is scored at every listed difficulty level
    (App. H), each distinct text embedded once for all of them. Each arxiv dataset also gets one
    entry per domain in ``exclude_domains`` (App. K), scored from the same cached embeddings as
    the full set."""
    result: dict[str, Any] = {}
    xnli_rows: list[dict[str, Any]] = []
    levels = levels or {}
    for name in names:
        if name == "xnli":
            table = xnli_table(read_parquet(data_dir / XNLI_FILE, "the prepare-xnli table"),
                               xnli_languages)
            xnli_rows = evaluate_xnli(table, cache, towers, batch_size, measures, ties,
                                      xnli_text_prefix)
            result["xnli"] = xnli_summary(xnli_rows, table)
            log(f"evaluate-pnd: xnli: {_brief(result['xnli'], measures)}")
            continue
        flavour = name.removeprefix("arxiv-")
        if name in ARXIV_DATASETS and flavour in levels:
            paths = {ds: data_dir / arxiv_level_file(flavour, lv) for lv, ds in levels[flavour].items()}
            result |= evaluate_arxiv_levels(paths, cache, towers, batch_size, measures, ties)
            for ds in paths:
                log(f"evaluate-pnd: {ds}: {_brief(result[ds], measures)}")
        columns = list(ARXIV_COLUMNS if name in ARXIV_DATASETS else GROUPED_COLUMNS)
        variants = {} if name in result else {name: None}
        if name in ARXIV_DATASETS:
            variants |= {excluded_key(name, d): d for d in exclude_domains}
        if not variants:
            continue
        frame = read_parquet(data_dir / TRIPLET_FILES[name],
                             f"the {name} evaluation table with columns {columns}", columns)
        for key, domain in variants.items():
            ts = arxiv_triplets(frame, domain) if name in ARXIV_DATASETS else grouped_triplets(frame)
            result[key] = evaluate_triplets(ts, cache, towers, batch_size, measures, ties)
            log(f"evaluate-pnd: {key}: {_brief(result[key], measures)}")
    return result, xnli_rows


def xnli_summary(rows: list[dict[str, Any]], table: XnliTable) -> dict[str, Any]:
    """Totals over language pairs; ``rate`` = sum errors / sum totals, which equals the mean of
    the per-pair rates because every pair has the same total (App. G; docs/fidelity.md#P2-XNLI-AVERAGE)."""
    frame = pl.DataFrame(rows)
    out: dict[str, Any] = {"languages": sorted(table.premises),
                           "n_pairs_per_label": {str(k): int(v) for k, v in zip(
                               *np.unique(table.labels, return_counts=True))}}
    for (measure, relation), grp in frame.group_by("measure", "relation", maintain_order=True):
        errors, total = int(grp["errors"].sum()), int(grp["total"].sum())
        pair_rate = (grp["errors"] / grp["total"]).mean() if total else float("nan")
        out.setdefault(measure, {})[relation] = {
            "errors": errors, "total": total, "rate": errors / total if total else float("nan"),
            "mean_pair_rate": pair_rate, "n_language_pairs": grp.height}
    return out


# ---------------------------------------------------------------- CLI
class LazyEncoder:
    """Loads the sentence-transformers model only if some text is not cached yet."""

    def __init__(self, path: str, precision: str = "fp32", route: str | None = None) -> None:
        self.path = path
        self.precision = check_precision(precision)
        self.route = route
        self._enc: Encoder | None = None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._enc is None:
            from embtune.evaluate.embed_cache import SentenceTransformerEncoder

            self._enc = SentenceTransformerEncoder(self.path, precision=self.precision, route=self.route)
        return self._enc.encode(texts, batch_size)


def build_towers(spec: dict[str, Any], query_model_dir: str | None,
                 precision: str = "fp32", doc_model_dir: str | None = None) -> Towers:
    """Query tower: the query route of ``query_model_dir`` (tune-query's dual encoder; a plain
    one-tower folder also works) or the base model; document tower: the document route of
    ``doc_model_dir`` (both towers tuned, App. L) or the base model. Each tower's cache identity is its folder's content
    fingerprint, so a tuned document tower never reads the frozen base's stored embeddings."""
    from embtune.models.encoders import resolve_encoder_path

    base_path = resolve_encoder_path(spec)
    base, base_fp = LazyEncoder(base_path, precision), model_fingerprint(base_path)
    query, query_fp = (LazyEncoder(query_model_dir, precision, "query"), model_fingerprint(query_model_dir)) \
        if query_model_dir else (base, base_fp)
    if doc_model_dir and not Path(doc_model_dir).is_dir():
        raise DataError(f"{doc_model_dir}: --doc-model-dir is not a directory; expected the run's "
                        f"model/ that tune-query writes (its document route is the tuned document "
                        f"tower when tune_doc_tower: true)")
    doc, doc_fp = (LazyEncoder(doc_model_dir, precision, "document"), model_fingerprint(doc_model_dir)) \
        if doc_model_dir else (base, base_fp)
    return Towers(query, query_fp, doc, doc_fp, spec.get("query_prefix", "") or "",
                  spec.get("doc_prefix", "") or "")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="embtune evaluate-pnd", description=__doc__.splitlines()[0])
    ap.add_argument("--model-json", required=True,
                    help="encoder spec JSON: name, source, id, query_prefix, doc_prefix")
    ap.add_argument("--query-model-dir", default=None,
                    help="query tower: tune-query's model/ (its query route) or any sentence-transformers "
                         "folder; default: the base model")
    ap.add_argument("--doc-model-dir", default=None,
                    help="document tower when both towers were tuned (App. L, Fig. 11a): tune-query's "
                         "model/ (its document route); default: the frozen base model")
    ap.add_argument("--datasets", nargs="+", default=["msmarco", "arxiv-first", "arxiv-title", "xnli"],
                    choices=DATASETS)
    ap.add_argument("--data-dir", required=True, help="{processed}")
    ap.add_argument("--exclude-domains", nargs="*", default=[],
                    help="arxiv: also score each arxiv dataset without the rows of these category "
                         "domains (math -> math.*), as '<dataset>!<domain>' (App. K)")
    ap.add_argument("--arxiv-levels", type=int, nargs="*", default=[],
                    help="extra arxiv difficulty levels (1 = hardest) scored for each arxiv flavour "
                         "in --datasets, as arxiv-<flavour>-L<k> (App. H, Fig. 6)")
    ap.add_argument("--arxiv-random-level", type=int, default=ARXIV_RANDOM_LEVEL,
                    help="the level of arxiv-first / arxiv-title: the random negative "
                         "(n_negatives + 1; 21 in the paper)")
    ap.add_argument("--xnli-languages", nargs="+", default=None, help="default: all in the file")
    ap.add_argument("--cache-dir", default=None, help="embedding cache (default: a temporary one)")
    ap.add_argument("--measures", nargs="+", default=list(MEASURES), choices=MEASURES)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS,
                    help="embedding compute precision (part of the cache key); default fp32")
    ap.add_argument("--ties", choices=TIES, default="error",
                    help="does an exact tie count as an error (docs/fidelity.md#P2-PND-TIES)")
    ap.add_argument("--xnli-text-prefix", choices=("doc", "query"), default="doc",
                    help="prefix of XNLI hypotheses: doc_prefix or query_prefix "
                         "(docs/fidelity.md#P2-XNLI-PREFIX)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--out", required=True, help="output directory")
    return ap.parse_args(argv)


def arxiv_plan(datasets: Sequence[str], levels: Sequence[int],
               random_level: int = ARXIV_RANDOM_LEVEL) -> dict[str, dict[int, str]]:
    """flavour -> level -> dataset id for the arxiv flavours in ``datasets`` (random level first)."""
    bad = sorted({lv for lv in levels if not 1 <= lv <= random_level})
    if bad:
        raise DataError(f"--arxiv-levels {bad}: levels run from 1 (hardest) to {random_level} "
                        f"(the random negative)")
    plan: dict[str, dict[int, str]] = {}
    for flavour in ARXIV_FLAVOURS:
        if f"arxiv-{flavour}" in datasets:
            plan[flavour] = {lv: arxiv_dataset_id(flavour, lv, random_level)
                             for lv in [random_level, *sorted(set(levels) - {random_level})]}
    return plan


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parse_args(argv)
    spec = json.loads(args.model_json)
    towers = build_towers(spec, args.query_model_dir, args.precision, args.doc_model_dir)
    data_dir, out_dir = Path(args.data_dir), Path(args.out)
    levels = arxiv_plan(args.datasets, args.arxiv_levels, args.arxiv_random_level)
    with tempfile.TemporaryDirectory() as tmp_cache:
        cache = EmbedCache(args.cache_dir or tmp_cache, progress=not args.no_progress)
        # xnli_counts.parquet is written even when XNLI is not evaluated (empty)
        result, xnli_rows = evaluate_datasets(
            args.datasets, data_dir, cache, towers, args.batch_size, args.measures,
            exclude_domains=args.exclude_domains, xnli_languages=args.xnli_languages,
            ties=args.ties, xnli_text_prefix=args.xnli_text_prefix, levels=levels)
        result["encoder_calls"] = cache.stats.as_dict()
    result["arxiv_levels"] = {f: {str(lv): ds for lv, ds in m.items()} for f, m in levels.items()}
    result["model"] = {"spec": spec, "query_model_dir": args.query_model_dir,
                       "doc_model_dir": args.doc_model_dir, "precision": args.precision,
                       "doc_fingerprint": towers.doc_fp, "query_fingerprint": towers.query_fp}
    (out_dir / "pnd.json").unlink(missing_ok=True)   # the commit marker goes first, comes back last
    write_parquet(out_dir / "xnli_counts.parquet", pl.DataFrame(xnli_rows, schema=XNLI_COUNT_SCHEMA))
    write_json(out_dir / "pnd_manifest.json", provenance(stage="evaluate-pnd", args=vars(args)))
    write_json(out_dir / "pnd.json", result)
    return 0


def _brief(res: dict[str, Any], measures: Sequence[str]) -> str:
    parts = []
    for m in measures:
        entry = res.get(m, {})
        if "errors" in entry:
            parts.append(f"{m} {entry['errors']}/{entry['total']}")
        else:
            parts += [f"{m}/{rel} {v['errors']}/{v['total']}" for rel, v in entry.items()]
    return ", ".join(parts)
