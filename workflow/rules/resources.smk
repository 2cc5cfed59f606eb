# Per-job resources of the heavy (SLURM-submitted) rules, as functions of (wildcards, attempt).
#
# Included from the Snakefile after common.smk (they read RUNS and `config` at call time):
#
#     include: "workflow/rules/resources.smk"
#     (in rule train_contrastive)
#         resources: **TRAIN_RESOURCES      # = runtime=train_runtime, mem_mb=train_mem_mb
#
# GPU count/type, cpus_per_gpu and partition are cluster facts and live in the slurm profile
# (slurm/config.yaml, set-resources); what depends on the *run* lives here. Every function grows
# linearly with `attempt`, so a job killed for its time or memory limit comes back bigger under
# `--retries` (the slurm profile sets retries: 2). A training job re-submitted after a timeout or
# a preemption resumes from results/.../checkpoints/<run_id> (embtune train --checkpoint-dir).
#
# Calibration (read when the DAG is built):
#   throughput                 hardware FLOP/s one GPU sustains: profiles/default/throughput.yaml,
#                              or $EMBTUNE_FLOPS_PER_SECOND; read by embtune.plan.cost.flops_per_second,
#                              the same reader `embtune plan` uses for the study's GPU-hours
#   EMBTUNE_MAX_RUNTIME_MIN    cap on any runtime request (default 7 days), e.g. the partition's
#                              MaxTime
#   EMBTUNE_MAX_MEM_MB         cap on any memory request (default: none), e.g. a node's RealMemory
#   EMBTUNE_SLURM_SIGNAL_SECONDS  how long before its time limit SLURM sends a training job SIGUSR1
#                              (default 300; --signal, see `train_slurm_extra`)

import math as _math
import os as _os
import signal as _signal

from embtune.plan import cost as _cost
from embtune.plan import study_cost as _study_cost
from embtune.plan import gpus as _gpus

try:
    FLOPS_PER_SECOND = _cost.flops_per_second()  # also a param of `rule plan` (analyze.smk)
except _cost.CostError as _err:
    raise WorkflowError(str(_err)) from None
# Each training run's GPU class and GradCache chunk from its peak-memory estimate (embtune.plan.gpus,
# classes: profiles/default/gpu_classes.yaml); a run that fits no class stops the workflow here.
try:
    GPU_CLASSES = _gpus.read_classes()
    GPU_FITS = _gpus.check(list(RUN_CONFIGS.values()), config, GPU_CLASSES)
except _gpus.GpuClassError as _err:
    raise WorkflowError(str(_err)) from None
_MAX_RUNTIME_MIN = int(_os.environ.get("EMBTUNE_MAX_RUNTIME_MIN", str(7 * 24 * 60)))
_MAX_MEM_MB = int(_os.environ.get("EMBTUNE_MAX_MEM_MB", "0")) or None
# One throughput model for `embtune plan` and these requests (embtune.plan.study_cost.JobHours: FLOPs
# at the per-size MFU curve, a fixed cost per step, a job's start-up): a request is the planned
# hours x 1.3 head-room (held-out loss, I/O, a slower node), times `attempt`, so the plan and the
# cluster's bill agree within 1.5x (tests/unit/core/test_study_cost.py).
_RUNTIME_SAFETY = 1.3
_JOB_HOURS = _study_cost.JobHours()
_SIGNAL_SECONDS = int(_os.environ.get("EMBTUNE_SLURM_SIGNAL_SECONDS", "300"))


def _minutes(value, attempt):
    return int(min(_MAX_RUNTIME_MIN, _math.ceil(value) * max(1, int(attempt))))


def _mb(value, attempt):
    mb = int(_math.ceil(value)) * max(1, int(attempt))
    return min(mb, _MAX_MEM_MB) if _MAX_MEM_MB else mb


def job_attempt(wildcards, attempt):
    """The job's attempt (1 .. retries + 1), for `embtune train/tune-query --attempt`: out of
    memory or a time limit is a failure record only on the last one (embtune.train.failures)."""
    return int(attempt)


def job_retries(wildcards, attempt):
    """Snakemake's --retries as the controller sees it, for `--retries` of the same stages. The
    jobs it spawns (SLURM, remote) run with --retries 0, so the controller's value travels in the
    environment they inherit (set at the controller's first call, when its settings exist). A
    resource, not a param: changing --retries re-runs nothing."""
    if _RETRIES_ENV not in _os.environ:
        settings = workflow.execution_settings
        _os.environ[_RETRIES_ENV] = str(int(settings.retries or 0) if settings else 0)
    return int(_os.environ[_RETRIES_ENV])


_RETRIES_ENV = "EMBTUNE_SNAKEMAKE_RETRIES"  # not an `envvars:` entry: the controller sets it


