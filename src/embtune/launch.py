"""How a training job starts its processes: one ``embtune`` process per GPU (issue 23).

Why a launcher: ``gpu: N`` on a SLURM job only reserves N GPUs; one ``embtune train`` process
would use one of them. The loop is data-parallel through accelerate (DDP, a global batch split
over the processes, gradients all-reduced once per step: tests/test_train_distributed.py), so it
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


def processes(resources: Any) -> int:
    """Processes of a training job: its ``nproc`` resource when positive, else its ``gpu``
    count, at least 1 (``resources`` is a Snakemake job's resources or a mapping)."""
    get = resources.get if hasattr(resources, "get") else lambda k, d=None: getattr(resources, k, d)
    for key in ("nproc", "gpu"):
        value = get(key, 0)
        try:
            n = int(value or 0)
        except (TypeError, ValueError):
            raise ValueError(f"training job resource {key}={value!r}: expected a whole number") from None
        if n < 0:
            raise ValueError(f"training job resource {key}={n}: expected >= 0")
        if n:
            return n
    return 1


def prefix(n: int) -> list[str]:
    """The argv prefix that runs the program after it in ``n`` processes on this node (none for one)."""
    if n <= 1:
        return []
    return [TORCHRUN, "--standalone", f"--nproc-per-node={int(n)}", "--no-python"]
