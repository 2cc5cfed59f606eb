"""What each built-in fine-tuning method does to a model, to its parameter counts and to the grid.

Why apart from the registry (:mod:`embtune.models.methods`, which declares each method with these
hooks): these are the mechanics, written once per method and read by nothing else directly:

- ``apply_*``: which tensors train (``requires_grad``), or the peft adapters that do (paper 1 §3.4;
  ``lora_config``: "all the dense layers", §4.2);
- ``counts_*``: the analytic N, N_F, N_B, N_U of a params ``models`` entry (formulas:
  :mod:`embtune.models.flops`; docs/fidelity.md#P1-FLOPS);
- the grid's helpers: ``freeze_fractions`` (§4.2's k/6 or k/8), ``lora_alpha`` (peft's scale) and
  ``check_freeze`` (explicit fractions must be whole blocks of some model).

Each hook reads the method's own settings as typed attributes: :class:`FreezeSettings`,
:class:`LoraSettings` (full and bias-only have none: the base
:class:`~embtune.models.run_spec.MethodSettings`), the types their registry entries declare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from embtune.models import families
from embtune.models.flops import Arch, ParamCounts
from embtune.models.run_spec import MethodSettings

#: a params problem: (key path, what), as embtune.plan.config_checks reports them
Problem = tuple[tuple[Any, ...], str]


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


@dataclass(frozen=True)
class FreezeSettings(MethodSettings):
    """Block freezing: the fraction of §4.2's grid and the whole blocks it is of the model."""

    freeze_fraction: float | None = None
    frozen_blocks: int | None = None


@dataclass(frozen=True)
class LoraSettings(MethodSettings):
    """LoRA: rank r, peft's alpha (scale alpha/r), an adapter on the token embeddings too, dropout."""

    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_embed_in: bool | None = None
    lora_dropout: float | None = field(default=None, metadata={"recipe": False})

    def embedding_rank(self) -> int:
        return int(self.lora_rank) if self.lora_embed_in and self.lora_rank else 0


def apply_full(model: Any, settings: MethodSettings) -> Any:
    model.requires_grad_(True)
    return model


def counts_full(a: Arch, settings: MethodSettings) -> ParamCounts:
    return ParamCounts(a.n, a.n, a.n, a.n)


def _whole(x: float) -> bool:
    return abs(x - round(x)) <= 1e-9 * max(1.0, abs(x))


def check_freeze(train: Mapping[str, Any], models: Sequence[Mapping[str, Any]]
                  ) -> tuple[list[Problem], list[Problem]]:
    """Explicit frozen fractions must be whole blocks: an error for a fraction that is k/L for no
    model's block count L (every run of it would be skipped), a warning naming the models that
    skip one that fits only some."""
    fractions = train["freeze"]["fractions"]
    problems: list[Problem] = []
    warns: list[Problem] = []
    if fractions == "auto":
        return problems, warns
    layers = sorted({m["num_layers"] for m in models})
    for i, frac in enumerate(fractions):
        fits = [n for n in layers if _whole(frac * n)]
        parts = ("train", "freeze", "fractions", i)
        if not fits:
            problems.append((parts, f"{frac!r} is not k/L for any model's block count L "
                                    f"{layers}: every freeze run of it would be skipped"))
        elif len(fits) < len(layers):
            warns.append((parts, f"{frac!r} is k/L only for L in {fits}; the models with "
                                 f"{sorted(set(layers) - set(fits))} blocks skip it (see skipped.csv)"))
    return problems, warns


def apply_freeze(model: Any, settings: FreezeSettings) -> Any:
    family = families.family_of(model)
    k = int(settings.frozen_blocks or 0)
    stack = families.blocks(model, family)
    if not 0 <= k < len(stack):
        raise ValueError(f"frozen_blocks must be in [0, {len(stack)}), got {k}")
    model.requires_grad_(True)
    for module in families.lookup_modules(model, family) + stack[:k]:
        module.requires_grad_(False)
    return model


def counts_freeze(a: Arch, settings: FreezeSettings) -> ParamCounts:
    frozen = settings.frozen_blocks or 0
    if not 0 <= frozen < a.layers:
        raise ValueError(f"frozen_blocks must be in [0, {a.layers}), got {frozen}")
    active = (a.layers - frozen) * a.block + a.norm
    return ParamCounts(a.n, a.n, active, active)


def apply_bias(model: Any, settings: MethodSettings) -> Any:
    family = families.family_of(model)
    reason = family.bias_free_reason(families.dims_of(families.spec_of_config(model.config)))
    if reason:
        raise ValueError(reason)
    for name, p in model.named_parameters():
        p.requires_grad_(name.endswith("bias"))
    return model


def counts_bias(a: Arch, settings: MethodSettings) -> ParamCounts:
    reason = a.family.bias_free_reason(a.dims)
    if reason:
        raise ValueError(f"models[{a.spec.name}]: {reason}")
    norm_bias = a.hidden if a.family.norm_bias else 0
    biases = a.layers * (sum(x.fan_out for x in a.dense if x.bias) + 2 * norm_bias) + norm_bias
    return ParamCounts(a.n, a.n, a.n, biases)


def _rank(settings: LoraSettings) -> int:
    rank = settings.lora_rank
    if not rank or rank < 1:
        raise ValueError(f"lora needs a positive lora_rank, got {rank!r}")
    return int(rank)


def lora_config(family: families.Family, settings: LoraSettings):  # -> peft.LoraConfig
    """peft config: all the family's dense layers (+ its token embeddings with ``lora_embed_in``).
    GPT-2's Conv1D stores weights in × out: peft must be told (``fan_in_fan_out``)."""
    from peft import LoraConfig

    if settings.lora_alpha is None:
        raise ValueError("lora needs lora_alpha (train.lora.alpha), got none")
    targets = family.lora_targets() + ([family.token_embedding] if settings.lora_embed_in else [])
    return LoraConfig(r=_rank(settings), lora_alpha=float(settings.lora_alpha),
                      lora_dropout=float(settings.lora_dropout or 0.0), target_modules=targets,
                      bias="none", fan_in_fan_out=family.fan_in_fan_out)


def apply_lora(model: Any, settings: LoraSettings) -> Any:
    from peft import get_peft_model

    return get_peft_model(model, lora_config(families.family_of(model), settings))


def counts_lora(a: Arch, settings: LoraSettings) -> ParamCounts:
    rank = _rank(settings)
    adapter = a.layers * rank * sum(x.fan_in + x.fan_out for x in a.dense)
    if settings.lora_embed_in:          # B (d×r) runs per token; A (vocab×r) is a lookup
        adapter += rank * a.hidden
    return ParamCounts(a.n, a.n + adapter, a.n + adapter, adapter)


def lora_alpha(rank: int, spec: float | str) -> float:
    """peft's ``lora_alpha`` (adapter output scaled by alpha/r). A number is used at every rank:
    the authors' released config leaves peft's default 8, so the scale is 8/r. ``rank`` gives
    alpha = r, scale 1 at every rank (the other common convention)."""
    if spec == "rank":
        return float(rank)
    if isinstance(spec, bool) or not isinstance(spec, (int, float)) or spec <= 0:
        raise ValueError(f"train.lora.alpha: expected a positive number or 'rank', got {spec!r}")
    return float(spec)
