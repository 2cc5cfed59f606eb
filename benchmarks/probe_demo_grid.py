"""Probe a variant of the demo's training grid in minutes, without re-running the pipeline: plan
it (the preset stack plus an overrides YAML), train the chosen methods' runs with the pipeline's
own ``embtune train-batch`` (one process per base model, ``--workers`` at a time) in a scratch
folder, then fit the laws with the pipeline's own analysis (``runs_table.collect`` ->
``fit_laws.fit_all``) and print, per method and law, whether the fit is trustworthy and why not.

Why: issue 26 asks for a demo grid whose Chinchilla fits are trustworthy. Each candidate grid
(learning rate, epochs, budgets, sizes) otherwise costs a whole ``make demo``; here only its
training runs are paid for, on the finished demo's base models and packed pairs.

Run from a repository where ``make demo`` has finished (it reads ``results/demo/base_models`` and
``data/processed/demo``)::

    .venv/bin/python benchmarks/probe_demo_grid.py --set probe.yaml --methods full --out /tmp/probe/x

``probe.yaml`` holds params keys layered over presets/demo.yaml, e.g. ``train: {max_epochs: 4.0}``.
Re-running with the same ``--out`` reuses every finished run whose identity is unchanged (the
batch stage's own reuse). Measured with it (docs/fidelity.md#P1-DEMO-GRID): see that row.

Other base models: set ``paths.results`` in ``probe.yaml`` to a folder whose ``base_models/<name>``
were built by ``embtune build-model`` (e.g. on ``benchmarks/make_probe_corpus.py``'s corpus).
``--eval-batches 8,64,256`` also re-scores every finished checkpoint's held-out loss with that many
candidates per batch (the pipeline's ``held_out_loss``) and fits each: does a harder held-out task
show the floor E that the training batch's does not?
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from embtune.core import run_identity
from embtune.core.codeversion import code_version
from embtune.plan.config import load_plan
from embtune.scaling.fit_laws import fit_all
from embtune.scaling.runs_table import build_table, collect


def members(runs: list[dict], out: Path) -> tuple[list[dict], dict]:
    """One model's runs as `embtune train-batch` members (scratch paths under ``out``)."""
    batch, runtime = [], {}
    for run in runs:
        rid = run["run_id"]
        batch.append({"run": run_identity.identity(run), "stage": str(out / "staged" / rid),
                      "checkpoint": str(out / "checkpoints" / rid), "previous": str(out / "runs" / rid),
                      "previous_tracking": str(out / "tracking" / rid)})
        runtime[rid] = run_identity.runtime(run)
    return batch, runtime


def train(by_model: dict[str, list[dict]], out: Path, workers: int) -> float:
    """Train every model's runs, ``workers`` batch processes at a time; seconds taken."""
    version, start = code_version("train"), time.time()
    queue = sorted(by_model.items(), key=lambda kv: -len(kv[1]))
    running: list[subprocess.Popen] = []
    while queue or running:
        while queue and len(running) < workers:
            model, runs = queue.pop(0)
            batch, runtime = members(runs, out)
            log = open(out / f"{model}.log", "w")  # noqa: SIM115 (closed with the process)
            running.append(subprocess.Popen(
                [str(Path(sys.executable).parent / "embtune"), "train-batch", "--batch-json", json.dumps(batch),
                 "--runtime-json", json.dumps(runtime), "--code-version", version, "--threads", "1",
                 "--no-progress", "--log-with", "none"], stdout=log, stderr=subprocess.STDOUT))
        time.sleep(0.5)
        for proc in [p for p in running if p.poll() is not None]:
            running.remove(proc)
            if proc.returncode:
                raise SystemExit(f"a training batch failed (exit {proc.returncode}): see {out}/*.log")
    for staged in sorted((out / "staged").iterdir()) if (out / "staged").is_dir() else []:
        final = out / "runs" / staged.name      # where the next probe reuses it from
        if final.exists():
            shutil.rmtree(final)
        final.parent.mkdir(exist_ok=True)
        staged.rename(final)
    return time.time() - start