def _run(wildcards):
    """The run config of a training run from common.smk's RUNS (keyed by run id)."""
    run_id = wildcards.get("run") or wildcards.get("run_id")
    try:
        return RUNS[run_id]
    except (NameError, KeyError, TypeError):
        return None


def _n_params(run):
    if run is None:
        return 0
    planned = run.get("planned") or {}
    return int(planned.get("n_total") or 0)


def train_runtime(wildcards, attempt):
    """Minutes for `train_contrastive`: the run's planned hours (its hardware FLOPs at its size's
    rate, its steps' fixed cost, start-up: embtune.plan.study_cost.JobHours.train) x 1.3, + the lead of
    the time-limit signal, times `attempt`."""
    run = _run(wildcards)
    hours = _JOB_HOURS.train(run) if run is not None else _study_cost.TRAIN_JOB_MIN / 60
    return _minutes(_SIGNAL_SECONDS / 60.0 + _RUNTIME_SAFETY * hours * 60.0, attempt)


def signal_option(runtime_min):
    """`sbatch --signal=USR1@S`: SLURM sends SIGUSR1 to the job's steps S seconds before its time
    limit, so `embtune train` finishes its step and checkpoints (an earlier attempt exits 75 and is
    retried; the last writes a `time_limit` record and exits 0: embtune.train.failures). Without
    it the limit itself kills the job: SIGTERM to the batch step too, whose `srun` then SIGKILLs the
    training at once, and the run leaves no record. No `B:` prefix: that would signal only the
    batch shell (the executor's own snakemake), never the training. USR1, not TERM: the signal
    reaches every process of the step, the job step's own Snakemake too, which on SIGTERM fails
    the job after it ends (measured: the record is then deleted as a failed job's output); that
    Snakemake ignores SIGUSR1 (below). S is the configured lead, at most a quarter of a short
    request (SLURM may signal up to 60 s early), so the run starts first."""
    return f"--signal=USR1@{max(1, min(_SIGNAL_SECONDS, int(runtime_min) * 60 // 4))}"


if not workflow.is_main_process:
    # The job step's Snakemake (a SLURM job runs its job through a Snakemake of its own). SIGUSR1,
    # the time-limit warning above, would kill it (the default action); ignored here, and by the
    # rule's shell that inherits it, until `embtune train` installs its own handler.
    _signal.signal(_signal.SIGUSR1, _signal.SIG_IGN)


def train_slurm_extra(wildcards, attempt):
    """`slurm_extra` of `train_contrastive`: the time-limit signal (`signal_option`)."""
    return signal_option(train_runtime(wildcards, attempt))


def train_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `train_contrastive`: 4 GB + 8 bytes/parameter (fp32 load + state-dict
    save), times `attempt`."""
    return _mb(4096 + _n_params(_run(wildcards)) * 8 / 2**20, attempt)


def eval_mteb_runtime(wildcards, attempt):
    """Minutes for `evaluate_mteb` (one run a job): JobHours.mteb_job x 1.3, times `attempt`."""
    run = _run(wildcards)
    return _minutes(_RUNTIME_SAFETY * 60.0 * _JOB_HOURS.mteb_job([run] if run else [], config), attempt)


def eval_mteb_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `evaluate_mteb`: 8 GB + 8 bytes/parameter, times `attempt`."""
    return _mb(8192 + _n_params(_run(wildcards)) * 8 / 2**20, attempt)


def _batch_runs(wildcards):
    return [RUNS.get(run) for run in MTEB_BATCHES.get(wildcards.get("batch"), [])]


def eval_mteb_batch_runtime(wildcards, attempt):
    """Minutes for `evaluate_mteb_batch`: start-up once + each checkpoint's evaluation
    (JobHours.mteb_job) x 1.3, times `attempt`."""
    runs = [r for r in _batch_runs(wildcards) if r is not None]
    return _minutes(_RUNTIME_SAFETY * 60.0 * _JOB_HOURS.mteb_job(runs, config), attempt)


def eval_mteb_batch_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `evaluate_mteb_batch`: one checkpoint at a time, so the largest run's
    8 GB + 8 bytes/parameter, times `attempt`."""
    return _mb(8192 + max([_n_params(r) for r in _batch_runs(wildcards)] or [0]) * 8 / 2**20, attempt)


def _query_run(wildcards=None):
    """The query run's config (common.smk's QRUNS), else the query-tuning defaults."""
    qt = config.get("query_tuning", {}).get("defaults", {})
    try:
        qt = QRUNS[(wildcards.get("qmodel"), wildcards.get("qrun"))]
    except (NameError, KeyError, TypeError, AttributeError):
        pass
    return {"max_epochs": 100, "batches_per_epoch": 1000, "batch_size": 14, **qt}


def tune_runtime(wildcards, attempt):
    """Minutes for `tune_query`: the query run's planned maximum (JobHours.tune: its steps' FLOPs
    and fixed cost; early stopping usually ends sooner) x 1.3, times `attempt`."""
    return _minutes(_RUNTIME_SAFETY * 60.0 * _JOB_HOURS.tune(_query_run(wildcards)), attempt)


def tune_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `tune_query`: 8 GB, times `attempt`."""
    return _mb(8192, attempt)


