"""Stage ``tune-query``: adiabatic tuning of the query tower of one query run config (paper 2).

Why a driver apart from :mod:`embtune.train.query_tower`: the library tunes the towers on
triplets it is given; the arguments (the run config checked as a
:class:`~embtune.runconfig.QueryRunConfig`), loading the data and the encoder, the document-embedding
cache directory and the run directory live here.

Output: ``model/`` is ONE sentence-transformers model with a ``Router`` (``encode_query`` = the
tuned query tower, ``encode_document`` = the frozen base, or the tuned document tower when both
are tuned), with the model's prefixes as prompts and a model card (:mod:`embtune.models.st_export`).
evaluate-pnd reads the query route (``--query-model-dir``) and, when both towers were tuned, the
document route of the same folder (``--doc-model-dir``).

A run that fails for good (the loss became NaN/inf: ``diverged``; out of memory on the last of
``--retries`` + 1 attempts: ``oom``) writes the same directory with ``model/README.txt`` and a
failure record in ``metrics.json`` (:mod:`embtune.train.failures`) and exits 0; evaluate-pnd and
the query tables pass it on with its reason.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from embtune.core.errors import DataError, one_line
from embtune.core.io import atomic_dir, check_replaceable, provenance, write_json, write_text
from embtune.core.layout import CURVE_CSV, LAYER_CHANGES, MANIFEST_JSON, METRICS_JSON, MODEL_DIR
from embtune.evaluate.layer_changes import layer_changes, top_layers
from embtune.jobs import progress
from embtune.models.embed_cache import EmbedCache, model_fingerprint
from embtune.models.encoders import PRECISIONS, LengthCounter, SentenceTransformerEncoder
from embtune.models.st_export import query_card, save_dual_encoder, st_prompts
from embtune.runconfig import QueryRunConfig
from embtune.train import failures
from embtune.train.query_tower import DocSide, tune
from embtune.train.tracking import QueryTracker
from embtune.train.triplets import read_triplets, triplet_files

STAGE = "tune-query"


def curve_csv(curve: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(curve[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(curve)
    return buf.getvalue()


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--run-config-json", required=True, help="one config from embtune.plan.query_sweep.query_runs")
    ap.add_argument("--data-dir", required=True, help="{processed}: msmarco/ and arxiv/ live here")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--cache-dir", help="document-embedding cache ({results}/embed_cache/<model>); "
                                        "default: a throw-away temporary directory")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--attempt", type=int, default=1, help="Snakemake's attempt (1 = first)")
    ap.add_argument("--retries", type=int, default=None,
                    help="Snakemake's --retries: out of memory is final on attempt retries+1")
    ap.add_argument("--doc-batch-size", type=int, default=64)
    ap.add_argument("--no-progress", action="store_true", help="no progress bar / periodic progress lines")
    ap.add_argument("--tracking-dir", default=None, help="the experiment tracker's files (embtune.train.tracking)")
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS,
                    help="document/validation embedding precision (evaluate.pnd.precision); "
                         "part of the cache key")
    return ap.parse_args(argv)


def run_stage(run: QueryRunConfig, data_dir: str, out_dir: Path, cache_dir: str,
              doc_batch_size: int = 64, precision: str = "fp32", tracking_dir: str | None = None,
              code_version: str | None = None) -> dict[str, Any]:
    """Load data and models, tune, write every output (manifest last); returns metrics. The
    tracker (``$EMBTUNE_LOG_WITH``, embtune.train.tracking) writes into ``tracking_dir``. The
    manifest records ``code_version`` when given (``tune-query-batch`` reuses a run only when it
    matches)."""
    from embtune.models.encoders import resolve_encoder_path

    check_replaceable(out_dir)           # before training, not after it
    train_path, val_path, cols = triplet_files(data_dir, run.train_data)
    train, val = read_triplets(train_path, cols), read_triplets(val_path, cols)
    path = resolve_encoder_path(run.model)
    max_len = run.model.get("max_seq_length")   # docs/fidelity.md#P2-MAX-SEQ-LENGTH
    encoder = SentenceTransformerEncoder(path, precision=precision, max_seq_length=max_len)
    encoder.model.eval()
    for p in encoder.model.parameters():
        p.requires_grad_(False)
    docs = DocSide(encoder, EmbedCache(cache_dir, progress=False), model_fingerprint(path),
                   run.model.get("doc_prefix", ""), doc_batch_size)
    tracker = QueryTracker(Path(tracking_dir) if tracking_dir else None, run.to_dict())
    result = tune(run, train, val, docs, track=tracker)
    changes = layer_changes(encoder.model.state_dict(), result.query_tower.state_dict())
    tracker.end(result.metrics, changes)
    result.metrics.update(top_layers_max_weight=top_layers(changes, "rank_max_weight"),
                          top_layers_relative=top_layers(changes, "rank_relative"),
                          n_train_triplets=len(train), embed_precision=precision,
                          over_length=over_length(LengthCounter(path, max_len), run.model, train + val))
    doc_changes = None if result.doc_tower is None else \
        layer_changes(encoder.model.state_dict(), result.doc_tower.state_dict())
    as_json = run.to_dict()              # the config's JSON form, as the manifest records it
    manifest = provenance(stage=STAGE, run_config=as_json, seed=run.seed, encoder_path=path,
                          train_file=str(train_path), val_file=str(val_path), doc_cache_dir=str(cache_dir),
                          embed_precision=precision, **({"code_version": code_version} if code_version else {}))
    spec = run.model
    with atomic_dir(out_dir) as tmp:   # the run directory appears whole (old evaluations go with it)
        # ONE sentence-transformers model: query route = tuned tower, document route = the base
        # encoder (or the tuned doc tower); evaluate-pnd routes by task (embtune.models.st_export)
        save_dual_encoder(tmp / MODEL_DIR, result.query_tower,
                          encoder.model if result.doc_tower is None else result.doc_tower,
                          st_prompts(spec.get("query_prefix"), spec.get("doc_prefix")),
                          query_card(result.metrics, as_json, manifest))
        if doc_changes is not None:
            doc_changes.write_csv(tmp / "layer_changes_doc.csv")
        write_text(tmp / CURVE_CSV, curve_csv(result.curve))
        changes.write_csv(tmp / LAYER_CHANGES)
        write_json(tmp / METRICS_JSON, result.metrics)
        write_json(tmp / MANIFEST_JSON, manifest)
    return result.metrics


def over_length(counter: LengthCounter, spec: dict[str, Any], triplets: list[Any]) -> dict[str, Any]:
    """Training and validation texts longer than the encoder's maximum length (they are cut when
    embedded: counted here, never silently; docs/fidelity.md#P2-MAX-SEQ-LENGTH)."""
    q, d = spec.get("query_prefix", "") or "", spec.get("doc_prefix", "") or ""
    return {"max_seq_length": counter.max_seq_length,
            "query": counter.over([q + t[0] for t in triplets]),
            "doc": counter.over([d + t[i] for t in triplets for i in (1, 2)])}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.no_progress:
        progress.disable()
    try:
        run = QueryRunConfig.from_dict(json.loads(args.run_config_json))
    except ValueError as err:       # json.JSONDecodeError is one too
        raise DataError(f"--run-config-json: {one_line(err)}") from None
    return tune_one(run, Path(args.out_dir), args)


