"""PND of a dual encoder on MSMARCO / arxiv triplets / XNLI (paper 2); the ``embtune evaluate-pnd``
driver (arguments, output files) is :mod:`embtune.stages.evaluate_pnd`.

Queries (MSMARCO queries, arxiv anchors, XNLI premises) go through the query tower with
``query_prefix``; documents (positives, negatives, XNLI hypotheses) through the frozen document
tower (the base model) with ``doc_prefix`` — for XNLI hypotheses, with ``query_prefix`` instead
when ``--xnli-text-prefix query`` (E5's advice for symmetric tasks; docs/fidelity.md#P2-XNLI-PREFIX).
Ties count as errors unless ``--ties not_error`` (docs/fidelity.md#P2-PND-TIES). All embeddings go
through :class:`EmbedCache`, so the document side is embedded once per base model however many
query towers are evaluated. Both towers embed in ``--precision`` (``evaluate.pnd.precision``):
float32 by default, because bf16 rounding flips near-tied PND decisions (see
:mod:`embtune.models.encoders`).

Datasets (``TRIPLET_FILES``, their files under ``paths.processed``: :mod:`embtune.core.layout`): MSMARCO eval and its "65 negatives" variant (App. A), arxiv-first /
arxiv-title (App. B), and paper 2's Table 2 sets, answer sentences (App. C) and multi-hop
passages by level (App. D), both written by ``prepare-pnd``; all but arxiv stored one row per
query with its ``positives`` and ``negatives`` lists (:mod:`embtune.core.pnd_sets` lists them).

App. K (narrow-domain tuning): ``--exclude-domains math ...`` adds, for each arxiv dataset, an entry
``<dataset>!<domain>`` scored on the rows without a category ``<domain>.*``. The workflow passes the
same domains to the base and every tuned evaluation, so a run tuned on arxiv-math is compared with
the untuned encoder on exactly the same rows (:mod:`embtune.evaluate.query_table`). The subsets
reuse the full set's embeddings from the cache: no text is embedded twice.

arxiv difficulty levels (App. H, Fig. 6): :mod:`embtune.evaluate.pnd_arxiv`.

Query runs: tune-query saves ONE sentence-transformers model with a ``Router``; ``--query-model-dir``
embeds through its ``query`` route. Both towers tuned (App. L, Fig. 11a): ``--doc-model-dir`` (the
same folder) replaces the base model as the document tower, through its ``document`` route; its
cache store is keyed by that folder's fingerprint, so the frozen base's document embeddings are
never reused for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.io import read_parquet
from embtune.core.layout import PND_FILES, XNLI_TEST, Processed
from embtune.data.meaning import check_grouped, check_triplets
from embtune.evaluate.pnd import Measure, Ties, grouped_errors, pair_closeness, summarise, xnli_pnd
from embtune.evaluate.pnd_arxiv import (
    TextCodes,
    code_arxiv_levels,
    read_arxiv_level,
    score_levels,
)
from embtune.evaluate.ranking import ranking_metrics
from embtune.models.embed_cache import EmbedCache, model_fingerprint
from embtune.models.encoders import (
    Encoder,
    LazyEncoder,
    LengthCounter,
    check_dist_embeddings,
    normalized,
    resolve_encoder_path,
)

#: Triplet / grouped PND dataset -> its file under ``paths.processed`` (the layout owns the paths).
TRIPLET_FILES = PND_FILES
# One (anchor, positive, negative) triplet per row with the paper's arxiv categories: the only
# datasets with App. K domain exclusions. The others hold one query per row with candidate lists.
ARXIV_DATASETS = pnd_sets.arxiv_sets()     # the registry's (embtune.core.pnd_sets)
ARXIV_COLUMNS = ("anchor", "positive", "negative", "categories")
GROUPED_COLUMNS = ("query", "positives", "negatives")
XNLI_FILE = XNLI_TEST
XNLI_COUNT_SCHEMA = {"query_lang": pl.String, "text_lang": pl.String, "relation": pl.String,
                     "measure": pl.String, "errors": pl.Int64, "total": pl.Int64}
DATASETS = pnd_sets.names()


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
    """The two encoders with their cache identities.

    ``dist_embeddings`` (docs/fidelity.md#P2-DIST-EMBEDDINGS): the cache holds raw vectors;
    ``normalized`` unit-normalises them on the way out (cosine is unchanged, ``dist`` becomes a
    function of it). ``lengths`` counts texts over the encoder's maximum length per dataset
    (``label``) into ``over_length`` (docs/fidelity.md#P2-MAX-SEQ-LENGTH)."""

    query: Encoder
    query_fp: str
    doc: Encoder
    doc_fp: str
    query_prefix: str
    doc_prefix: str
    dist_embeddings: str = "raw"
    lengths: LengthCounter | None = None
    label: str = ""
    over_length: dict[str, dict[str, int]] = field(default_factory=dict)

    def embed(self, cache: EmbedCache, side: str, texts: list[str], batch_size: int,
              prefix: str | None = None) -> np.ndarray:
        """Embeddings of ``texts`` by the ``query`` or ``doc`` tower (through the cache)."""
        enc, fp = (self.query, self.query_fp) if side == "query" else (self.doc, self.doc_fp)
        if prefix is None:
            prefix = self.query_prefix if side == "query" else self.doc_prefix
        if self.lengths is not None:
            entry = self.over_length.setdefault(self.label, {"query": 0, "doc": 0,
                                                             "max_seq_length": self.lengths.max_seq_length})
            entry[side] += self.lengths.over([prefix + t for t in texts])
        emb = cache.embed(enc, fp, side, prefix, texts, batch_size)
        return normalized(emb) if self.dist_embeddings == "normalized" else emb


def narrow_domain(train_data: str | None) -> str | None:
    """The arxiv domain a run was tuned on (``arxiv-math`` -> ``math``); None for other data."""
    return pnd_sets.arxiv_domain(train_data)


def excluded_key(dataset: str, domain: str) -> str:
    """pnd.json key of ``dataset`` scored without the rows of arxiv ``domain`` (App. K)."""
    return f"{dataset}!{domain}"


# ---------------------------------------------------------------- data -> pure structures
def grouped_triplets(frame: pl.DataFrame) -> TripletSet:
    """One query per row (MSMARCO eval and every ``grouped`` set): all positives x all negatives of it."""
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
    q = towers.embed(cache, "query", queries.texts(), batch_size)
    d = towers.embed(cache, "doc", docs.texts(), batch_size)
    return score_levels(q, d, coded, measures, ties)


# ---------------------------------------------------------------- evaluation
def evaluate_triplets(ts: TripletSet, cache: EmbedCache, towers: Towers, batch_size: int,
                      measures: Sequence[Measure], ties: Ties = "error") -> dict[str, dict[str, Any]]:
    """PND counts and ranking metrics of one triplet set for each measure."""
    q = towers.embed(cache, "query", ts.queries, batch_size)
    p = towers.embed(cache, "doc", ts.positives, batch_size)
    n = towers.embed(cache, "doc", ts.negatives, batch_size)
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
    prem = {lang: towers.embed(cache, "query", texts, batch_size)
            for lang, texts in table.premises.items()}
    hyp = {lang: towers.embed(cache, "doc", texts, batch_size, prefix)
           for lang, texts in table.hypotheses.items()}
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
    data = Processed(Path(data_dir))
    for name in names:
        towers.label = name
        if pnd_sets.get(name).kind == "xnli":
            table = xnli_table(read_parquet(data.xnli_test(), "the prepare-xnli table"),
                               xnli_languages)
            xnli_rows = evaluate_xnli(table, cache, towers, batch_size, measures, ties,
                                      xnli_text_prefix)
            result["xnli"] = xnli_summary(xnli_rows, table)
            log(f"evaluate-pnd: xnli: {_brief(result['xnli'], measures)}")
            continue
        flavour = pnd_sets.get(name).arxiv_flavour
        if flavour in levels:
            paths = {ds: data.arxiv_triplets(flavour, lv) for lv, ds in levels[flavour].items()}
            result |= evaluate_arxiv_levels(paths, cache, towers, batch_size, measures, ties)
            for ds in paths:
                log(f"evaluate-pnd: {ds}: {_brief(result[ds], measures)}")
        columns = list(ARXIV_COLUMNS if name in ARXIV_DATASETS else GROUPED_COLUMNS)
        variants = {} if name in result else {name: None}
        if name in ARXIV_DATASETS:
            variants |= {excluded_key(name, d): d for d in exclude_domains}
        if not variants:
            continue
        frame = read_parquet(data.pnd_file(name),
                             f"the {name} evaluation table with columns {columns}", columns)
        if name in ARXIV_DATASETS:
            check_triplets(data.pnd_file(name), frame, ("anchor", "positive", "negative"))
        else:
            check_grouped(data.pnd_file(name), frame)
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


# ---------------------------------------------------------------- towers
def build_towers(spec: dict[str, Any], query_model_dir: str | None,
                 precision: str = "fp32", doc_model_dir: str | None = None,
                 dist_embeddings: str = "raw") -> Towers:
    """Query tower: the query route of ``query_model_dir`` (tune-query's dual encoder; a plain
    one-tower folder also works) or the base model; document tower: the document route of
    ``doc_model_dir`` (both towers tuned, App. L) or the base model. Each tower's cache identity is its folder's content
    fingerprint, so a tuned document tower never reads the frozen base's stored embeddings."""
    base_path = resolve_encoder_path(spec)
    max_len = spec.get("max_seq_length")   # docs/fidelity.md#P2-MAX-SEQ-LENGTH; None: the folder's
    base, base_fp = LazyEncoder(base_path, precision, None, max_len), model_fingerprint(base_path)
    query, query_fp = (LazyEncoder(query_model_dir, precision, "query", max_len),
                       model_fingerprint(query_model_dir)) \
        if query_model_dir else (base, base_fp)
    if doc_model_dir and not Path(doc_model_dir).is_dir():
        raise DataError(f"{doc_model_dir}: --doc-model-dir is not a directory; expected the run's "
                        f"model/ that tune-query writes (its document route is the tuned document "
                        f"tower when tune_doc_tower: true)")
    doc, doc_fp = (LazyEncoder(doc_model_dir, precision, "document", max_len),
                   model_fingerprint(doc_model_dir)) if doc_model_dir else (base, base_fp)
    return Towers(query, query_fp, doc, doc_fp, spec.get("query_prefix", "") or "",
                  spec.get("doc_prefix", "") or "", check_dist_embeddings(dist_embeddings),
                  LengthCounter(base_path, max_len))


def _brief(res: dict[str, Any], measures: Sequence[str]) -> str:
    parts = []
    for m in measures:
        entry = res.get(m, {})
        if "errors" in entry:
            parts.append(f"{m} {entry['errors']}/{entry['total']}")
        else:
            parts += [f"{m}/{rel} {v['errors']}/{v['total']}" for rel, v in entry.items()]
    return ", ".join(parts)
