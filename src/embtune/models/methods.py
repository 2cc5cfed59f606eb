"""Fine-tuning methods (paper 1, section 4) and parameter counts from the instantiated model.

Methods: ``full`` (everything), ``freeze`` (first k blocks and the token embeddings frozen),
``bias`` (only bias vectors, LayerNorm biases included), ``lora`` (peft adapters on the four dense
layers of every block, "all the dense layers" in section 4.2; ``lora_embed_in`` also adapts the
token embeddings, as the authors' released config does). Why count from the real model: the FLOP
budget C = 2·D·(N_F+N_B+N_U) is spent with these numbers, so they must describe what actually
runs; tests assert they equal the planning-time ``flops.analytic_counts`` and hand counts.
"""

from __future__ import annotations

from typing import Any

import torch

from embtune.models.flops import ParamCounts

METHODS = ("full", "freeze", "bias", "lora")
LORA_TARGETS = ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]
LORA_EMBED_TARGET = "embed_in"          # GPT-NeoX's token embeddings (the authors' config adds it)


def base_of(model: torch.nn.Module) -> torch.nn.Module:
    """The underlying transformer (unwraps a peft model)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def apply_method(model: torch.nn.Module, run: dict[str, Any]) -> torch.nn.Module:
    """Set ``requires_grad`` (or wrap with LoRA) per ``run['method']``; returns the model to train."""
    method = run["method"]
    if method == "full":
        model.requires_grad_(True)
        return model
    if method == "freeze":
        k = int(run.get("frozen_blocks") or 0)
        if not 0 <= k < len(model.layers):
            raise ValueError(f"frozen_blocks must be in [0, {len(model.layers)}), got {k}")
        model.requires_grad_(True)
        model.get_input_embeddings().requires_grad_(False)
        for block in model.layers[:k]:
            block.requires_grad_(False)
        return model
    if method == "bias":
        for name, p in model.named_parameters():
            p.requires_grad_(name.endswith("bias"))
        return model
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        targets = LORA_TARGETS + ([LORA_EMBED_TARGET] if run.get("lora_embed_in") else [])
        cfg = LoraConfig(r=int(run["lora_rank"]), lora_alpha=float(run["lora_alpha"]),
                         lora_dropout=float(run.get("lora_dropout", 0.0)),
                         target_modules=targets, bias="none")
        return get_peft_model(model, cfg)
    raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")


def _lookup_tables(base: torch.nn.Module) -> set[int]:
    """ids of the token-embedding tables: the embedding weight and, with an embedding LoRA, its A
    (vocab×r, indexed by token id). Lookups cost no FLOPs; the paper counts neither."""
    emb = base.get_input_embeddings()
    emb = getattr(emb, "base_layer", emb)           # peft wraps an adapted embedding
    return {id(emb.weight)} | {id(p) for n, p in base.named_parameters() if "lora_embedding_A" in n}


def count_params(model: torch.nn.Module, method: str) -> ParamCounts:
    """N, N_F, N_B, N_U from the actual parameters (token-embedding tables excluded, as in the paper).

    N: the base model's parameters. N_F: everything that runs per token, LoRA adapters included
    (unmerged, they run beside the base weights). N_B: N_F less the modules below the first one
    (token embeddings, then the blocks in order) that holds a trainable tensor: autograd stops
    there. N_U: the trainable parameters."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")
    base = base_of(model)
    tables = _lookup_tables(base)

    def numel(module: torch.nn.Module, *, adapters: bool = True, trainable: bool = False) -> int:
        return sum(p.numel() for n, p in module.named_parameters()
                   if id(p) not in tables and (adapters or "lora_" not in n)
                   and (p.requires_grad or not trainable))

    stack = [base.get_input_embeddings(), *base.layers]
    has_trainable = [any(p.requires_grad for p in m.parameters()) for m in stack]
    first = has_trainable.index(True) if any(has_trainable) else len(stack)
    n_forward = numel(base)
    return ParamCounts(n_total=numel(base, adapters=False), n_forward=n_forward,
                       n_backward=n_forward - sum(numel(m) for m in stack[:first]),
                       n_update=numel(base, trainable=True))
