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

from embtune.evaluate.embed_cache import (PRECISIONS, EmbedCache, Encoder, check_precision,
                                          model_fingerprint)
from embtune.evaluate.pnd import MEASURES, TIES, Measure, Ties, closeness, triplet_set_pnd, xnli_pnd
from embtune.evaluate.ranking import ranking_metrics
from embtune.io import provenance, read_parquet, write_json, write_parquet

# Paper 2 evaluates arxiv with its easiest level throughout (the random 21st negative, App. H);
# the harder levels are built by build-arxiv-negatives for Figure-6-style studies.
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


# ---------------------------------------------------------------- evaluation
def evaluate_triplets(ts: TripletSet, cache: EmbedCache, towers: Towers, batch_size: int,
                      measures: Sequence[Measure], ties: Ties = "error") -> dict[str, dict[str, Any]]:
    """PND counts and ranking metrics of one triplet set for each measure."""
    q = cache.embed(towers.query, towers.query_fp, "query", towers.query_prefix, ts.queries, batch_size)
    p = cache.embed(towers.doc, towers.doc_fp, "doc", towers.doc_prefix, ts.positives, batch_size)
    n = cache.embed(towers.doc, towers.doc_fp, "doc", towers.doc_prefix, ts.negatives, batch_size)
    out: dict[str, dict[str, Any]] = {}
    for m in measures:
        counts = triplet_set_pnd(q, p, ts.pos_query, n, ts.neg_query, m, ties).as_dict()
        counts.update(_ranking(q, p, ts.pos_query, n, ts.neg_query, m))
        out[m] = counts
    return out


def _ranking(q: np.ndarray, p: np.ndarray, pos_query: np.ndarray, n: np.ndarray,
             neg_query: np.ndarray, measure: Measure) -> dict[str, float]:
    """MRR/MAP/P@1 with each query's positives and negatives as its candidate list."""
    group = np.concatenate([pos_query, neg_query])
    score = np.concatenate([closeness(q[pos_query], p, measure), closeness(q[neg_query], n, measure)])
    rel = np.concatenate([np.ones(len(pos_query), bool), np.zeros(len(neg_query), bool)])
    order = np.argsort(group, kind="stable")
    group, score, rel = group[order], score[order], rel[order]
    sizes = np.bincount(group, minlength=len(q))
    slot = np.arange(len(group)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    shape = (len(q), int(sizes.max(initial=0)))
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
                      log: Any = print) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """pnd.json's dataset entries and the XNLI count rows for ``names``.

    Each arxiv dataset also gets one entry per domain in ``exclude_domains`` (App. K), scored from
    the same cached embeddings as the full set."""
    result: dict[str, Any] = {}
    xnli_rows: list[dict[str, Any]] = []
    for name in names:
        if name == "xnli":
            table = xnli_table(read_parquet(data_dir / XNLI_FILE, "the prepare-xnli table"),
                               xnli_languages)
            xnli_rows = evaluate_xnli(table, cache, towers, batch_size, measures, ties,
                                      xnli_text_prefix)
            result["xnli"] = xnli_summary(xnli_rows, table)
            log(f"evaluate-pnd: xnli: {_brief(result['xnli'], measures)}")
            continue
        columns = list(ARXIV_COLUMNS if name in ARXIV_DATASETS else GROUPED_COLUMNS)
        frame = read_parquet(data_dir / TRIPLET_FILES[name],
                             f"the {name} evaluation table with columns {columns}", columns)
        variants = {name: None} | ({excluded_key(name, d): d for d in exclude_domains}
                                   if name in ARXIV_DATASETS else {})
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

    def __init__(self, path: str, precision: str = "fp32") -> None:
        self.path = path
        self.precision = check_precision(precision)
        self._enc: Encoder | None = None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._enc is None:
            from embtune.evaluate.embed_cache import SentenceTransformerEncoder

            self._enc = SentenceTransformerEncoder(self.path, precision=self.precision)
        return self._enc.encode(texts, batch_size)


def build_towers(spec: dict[str, Any], query_model_dir: str | None,
                 precision: str = "fp32") -> Towers:
    from embtune.models.encoders import resolve_encoder_path

    base_path = resolve_encoder_path(spec)
    doc = LazyEncoder(base_path, precision)
    doc_fp = model_fingerprint(base_path)
    query, query_fp = (LazyEncoder(query_model_dir, precision), model_fingerprint(query_model_dir)) \
        if query_model_dir else (doc, doc_fp)
    return Towers(query, query_fp, doc, doc_fp, spec.get("query_prefix", "") or "",
                  spec.get("doc_prefix", "") or "")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="embtune evaluate-pnd", description=__doc__.splitlines()[0])
    ap.add_argument("--model-json", required=True,
                    help="encoder spec JSON: name, source, id, query_prefix, doc_prefix")
    ap.add_argument("--query-model-dir", default=None,
                    help="query tower (sentence-transformers folder); default: the base model")
    ap.add_argument("--datasets", nargs="+", default=["msmarco", "arxiv-first", "arxiv-title", "xnli"],
                    choices=DATASETS)
    ap.add_argument("--data-dir", required=True, help="{processed}")
    ap.add_argument("--exclude-domains", nargs="*", default=[],
                    help="arxiv: also score each arxiv dataset without the rows of these category "
                         "domains (math -> math.*), as '<dataset>!<domain>' (App. K)")
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


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = parse_args(argv)
    spec = json.loads(args.model_json)
    towers = build_towers(spec, args.query_model_dir, args.precision)
    data_dir, out_dir = Path(args.data_dir), Path(args.out)
    with tempfile.TemporaryDirectory() as tmp_cache:
        cache = EmbedCache(args.cache_dir or tmp_cache, progress=not args.no_progress)
        # xnli_counts.parquet is written even when XNLI is not evaluated (empty)
        result, xnli_rows = evaluate_datasets(
            args.datasets, data_dir, cache, towers, args.batch_size, args.measures,
            exclude_domains=args.exclude_domains, xnli_languages=args.xnli_languages,
            ties=args.ties, xnli_text_prefix=args.xnli_text_prefix)
        result["encoder_calls"] = cache.stats.as_dict()
    result["model"] = {"spec": spec, "query_model_dir": args.query_model_dir,
                       "precision": args.precision,
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
