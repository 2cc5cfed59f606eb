"""The whole study's cost before it runs: GPU-hours of training, MTEB evaluation, query
tuning and PND evaluation at a throughput per model size, and the disk it will write.

Why: training alone, at one throughput for every size, misses much of a study's time (small models
run far below a GPU's peak) and says nothing of the run folders, which alone are terabytes.

**Throughput per model size**: ``profiles/default/throughput.yaml`` holds ``peak_flops_per_gpu``
and ``mfu_curve``, [non-embedding parameters, MFU] points, log-linear in the parameters between
them and flat outside. The shipped curve is a documented default (small models are
overhead-bound: 5 % at 1e7 parameters, 15 % at 1e8, 30 % at 1e9, 40 % at 3e9 of an A100's dense
bf16 peak; 1e9 matches the calibrated 7.8e13 FLOP/s) until ``make gpu-check`` measures one
(benchmarks/gpu_check.py writes the same keys). Training is priced both ways: at the calibrated
single throughput (what the SLURM time requests use, ``embtune.plan.cost``) and on the curve.

**Evaluation and query tuning** are priced as forward (2·N per token) and training (6·N per token)
FLOPs over planning constants of this module, each an order-of-magnitude reading of the data
(stated where they are defined), so the totals are estimates to plan with, not measurements.

**Disk**: every planned run's model folder in fp32 (LoRA: its adapter plus the merged folder),
its checkpoint while it runs (weights + AdamW moments; deleted when the run ends), each query run's
tuned tower, and a DVC cache holding one more copy of what ``dvc commit`` records. A warning names
the default DVC remote when it lies under ``$HOME`` (.dvc/config).
"""

from __future__ import annotations

import configparser
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from embtune.models import methods
from embtune.models.flops import ParamCounts
from embtune.models.memory import trainable, vocab_size
from embtune.plan.cost import SECONDS_PER_HOUR, THROUGHPUT_FILE, hardware_per_token, two_pass
from embtune.runconfig import RunConfig

#: Texts an MTEB task embeds (test splits of the paper's tasks: 1e3-1e5; SciFact's corpus 5e3).
MTEB_TEXTS_PER_TASK = 20_000
#: Tokens per text in the query-tuning and PND data (MSMARCO passages, XNLI sentences, arXiv titles).
TOKENS_PER_TEXT = 64
#: Texts one PND evaluation embeds: MSMARCO 7,000 samples with their positives and negatives
#: (~360k triplets share ~1.5e5 texts), XNLI 2 x 5,010 sentences in 15 languages, arXiv levels.
PND_TEXTS_PER_EVAL = 400_000
#: Paper 2's encoders: non-embedding and total parameters (e5-small: 12 layers x 384; multilingual
#: vocabularies of 250k tokens make the embedding table most of the folder).
QUERY_PARAMS, QUERY_TOTAL_PARAMS = 2.2e7, 1.2e8
DEFAULT_PEAK = 3.12e14
DEFAULT_CURVE = ((1e7, 0.05), (1e8, 0.15), (1e9, 0.30), (3e9, 0.40))
#: Seconds every optimizer step costs beyond its FLOPs (launches, optimizer, GradCache bookkeeping,
#: data): 8.8M of the grid's 9.95M steps are on the 14m-70m models, where this, not FLOPs, is the
#: time. The low end of the 0.1-1 s range of a step's fixed cost; `step_overhead_seconds` in
#: throughput.yaml overrides it once measured.
DEFAULT_STEP_OVERHEAD_S = 0.1
#: Minutes a job spends before and after its work: imports, loading the model and data, saving.
#: Planning constants of one order of magnitude, the same in the plan and the SLURM requests.
TRAIN_JOB_MIN, TUNE_JOB_MIN, PND_JOB_MIN = 5.0, 5.0, 10.0
MTEB_JOB_MIN, MTEB_RUN_MIN = 10.0, 2.0          # a batch job once; each checkpoint it loads


def mfu_curve(path: str | Path | None = None) -> tuple[float, tuple[tuple[float, float], ...], str]:
    """(peak FLOP/s per GPU, [(parameters, MFU)] sorted, source) from throughput.yaml."""
    from embtune.plan.config import read_yaml

    file = Path(path) if path is not None else THROUGHPUT_FILE
    data = read_yaml(file) if file.exists() else {}
    points = data.get("mfu_curve")
    if not points:
        return float(data.get("peak_flops_per_gpu") or DEFAULT_PEAK), DEFAULT_CURVE, "default MFU curve"
    curve = tuple(sorted((float(n), float(m)) for n, m in points))
    if any(n <= 0 or not 0 < m <= 1 for n, m in curve):
        raise ValueError(f"{file}: mfu_curve: expected [parameters > 0, MFU in (0, 1]] points, got {points}")
    return float(data.get("peak_flops_per_gpu") or DEFAULT_PEAK), curve, f"{file.name}: mfu_curve"