def rescore(table, out: Path, run_data: dict[str, dict], sizes: list[int]) -> dict[int, list]:
    """{candidates per batch: held-out loss per table row (None for a run that did not train)}."""
    from embtune.models.embedder import load_embedder
    from embtune.train.loop import held_out_loss
    from embtune.train.pairs import open_pairs

    scores: dict[int, list] = {b: [] for b in sizes}
    val_sets: dict[tuple[str, int], object] = {}     # every run of a probe reads the same val pairs
    for rid, status in table.select(["run_id", "status"]).iter_rows():
        if status != "ok":
            for b in sizes:
                scores[b].append(None)
            continue
        t = run_data[rid]["train"]
        key = (run_data[rid]["data"]["train_dir"], t["context_length"])
        if key not in val_sets:
            val_sets[key] = open_pairs(key[0], "val", key[1])
        model = load_embedder(out / "runs" / rid / "trained", "cpu").model   # full model or LoRA, merged on load
        pad = int(model.config.pad_token_id or 0)
        for b in sizes:
            chunk = max(2 * b, t["gradcache_chunk"])       # one encoder pass per held-out batch
            scores[b].append(held_out_loss(model, val_sets[key], b, chunk, pad, t["pooling"], t["temperature"],
                                           "cpu", t["logit_scale"]))
    return scores


def report(fits: dict, metric: str) -> None:
    for method, laws in fits["laws"].items():
        for law, fit in laws.items():
            if not isinstance(fit, dict) or not ("params" in fit or "skipped" in fit):
                continue                         # n_rows, holdout_model, comparison
            if "skipped" in fit:
                print(f"{method}/{law}: not fitted ({fit['skipped']})")
                continue
            params_ = ", ".join(f"{k}={v:.3g}" for k, v in fit["params"].items())
            hold = (fit.get("holdout") or {}).get("rmse_log")
            print(f"{method}/{law} on {metric}: trustworthy={fit['trustworthy']} held-out RMSE(log)="
                  f"{hold if hold is None else round(hold, 4)}; {params_}")
            for issue in fit["trust_issues"]:
                print(f"    {issue}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", nargs="+", default=["params.yaml", "presets/demo.yaml"])
    ap.add_argument("--set", dest="overrides", default=None, help="a YAML file of params keys layered last")
    ap.add_argument("--methods", default="full", help="comma-separated methods to train and fit")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fit-loss", default=None, help="final_train_loss | val_loss (default: analyze.fit_loss)")
    ap.add_argument("--eval-batches", default="", help="e.g. 8,64,256: re-score held-out loss with that many "
                                                       "candidates per batch and fit each")
    args = ap.parse_args(argv)
    overrides = yaml.safe_load(Path(args.overrides).read_text()) if args.overrides else None
    params, plan = load_plan(args.preset, overrides)
    wanted = set(args.methods.split(","))
    runs = [r.to_dict() for r in plan.runs if r.method in wanted]
    by_model: dict[str, list[dict]] = {}
    for run in runs:
        by_model.setdefault(run["model"]["name"], []).append(run)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{len(runs)} runs of {sorted(wanted)} over {len(by_model)} models; trained in "
          f"{train(by_model, args.out, args.workers):.0f} s")
    metric = args.fit_loss or params["analyze"]["fit_loss"]
    found = [args.out / "runs" / r["run_id"] / "metrics.json" for r in runs]
    table = build_table(collect(None, [], [p for p in found if p.exists()]))
    cols = ["model", "budget", "steps", "D", "final_train_loss", "val_loss", "status"]
    for row in table.sort(["method", "model", "budget"]).select(["method", *cols]).iter_rows():
        print("  ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    holdout = params["analyze"]["holdout"]
    report(fit_all(table, metric=metric, n_boot=200, holdout=holdout), metric)
    sizes = [int(b) for b in args.eval_batches.split(",") if b]
    if sizes:
        import polars as pl

        for b, losses in rescore(table, args.out, {r["run_id"]: r for r in runs}, sizes).items():
            scored = table.with_columns(pl.Series("val_loss", losses, dtype=pl.Float64))
            print(f"== held-out loss with {b} candidates per batch (chance ln {b} = {math.log(b):.2f})")
            for row in scored.sort(["method", "model", "budget"]).select(["method", "model", "D", "val_loss"]).iter_rows():
                print("  ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
            report(fit_all(scored, metric="val_loss", n_boot=200, holdout=holdout), f"val_loss@{b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
