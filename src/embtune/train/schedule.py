"""Learning-rate schedule of paper 1 (section 4.1, App. D.1).

Linear warm-up from zero over ``warmup_fraction`` of the steps to the peak, then cosine decay to
``final_lr_fraction``·peak at the last step. A pure function of the step index so a resumed run
reproduces the exact learning rates of an uninterrupted one.
"""

from __future__ import annotations

import math


def warmup_steps(total_steps: int, warmup_fraction: float) -> int:
    """At least one warm-up step, so the first update never uses the full peak."""
    return max(1, min(total_steps, round(warmup_fraction * total_steps)))


def lr_multiplier(step: int, total_steps: int, warmup_fraction: float, final_fraction: float) -> float:
    """Multiplier of the peak LR for the update with 0-based index ``step``.

    Warm-up: (step+1)/W, reaching 1 at step W−1. Decay: cosine from 1 to ``final_fraction``,
    reaching it exactly at the last step (total_steps − 1)."""
    w = warmup_steps(total_steps, warmup_fraction)
    if step < w:
        return (step + 1) / w
    progress = (step - w + 1) / max(1, total_steps - w)
    progress = min(1.0, progress)
    return final_fraction + (1.0 - final_fraction) * 0.5 * (1.0 + math.cos(math.pi * progress))