def eval_pnd_runtime(wildcards, attempt):
    """Minutes for `evaluate_pnd_base` / `evaluate_pnd_query` (embeddings are cached per model):
    JobHours.pnd x 1.3, times `attempt`."""
    return _minutes(_RUNTIME_SAFETY * 60.0 * _JOB_HOURS.pnd(), attempt)


def eval_pnd_mem_mb(wildcards, attempt):
    """Host RAM (MB) for the PND evaluations (XNLI all-pairs tables): 16 GB, times `attempt`."""
    return _mb(16384, attempt)


def eval_runtime(wildcards, attempt):
    """Minutes for any evaluation rule: `evaluate_mteb` (wildcard `run`) or the PND ones."""
    if _run(wildcards) is not None:
        return eval_mteb_runtime(wildcards, attempt)
    return eval_pnd_runtime(wildcards, attempt)


def eval_mem_mb(wildcards, attempt):
    """Host RAM (MB) for any evaluation rule: `evaluate_mteb` (wildcard `run`) or the PND ones."""
    if _run(wildcards) is not None:
        return eval_mteb_mem_mb(wildcards, attempt)
    return eval_pnd_mem_mb(wildcards, attempt)


# Scattered BGE preparation (data.smk: bge_spill / bge_sort / bge_shards, N parts each). Rate:
# the one-process stage takes ~17 s CPU per 100K pairs (issue 17); FlagEmbedding records with
# their negatives are >= 1 KB each, so >= ~6 MB of input per second for all steps together.
_BGE_BYTES_PER_SECOND = 6e6


def _bge_part_bytes():
    """This part's share of the BGE input bytes (0 while the raw files are not there yet)."""
    files = [f for f in expand_sources(config["data"]["bge"]["files"]) if _os.path.isfile(f)]
    return sum(_os.path.getsize(f) for f in files) / config["data"]["bge"]["parts"]


def bge_part_runtime(wildcards, attempt):
    """Minutes for one part of a scattered BGE step: 20 min + 2x its input share at the
    one-process rate of all steps together (each step does a fraction of it), times `attempt`."""
    return _minutes(20 + _RUNTIME_SAFETY * _bge_part_bytes() / _BGE_BYTES_PER_SECOND / 60.0, attempt)


def bge_gather_runtime(wildcards, attempt):
    """Minutes for the gather `prepare_bge`: it hard-links the shards (seconds), but copies them
    where the filesystem cannot link: 20 min + the whole input at 100 MB/s, times `attempt`."""
    return _minutes(20 + _bge_part_bytes() * config["data"]["bge"]["parts"] / 100e6 / 60.0, attempt)


