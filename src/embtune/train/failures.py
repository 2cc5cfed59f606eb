"""Failed runs as results: why a run failed for good, and the record it leaves.

A training or query-tuning run that cannot finish writes its ordinary run directory with
``metrics.json`` = ``{status: "failed", failure: {reason, attempt, retries, detail, partial}}``
instead of stopping the workflow: every downstream rule still finds its inputs, and the analysis
(runs table, fits, report, ``embtune status``) lists the run with its reason.

Reasons (:data:`REASONS`):

- ``diverged``: the loss became NaN/inf, or stayed above the explosion bound for
  :data:`EXPLODE_STEPS` consecutive steps (:class:`DivergenceWatch`). Deterministic: final at once.
- ``data_too_small``: the training data cannot fill one batch. Deterministic: final at once.
- ``oom``: CUDA or host out of memory. Transient (the next Snakemake attempt asks for more
  memory): final only on the last attempt.
- ``time_limit``: SIGTERM/SIGUSR1 under SLURM (time limit or pre-emption) on the last attempt; on
  an earlier one, or outside SLURM, the run checkpoints and exits 75 for the retry to resume.
- ``killed``: the job was killed from outside (cgroup OOM kill, node failure, ``kill -9``, SLURM's
  hard time limit) on its last attempt and wrote nothing itself; the workflow's ``onerror``
  handler writes this record (:mod:`embtune.stages.mark_failed`).

Explosion bound: symmetric InfoNCE over B in-batch candidates is ln B when every logit is equal
(a collapsed model); a loss above ln B + :data:`EXPLODE_SLACK_NATS` means the model ranks the
positives below the negatives, worse than collapse. One such step happens at the start of
training (measured: 4.3 at B = 8, ln 8 = 2.1); :data:`EXPLODE_STEPS` in a row does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

REASONS = ("diverged", "oom", "time_limit", "killed", "data_too_small")
DETERMINISTIC = frozenset({"diverged", "data_too_small"})
EXPLODE_SLACK_NATS = 3.0
EXPLODE_STEPS = 20
FAILED = "failed"


class Diverged(FloatingPointError):
    """The loss diverged; ``partial`` holds what the run had done (steps, last finite loss, FLOPs)."""

    def __init__(self, message: str, partial: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.partial = partial or {}


def explosion_bound(batch_size: int) -> float:
    """ln B + slack: above it for :data:`EXPLODE_STEPS` steps in a row, a run has diverged."""
    return math.log(max(int(batch_size), 2)) + EXPLODE_SLACK_NATS


class DivergenceWatch:
    """Feed it every step's loss; :meth:`check` returns why the run diverged, or None."""

    def __init__(self, batch_size: int, steps: int = EXPLODE_STEPS) -> None:
        self.bound = explosion_bound(batch_size)
        self.steps = steps
        self.above = 0

    def check(self, loss: float) -> str | None:
        if not math.isfinite(loss):
            return f"loss is {loss}"
        self.above = self.above + 1 if loss > self.bound else 0
        if self.above >= self.steps:
            return (f"loss above ln(batch)+{EXPLODE_SLACK_NATS:g} = {self.bound:.3f} for "
                    f"{self.above} consecutive steps (last {loss:.4g})")
        return None


def is_oom(err: BaseException) -> bool:
    """CUDA or host out-of-memory (``torch.cuda.OutOfMemoryError`` is a RuntimeError)."""
    if isinstance(err, MemoryError):
        return True
    return isinstance(err, RuntimeError) and "out of memory" in str(err).lower()


def is_final(reason: str, attempt: int, retries: int) -> bool:
    """Deterministic reasons are final at once; transient ones on the last attempt only
    (Snakemake's attempts are 1 .. retries + 1)."""
    if reason not in REASONS:
        raise ValueError(f"unknown failure reason {reason!r} (expected one of {', '.join(REASONS)})")
    return reason in DETERMINISTIC or int(attempt) >= int(retries) + 1


def partial_metrics(curve: Sequence[dict[str, Any]], wall_seconds: float = 0.0) -> dict[str, Any]:
    """What a run did before it failed: steps, last finite loss, tokens and FLOPs spent."""
    finite = [r["loss"] for r in curve if isinstance(r.get("loss"), (int, float)) and math.isfinite(r["loss"])]
    last = curve[-1] if curve else {}
    return {"steps": int(last.get("step", 0)), "last_finite_loss": finite[-1] if finite else None,
            "tokens": int(last.get("tokens", 0)), "flops": float(last.get("flops", 0)),
            "wall_seconds": float(wall_seconds)}


def failure_metrics(metrics: dict[str, Any], reason: str, attempt: int, retries: int, detail: str,
                    partial: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run's ``metrics.json`` for a failure: its config-derived fields, ``status: failed``
    and the ``failure`` record. Partial numbers stay inside the record (no reader mistakes them
    for a finished run's); ``wall_seconds`` and ``world_size`` are top level (what it cost)."""
    partial = dict(partial or {})
    out = {k: v for k, v in metrics.items() if k not in ("status", "skip_reason")}
    out.update(status=FAILED, skip_reason=f"{reason}: {detail}",
               failure={"reason": reason, "attempt": int(attempt), "retries": int(retries),
                        "detail": detail, "partial": partial})
    out["wall_seconds"] = float(partial.get("wall_seconds") or 0.0)
    out.setdefault("world_size", 1)
    return out


def failure_of(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``failure`` record of a run's metrics, or None when it did not fail."""
    if not metrics or metrics.get("status") != FAILED:
        return None
    rec = metrics.get("failure")
    return rec if isinstance(rec, dict) else {"reason": "unknown", "detail": str(metrics.get("skip_reason"))}


def readme(metrics: dict[str, Any]) -> str:
    """``trained/README.txt`` (train) or ``model/README.txt`` (tune-query) of a run without a model
    (skipped or failed)."""
    rec = failure_of(metrics)
    if rec:
        return f"failed: {rec.get('reason')} (attempt {rec.get('attempt')}): {rec.get('detail')}\n"
    return f"skipped: {metrics.get('skip_reason')}\n"
