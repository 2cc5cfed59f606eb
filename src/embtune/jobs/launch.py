"""How a training job starts its processes: one ``embtune`` process per GPU.

Why a launcher: ``gpu: N`` on a SLURM job only reserves N GPUs; one ``embtune train`` process
would use one of them. The loop is data-parallel through accelerate (DDP, a global batch split
over the processes, gradients all-reduced once per step: tests/e2e/test_train_distributed.py), so it
needs N processes with the usual rendezvous variables (RANK, WORLD_SIZE, MASTER_ADDR, ...).
``torchrun`` (shipped with torch) sets them; ``--standalone`` runs the rendezvous on this node at
a free port, ``--no-python`` starts the ``embtune`` console script itself.

The rule builds the command from the job's resources (``workflow/rules/train.smk``): the
processes are ``nproc`` when set (CPU processes, gloo: the CI test), else ``gpu``. Every element
is passed to the shell quoted, and none comes from params.
"""

from __future__ import annotations

from typing import Any

TORCHRUN = "torchrun"


def _count(resources: Any, key: str) -> int:
    get = resources.get if hasattr(resources, "get") else lambda k, d=None: getattr(resources, k, d)
    value = get(key, 0)
    try:
        n = int(value or 0)
    except (TypeError, ValueError):
        raise ValueError(f"training job resource {key}={value!r}: expected a whole number") from None
    if n < 0:
        raise ValueError(f"training job resource {key}={n}: expected >= 0")
    return n


def processes(resources: Any) -> tuple[int, bool]:
    """(processes, on CPU) of a training job: its ``nproc`` resource when positive (CPU
    processes, gloo), else its ``gpu`` count, at least 1 (``resources``: a Snakemake job's
    resources or a mapping)."""
    cpu = _count(resources, "nproc")
    return (cpu, True) if cpu else (max(1, _count(resources, "gpu")), False)


def prefix(n: int, cpu: bool = False) -> list[str]:
    """The argv prefix that runs the program after it in ``n`` processes on this node (none for
    one). CPU processes need ``ACCELERATE_USE_CPU``: without it accelerate on a machine with no
    GPU does not join the processes (each trains alone, world size 1; measured)."""
    if n <= 1:
        return []
    env = ["env", "ACCELERATE_USE_CPU=true"] if cpu else []
    return [*env, TORCHRUN, "--standalone", f"--nproc-per-node={int(n)}", "--no-python"]


def launcher(resources: Any) -> list[str]:
    """The prefix of a training job's command from its resources (the rule's ``launch`` param)."""
    return prefix(*processes(resources))
