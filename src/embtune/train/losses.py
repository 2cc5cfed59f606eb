"""Contrastive losses.

Paper 1 (section 3, after Neelakantan et al. 2022): symmetric InfoNCE over in-batch negatives on
cosine similarity with temperature τ, averaged over the row (query→doc) and column (doc→query)
directions. Paper 2: a triplet margin loss on cosine or Euclidean distance.

Logit scale (docs/fidelity.md#P1-LOGIT-SCALE): §3.3 prints logits = cos·exp(τ), but App. D sets
τ = 0.025 and tabulates "Temperature⁻¹" (40 best), and the authors' code multiplies the cosine
by ``tau=40``: the logits are cos/τ. ``form="inverse"`` (default) is cos/τ; ``form="exp"`` is the
literal cos·exp(τ) (τ is then a log-scale, as in CLIP: τ = ln 40 gives the same logits).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

LogitScaleForm = Literal["inverse", "exp"]
LOGIT_SCALE_FORMS: tuple[LogitScaleForm, ...] = ("inverse", "exp")


def logit_scale(temperature: float, form: LogitScaleForm = "inverse") -> float:
    """The factor on the cosine: 1/τ (``inverse``, App. D) or exp(τ) (``exp``, §3.3 as printed)."""
    if form == "inverse":
        return 1.0 / temperature if temperature else math.inf
    if form == "exp":
        return math.exp(temperature)
    raise ValueError(f"unknown logit_scale form {form!r} (expected one of {', '.join(LOGIT_SCALE_FORMS)})")


def similarity_logits(q: torch.Tensor, p: torch.Tensor, temperature: float,
                      form: LogitScaleForm = "inverse") -> torch.Tensor:
    """S[i, j] = cos(q_i, p_j)·scale, computed in fp32 (bf16 cosine logits at τ=1/40 are too coarse)."""
    scale = logit_scale(temperature, form)
    with torch.autocast(device_type=q.device.type, enabled=False):
        qn = F.normalize(q.float(), dim=-1)
        pn = F.normalize(p.float(), dim=-1)
        return qn @ pn.T * scale


def symmetric_infonce(q: torch.Tensor, p: torch.Tensor, temperature: float,
                      form: LogitScaleForm = "inverse") -> torch.Tensor:
    """(CE(S, labels) + CE(Sᵀ, labels)) / 2 with labels = diagonal: (q_i, p_i) are the positives."""
    if q.shape != p.shape:
        raise ValueError(f"query and positive embeddings differ in shape: {tuple(q.shape)} vs {tuple(p.shape)}")
    logits = similarity_logits(q, p, temperature, form)
    labels = torch.arange(q.shape[0], device=q.device)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def pair_distance(a: torch.Tensor, b: torch.Tensor, kind: Literal["cos", "dist"],
                  unit: bool = False) -> torch.Tensor:
    """Row-wise distance: ``cos`` = 1 − cosine similarity, ``dist`` = Euclidean distance, of the
    rows as given (the encoder's raw vectors) or, with ``unit``, of the L2-normalised rows
    (``dist_embeddings: normalized``, docs/fidelity.md#P2-DIST-EMBEDDINGS)."""
    if kind == "cos":
        return 1.0 - F.cosine_similarity(a.float(), b.float(), dim=-1)
    if kind == "dist":
        if unit:
            a, b = F.normalize(a.float(), dim=-1), F.normalize(b.float(), dim=-1)
        return (a.float() - b.float()).norm(dim=-1)
    raise ValueError(f"unknown distance {kind!r} (expected 'cos' or 'dist')")


def triplet_margin_loss(q: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor, margin: float,
                        distance: Literal["cos", "dist"] = "cos", unit: bool = False) -> torch.Tensor:
    """mean(max(0, d(q, pos) − d(q, neg) + margin)) — paper 2's objective for the query tower."""
    return F.relu(pair_distance(q, pos, distance, unit) - pair_distance(q, neg, distance, unit)
                  + margin).mean()
