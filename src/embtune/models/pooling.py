"""Sequence pooling for embeddings.

Masked mean is the default (paper 1, §3.2: emb(S) = 1/n Σ h_i over the n tokens of S): the
authors' code divided by the padded length, which makes an embedding depend on how much padding
its batch had; we divide by real tokens (docs/fidelity.md#P1-POOLING). Last-token pooling takes
the last non-padding position (right padding assumed; App. D.3's alternative).
"""

from __future__ import annotations

from typing import Literal

import torch

Pooling = Literal["mean", "last"]


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over positions where ``mask`` is 1. hidden: (B, T, H), mask: (B, T)."""
    m = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)


def last_token(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Hidden state at the last non-padding position of each row (right padding)."""
    last = mask.long().sum(dim=1).clamp_min(1) - 1
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def pool(hidden: torch.Tensor, mask: torch.Tensor, how: Pooling = "mean") -> torch.Tensor:
    if how == "mean":
        return masked_mean(hidden, mask)
    if how == "last":
        return last_token(hidden, mask)
    raise ValueError(f"unknown pooling {how!r} (expected 'mean' or 'last')")
