"""Per-epoch learning-rate schedules of paper 2, Table 19, and the batch-size LR scaling rules.

Table 19 defines, with initial rate a0, current step t and total steps T:

* ``L``      a(t) = a0 * (1 - t/T)
* ``Q``      a(t) = a0 * (1 - (t/T)^2)
* ``E0.95``  a(t) = a0 * 0.95^t
* ``E0.98``  a(t) = a0 * 0.98^t
* ``none``   a(t) = a0

Why per epoch: tuning is validated and early-stopped per epoch, so the "step" of the schedule is
the epoch index t = 0, 1, ... (the first epoch runs at a0) and T = ``max_epochs``. With early
stopping T is only an upper bound, so L and Q never quite reach 0 in practice.
"""

from __future__ import annotations

import math

SCHEDULERS = ("none", "L", "Q", "E0.95", "E0.98")


def scheduled_lr(lr0: float, scheduler: str, epoch: int, max_epochs: int) -> float:
    """Learning rate for (0-based) ``epoch`` under ``scheduler`` (Table 19)."""
    if epoch < 0 or max_epochs < 1:
        raise ValueError(f"epoch must be >= 0 and max_epochs >= 1 (got {epoch}, {max_epochs})")
    frac = min(epoch / max_epochs, 1.0)
    if scheduler == "none":
        return lr0
    if scheduler == "L":
        return lr0 * (1.0 - frac)
    if scheduler == "Q":
        return lr0 * (1.0 - frac**2)
    if scheduler in ("E0.95", "E0.98"):
        return lr0 * float(scheduler[1:]) ** epoch
    raise ValueError(f"unknown scheduler {scheduler!r} (expected one of {', '.join(SCHEDULERS)})")


def scaled_lr(lr: float, batch_size: int, rule: str, reference_batch: int = 14) -> float:
    """LR scaled with batch size (paper 2, Tables 6-7): linear (Goyal et al.) or square-root rule.

    ``embtune.sweep.query_runs`` applies this when it builds ``lr_effective``; it is here so the
    rule has one tested definition."""
    ratio = batch_size / reference_batch
    if rule == "none":
        return lr
    if rule == "linear":
        return lr * ratio
    if rule == "sqrt":
        return lr * math.sqrt(ratio)
    raise ValueError(f"unknown lr_scaling {rule!r} (expected none, linear or sqrt)")
