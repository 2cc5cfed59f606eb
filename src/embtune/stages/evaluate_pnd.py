"""Stage ``evaluate-pnd``: PND, MRR, MAP, P@1 of a dual encoder (paper 2).

Why a driver apart from :mod:`embtune.evaluate.pnd_eval`: the library scores datasets it is
given; the arguments, the embedding cache directory and the output files live here.

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
from pathlib import Path

import polars as pl

from embtune.core.io import provenance, read_json, write_json, write_parquet
from embtune.core.layout import METRICS_JSON, PND_JSON, XNLI_COUNTS
from embtune.evaluate.pnd import MEASURES, TIES
from embtune.evaluate.pnd_arxiv import ARXIV_RANDOM_LEVEL, arxiv_plan
from embtune.evaluate.pnd_eval import DATASETS, XNLI_COUNT_SCHEMA, build_towers, evaluate_datasets
from embtune.models.embed_cache import EmbedCache
from embtune.models.encoders import DIST_EMBEDDINGS, PRECISIONS

STAGE = "evaluate-pnd"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
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
    ap.add_argument("--dist-embeddings", choices=DIST_EMBEDDINGS, default="raw",
                    help="the vectors the dist measure compares: the encoder's raw output or the "
                         "L2-normalised one (docs/fidelity.md#P2-DIST-EMBEDDINGS)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--out", required=True, help="output directory")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = _parse(argv)
    spec = json.loads(args.model_json)
    if args.query_model_dir and _failed_run(args):
        return 0
    towers = build_towers(spec, args.query_model_dir, args.precision, args.doc_model_dir,
                          args.dist_embeddings)
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
    # texts over the encoder's maximum length, per dataset: counted, never cut silently
    # (docs/fidelity.md#P2-MAX-SEQ-LENGTH)
    result["over_length"] = towers.over_length
    result["arxiv_levels"] = {f: {str(lv): ds for lv, ds in m.items()} for f, m in levels.items()}
    result["model"] = {"spec": spec, "query_model_dir": args.query_model_dir,
                       "doc_model_dir": args.doc_model_dir, "precision": args.precision,
                       "dist_embeddings": args.dist_embeddings,
                       "max_seq_length": towers.lengths.max_seq_length if towers.lengths else None,
                       "doc_fingerprint": towers.doc_fp, "query_fingerprint": towers.query_fp}
    (out_dir / PND_JSON).unlink(missing_ok=True)   # the commit marker goes first, comes back last
    write_parquet(out_dir / XNLI_COUNTS, pl.DataFrame(xnli_rows, schema=XNLI_COUNT_SCHEMA))
    write_json(out_dir / "pnd_manifest.json", provenance(stage=STAGE, args=vars(args)))
    write_json(out_dir / PND_JSON, result)
    return 0


def _failed_run(args: argparse.Namespace) -> bool:
    """A query run that failed for good (embtune.train.failures) has no model to evaluate: its
    pnd.json says so with the reason (status failed), beside an empty XNLI count table."""
    metrics_path = Path(args.query_model_dir).parent / METRICS_JSON
    metrics = read_json(metrics_path) if metrics_path.is_file() else {}
    if metrics.get("status") != "failed":
        return False
    out_dir = Path(args.out)
    (out_dir / PND_JSON).unlink(missing_ok=True)
    write_parquet(out_dir / XNLI_COUNTS, pl.DataFrame(schema=XNLI_COUNT_SCHEMA))
    write_json(out_dir / "pnd_manifest.json", provenance(stage=STAGE, args=vars(args)))
    write_json(out_dir / PND_JSON, {"status": "failed", "skip_reason": metrics.get("skip_reason"),
                                    "failure": metrics.get("failure")})
    print(f"{STAGE}: query run failed ({metrics.get('skip_reason')}); wrote {out_dir / PND_JSON}")
    return True