def tune_one(run: QueryRunConfig, out_dir: Path, args: argparse.Namespace) -> int:
    """One query run into ``out_dir`` (``args``: this stage's options; ``tune-query-batch`` passes
    its own, with ``tracking_dir`` per run); its exit code. A run that fails for good writes its
    failure record and returns 0."""
    code_version = getattr(args, "code_version", None)
    try:
        if args.cache_dir:
            metrics = run_stage(run, args.data_dir, out_dir, args.cache_dir, args.doc_batch_size,
                                args.precision, args.tracking_dir, code_version)
        else:
            with tempfile.TemporaryDirectory(prefix="embtune-doc-cache-") as tmp:
                metrics = run_stage(run, args.data_dir, out_dir, tmp, args.doc_batch_size,
                                    args.precision, args.tracking_dir, code_version)
    except failures.Diverged as err:
        return _failed(run, out_dir, args, "diverged", str(err), err.partial)
    except Exception as err:
        if not (failures.is_oom(err) and args.retries is not None
                and failures.is_final("oom", args.attempt, args.retries)):
            raise
        return _failed(run, out_dir, args, "oom", str(err), {})
    print(f"tune-query {run.qrun_id}: {metrics['epochs']} epochs, best {metrics['best_epoch']}, "
          f"stopped by {metrics['stopped_reason']}, {metrics['wall_time_s']:.1f} s")
    return 0


def _failed(run: QueryRunConfig, out_dir: Path, args: argparse.Namespace, reason: str, detail: str,
            partial: dict[str, Any]) -> int:
    """The run directory of a query run that failed for good: ``model/README.txt``, the failure
    record in ``metrics.json``, the manifest (exit 0: the workflow goes on)."""
    base = {"qrun_id": run.qrun_id, "model": run.model.get("name")}
    metrics = failures.failure_metrics(base, reason, args.attempt, args.retries or 0,
                                       " ".join(detail.split()), partial)
    code_version = getattr(args, "code_version", None)
    manifest = provenance(stage=STAGE, run_config=run.to_dict(), seed=run.seed,
                          **({"code_version": code_version} if code_version else {}))
    with atomic_dir(out_dir) as tmp:
        (tmp / MODEL_DIR).mkdir()
        write_text(tmp / MODEL_DIR / "README.txt", failures.readme(metrics))
        write_json(tmp / METRICS_JSON, metrics)
        write_json(tmp / MANIFEST_JSON, manifest)
    if args.tracking_dir:               # a declared output: kept with what the tracker saw, if anything
        Path(args.tracking_dir).mkdir(parents=True, exist_ok=True)
    print(f"tune-query {run.qrun_id}: failed for good: {reason}: {metrics['failure']['detail'][:300]}")
    return 0
