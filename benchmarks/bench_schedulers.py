"""Benchmark: what paper 2's LR schedulers (Table 19) do to query tuning on the demo's MSMARCO data,
under the epoch clock (the default) and the step clock (docs/fidelity.md#P2-SCHEDULERS).

Why: issue 24 asks to *show* the reading the ledger argues for: under the epoch clock the
exponential rows (E0.95, E0.98) still tune, but differently from ``none``, and L / Q have decayed
when tuning stops; under the step clock (Table 19's literal "t the current training step") the
exponential rates reach ~0 within a few dozen steps, so those runs end near the untuned encoder.

How: the run configs come from the pipeline's own planner (:func:`embtune.plan.query_sweep.expand_query`
over ``params.yaml`` + ``presets/demo.yaml``, with the demo's MiniLM encoder, a longer regime and
a scheduler sweep plus a step-clock grid laid over it), and each is tuned by the real tuner,
:func:`embtune.train.query_tower.tune`, set up as ``embtune tune-query`` sets it up, with one
shared document-embedding cache. Per run it prints the epochs run and the best (saved) epoch, the
LR factor a(t)/a0 of the last epoch run (first..last step), the full-rate-step equivalents
sum_t a(t)/a0 over the steps run, the saved checkpoint's validation loss and error count against
the untuned encoder (epoch 0), and the MSMARCO PND error count on the eval split (cosine, ties
are errors), as ``evaluate-pnd`` counts it, against the untuned encoder. Runs are deterministic
(one seed: the same batches and dropout masks for every run), so any difference between rows
comes from the learning rates alone; ``--noise-seeds`` reruns ``none`` at other seeds to show how
large a seed's effect is.

Data: the demo's prepared splits, ``data/processed/demo/msmarco/{train,val,eval}.parquet``
(``snakemake --configfile presets/demo.yaml --cores 1 data/processed/demo/msmarco``), or
``--data-dir``.

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=src .venv/bin/python \\
        benchmarks/bench_schedulers.py [--data-dir data/processed/demo] [--threads 1]

Measured on 2026-11-28, 2-core CPU (1 thread; 11 runs in 8.5 min), the demo's splits, ``--noise-seeds 1 2``
(untuned: val loss 0.04612, val errors 40/200, MSMARCO PND errors 172 of 867 comparisons)::

    clock sched seed  ep best    stopped       lr@stop sum_lr val_loss   d_loss val_err d_err   pnd d_pnd wall_s
        -  none    0  10    9 max_epochs  1.000..1.000  100.0  0.03557 -0.01055      26   -14   137   -35   60.8
    epoch     L    0  10    9 max_epochs  0.100..0.100   55.0  0.03840 -0.00773      29   -11   146   -26   43.9
    epoch     Q    0  10    9 max_epochs  0.190..0.190   71.5  0.03703 -0.00909      27   -13   148   -24   46.6
    epoch E0.95    0   9    6   patience  0.663..0.663   74.0  0.03837 -0.00775      28   -12   149   -23   39.6
    epoch E0.98    0  10   10 max_epochs  0.834..0.834   91.5  0.03524 -0.01088      26   -14   137   -35   44.9
     step     L    0  10    9 max_epochs  0.100..0.010   50.5  0.03886 -0.00727      30   -10   147   -25   44.8
     step     Q    0   9    6   patience  0.360..0.208   66.1  0.03836 -0.00776      28   -12   149   -23   44.4
     step E0.95    0   4    1   patience  0.215..0.135   17.4  0.04442 -0.00170      38    -2   165    -7   20.1
     step E0.98    0  10   10 max_epochs  0.162..0.135   43.4  0.03947 -0.00665      32    -8   149   -23   50.1
        -  none    1  10   10 max_epochs  1.000..1.000  100.0  0.03548 -0.01064      29   -11   128   -44   46.5
        -  none    2  10    7   patience  1.000..1.000  100.0  0.03636 -0.00977      29   -11   146   -26   46.3

Read: (1) Under the step clock E0.95 is the untuned encoder plus a few steps: its rate is 0.135 a0
at its 40th step, the best checkpoint is epoch 1 (8 full-rate-step equivalents) and PND moves by -7
against -35 for ``none``. E0.98 keeps tuning here, because a step-clock exponential sums to at most
1/(1 - 0.98) = 50 full-rate steps and this whole run is only 100 steps; with ``--max-epochs 20``
(``--schedulers none E0.98 --step-schedulers E0.98``) its validation loss flattens (0.03947 at
epoch 10, 0.03924 at 13, stopped by patience) while ``none`` keeps falling (0.03557 at 9, 0.03351
at 12): at the paper's 1000-step epochs both E rows would be spent within the first epoch.
(2) Under the epoch clock E0.95 tunes, but less than ``none``: its validation loss falls more
slowly, its error count stops falling after epoch 6 (an epoch improves only if both fall), so
patience stops it at epoch 9 and saves epoch 6: PND -23, val loss 0.03837 (none: -35, 0.03557; seeds 1
and 2 of ``none``: -44 and -26, 0.03548 and 0.03636). E0.98 (0.83 a0 at epoch 10) is
indistinguishable from ``none`` at this length: same val errors and PND, val loss 0.03524.
(3) L and Q have decayed when tuning ends: 0.10 a0 and 0.19 a0 at epoch 10 under the epoch clock
(T = max_epochs, which these runs reached), and tune less than ``none`` (PND -26 and -24).
The differences between rows are the rates' alone (same batches and dropout masks), but the
seed-to-seed spread of ``none`` is as large as the gaps between the tuning rows in PND (-26..-44
over seeds 0-2), so there only the step-clock E0.95 collapse stands clear of it; in validation
loss (none: 0.03548..0.03636) epoch-clock L and E0.95 and every step-clock row stand clear, Q
(0.03703) barely, E0.98 not at all.

Paired, which takes the seed's own effect out: ``--step-schedulers E0.95 --seeds 1 2 3 4 5`` runs
every row at seeds 0-5 (36 runs, 27 min on 1 thread, 2026-11-28) and prints each row against
``none`` at the same seed (same batches, same dropout masks): the mean difference +- its standard
error over the 6 seeds, how many seeds it is worse at, and a paired t-test::

    epoch     L n=6:  val_loss vs none +0.00272 +- 0.00035 (worse in 6/6, paired t p=0.000585)  pnd_errors vs none +9.7 +- 3.0 (worse in 6/6, paired t p=0.023)
    epoch     Q n=6:  val_loss vs none +0.00162 +- 0.00027 (worse in 6/6, paired t p=0.0017)  pnd_errors vs none +8.2 +- 2.7 (worse in 6/6, paired t p=0.0293)
    epoch E0.95 n=6:  val_loss vs none +0.00192 +- 0.00031 (worse in 6/6, paired t p=0.00162)  pnd_errors vs none +9.0 +- 2.3 (worse in 6/6, paired t p=0.0114)
    epoch E0.98 n=6:  val_loss vs none +0.00053 +- 0.00039 (worse in 4/6, paired t p=0.233)  pnd_errors vs none +1.0 +- 1.3 (worse in 2/6, paired t p=0.465)
     step E0.95 n=6:  val_loss vs none +0.00847 +- 0.00018 (worse in 6/6, paired t p=8.98e-08)  pnd_errors vs none +25.3 +- 2.7 (worse in 6/6, paired t p=0.000233)

Read: under the epoch clock E0.95 still tunes (PND -17..-26 against the untuned encoder at every
seed) and ends worse than no schedule at every seed, beyond seed noise: App. M.7's "exponential
... generally worse" pattern. Under the step clock E0.95 is the untuned encoder at every seed (PND
0..-11). E0.98 keeps 0.83 a0 at epoch 10 and cannot differ yet at this length. Longer
(``--schedulers none E0.98 --step-schedulers --max-epochs 30 --patience 5 --seeds 1 2 3 4 5``, 12
runs, 19 min): patience stops the runs at epochs 10-30, where E0.98 is still at 0.65-0.83 a0, and
it stays indistinguishable (val loss +0.00104 +- 0.00092, p=0.31; PND +2.8 +- 4.2, p=0.53).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
SCHEDULERS = ["none", "L", "Q", "E0.95", "E0.98"]
STEP_SCHEDULERS = ["L", "Q", "E0.95", "E0.98"]


def plan(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    """The run configs, as the pipeline plans them: the demo preset with this benchmark's regime,
    the scheduler sweep (epoch clock: the default) and a grid of the step clock."""
    from embtune.core.params_yaml import read_layers
    from embtune.plan.config import load_params
    from embtune.plan.query_sweep import expand_query

    files = [REPO / "params.yaml", REPO / args.preset]
    preset_models = {m["name"]: m for _, layer in read_layers(files)
                     for m in (layer.get("query_tuning") or {}).get("models") or []}
    if args.model not in preset_models:
        raise SystemExit(f"--model {args.model!r}: not a query_tuning.models entry of "
                         f"{args.preset} (has {', '.join(preset_models)})")
    sweeps = {k: [] for k in ("lr", "freeze", "batch_size", "margin", "weight_decay", "optimizer",
                              "patience", "train_data", "tune_doc_tower")}
    overrides = {"query_tuning": {
        "models": [preset_models[args.model]],
        "defaults": {"lr": args.lr, "batches_per_epoch": args.batches_per_epoch,
                     "max_epochs": args.max_epochs, "patience": args.patience,
                     "scheduler": "none", "scheduler_unit": "epoch"},
        "sweeps": {**sweeps, "scheduler": [s for s in args.schedulers if s != "none"]},
        "grids": [{"name": "step-clock", "description": "Table 19's literal clock",
                   "base": {"scheduler_unit": "step"}, "cross": {"scheduler": args.step_schedulers}}]
        if args.step_schedulers else [],
    }}
    params = load_params(files, overrides)
    runs, _ = expand_query(params)
    for seed in args.noise_seeds:
        runs.append(type(runs[0]).from_dict({**runs[0].to_dict(), "qrun_id": f"seed-{seed}", "seed": seed}))
    base = list(runs)
    for seed in args.seeds:          # every planned row again at this seed: a paired design
        runs += [type(r).from_dict({**r.to_dict(), "qrun_id": f"{r.qrun_id}-seed-{seed}", "seed": seed})
                 for r in base if r.seed != seed]
    return runs, params


def paired(rows: list[dict[str, Any]]) -> list[str]:
    """Each scheduler row against ``none`` at the same seed (same batches, same dropout masks):
    the mean difference in validation loss and PND errors over the seeds, its standard error and
    a paired t-test's two-sided p. Why paired: the seed moves every row alike (which batches come
    when), so the per-seed difference isolates the schedule from the seed's own effect."""
    from scipy import stats

    none = {r["seed"]: r for r in rows if r["scheduler"] == "none"}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["scheduler"] != "none" and r["seed"] in none:
            groups.setdefault((r["clock"], r["scheduler"]), []).append(r)
    out = []
    for (clock, sched), rs in groups.items():
        if len(rs) < 2:
            continue
        line = [f"{clock:>5} {sched:>5} n={len(rs)}:"]
        for key, fmt in (("val_loss", ".5f"), ("pnd_errors", ".1f")):
            d = np.array([r[key] - none[r["seed"]][key] for r in rs], dtype=float)
            p = stats.ttest_rel([r[key] for r in rs], [none[r["seed"]][key] for r in rs]).pvalue
            line.append(f"{key} vs none {d.mean():+{fmt}} +- {d.std(ddof=1) / np.sqrt(len(d)):{fmt}} "
                        f"(worse in {int((d > 0).sum())}/{len(d)}, paired t p={p:.3g})")
        out.append("  ".join(line))
    return out


