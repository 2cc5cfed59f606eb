"""Learning-rate helpers, one module for both papers: paper 1's warm-up + cosine schedule
(:func:`lr_multiplier`), paper 2's Table 19 schedules (:func:`epoch_lrs`) and batch-size LR
scaling (:func:`scaled_lr`).

Why one module below ``models``/``train``: the tiny-model pre-training (``models.build``), both
training loops (``train.loop``, ``train.query_tower``) and the sweep (``lr_effective``) read them,
and they are pure functions of the step index that import nothing of embtune, so the import graph keeps its order
(docs/architecture.md, "Import layers").

**Paper 1** (section 4.1, App. D.1; docs/fidelity.md#P1-LR-SCHEDULE).

The continuous schedule over t ∈ [0, T] (T = planned optimizer steps, W = warm-up steps):

    s(t) = t / W                                            for t <= W  (linear warm-up from 0)
    s(t) = f + (1 − f) · ½ · (1 + cos(π · (t − W) / (T − W)))   for t > W   (cosine to f at t = T)

with f = ``final_fraction``: 0 by default (App. D.1 "back to zero", and the authors' scheduler),
0.1 for §4.1's "to 1/10 of the maximum". Update k (0-based) runs at s(k + ½), the middle of its
step: sampling at the start would give the first update LR 0 (as the authors' code does) and at
the end would give the last update LR f = 0; either wastes a whole step of a small budget.

A pure function of the step index, so a resumed run reproduces the exact learning rates of an
uninterrupted one.

**Paper 2**, Table 19, and the batch-size LR scaling rules.

Table 19 defines, with initial rate a0, "t the current training step, T the total number of
training steps":

* ``L``      a(t) = a0 * (1 - t/T)
* ``Q``      a(t) = a0 * (1 - (t/T)^2)
* ``E0.95``  a(t) = a0 * 0.95^t
* ``E0.98``  a(t) = a0 * 0.98^t
* ``none``   a(t) = a0

The clock (``query_tuning.defaults.scheduler_unit``):

* ``step`` (the table's words): t is the 0-based optimizer step counted over the whole
  run, across epochs (the first update runs at a0); T = ``max_epochs * batches_per_epoch``, the
  planned maximum. Tuning stops early on patience (App. E(4)), so the realised number of steps
  is unknown when the rate is set; the planned maximum is the only T fixed in advance, and with
  it L and Q decay by the same rule whatever the stopping epoch. Read per step, E0.95 reaches
  0.95^1000 ~ 5e-23 of a0 by the end of the first 1000-batch epoch, i.e. it stops tuning after
  ~100 steps.
* ``epoch`` (default, docs/fidelity.md#P2-SCHEDULERS): t is the 0-based epoch index, constant within an epoch, and T = ``max_epochs``
  (what ``torch.optim.lr_scheduler`` does when ``.step()`` is called once per epoch). Under this
  reading the exponential schedules decay over tens of epochs, which is what Table 17's E rows
  (partial, not vanished, gains) suggest the authors ran.
"""

from __future__ import annotations

import math


# ----------------------------------------------------------------- paper 1
def warmup_steps(total_steps: int, warmup_fraction: float) -> int:
    """W = round(warmup_fraction · T), within [0, T]."""
    return max(0, min(total_steps, round(warmup_fraction * total_steps)))


def lr_multiplier(step: int, total_steps: int, warmup_fraction: float, final_fraction: float) -> float:
    """Multiplier of the peak LR for the update with 0-based index ``step``: s(step + ½).

    ``step >= total_steps`` (``LambdaLR`` asks once more after the last update) gives s(T) = f."""
    if total_steps < 1 or step < 0:
        raise ValueError(f"need total_steps >= 1 and step >= 0 (got {step}, {total_steps})")
    w = warmup_steps(total_steps, warmup_fraction)
    t = min(step + 0.5, float(total_steps))
    if t <= w:  # w > 0 here: t >= ½
        return t / w
    progress = (t - w) / (total_steps - w)
    return final_fraction + (1.0 - final_fraction) * 0.5 * (1.0 + math.cos(math.pi * progress))


# ----------------------------------------------------------------- paper 2
SCHEDULERS = ("none", "L", "Q", "E0.95", "E0.98")
SCHEDULER_UNITS = ("step", "epoch")


def lr_factor(scheduler: str, t: int, total: int) -> float:
    """a(t)/a0 of Table 19 at time ``t`` (0-based) of ``total`` (T); t/T is capped at 1."""
    if t < 0 or total < 1:
        raise ValueError(f"t must be >= 0 and T >= 1 (got t={t}, T={total})")
    frac = min(t / total, 1.0)
    if scheduler == "none":
        return 1.0
    if scheduler == "L":
        return 1.0 - frac
    if scheduler == "Q":
        return 1.0 - frac**2
    if scheduler in ("E0.95", "E0.98"):
        return float(scheduler[1:]) ** t
    raise ValueError(f"unknown scheduler {scheduler!r} (expected one of {', '.join(SCHEDULERS)})")


def scheduled_lr(lr0: float, scheduler: str, t: int, total: int) -> float:
    """Learning rate at time ``t`` (0-based) of ``total`` under ``scheduler`` (Table 19)."""
    return lr0 * lr_factor(scheduler, t, total)


def epoch_lrs(lr0: float, scheduler: str, unit: str, epoch: int, batches_per_epoch: int,
              max_epochs: int) -> list[float]:
    """The rate of each optimizer step of (0-based) ``epoch``, on the clock ``unit`` (module
    docstring): one list per epoch, so the training loop does O(1) work per step."""
    if unit == "step":
        first, total = epoch * batches_per_epoch, max_epochs * batches_per_epoch
        return [scheduled_lr(lr0, scheduler, first + s, total) for s in range(batches_per_epoch)]
    if unit == "epoch":
        return [scheduled_lr(lr0, scheduler, epoch, max_epochs)] * batches_per_epoch
    raise ValueError(f"unknown scheduler_unit {unit!r} (expected one of {', '.join(SCHEDULER_UNITS)})")


def scaled_lr(lr: float, batch_size: int, rule: str, reference_batch: int = 14) -> float:
    """LR scaled with batch size (paper 2, Tables 6-7): linear (Goyal et al.) or square-root rule.

    ``embtune.plan.query_sweep.query_runs`` applies this when it builds ``lr_effective``; it is here so the
    rule has one tested definition."""
    ratio = batch_size / reference_batch
    if rule == "none":
        return lr
    if rule == "linear":
        return lr * ratio
    if rule == "sqrt":
        return lr * math.sqrt(ratio)
    raise ValueError(f"unknown lr_scaling {rule!r} (expected none, linear or sqrt)")
