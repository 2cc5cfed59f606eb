"""What a training grid costs before it runs: paper FLOPs, hardware FLOPs and GPU-hours.

Why: users plan in GPU-hours, and the SLURM runtime requests (``workflow/rules/resources.smk``)
need the same number; both read it from here, at one calibrated throughput.

**Paper FLOPs** (paper 1, section 3.5; ``models.flops``): C = 2·N_F·D + 2·N_B·D + 2·N_U·D, D the
real tokens. This is the budget a run spends; the scaling laws are in these units.

**Hardware FLOPs**: the matrix-multiply FLOPs the GPU actually executes for the same D,

    H = C + 2·N_F·D·[two-pass GradCache] + ρ·2·N_B·D·[gradient checkpointing]

- GradCache (``train.gradcache``) embeds every chunk once without a graph (2·N_F per token), then
  again with a graph and back-propagates: one extra forward of everything that runs per token.
  When the batch fits one chunk (2·batch_size/processes <= gradcache_chunk, ``train.loop``) the
  step is a single pass with a graph: no extra forward.
- Activation checkpointing (transformers, one checkpoint per block, non-reentrant) keeps each
  block's input and re-runs the block's forward when its backward runs. Backward runs only through
  the back-propagated part, N_B: the whole model for full, bias and LoRA (their first block holds a
  trainable tensor), the active blocks for freeze (``train.loop.enable_checkpointing`` keeps the
  frozen blocks' outputs off the graph, so they are neither re-run nor back-propagated through).
  torch's non-reentrant checkpoint stops re-running a block once every tensor its backward needs
  exists again; in a GPT-NeoX block the last op is the MLP output projection, whose output nothing
  saves, so it is skipped: with the Pythia MLP width 4d it holds 1/3 of the block's weights,
  ρ = 2/3. With LoRA an adapter runs after that projection and saves its input, so the whole block
  re-runs: ρ = 1.

Checked against ``torch.utils.flop_counter`` on a tiny GPT-NeoX for every method, with and without
either overhead (tests/unit/core/test_cost.py). Not counted, as in the paper (docs/fidelity.md#P1-FLOPS):
attention-score FLOPs (~4·n_ctx·d per layer and token, ~1 % at context 75), padding tokens
(length-sorted chunks keep them few), bias/LayerNorm arithmetic, the held-out loss pass at the end.
For LoRA the paper's N_B (docs/fidelity.md#P1-LORA-FLOPS) includes back-propagation into the first
block's input, which autograd skips: H overstates LoRA by
at most 2·(7/12)·N_F/L per token (< 5 % at L = 6, ~1 % at L = 24).

**GPU-hours** = H / (hardware FLOP/s one GPU sustains) / 3600. The throughput is a runtime fact
(hardware, kernels), so it lives with the Snakemake profiles, in ``profiles/default/
throughput.yaml``, and ``$EMBTUNE_FLOPS_PER_SECOND`` overrides it per site (slurm/README.md).
:func:`flops_per_second` is the only reader.

**GPU-hour cap** (``train.gpu_hours_cap``, experiment truth: it decides which runs exist):
:func:`trim_to_cap` drops whole (budget, method) IsoFLOP profiles, largest budget first and, within
a budget, the most expensive method first, until the grid fits. Why this order: cost grows with the
budget (the paper's budgets step ×4, docs/fidelity.md#P1-BUDGETS: the top level is ~3/4 of the
grid), so few profiles go; every profile that stays keeps all its model sizes and variants, so its IsoFLOP minimum (the
optimal N at that budget) is still found, and the laws keep the full range of N. Dropping the
largest *model* instead would cut the top of every profile and bias the optimum toward small
models exactly where large ones win. Every dropped run is recorded in skipped.csv with status
``dropped`` and the reason, and the runs table and report list it as missing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from embtune.models import methods
from embtune.models.flops import ParamCounts
from embtune.runconfig import RunConfig

THROUGHPUT_ENV = "EMBTUNE_FLOPS_PER_SECOND"
THROUGHPUT_KEY = "hardware_flops_per_gpu_second"
#: profiles/default/ of the checkout (Snakemake's workflow profile, merged into every run).
THROUGHPUT_FILE = Path(__file__).resolve().parents[3] / "profiles" / "default" / "throughput.yaml"

SECONDS_PER_HOUR = 3600.0


class CostError(ValueError):
    """A throughput or cap that cannot be used, with where it came from."""


# --------------------------------------------------------------------------- FLOPs
def two_pass(batch_size: int, gradcache_chunk: int, processes: int = 1) -> bool:
    """True when GradCache runs both passes; the loop's single-pass test, verbatim."""
    return 2 * (batch_size // processes) > gradcache_chunk


def hardware_per_token(counts: ParamCounts, method: str, *, gradcache_two_pass: bool,
                       checkpointing: bool) -> float:
    """Executed FLOPs per real token: 2·(N_F+N_B+N_U) + 2·N_F [two-pass] + ρ·2·N_B [checkpointing]."""
    extra = 2.0 * counts.n_forward if gradcache_two_pass else 0.0
    if checkpointing:
        # share of a back-propagated block's forward that checkpointing re-runs (see above),
        # declared per method in the registry
        extra += methods.get(method).recompute_fraction * 2.0 * counts.n_backward
    return counts.per_token + extra


def run_cost(run: RunConfig, flops_per_second: float) -> dict[str, Any]:
    """Paper FLOPs, hardware FLOPs and GPU-hours of one planned run (one process per run, as the
    SLURM profile requests one GPU per training job), from its typed planning-time counts."""
    t = run.train
    counts = run.planned.counts
    tokens = float(run.planned.tokens)
    passes = two_pass(t.batch_size, t.gradcache_chunk)
    ckpt = t.gradient_checkpointing
    hardware = hardware_per_token(counts, run.method, gradcache_two_pass=passes, checkpointing=ckpt) * tokens
    return {"run_id": run.run_id, "model": run.model.name, "method": run.method,
            "budget": float(run.budget), "seed": run.seed,
            "paper_flops": float(counts.per_token) * tokens, "hardware_flops": hardware,
            "gpu_hours": hardware / flops_per_second / SECONDS_PER_HOUR,
            "two_pass_gradcache": passes, "checkpointing": ckpt, "flops_per_second": flops_per_second}


def measured_hardware_flops(metrics: Mapping[str, Any], cfg: Mapping[str, Any]) -> float | None:
    """Hardware FLOPs of a finished run from its real token count (metrics.json) and its config
    (manifest): what its measured wall time actually paid for. None if something is missing."""
    train = cfg.get("train") or {}
    try:
        counts = ParamCounts(int(metrics["n_total"]), int(metrics["n_forward"]),
                             int(metrics["n_backward"]), int(metrics["n_update"]))
        passes = two_pass(int(train["batch_size"]), int(train["gradcache_chunk"]),
                          int(metrics.get("world_size") or 1))
        per_token = hardware_per_token(counts, str(metrics["method"]), gradcache_two_pass=passes,
                                       checkpointing=bool(train["gradient_checkpointing"]))
        return per_token * float(metrics["tokens"])
    except (KeyError, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- throughput
def _positive(value: Any, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = math.nan
    if isinstance(value, bool) or not math.isfinite(out) or out <= 0:
        raise CostError(f"{where}: expected a positive number of hardware FLOP/s per GPU "
                        f"(e.g. 7.8e13), got {value!r}")
    return out


def flops_per_second(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> float:
    """The calibrated hardware FLOP/s of one GPU: ``$EMBTUNE_FLOPS_PER_SECOND`` if set, else
    ``hardware_flops_per_gpu_second`` in ``profiles/default/throughput.yaml``."""
    from embtune.core.params_yaml import ParamsError, read_yaml

    env = os.environ if environ is None else environ
    if env.get(THROUGHPUT_ENV):
        return _positive(env[THROUGHPUT_ENV], f"${THROUGHPUT_ENV}")
    file = Path(path) if path is not None else THROUGHPUT_FILE
    try:
        data = read_yaml(file)
    except ParamsError as err:
        raise CostError(f"{err} (the calibrated GPU throughput; or set ${THROUGHPUT_ENV})") from None
    if THROUGHPUT_KEY not in data:
        raise CostError(f"{file}: missing key {THROUGHPUT_KEY!r}")
    return _positive(data[THROUGHPUT_KEY], f"{file}: {THROUGHPUT_KEY}")


# --------------------------------------------------------------------------- the cap
def trim_to_cap(runs: Sequence[RunConfig], cap_hours: float, fps: float
                ) -> tuple[list[RunConfig], list[tuple[RunConfig, str]]]:
    """Runs kept and ``(run, reason)`` dropped so the grid's GPU-hours fit ``cap_hours``.

    Drops whole (budget, method) groups: largest budget first, then the most expensive method of
    that budget (order and why: module docstring). Stops as soon as the rest fits."""
    hours = {r.run_id: run_cost(r, fps)["gpu_hours"] for r in runs}
    total = sum(hours.values())
    groups: dict[tuple[float, str], list[RunConfig]] = {}
    for r in runs:
        groups.setdefault((float(r.budget), r.method), []).append(r)
    cost = {key: sum(hours[r.run_id] for r in members) for key, members in groups.items()}
    order = sorted(groups, key=lambda key: (-key[0], -cost[key], key[1]))
    dropped_ids: set[str] = set()
    dropped: list[tuple[RunConfig, str]] = []
    remaining = total
    for key in order:
        if remaining <= cap_hours:
            break
        remaining -= cost[key]
        reason = (f"train.gpu_hours_cap={cap_hours:g}: dropped the budget {key[0]:.3g} {key[1]} "
                  f"profile ({cost[key]:.4g} GPU-h; grid {total:.4g} GPU-h at {fps:.3g} FLOP/s per "
                  f"GPU; largest budgets first)")
        for r in groups[key]:
            dropped_ids.add(r.run_id)
            dropped.append((r, reason))
    return [r for r in runs if r.run_id not in dropped_ids], dropped


def thin_methods(runs: Iterable[Mapping[str, Any]], methods: Iterable[str]) -> dict[str, int]:
    """Methods left with fewer than 2 budgets (no frontier line, no law over D) -> budgets left."""
    budgets: dict[str, set[float]] = {m: set() for m in methods}
    for r in runs:
        budgets.setdefault(r["method"], set()).add(float(r["budget"]))
    return {m: len(b) for m, b in budgets.items() if len(b) < 2}