def step_overhead_seconds(path: str | Path | None = None) -> float:
    """The per-step fixed cost of throughput.yaml (``step_overhead_seconds``), else the default."""
    from embtune.plan.config import read_yaml

    file = Path(path) if path is not None else THROUGHPUT_FILE
    value = (read_yaml(file) if file.exists() else {}).get("step_overhead_seconds", DEFAULT_STEP_OVERHEAD_S)
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{file}: step_overhead_seconds: expected a number of seconds >= 0, got {value!r}")
    return float(value)


class JobHours:
    """GPU-hours of each kind of job, from ONE throughput model: FLOPs at the per-size MFU curve
    (throughput.yaml), a fixed cost per optimizer step, and a job's start-up. `embtune plan` sums
    these; the SLURM time requests (workflow/rules/resources.smk) are the same hours with head-room,
    so the plan and what the cluster is asked for cannot drift apart."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.peak, self.curve, self.source = mfu_curve(path)
        self.step_s = step_overhead_seconds(path)

    def rate(self, n_params: float) -> float:
        """Sustained FLOP/s of one GPU for a model of ``n_params``."""
        return flops_per_second_at(n_params, self.peak, self.curve)

    def train(self, r: Mapping[str, Any]) -> float:
        """One training run (its JSON form): hardware FLOPs at its size's rate + steps x overhead."""
        n = float(r["planned"]["n_total"])
        steps = float(r["planned"].get("steps") or 0.0)
        return (_hardware_flops(r) / self.rate(n) + steps * self.step_s) / SECONDS_PER_HOUR + TRAIN_JOB_MIN / 60

    def mteb_run(self, r: Mapping[str, Any], params: Mapping[str, Any]) -> float:
        """One checkpoint's MTEB evaluation: forward FLOPs over the tasks' texts + loading it."""
        ev = params.get("evaluate", {}).get("mteb", {})
        length = int(ev.get("max_length") or r["train"]["context_length"])
        n = float(r["planned"]["n_total"])
        flops = 2 * n * len(ev.get("tasks") or []) * MTEB_TEXTS_PER_TASK * length
        return flops / self.rate(n) / SECONDS_PER_HOUR + MTEB_RUN_MIN / 60

    def mteb_job(self, runs: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> float:
        return MTEB_JOB_MIN / 60 + sum(self.mteb_run(r, params) for r in runs)

    def tune(self, q: Mapping[str, Any]) -> float:
        """One query run at its planned maximum (early stopping usually ends sooner): query tower
        forward + backward, document tower forward, per step; plus the step overhead."""
        steps = int(q["max_epochs"]) * int(q["batches_per_epoch"])
        per_sample = (6 + 2 * 2 * (3 if q.get("tune_doc_tower") else 1)) * QUERY_PARAMS * TOKENS_PER_TEXT
        flops = steps * int(q["batch_size"]) * per_sample
        return (flops / self.rate(QUERY_PARAMS) + steps * self.step_s) / SECONDS_PER_HOUR + TUNE_JOB_MIN / 60

    def pnd(self) -> float:
        """One PND evaluation of an encoder (embeddings cached per model)."""
        flops = 2 * QUERY_PARAMS * PND_TEXTS_PER_EVAL * TOKENS_PER_TEXT
        return flops / self.rate(QUERY_PARAMS) / SECONDS_PER_HOUR + PND_JOB_MIN / 60


def flops_per_second_at(n_params: float, peak: float, curve: Sequence[tuple[float, float]]) -> float:
    """Sustained FLOP/s of one GPU for a model of ``n_params``: peak x MFU(log-linear in N)."""
    x = math.log10(max(n_params, 1.0))
    pts = [(math.log10(n), m) for n, m in curve]
    if x <= pts[0][0]:
        return peak * pts[0][1]
    for (x0, m0), (x1, m1) in zip(pts, pts[1:]):
        if x <= x1:
            return peak * (m0 + (m1 - m0) * (x - x0) / (x1 - x0))
    return peak * pts[-1][1]


def _hardware_flops(r: Mapping[str, Any]) -> float:
    """Hardware FLOPs of one planned run from its JSON form: what :func:`embtune.plan.cost.run_cost`
    computes from the typed config (same counts, GradCache passes and recomputation)."""
    p, t = r["planned"], r["train"]
    counts = ParamCounts(int(p["n_total"]), int(p["n_forward"]), int(p["n_backward"]), int(p["n_update"]))
    passes = two_pass(int(t["batch_size"]), int(t["gradcache_chunk"]))
    return hardware_per_token(counts, str(r["method"]), gradcache_two_pass=passes,
                              checkpointing=bool(t["gradient_checkpointing"])) * float(p["tokens"])


def gpu_hours(runs: Sequence[Mapping[str, Any]], mteb_ids: Sequence[str], qruns: Sequence[Mapping[str, Any]],
              params: Mapping[str, Any], fps: float, mteb_batches: int | None = None) -> dict[str, float]:
    """GPU-hours per part of the study, each job priced by :class:`JobHours` (the SLURM requests'
    model); training also at the single calibrated throughput, as `train.gpu_hours_cap` reads it."""
    model = JobHours()
    flops = [_hardware_flops(r) for r in runs]
    out = {"training (calibrated)": sum(flops) / fps / SECONDS_PER_HOUR}
    out["training"] = sum(model.train(r) for r in runs)
    by_id = {r["run_id"]: r for r in runs}
    evaluated = [by_id[rid] for rid in mteb_ids if rid in by_id]
    per_job = int((params.get("evaluate", {}).get("mteb", {}) or {}).get("runs_per_job", 8) or 1)
    jobs = mteb_batches if mteb_batches is not None else math.ceil(len(evaluated) / max(1, per_job))
    out["MTEB evaluation"] = jobs * MTEB_JOB_MIN / 60 + sum(model.mteb_run(r, params) for r in evaluated)
    out["query tuning"] = sum(model.tune(q) for q in qruns)
    n_evals = len(qruns) + len((params.get("query_tuning") or {}).get("models") or [])
    out["PND evaluation"] = n_evals * model.pnd()
    return out


def disk_bytes(runs: Sequence[Mapping[str, Any]], qruns: Sequence[Mapping[str, Any]],
               params: Mapping[str, Any]) -> dict[str, float]:
    """Bytes the study writes: run folders (fp32), the largest checkpoint and all of them at once,
    query towers, and the DVC cache's copy."""
    tok = (params.get("tokenizer") or {}).get("vocab_size")
    folders = ckpt_max = ckpt_all = 0.0
    for r in runs:
        run = RunConfig.from_dict(r)
        vocab = vocab_size(run.model, tok)
        full = 4.0 * (float(run.planned.counts.n_total) + vocab * int(run.model.hidden_size))
        adapter = methods.get(run.method).merged_export   # trained/ holds the adapter, trained_merged/ the rest
        folders += full + (4.0 * float(run.planned.counts.n_update) if adapter else 0.0)
        ck = full + 8.0 * trainable(run, vocab)
        ckpt_max, ckpt_all = max(ckpt_max, ck), ckpt_all + ck
    query = 4.0 * QUERY_TOTAL_PARAMS * len(qruns)
    return {"run folders (fp32)": folders, "query-tuned towers": query,
            "checkpoints (largest one)": ckpt_max, "checkpoints (all at once, upper bound)": ckpt_all,
            "DVC cache (a copy of the folders)": folders + query}


def dvc_remote_warning(repo: Path, home: Path | None = None) -> str | None:
    """A warning when the default DVC remote (.dvc/config, .dvc/config.local) is under $HOME."""
    cfg = configparser.ConfigParser()
    cfg.read([repo / ".dvc" / "config", repo / ".dvc" / "config.local"])
    name = cfg.get("core", "remote", fallback=None)
    url = cfg.get(f"'remote \"{name}\"'", "url", fallback=None) if name else None
    if not url or "://" in url:
        return None
    path = Path(os.path.expanduser(url))
    path = path if path.is_absolute() else (repo / ".dvc" / path)
    home = (home or Path.home()).resolve()
    if path.resolve().is_relative_to(home):
        return (f"warning: the default DVC remote {name!r} ({url}) lies under $HOME ({home}): point it at "
                f"shared storage before the study (slurm/README.md, 'Remotes')")
    return None


def _size(n: float) -> str:
    for unit, f in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.3g} B"


