"""GPU classes of the cluster, and the one each training run asks for.

Why: a request for "any GPU" lets a run needing ~50 GB land on a 40 GB card and fail after
queueing. The classes a site offers are a runtime fact, like the throughput,
so they live with the Snakemake profiles: ``profiles/default/gpu_classes.yaml`` (or the file
``$EMBTUNE_GPU_CLASSES`` names), read only here. Each class has a ``name``, ``memory_gib`` and how
SLURM selects it: ``gpu_model`` (a gres type: the executor requests ``--gpus=<model>:N``) or
``constraint`` (a node feature: ``--constraint``); ``usable_fraction`` of a card's memory is what
a run may plan to use (CUDA context, allocator fragmentation).

Per run (:func:`fit`): the smallest class whose usable memory holds the run's peak estimate
(``embtune.models.memory``) at its configured GradCache chunk; the chunk it then runs with is the
largest (at most the configured one) that fits that class. A run that does not fit the largest
class even at one sequence per chunk is refused at plan time (:func:`check`: ``embtune plan``
and the workflow's validation exit 2) with the run, its estimate and the largest class.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtune.models import memory
from embtune.models.run_spec import TrainingRun

CLASSES_ENV = "EMBTUNE_GPU_CLASSES"
#: profiles/default/ of the checkout, next to throughput.yaml.
CLASSES_FILE = Path(__file__).resolve().parents[3] / "profiles" / "default" / "gpu_classes.yaml"
GIB = 2**30
SELECTORS = ("gpu_model", "constraint")


class GpuClassError(ValueError):
    """A GPU class file that cannot be used, or a run that fits no class."""


@dataclass(frozen=True)
class GpuClass:
    name: str
    memory_gib: float
    gpu_model: str | None = None
    constraint: str | None = None

    def resources(self) -> dict[str, str]:
        """The Snakemake resources that select this class (slurm executor plugin)."""
        return {k: v for k, v in (("gpu_model", self.gpu_model), ("constraint", self.constraint)) if v}


@dataclass(frozen=True)
class Classes:
    classes: tuple[GpuClass, ...]        # smallest memory first
    usable_fraction: float
    source: str

    def usable_bytes(self, c: GpuClass) -> float:
        return c.memory_gib * GIB * self.usable_fraction


def read_classes(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Classes:
    """The declared classes, smallest first (``$EMBTUNE_GPU_CLASSES`` or the profile's file)."""
    from embtune.plan.config import ParamsError, read_yaml

    env = os.environ if environ is None else environ
    file = Path(path) if path is not None else Path(env.get(CLASSES_ENV) or CLASSES_FILE)
    try:
        data = read_yaml(file)
    except ParamsError as err:
        raise GpuClassError(f"{err} (the GPU classes; or set ${CLASSES_ENV})") from None
    frac = data.get("usable_fraction", 0.9)
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= 1:
        raise GpuClassError(f"{file}: usable_fraction: expected a number in (0, 1], got {frac!r}")
    raw = data.get("classes")
    if not isinstance(raw, list) or not raw:
        raise GpuClassError(f"{file}: classes: expected a non-empty list of {{name, memory_gib, gpu_model|constraint}}")
    out = []
    for i, c in enumerate(raw):
        where = f"{file}: classes[{i}]"
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
            raise GpuClassError(f"{where}: expected a mapping with a name")
        unknown = sorted(set(c) - {"name", "memory_gib", *SELECTORS})
        if unknown:
            raise GpuClassError(f"{where}: unknown key {unknown[0]!r} (name, memory_gib, gpu_model, constraint)")
        mem = c.get("memory_gib")
        if isinstance(mem, bool) or not isinstance(mem, (int, float)) or mem <= 0:
            raise GpuClassError(f"{where} ({c['name']}): memory_gib: expected a positive number, got {mem!r}")
        picks = [k for k in SELECTORS if c.get(k)]
        if len(picks) > 1:
            raise GpuClassError(f"{where} ({c['name']}): give gpu_model or constraint, not both")
        out.append(GpuClass(c["name"], float(mem), *(str(c[k]) if c.get(k) else None for k in SELECTORS)))
    kinds = {k for c in out for k in c.resources()}
    if len(kinds) > 1 or (kinds and any(not c.resources() for c in out)):
        # the slurm plugin passes an empty constraint on as `-C ''`: one selector for every class
        raise GpuClassError(f"{file}: classes: every class selects its GPU the same way "
                            f"(all gpu_model, all constraint, or none), got {sorted(kinds)} mixed")
    out.sort(key=lambda c: c.memory_gib)      # stable: equal sizes keep the file's order
    return Classes(tuple(out), float(frac), str(file))


@dataclass(frozen=True)
class Fit:
    run_id: str
    gpu_class: GpuClass | None        # None: fits no class
    chunk: int | None                 # the GradCache chunk it runs with
    estimate: memory.Estimate         # at that chunk (at one sequence if it fits nothing)


def fit(run: TrainingRun, classes: Classes, *, vocab: int, processes: int = 1) -> Fit:
    """The smallest class that holds the run at its configured chunk, else the largest class at
    the largest chunk that fits it; ``gpu_class`` None when nothing fits."""
    upper = int(run.train.gradcache_chunk)
    kw = {"vocab": vocab, "processes": processes}
    want = memory.estimate(run, chunk=upper, **kw)
    for c in classes.classes:
        if want.peak <= classes.usable_bytes(c):
            return Fit(run.run_id, c, want.chunk, want)
    largest = classes.classes[-1]
    chunk = memory.largest_chunk(run, classes.usable_bytes(largest), upper=upper, **kw)
    if chunk is None:
        return Fit(run.run_id, None, None, memory.estimate(run, chunk=1, **kw))
    return Fit(run.run_id, largest, chunk, memory.estimate(run, chunk=chunk, **kw))


def tokenizer_vocab(params: Mapping[str, Any]) -> int | None:
    return (params.get("tokenizer") or {}).get("vocab_size")


def fit_runs(runs: Iterable[TrainingRun], classes: Classes, params: Mapping[str, Any]) -> dict[str, Fit]:
    vocab_of = tokenizer_vocab(params)
    return {r.run_id: fit(r, classes, vocab=memory.vocab_size(r.model, vocab_of)) for r in runs}


def refusals(fits: Mapping[str, Fit], classes: Classes) -> list[str]:
    """One message per run that fits no class."""
    largest = classes.classes[-1]
    return [f"run {f.run_id}: estimated peak GPU memory {f.estimate.peak / GIB:.1f} GiB even at one "
            f"sequence per GradCache chunk exceeds the largest GPU class {largest.name} "
            f"({largest.memory_gib:g} GiB x usable_fraction {classes.usable_fraction:g} = "
            f"{classes.usable_bytes(largest) / GIB:.1f} GiB; {classes.source})"
            for f in fits.values() if f.gpu_class is None]


def check(runs: Sequence[TrainingRun], params: Mapping[str, Any],
          classes: Classes | None = None) -> dict[str, Fit]:
    """Every run's fit; a ``GpuClassError`` naming the first run that fits no class (and how
    many do not)."""
    classes = classes or read_classes()
    fits = fit_runs(runs, classes, params)
    refused = refusals(fits, classes)
    if refused:
        more = f" (and {len(refused) - 1} more runs)" if len(refused) > 1 else ""
        raise GpuClassError(refused[0] + more)
    return fits


def escalate(fit: Fit, classes: Classes, attempt: int) -> tuple[GpuClass | None, int | None]:
    """The GPU class and GradCache chunk of a run's ``attempt`` (Snakemake's 1, 2, ...): a retry
    follows an out-of-memory (or a kill the estimate missed), so each one asks for less memory per
    chunk or a larger card, alternately: attempt 2 halves the chunk, attempt 3 moves to the next
    larger class, attempt 4 halves again, and so on; at the largest class every further attempt
    halves, down to one sequence. The chunk changes no result (GradCache is exact), the class only
    where the run lands, so a retry trains the same run."""
    if fit.gpu_class is None or fit.chunk is None:
        return fit.gpu_class, fit.chunk
    index, chunk = classes.classes.index(fit.gpu_class), int(fit.chunk)
    for step in range(2, int(attempt) + 1):
        if step % 2 == 1 and index + 1 < len(classes.classes):
            index += 1
        else:
            chunk = max(1, chunk // 2)
    return classes.classes[index], chunk