def eval_pnd(model: Any, queries: list[str], prefix: str, p: np.ndarray, pos_q: np.ndarray,
             n: np.ndarray, neg_q: np.ndarray) -> int:
    """MSMARCO PND errors (cosine, ties are errors) of a query tower against the cached documents."""
    from embtune.evaluate.pnd_eval import score_triplets
    from embtune.train.query_tower import embed_queries

    model.eval()
    with torch.inference_mode():
        q = torch.cat([embed_queries(model, [prefix + t for t in queries[i:i + 64]])[0].float()
                       for i in range(0, len(queries), 64)]).numpy()
    counts = score_triplets(q, p, pos_q, n, neg_q, ["cos"])["cos"]
    return int(counts["errors"])


def lr_steps(run: Any, epochs: int) -> float:
    """sum of a(t)/a0 over the steps run: the run's length in full-rate-step equivalents."""
    from embtune.core.optim import epoch_lrs

    return sum(sum(epoch_lrs(1.0, run.scheduler, run.scheduler_unit, e, run.batches_per_epoch,
                             run.max_epochs)) for e in range(epochs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None, help="paths.processed of the preset (default: the preset's)")
    ap.add_argument("--preset", default="presets/demo.yaml")
    ap.add_argument("--model", default="all-minilm-l6-v2", help="a query_tuning.models name of the preset")
    ap.add_argument("--schedulers", nargs="+", default=SCHEDULERS, help="epoch clock")
    ap.add_argument("--step-schedulers", nargs="*", default=STEP_SCHEDULERS, help="step clock")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--batches-per-epoch", type=int, default=10)
    ap.add_argument("--max-epochs", type=int, default=10)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--noise-seeds", type=int, nargs="*", default=[], help="rerun 'none' at these seeds")
    ap.add_argument("--seeds", type=int, nargs="*", default=[],
                    help="rerun every row at these seeds too, and print each scheduler against none "
                         "at the same seed (paired)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print every epoch's validation line")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    from embtune.core.io import read_parquet
    from embtune.core.layout import Processed
    from embtune.evaluate.pnd_eval import grouped_triplets
    from embtune.models.embed_cache import EmbedCache, model_fingerprint
    from embtune.models.encoders import SentenceTransformerEncoder, resolve_encoder_path
    from embtune.train import query_tower as qt

    runs, params = plan(args)
    spec = runs[0].model
    data_dir = Path(args.data_dir) if args.data_dir else REPO / params["paths"]["processed"]
    tr, va, cols = qt.triplet_files(data_dir, "msmarco")
    train, val = qt.read_triplets(tr, cols), qt.read_triplets(va, cols)
    ts = grouped_triplets(read_parquet(Processed(data_dir).msmarco_split("eval"),
                                        "split-msmarco's eval split"))

    t0 = time.perf_counter()
    path = resolve_encoder_path(spec)       # as embtune.stages.tune_query.run_stage
    enc = SentenceTransformerEncoder(path, precision="fp32", max_seq_length=spec.get("max_seq_length"))
    enc.model.eval()
    for p in enc.model.parameters():
        p.requires_grad_(False)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-schedulers-") as cache_dir:
        docs = qt.DocSide(enc, EmbedCache(cache_dir, progress=False), model_fingerprint(path),
                          spec.get("doc_prefix", "") or "", 64)
        qprefix = spec.get("query_prefix", "") or ""
        p_emb, n_emb = docs.embed(ts.positives).numpy(), docs.embed(ts.negatives).numpy()
        pnd0 = eval_pnd(enc.model, ts.queries, qprefix, p_emb, ts.pos_query, n_emb, ts.neg_query)
        setup_s = time.perf_counter() - t0
        for run in runs:
            log = (lambda line, rid=run.qrun_id: print(f"  {rid}: {line}", flush=True)) if args.verbose \
                else (lambda _: None)
            res = qt.tune(run, train, val, docs, log=log)
            m, curve = res.metrics, res.curve
            pnd = eval_pnd(res.query_tower, ts.queries, qprefix, p_emb, ts.pos_query, n_emb, ts.neg_query)
            last = curve[-1]
            clock = run.scheduler_unit if run.scheduler != "none" else "-"
            rows.append({
                "qrun_id": run.qrun_id, "clock": clock, "scheduler": run.scheduler, "seed": run.seed,
                "epochs": m["epochs"], "best_epoch": m["best_epoch"], "stopped": m["stopped_reason"],
                "lr_factor_first": (last["lr"] or 0.0) / run.lr_effective if m["epochs"] else 1.0,
                "lr_factor_last": (last["lr_last"] or 0.0) / run.lr_effective if m["epochs"] else 1.0,
                "lr_steps": lr_steps(run, m["epochs"]), "lr_steps_to_best": lr_steps(run, m["best_epoch"]),
                "val_loss0": m["val_loss"][0], "val_loss": m["best_val_loss"],
                "val_errors0": m["val_errors"][0], "val_errors": m["best_val_errors"],
                "val_total": m["val_total"], "val_loss_curve": [round(v, 5) for v in m["val_loss"]],
                "val_errors_curve": m["val_errors"],
                "pnd_errors0": pnd0, "pnd_errors": pnd, "wall_s": round(m["wall_time_s"], 1)})
            if args.verbose:
                print(f"  {run.qrun_id}: done in {m['wall_time_s']:.0f} s", flush=True)
    r0 = rows[0]
    print(f"model {spec['name']}: {len(train)} train / {len(val)} val triplets, MSMARCO eval "
          f"{len(ts.queries)} queries ({len(ts.positives)} pos, {len(ts.negatives)} neg); lr "
          f"{runs[0].lr_effective:g}, batch {runs[0].batch_size} x {runs[0].batches_per_epoch} per epoch, "
          f"max_epochs {runs[0].max_epochs}, patience {runs[0].patience}; threads {args.threads}; "
          f"setup {setup_s:.0f} s")
    print(f"untuned: val loss {r0['val_loss0']:.5f}, val errors {r0['val_errors0']}/{r0['val_total']}, "
          f"MSMARCO PND errors {r0['pnd_errors0']}")
    head = (f"{'clock':>5} {'sched':>5} {'seed':>4} {'ep':>3} {'best':>4} {'stopped':>10} {'lr@stop':>13} "
            f"{'sum_lr':>6} {'val_loss':>8} {'d_loss':>8} {'val_err':>7} {'d_err':>5} {'pnd':>5} "
            f"{'d_pnd':>5} {'wall_s':>6}")
    print(head)
    for r in rows:
        print(f"{r['clock']:>5} {r['scheduler']:>5} {r['seed']:>4} {r['epochs']:>3} {r['best_epoch']:>4} "
              f"{r['stopped']:>10} {r['lr_factor_first']:>6.3f}..{r['lr_factor_last']:<5.3f} "
              f"{r['lr_steps']:>6.1f} {r['val_loss']:>8.5f} {r['val_loss'] - r['val_loss0']:>+8.5f} "
              f"{r['val_errors']:>7} {r['val_errors'] - r['val_errors0']:>+5} {r['pnd_errors']:>5} "
              f"{r['pnd_errors'] - r['pnd_errors0']:>+5} {r['wall_s']:>6}")
    print("lr@stop: a(t)/a0 at the first..last step of the last epoch run; sum_lr: sum of a(t)/a0 over "
          "the steps run; val_loss/val_err: the saved (best) checkpoint; d_*: vs the untuned encoder")
    for line in paired(rows):
        print(line)
    print(json.dumps({"runs": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
