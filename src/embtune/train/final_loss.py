"""The loss the scaling laws fit: paper 1's "final" training loss, never averaged over warm-up
(docs/fidelity.md#P1-FINAL-LOSS).

Paper 1 fits "the final contrastive loss" (§4.2; "the final training loss", App. C) and calls it
"the losses from the last steps of training" (§5). One step's in-batch loss is noisy, so a few
last steps are averaged; but at paper scale the large models at small budgets run 10-80 steps,
and a fixed 20-step window would reach back into the warm-up (the first 10 % of the steps, §4.1),
whose losses are far above the final ones and inflate exactly the IsoFLOP points that decide the
optimum. The window is therefore

    n = max(1, min(final_loss_window, ceil(final_loss_fraction · T), T − W))

steps, the last n of the T steps run, where W = round(warmup_fraction · T) is the number of warm-up
updates (:func:`embtune.core.optim.warmup_steps`: update k runs at the warm-up rate while k < W). With
the defaults (20, 5 %, 10 %): a 12-step run averages its last step only, a 400-step run its last
20. ``final_loss_fraction: 1.0`` gives the plain last-``final_loss_window`` mean (still clipped
out of warm-up).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from embtune.core.optim import warmup_steps


def final_window(steps: int, max_window: int, fraction: float, warmup_fraction: float) -> int:
    """How many last steps the fitted loss averages (module docstring); 0 for a run of no steps."""
    if steps < 1:
        return 0
    if max_window < 1 or not 0 < fraction <= 1:
        raise ValueError(f"final_loss_window must be >= 1 and final_loss_fraction in (0, 1] "
                         f"(got {max_window}, {fraction})")
    after_warmup = steps - warmup_steps(steps, warmup_fraction)
    return max(1, min(max_window, math.ceil(fraction * steps), after_warmup))


def final_loss(losses: Sequence[float], max_window: int, fraction: float,
               warmup_fraction: float) -> tuple[float, int]:
    """(mean of the last :func:`final_window` step losses, that window); NaN for no steps."""
    n = final_window(len(losses), max_window, fraction, warmup_fraction)
    if n == 0:
        return math.nan, 0
    tail = losses[-n:]
    return float(sum(tail) / n), n
