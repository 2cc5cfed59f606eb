"""Benchmark: paper 2's triplet margin loss (margin 0.1) on 1 - cosine against the Euclidean
distance (raw and unit-normalised vectors), tuning the demo's MSMARCO query tower
(docs/fidelity.md#P2-TRIPLET-DISTANCE).

Why: the paper names "the triple margin loss with margin 0.1" (§2.3, App. E) and no distance;
torch's ``TripletMarginLoss`` and sentence-transformers' ``TripletLoss`` default to the
Euclidean one. This prints, per distance and seed, what each reading does to the encoder at one
rate: validation loss and error count (each in the run's own distance, so compare each with its
own untuned value), and the MSMARCO eval PND error counts by cosine and by (raw) distance, as
``evaluate-pnd`` counts them, against the untuned encoder, so the rows are comparable.

How: the run configs come from the pipeline's planner (``params.yaml`` + ``presets/demo.yaml``,
the demo's MiniLM encoder, a ``distance`` x ``dist_embeddings`` grid laid over the defaults),
tuned by the real :func:`embtune.train.query_tower.tune`; the untuned and tuned PND use the
helpers of ``bench_schedulers.py``. Data: ``data/processed/demo/msmarco`` (``snakemake
--configfile presets/demo.yaml --cores 1 data/processed/demo/msmarco``).

    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_triplet_distance.py --seeds 0 1 2

Measured on 2026-11-29 (2-core CPU shared with other jobs, 1 thread; seeds 0 and 1, stopped
before the rest; 867 eval comparisons)::

    untuned MSMARCO eval PND errors: cos 172, dist 260
    distance    vectors seed  ep best val_loss0  val_loss val_err0 val_err pnd_c  d_c pnd_d  d_d wall_s
         cos        raw    0  10    9   0.04612   0.03557       40      26   137  -35   234  -26    956
        dist        raw    0  10   10   0.20597   0.09800       50      35   158  -14   180  -80    593
        dist normalized    0   9    6   0.04549   0.03660       40      29   149  -23   240  -20    303
         cos        raw    1  10   10   0.04612   0.03548       40      29   128  -44   236  -24    686
        dist        raw    1  10   10   0.20597   0.10132       50      37   157  -15   180  -80    522

Read: each loss improves most the PND measure that shares its distance (cos loss: -35 by cos,
-26 by dist; raw Euclidean loss: -14 by cos, -80 by dist); the unit-vector Euclidean loss, a
monotone function of the cosine, behaves like the cosine loss. The validation columns are each
run's own distance, so compare each with its own untuned value.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
READINGS = (("cos", "raw"), ("dist", "raw"), ("dist", "normalized"))


def plan(args: argparse.Namespace) -> list[Any]:
    from embtune.core.params_yaml import read_layers
    from embtune.plan.config import load_params
    from embtune.plan.query_sweep import expand_query

    files = [REPO / "params.yaml", REPO / "presets/demo.yaml"]
    models = {m["name"]: m for _, layer in read_layers(files)
              for m in (layer.get("query_tuning") or {}).get("models") or []}
    sweeps = {k: [] for k in ("lr", "freeze", "batch_size", "margin", "weight_decay", "optimizer", "scheduler",
                              "patience", "train_data", "tune_doc_tower")}
    params = load_params(files, {"query_tuning": {
        "models": [models[args.model]],
        "defaults": {"lr": args.lr, "batches_per_epoch": args.batches_per_epoch, "max_epochs": args.max_epochs,
                     "patience": args.patience, "scheduler": "none", "margin": 0.1},
        "sweeps": sweeps,
        "grids": [{"name": "distance", "points": [{"distance": d, "dist_embeddings": e} for d, e in READINGS]}]}})
    runs = [r for r in expand_query(params)[0] if r.qrun_id != "default" or
            (r.distance, r.dist_embeddings) in READINGS]
    return [type(r).from_dict({**r.to_dict(), "qrun_id": f"{r.distance}-{r.dist_embeddings}-seed-{s}", "seed": s})
            for s in args.seeds for r in runs]


def pnd_counts(model: Any, queries: list[str], prefix: str, ts: Any, p: np.ndarray, n: np.ndarray) -> dict[str, int]:
    """MSMARCO eval errors by cosine and by raw Euclidean distance (ties are errors)."""
    from embtune.evaluate.pnd_eval import score_triplets
    from embtune.train.query_tower import embed_queries

    model.eval()
    with torch.inference_mode():
        q = torch.cat([embed_queries(model, [prefix + t for t in queries[i:i + 64]])[0].float()
                       for i in range(0, len(queries), 64)]).numpy()
    got = score_triplets(q, p, ts.pos_query, n, ts.neg_query, ["cos", "dist"])
    return {m: int(got[m]["errors"]) for m in ("cos", "dist")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="all-minilm-l6-v2")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--batches-per-epoch", type=int, default=10)
    ap.add_argument("--max-epochs", type=int, default=10)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    from embtune.core.io import read_parquet
    from embtune.core.layout import Processed
    from embtune.evaluate.pnd_eval import grouped_triplets
    from embtune.models.embed_cache import EmbedCache, model_fingerprint
    from embtune.models.encoders import SentenceTransformerEncoder, resolve_encoder_path
    from embtune.train import query_tower as qt

    runs = plan(args)
    spec = runs[0].model
    data_dir = REPO / "data/processed/demo"
    tr, va, cols = qt.triplet_files(data_dir, "msmarco")
    train, val = qt.read_triplets(tr, cols), qt.read_triplets(va, cols)
    ts = grouped_triplets(read_parquet(Processed(data_dir).msmarco_split("eval"), "msmarco eval"))
    path = resolve_encoder_path(spec)
    enc = SentenceTransformerEncoder(path, precision="fp32", max_seq_length=spec.get("max_seq_length"))
    enc.model.eval()
    for prm in enc.model.parameters():
        prm.requires_grad_(False)
    print(f"model {spec['name']}, lr {args.lr:g}, margin 0.1, {args.batches_per_epoch} batches of "
          f"{runs[0].batch_size} per epoch, max_epochs {args.max_epochs}, patience {args.patience}; "
          f"{len(train)} train / {len(val)} val triplets")
    print(f"{'distance':>8} {'vectors':>10} {'seed':>4} {'ep':>3} {'best':>4} {'val_loss0':>9} {'val_loss':>9} "
          f"{'val_err0':>8} {'val_err':>7} {'pnd_c':>5} {'d_c':>4} {'pnd_d':>5} {'d_d':>4} {'wall_s':>6}")
    with tempfile.TemporaryDirectory(prefix="bench-distance-") as cache_dir:
        docs = qt.DocSide(enc, EmbedCache(cache_dir, progress=False), model_fingerprint(path),
                          spec.get("doc_prefix", "") or "", 64)
        prefix = spec.get("query_prefix", "") or ""
        p_emb, n_emb = docs.embed(ts.positives).numpy(), docs.embed(ts.negatives).numpy()
        base = pnd_counts(enc.model, ts.queries, prefix, ts, p_emb, n_emb)
        print(f"untuned MSMARCO eval PND errors: cos {base['cos']}, dist {base['dist']}", flush=True)
        for run in runs:
            t0 = time.perf_counter()
            res = qt.tune(run, train, val, docs, log=lambda _: None)
            m = res.metrics
            got = pnd_counts(res.query_tower, ts.queries, prefix, ts, p_emb, n_emb)
            print(f"{run.distance:>8} {run.dist_embeddings:>10} {run.seed:>4} {m['epochs']:>3} {m['best_epoch']:>4} "
                  f"{m['val_loss'][0]:>9.5f} {m['best_val_loss']:>9.5f} {m['val_errors'][0]:>8} "
                  f"{m['best_val_errors']:>7} {got['cos']:>5} {got['cos'] - base['cos']:>+4} {got['dist']:>5} "
                  f"{got['dist'] - base['dist']:>+4} {time.perf_counter() - t0:>6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
