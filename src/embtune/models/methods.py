"""Fine-tuning methods (paper 1, section 4) and parameter counts from the instantiated model.

Methods: ``full`` (everything), ``freeze`` (first k blocks and the token embeddings frozen),
``bias`` (only bias vectors, LayerNorm biases included), ``lora`` (peft adapters on the four dense
layers of every block). Why count from the real model: the FLOP budget C = 2·D·(N_F+N_B+N_U) is
spent with these numbers, so they must describe what actually runs; tests assert they equal the
planning-time ``flops.analytic_counts``.
"""

from __future__ import annotations

from typing import Any

import torch

from embtune.models.flops import ParamCounts

METHODS = ("full", "freeze", "bias", "lora")
LORA_TARGETS = ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]


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

        cfg = LoraConfig(r=int(run["lora_rank"]), lora_alpha=float(run["lora_alpha"]),
                         lora_dropout=float(run.get("lora_dropout", 0.0)),
                         target_modules=list(LORA_TARGETS), bias="none")
        return get_peft_model(model, cfg)
    raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")


def _numel(module: torch.nn.Module) -> int:
    """Base-model parameters of ``module`` (LoRA adapter weights excluded)."""
    return sum(p.numel() for n, p in module.named_parameters() if "lora_" not in n)


def count_params(model: torch.nn.Module, method: str) -> ParamCounts:
    """N, N_F, N_B, N_U from the actual parameters (token embeddings excluded, as in the paper).

    N_F: every non-embedding parameter runs forward. N_B: the parameters from the first block
    that holds a trainable tensor onwards (autograd stops below it). N_U: trainable
    non-embedding parameters; for LoRA, the adapter matrices (the paper's convention)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (expected one of {METHODS})")
    base = base_of(model)
    emb = base.get_input_embeddings().weight
    non_emb = [(n, p) for n, p in base.named_parameters() if p is not emb]
    n_total = sum(p.numel() for n, p in non_emb if "lora_" not in n)
    n_update = sum(p.numel() for n, p in non_emb if p.requires_grad)
    layers = list(base.layers)
    trainable = [any(p.requires_grad for p in blk.parameters()) for blk in layers]
    first = trainable.index(True) if any(trainable) else len(layers)
    n_backward = n_total - sum(_numel(blk) for blk in layers[:first])
    return ParamCounts(n_total=n_total, n_forward=n_total, n_backward=n_backward, n_update=n_update)
