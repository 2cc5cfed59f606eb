"""Learning-rate schedule of paper 1 (section 4.1, App. D.1; docs/fidelity.md#P1-LR-SCHEDULE).

The continuous schedule over t ∈ [0, T] (T = planned optimizer steps, W = warm-up steps):

    s(t) = t / W                                            for t <= W  (linear warm-up from 0)
    s(t) = f + (1 − f) · ½ · (1 + cos(π · (t − W) / (T − W)))   for t > W   (cosine to f at t = T)

with f = ``final_fraction``: 0 by default (App. D.1 "back to zero", and the authors' scheduler),
0.1 for §4.1's "to 1/10 of the maximum". Update k (0-based) runs at s(k + ½), the middle of its
step: sampling at the start would give the first update LR 0 (as the authors' code does) and at
the end would give the last update LR f = 0; either wastes a whole step of a small budget.

A pure function of the step index, so a resumed run reproduces the exact learning rates of an
uninterrupted one.
"""

from __future__ import annotations

import math


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
