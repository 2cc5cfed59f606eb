"""A training run's FLOP utilisation, counted two ways against the device's peak.

- **Model-FLOP MFU** (PaLM's definition): the paper's FLOPs per real token, C/D = 2·(N_F + N_B +
  N_U) (paper 1 §3.5, ``models.flops``), times real tokens/s, over the peak. Recomputation is
  overhead, not model FLOPs, so GradCache's second forward and checkpointing lower it.
- **Hardware-FLOP MFU**: the FLOPs the device actually executes per real token, GradCache's second
  forward (2·N_F, when the step runs two passes) and the checkpointing recompute included
  (``embtune.plan.cost.hardware_per_token``), over the same peak: how busy the device was.

Padding tokens count in neither: they are compute the run wastes, which is why chunks are
length-sorted. The peak is the dense bf16 figure of NVIDIA's data sheet for the device
(``models.flops.PEAK_BF16_FLOPS``); a device without one (a CPU, an unknown GPU) gets ``None``
for both with the reason, never a made-up peak.
"""

from __future__ import annotations

from typing import Any

from embtune.models import methods
from embtune.models.flops import ParamCounts, peak_bf16_flops


def hardware_per_token(counts: ParamCounts, method: str, *, gradcache_two_pass: bool,
                       checkpointing: bool) -> float:
    """Executed FLOPs per real token: 2·(N_F+N_B+N_U) + 2·N_F [two-pass] + ρ·2·N_B [checkpointing]
    (why each term, and ρ: ``embtune.plan.cost``, which plans GPU-hours with the same count).

    ``embtune.plan.cost.hardware_per_token`` is the planning layer's copy (tests/unit/train/
    test_buckets_mfu.py holds the two equal): the training loop cannot import the planning layer,
    and the planning stages should not re-run when this module changes."""
    extra = 2.0 * counts.n_forward if gradcache_two_pass else 0.0
    if checkpointing:
        # share of a back-propagated block's forward that checkpointing re-runs, declared per
        # method in the registry
        extra += methods.get(method).recompute_fraction * 2.0 * counts.n_backward
    return counts.per_token + extra


def device_peak(device_type: str, device_name: str) -> tuple[float | None, str | None]:
    """(dense bf16 peak FLOP/s of one device, None) or (None, why there is none)."""
    if device_type != "cuda":
        return None, (f"no peak FLOP/s on record for a {device_type} device (MFU is defined against "
                      "a GPU's dense bf16 peak)")
    peak = peak_bf16_flops(device_name)
    if peak is None:
        return None, f"no dense bf16 peak on record for {device_name!r} (embtune.models.flops.PEAK_BF16_FLOPS)"
    return peak, None


def utilisation(model_per_token: float, hardware_per_token: float, tokens_per_s: float | None,
                peak: float | None, devices: int = 1) -> dict[str, float | None]:
    """``mfu_model`` and ``mfu_hardware``: per-token FLOPs × real tokens/s over ``devices`` × peak."""
    if not peak or not tokens_per_s:
        return {"mfu_model": None, "mfu_hardware": None}
    if peak <= 0 or devices <= 0:
        raise ValueError(f"peak FLOP/s and devices must be positive (got {peak}, {devices})")
    return {"mfu_model": model_per_token * tokens_per_s / (peak * devices),
            "mfu_hardware": hardware_per_token * tokens_per_s / (peak * devices)}


def run_mfu(counts: ParamCounts, method: str, tokens: int, seconds: float, *, two_pass: bool,
            checkpointing: bool, device_type: str, device_name: str, devices: int = 1) -> dict[str, Any]:
    """The run's MFU fields for metrics.json: both utilisations, the per-token FLOPs they use, the
    peak per device and, where there is no peak, ``mfu_reason``."""
    hardware = hardware_per_token(counts, method, gradcache_two_pass=two_pass, checkpointing=checkpointing)
    peak, reason = device_peak(device_type, device_name)
    per_s = tokens / seconds if seconds > 0 else None
    if per_s is None and reason is None:
        reason = "no timed steps (wall time 0)"
    return {**utilisation(counts.per_token, hardware, per_s, peak, devices),
            "model_flops_per_token": counts.per_token, "hardware_flops_per_token": hardware,
            "peak_flops_per_device": peak, "mfu_reason": reason}
