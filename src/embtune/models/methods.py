"""Fine-tuning methods (paper 1, section 4) and parameter counts from the instantiated model.

Methods: ``full`` (everything), ``freeze`` (first k blocks and the embedding lookups frozen),
``bias`` (only bias vectors, LayerNorm biases included), ``lora`` (peft adapters on every dense
layer of every block, "all the dense layers" in section 4.2; ``lora_embed_in`` also adapts the
token embeddings, as the authors' released config does). Which modules are blocks, lookups and
dense layers comes from the model's family (``embtune.models.families``: GPT-NeoX, Llama, Qwen2,
GPT-2). Why count from the real model: the FLOP budget C = 2·D·(N_F+N_B+N_U) is spent with these
numbers, so they must describe what actually runs; tests assert they equal the planning-time
``flops.analytic_counts`` and hand counts.
"""

from __future__ import annotations

from typing import Any

import torch

from embtune.models import families
from embtune.models.flops import ParamCounts

METHODS = ("full", "freeze", "bias", "lora")


def base_of(model: torch.nn.Module) -> torch.nn.Module:
    """The underlying transformer (unwraps a peft model)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def lora_config(family: families.Family, run: dict[str, Any]):  # -> peft.LoraConfig
    """peft config: all the family's dense layers (+ its token embeddings with ``lora_embed_in``).
    GPT-2's Conv1D stores weights in × out: peft must be told (``fan_in_fan_out``)."""
    from peft import LoraConfig

    targets = family.lora_targets() + ([family.token_embedding] if run.get("lora_embed_in") else [])
    return LoraConfig(r=int(run["lora_rank"]), lora_alpha=float(run["lora_alpha"]),
                      lora_dropout=float(run.get("lora_dropout", 0.0)), target_modules=targets,
                      bias="none", fan_in_fan_out=family.fan_in_fan_out)


def apply_method(model: torch.nn.Module, run: dict[str, Any]) -> torch.nn.Module:
    """Set ``requires_grad`` (or wrap with LoRA) per ``run['method']``; returns the model to train."""
    method = run["method"]
    family = families.family_of(model)
    if method == "full":
        model.requires_grad_(True)
        return model
    if method == "freeze":
        k = int(run.get("frozen_blocks") or 0)
        stack = families.blocks(model, family)
        if not 0 <= k < len(stack):
            raise ValueError(f"frozen_blocks must be in [0, {len(stack)}), got {k}")
        model.requires_grad_(True)
        for module in families.lookup_modules(model, family) + stack[:k]:
            module.requires_grad_(False)
        return model
    if method == "bias":
        reason = family.bias_free_reason(families.dims_of(families.spec_of_config(model.config)))
        if reason:
            raise ValueError(reason)
        for name, p in model.named_parameters():
            p.requires_grad_(name.endswith("bias"))
        return model
    if method == "lora":
        from peft import get_peft_model

        return get_peft_model(model, lora_config(family, run))
    raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")


def _lookup_tables(base: torch.nn.Module, family: families.Family) -> set[int]:
    """ids of the embedding tables: each lookup's weight and, with an embedding LoRA, its A
    (vocab×r, indexed by token id). Lookups cost no FLOPs; the paper counts none of them."""
    tables = {id(getattr(m, "base_layer", m).weight) for m in families.lookup_modules(base, family)}
    return tables | {id(p) for n, p in base.named_parameters() if "lora_embedding_A" in n}


def count_params(model: torch.nn.Module, method: str) -> ParamCounts:
    """N, N_F, N_B, N_U from the actual parameters (embedding lookups excluded: docs/fidelity.md#P1-FLOPS).

    N: the base model's parameters. N_F: everything that runs per token, LoRA adapters included
    (unmerged, they run beside the base weights). N_B: N_F less the modules below the first one
    (the embedding lookups, then the blocks in order) that holds a trainable tensor: autograd
    stops there. N_U: the trainable parameters."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")
    base = base_of(model)
    family = families.family_of(base)
    tables = _lookup_tables(base, family)

    def numel(modules: list[torch.nn.Module], *, adapters: bool = True, trainable: bool = False) -> int:
        return sum(p.numel() for m in modules for n, p in m.named_parameters()
                   if id(p) not in tables and (adapters or "lora_" not in n)
                   and (p.requires_grad or not trainable))

    stack = [families.lookup_modules(base, family), *([b] for b in families.blocks(base, family))]
    has_trainable = [any(p.requires_grad for m in group for p in m.parameters()) for group in stack]
    first = has_trainable.index(True) if any(has_trainable) else len(stack)
    n_forward = numel([base])
    return ParamCounts(n_total=numel([base], adapters=False), n_forward=n_forward,
                       n_backward=n_forward - sum(numel(group) for group in stack[:first]),
                       n_update=numel([base], trainable=True))