def study_lines(runs: Sequence[Mapping[str, Any]], mteb_ids: Sequence[str], qruns: Sequence[Mapping[str, Any]],
                params: Mapping[str, Any], fps: float, repo: Path) -> list[str]:
    hours = gpu_hours(runs, mteb_ids, qruns, params, fps)
    _, _, source = mfu_curve()
    lines = [f"Study GPU-hours ({len(runs)} training runs, {len(mteb_ids)} MTEB evaluations, {len(qruns)} "
             f"query-tuning runs; calibrated {fps:.3g} FLOP/s, else {source}):"]
    total = sum(v for k, v in hours.items() if k != "training (calibrated)")
    lines += [f"  {k:<24} {v:>10.4g}" for k, v in hours.items()]
    lines.append(f"  {'total':<24} {total:>10.4g}   (FLOPs at the MFU curve + {step_overhead_seconds():g} s a step "
                 "+ job start-up; the SLURM requests are these hours x 1.3 + the time-limit signal's lead)")
    lines.append("  Paper 1 reports 30-40k A100-hours. This plan prices only the final grid's runs at the curve's "
                 "MFU; it leaves out what a study also spends: runs repeated after failures or preemption, the "
                 "searches before the final grid (App. D), evaluation at full MTEB size rather than "
                 f"{MTEB_TEXTS_PER_TASK:,} texts a task, and code slower than the curve.")
    lines.append("Disk the study writes:")
    lines += [f"  {k:<40} {_size(v):>10}" for k, v in disk_bytes(runs, qruns, params).items()]
    warning = dvc_remote_warning(repo)
    return lines + ([warning] if warning else [])