def bge_sort_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `bge_sort`: its key range is sorted in slices of 256 MB of Arrow data
    (embtune.data.bge_scatter.SORT_SLICE_BYTES; sort indices, dedup and the slice's copy), 6 GB."""
    return _mb(6144, attempt)


def bge_shards_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `bge_shards`: one shard in memory as Python strings, token ids and the
    parquet frame: 4 GB + 4 KB per shard row, times `attempt`."""
    return _mb(4096 + config["data"]["bge"]["shard_rows"] * 4 / 1024, attempt)


def _escalated(wildcards, attempt):
    """(GPU class, chunk) of this attempt (embtune.plan.gpus.escalate: the fit, then half the chunk,
    then the next larger class, ...), or (None, None) for a run without a fit."""
    fit = GPU_FITS.get(wildcards.run)
    return _gpus.escalate(fit, GPU_CLASSES, attempt) if fit is not None else (None, None)


def train_gradcache_chunk(wildcards, attempt):
    """Sequences per GradCache chunk: the largest (at most train.gradcache_chunk) that fits the
    run's GPU class (embtune.plan.gpus), halved on retries (`_escalated`). A resource, not a param: it
    changes no result (GradCache is exact), so it must not re-run anything (embtune.core.run_identity);
    each attempt's value reaches the run's manifest (run.train.gradcache_chunk)."""
    chunk = _escalated(wildcards, attempt)[1]
    return int(chunk) if chunk else 0


def _class_resource(key):
    def value(wildcards, attempt):
        gpu_class = _escalated(wildcards, attempt)[0]
        return (gpu_class.resources().get(key) or "") if gpu_class is not None else ""

    value.__name__ = f"train_{key}"
    return value


def train_gpu_mem_mb(wildcards):
    """The run's peak GPU-memory estimate in MB (embtune.models.memory; informational)."""
    fit = GPU_FITS.get(wildcards.run)
    return int(_math.ceil(fit.estimate.peak / 2**20)) if fit is not None else 0


# What the rules splice in with `resources: **TRAIN_RESOURCES` etc. The GPU class's selector
# (gpu_model or constraint; the slurm profile's EMBTUNE_SLURM_GPU_MODEL overrides gpu_model).
_CLASS_KEYS = sorted({k for c in GPU_CLASSES.classes for k in c.resources()})
TRAIN_RESOURCES = {
    "runtime": train_runtime,
    "slurm_extra": train_slurm_extra,
    "mem_mb": train_mem_mb,
    "gradcache_chunk": train_gradcache_chunk,
    "gpu_mem_mb": train_gpu_mem_mb,
    "attempt": job_attempt,
    "retries": job_retries,
    **{k: _class_resource(k) for k in _CLASS_KEYS},
}


class _MemberWildcards(dict):
    """A training batch's member as the per-run resource functions read their wildcards."""

    __getattr__ = dict.__getitem__


def _train_members(wildcards):
    return [_MemberWildcards(run=run) for run in TRAIN_BATCHES.get(wildcards.get("batch"), [])]


def _largest_member(wildcards):
    """The member with the largest peak-memory estimate: its GPU class serves the whole batch."""
    members = _train_members(wildcards)
    peak = lambda m: GPU_FITS[m.run].estimate.peak if m.run in GPU_FITS else 0
    return max(members, key=peak) if members else _MemberWildcards(run=None)


def train_batch_runtime(wildcards, attempt):
    """Minutes for `train_batch`: its members' `train_runtime`s one after another, times `attempt`."""
    return _minutes(sum(train_runtime(m, 1) for m in _train_members(wildcards)), attempt)


def train_batch_slurm_extra(wildcards, attempt):
    """`slurm_extra` of `train_batch`: the time-limit signal (`signal_option`)."""
    return signal_option(train_batch_runtime(wildcards, attempt))


def train_batch_mem_mb(wildcards, attempt):
    """Host RAM (MB) for `train_batch`: its largest member's `train_mem_mb` (one run at a time)."""
    return max([train_mem_mb(m, attempt) for m in _train_members(wildcards)] or [_mb(4096, attempt)])


def _batch_class_resource(key):
    per_run = _class_resource(key)

    def value(wildcards, attempt):
        return per_run(_largest_member(wildcards), attempt)

    value.__name__ = f"train_batch_{key}"
    return value


TRAIN_BATCH_RESOURCES = {
    "runtime": train_batch_runtime,
    "slurm_extra": train_batch_slurm_extra,
    "mem_mb": train_batch_mem_mb,
    "gpu_mem_mb": lambda wildcards: train_gpu_mem_mb(_largest_member(wildcards)),
    "attempt": job_attempt,
    "retries": job_retries,
    **{k: _batch_class_resource(k) for k in _CLASS_KEYS},
}
QUERY_RESOURCES = {"runtime": tune_runtime, "mem_mb": tune_mem_mb, "attempt": job_attempt, "retries": job_retries}


def _query_members(wildcards):
    members = QUERY_BATCHES.get(wildcards.get("qbatch"), [])
    return [_MemberWildcards(qmodel=model, qrun=qrun) for model, qrun in members]


def tune_batch_runtime(wildcards, attempt):
    """Minutes for `tune_query_batch`: its members' `tune_runtime`s one after another, times `attempt`."""
    return _minutes(sum(tune_runtime(m, 1) for m in _query_members(wildcards)), attempt)


QUERY_BATCH_RESOURCES = {**QUERY_RESOURCES, "runtime": tune_batch_runtime}
EVAL_RESOURCES = {"runtime": eval_runtime, "mem_mb": eval_mem_mb}
EVAL_MTEB_BATCH_RESOURCES = {"runtime": eval_mteb_batch_runtime, "mem_mb": eval_mteb_batch_mem_mb}

BGE_SPILL_RESOURCES = {"runtime": bge_part_runtime, "mem_mb": lambda wildcards, attempt: _mb(4096, attempt)}
BGE_SORT_RESOURCES = {"runtime": bge_part_runtime, "mem_mb": bge_sort_mem_mb}
BGE_SHARDS_RESOURCES = {"runtime": bge_part_runtime, "mem_mb": bge_shards_mem_mb}
BGE_GATHER_RESOURCES = {"runtime": bge_gather_runtime}
