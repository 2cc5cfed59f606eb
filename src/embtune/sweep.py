"""Expand the parameter grids into run configs — the one place that does it.

Why one place: the Snakefile builds its targets from these lists, the training stage trains
exactly the dict it is given, the analysis joins on the same ids, and tests check the same
expansion. A run config is a plain JSON-able dict; its id is readable and derived from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from embtune.models import families
from embtune.models.flops import model_counts, tokens_for_budget
from embtune.train.query_schedules import scaled_lr


@dataclass(frozen=True)
class Skipped:
    run_id: str
    reason: str
    status: str = "skipped"     # skipped: cannot run as configured; dropped: cut by train.gpu_hours_cap


def format_budget(budget: float) -> str:
    """1.5e15 -> '1.5e15'; 2.4e16 -> '2.4e16' (short, filesystem-friendly, round-trips)."""
    exp = math.floor(math.log10(budget))
    mant = budget / 10**exp
    return f"{mant:.3g}e{exp}"


def freeze_fractions(num_layers: int, spec: Any) -> list[tuple[int, int]]:
    """Frozen-block fractions k/n as (k, n): ``auto`` = k/6 if L % 6 == 0, else k/8 (paper 1, 4.2;
    docs/fidelity.md#P1-FREEZE-GRID).

    Kept unreduced so ids read like §4.2's grid (``freeze-2of6``, not ``freeze-1of3``)."""
    if spec == "auto":
        for denom in (6, 8):
            if num_layers % denom == 0:
                return [(k, denom) for k in range(denom)]
        return []
    # Nearest fraction with a denominator a block count can have (config.validate refuses a
    # fraction that is k/L for no model, so this never turns 0.33 into 21/64 unnoticed).
    fracs = [Fraction(x).limit_denominator(max(64, num_layers)) for x in spec]
    return [(f.numerator, f.denominator) for f in fracs]


def lora_alpha(rank: int, spec: float | str) -> float:
    """peft's ``lora_alpha`` (adapter output scaled by alpha/r). A number is used at every rank:
    the authors' released config leaves peft's default 8, so the scale is 8/r. ``rank`` gives
    alpha = r, scale 1 at every rank (the other common convention)."""
    if spec == "rank":
        return float(rank)
    if isinstance(spec, bool) or not isinstance(spec, (int, float)) or spec <= 0:
        raise ValueError(f"train.lora.alpha: expected a positive number or 'rank', got {spec!r}")
    return float(spec)


def _method_variants(model: dict[str, Any], train: dict[str, Any]) -> list[tuple[str, dict[str, Any], str | None]]:
    """(method tag, method settings, skip reason) for every method variant of one model."""
    out: list[tuple[str, dict[str, Any], str | None]] = []
    num_layers = model["num_layers"]
    for method in train["methods"]:
        if method == "full":
            out.append((method, {"method": method}, None))
        elif method == "bias":       # refused where the family has no biases (e.g. Llama)
            reason = families.family_of_spec(model).bias_free_reason(families.dims_of(model))
            out.append((method, {"method": method}, reason))
        elif method == "freeze":
            fracs = freeze_fractions(num_layers, train["freeze"]["fractions"])
            if not fracs:
                out.append(("freeze-auto", {"method": "freeze"},
                            f"{num_layers} blocks is divisible by neither 6 nor 8 (fractions: auto)"))
            for num, denom in fracs:
                frac = Fraction(num, denom)
                k = frac * num_layers
                tag = f"freeze-{num}of{denom}"
                reason = None if k.denominator == 1 else f"{frac} of {num_layers} blocks is not a whole number"
                out.append((tag, {"method": "freeze", "freeze_fraction": float(frac),
                                  "frozen_blocks": int(k) if reason is None else None}, reason))
        elif method == "lora":
            lora = train["lora"]
            for rank in lora["ranks"]:
                out.append((f"lora-r{rank}", {"method": "lora", "lora_rank": rank,
                                             "lora_alpha": lora_alpha(rank, lora["alpha"]),
                                             "lora_embed_in": bool(lora["embed_in"]),
                                             "lora_dropout": lora["dropout"]}, None))
    return out


def peak_lr(model: dict[str, Any], method: str, train: dict[str, Any]) -> float:
    """Per-method override (paper 1, Tables 3-4; docs/fidelity.md#P1-LR-LORA-BIAS) or the model's
    pre-training peak / ``lr_divisor`` (App. D.1), clipped into ``peak_lr_range`` when one is set
    (§4.1's printed "between 1.2e-5 and 6e-5"; docs/fidelity.md#P1-LR-PEAK)."""
    override = train.get("method_lr", {}).get(method)
    if override:
        return float(override)
    lr = model["pretrain_peak_lr"] / train["lr_divisor"]
    bounds = train.get("peak_lr_range")
    if bounds:
        lo, hi = (float(b) for b in bounds)
        if lo > hi:
            raise ValueError(f"train.peak_lr_range: lower bound {lo} exceeds upper bound {hi}")
        lr = min(max(lr, lo), hi)
    return float(lr)


def training_runs(params: dict[str, Any], *, flops_per_second: float | None = None,
                  apply_cap: bool = True) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """All feasible run configs of the grid, and the infeasible ones with their reason.

    With ``train.gpu_hours_cap`` set (and ``apply_cap``), runs beyond the cap are dropped in the
    documented order (``embtune.cost.trim_to_cap``, at ``flops_per_second``, default: the
    calibrated throughput) and listed as skipped with status ``dropped``."""
    train = params["train"]
    processed = Path(params["paths"]["processed"])
    results = Path(params["paths"]["results"])
    runs: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    for model in params["models"]:
        for tag, method_cfg, reason in _method_variants(model, train):
            for budget in train["budgets"]:
                for seed in train["seeds"]:
                    run_id = f"{model['name']}__{tag}__c{format_budget(budget)}__s{seed}"
                    if reason:
                        skipped.append(Skipped(run_id, reason))
                        continue
                    counts = model_counts(
                        model, method_cfg["method"], frozen_blocks=method_cfg.get("frozen_blocks") or 0,
                        lora_rank=method_cfg.get("lora_rank"),
                        lora_embed_in=bool(method_cfg.get("lora_embed_in")))
                    tokens = tokens_for_budget(counts, budget)
                    est_steps = tokens / train["tokens_per_pair_estimate"] / train["batch_size"]
                    if est_steps < train["min_steps"]:
                        skipped.append(Skipped(run_id, f"budget allows ~{est_steps:.1f} steps "
                                                       f"< train.min_steps={train['min_steps']}"))
                        continue
                    runs.append({
                        "run_id": run_id,
                        "model": dict(model),
                        **method_cfg,
                        "budget": float(budget),
                        "seed": seed,
                        "peak_lr": peak_lr(model, method_cfg["method"], train),
                        "planned": {"n_total": counts.n_total, "n_forward": counts.n_forward,
                                    "n_backward": counts.n_backward, "n_update": counts.n_update,
                                    "tokens": tokens, "steps": est_steps},
                        "train": {k: train[k] for k in (
                            "batch_size", "context_length", "temperature", "logit_scale", "weight_decay",
                            "warmup_fraction", "final_lr_fraction", "pooling", "gradcache_chunk",
                            "gradient_checkpointing", "min_steps", "max_epochs",
                            "checkpoint_every_steps", "log_every_steps", "final_loss_window")},
                        "data": {"train_dir": str(processed / "bge_packed"),
                                 "tokenizer_dir": str(processed / "tokenizer")},
                        "base_model_dir": str(results / "base_models" / model["name"]),
                    })
    cap = train.get("gpu_hours_cap")
    if apply_cap and cap is not None:
        from embtune.cost import flops_per_second as calibrated, trim_to_cap

        runs, dropped = trim_to_cap(runs, float(cap), flops_per_second or calibrated())
        skipped += [Skipped(r["run_id"], reason, "dropped") for r, reason in dropped]
    return runs, skipped


QUERY_SWEEP_KEYS = ("lr", "freeze", "batch_size", "margin", "weight_decay", "train_data",
                    "scheduler", "optimizer", "patience", "tune_doc_tower")


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def epoch_batches_for(cfg: dict[str, Any], defaults: dict[str, Any]) -> int:
    """Batches per epoch of a run whose batch size may differ from the defaults' (paper 2, M.1).

    ``epoch_size: samples`` keeps the defaults' samples per epoch (1000 x 14 = 14000: Tables 6-8,
    10, 12); ``batches`` keeps ``batches_per_epoch`` (Tables 9, 11), so validation comes less often
    in samples seen when the batch grows."""
    mode = cfg.get("epoch_size", "samples")
    if mode == "batches":
        return int(cfg["batches_per_epoch"])
    if mode == "samples":
        samples = defaults["batches_per_epoch"] * defaults["batch_size"]
        return max(1, round(samples / cfg["batch_size"]))
    raise ValueError(f"query_tuning.defaults.epoch_size: {mode!r} (expected samples or batches)")


def query_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """One-factor-at-a-time query-tuning runs per model: the default regime plus each sweep value.

    The id names what differs from the defaults (``default`` for the default regime), so a value
    equal to the default collapses onto the default run instead of training it twice. The
    batches per epoch follow the batch size (:func:`epoch_batches_for`)."""
    qt = params["query_tuning"]
    defaults = dict(qt["defaults"])
    runs: list[dict[str, Any]] = []
    for model in qt["models"]:
        seen: set[str] = set()
        variants = [("default", {})] + [
            (key, {key: value}) for key in QUERY_SWEEP_KEYS for value in qt.get("sweeps", {}).get(key, [])]
        for key, change in variants:
            cfg = {**defaults, **change}
            diff = {k: v for k, v in cfg.items() if v != defaults[k]}
            qrun = "default" if not diff else "__".join(f"{k}-{_fmt(v)}" for k, v in sorted(diff.items()))
            if qrun in seen:
                continue
            seen.add(qrun)
            lr = scaled_lr(cfg["lr"], cfg["batch_size"], cfg["lr_scaling"], defaults["batch_size"])
            cfg["batches_per_epoch"] = epoch_batches_for(cfg, defaults)
            runs.append({"qrun_id": qrun, "model": dict(model), "sweep": key,
                         **cfg, "lr_effective": lr})
    return runs
