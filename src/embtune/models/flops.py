"""FLOP accounting for contrastive fine-tuning (paper 1, section 3.5).

C = 2·N_F·D + 2·N_B·D + 2·N_U·D, where D is the number of real (non-padding) tokens processed
(query + positive, after truncation; the authors' code logs the same ``attention_mask.sum()`` as
"forward tokens") and N_F, N_B, N_U are the non-token-embedding parameters run forward,
back-propagated through, and updated (the paper's words: "used in the forward pass to process
each token"; docs/fidelity.md#P1-FLOPS, #P1-LORA-FLOPS). Per method, with N the base model's non-token-embedding parameters (embedding
lookups excluded: token embeddings, and GPT-2's learned position table, also a lookup):

- full: N_F = N_B = N_U = N, so C = 6·N·D;
- freeze (first k blocks and the embeddings frozen): N_F = N, N_B = N_U = the active blocks +
  the final norm, so C = 2·N·D + 4·N_U·D;
- bias: N_F = N_B = N, N_U = the bias vectors (dense and LayerNorm biases; a family without
  biases cannot run it), so C = 4·N·D + 2·N_U·D;
- lora (unmerged adapters): every token runs through the base weights *and* the adapters, and
  back-propagation goes through both, so N_F = N_B = N + N_adapter and N_U = N_adapter:
  C = 4·(N + N_adapter)·D + 2·N_adapter·D. The authors' code counts the same: its
  ``all_param`` is summed after ``get_peft_model``, skipping only names containing "emb".

A LoRA on the token embeddings (option ``train.lora.embed_in``) adds a vocab×r table A, indexed
like the embedding itself (a lookup: no FLOPs, excluded like every token embedding), and a d×r
matrix B applied to every looked-up row (2·r·d FLOP forward, back-propagated through to reach A's
rows, and updated): it adds r·d to each of N_F, N_B and N_U.

The trainable fraction S of the modified law is N_U / N_F: the share of the parameters the model
runs per token that are trained (App. E: "the fraction of the model's parameters that are
trainable"; for LoRA the model's parameters include the adapters). It lies in [0, 1] by
construction, at any rank, where N_U / N could exceed 1 for a high-rank adapter on a small model.

The analytic counts here let the sweep plan the grid offline from architecture numbers alone, for
every decoder family of ``embtune.models.families`` (GPT-NeoX, Llama, Qwen2, GPT-2); training
re-counts from the instantiated model (``embtune.models.methods``) and the two must agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from embtune.models import families
from embtune.models.model_spec import ModelSpec


@dataclass(frozen=True)
class ParamCounts:
    """Non-token-embedding parameter counts that enter the FLOP formula."""

    n_total: int        # N: non-token-embedding parameters of the base model (adapters excluded)
    n_forward: int      # N_F: run per token (base + adapters)
    n_backward: int     # N_B: back-propagated through
    n_update: int       # N_U: updated

    def __post_init__(self) -> None:
        # Every updated parameter is back-propagated through and every one of those runs forward;
        # the order is what keeps S = N_U / N_F a fraction.
        if not 0 <= self.n_update <= self.n_backward <= self.n_forward or self.n_forward <= 0:
            raise ValueError(f"parameter counts must satisfy 0 <= N_U <= N_B <= N_F, N_F > 0; got "
                             f"N_U={self.n_update}, N_B={self.n_backward}, N_F={self.n_forward}")

    @property
    def per_token(self) -> int:
        """FLOP per processed token: 2·(N_F + N_B + N_U)."""
        return 2 * (self.n_forward + self.n_backward + self.n_update)

    @property
    def trainable_fraction(self) -> float:
        """S in the paper's modified law: N_U / N_F, in [0, 1] (docs/fidelity.md#P1-TRAINABLE-FRACTION)."""
        return self.n_update / self.n_forward


def training_flops(counts: ParamCounts, tokens: int | float) -> float:
    """C = 2·N_F·D + 2·N_B·D + 2·N_U·D."""
    return float(counts.per_token) * float(tokens)


def tokens_for_budget(counts: ParamCounts, budget: float) -> float:
    """D such that C(D) = budget."""
    return budget / counts.per_token


@dataclass(frozen=True)
class Arch:
    """What a method's analytic counts need from a params ``models`` entry (offline, no weights).

    Per family (``families.FAMILIES``), a block is its dense layers (in·out weights, + out if the
    layer has a bias) and two norms (d, + d for a LayerNorm bias); N adds the final norm; the
    embedding lookups are not counted."""

    spec: ModelSpec
    family: families.Family
    dims: families.Dims
    dense: tuple[families.Dense, ...]
    norm: int           # parameters of one norm
    block: int          # parameters of one block
    n: int              # N

    @property
    def layers(self) -> int:
        return self.dims.layers

    @property
    def hidden(self) -> int:
        return self.dims.hidden


def arch_of(spec: ModelSpec | Mapping[str, Any]) -> Arch:
    spec = ModelSpec.of(spec)
    fam = families.family_of_spec(spec)
    dims = families.dims_of(spec)
    dense = tuple(fam.dense(dims))
    norm = dims.hidden * (2 if fam.norm_bias else 1)
    block = sum(x.fan_in * x.fan_out + x.fan_out * x.bias for x in dense) + 2 * norm
    return Arch(spec, fam, dims, dense, norm, block, dims.layers * block + norm)


# Dense (no sparsity) bf16 tensor-core peaks from NVIDIA's data sheets, matched against
# ``torch.cuda.get_device_name()``; the more specific names come first (H100 PCIe before H100).
PEAK_BF16_FLOPS: tuple[tuple[str, float], ...] = (
    ("GH200", 989.4e12), ("H200", 989.4e12), ("H100 PCIe", 756.0e12), ("H100 NVL", 835.5e12),
    ("H100", 989.4e12), ("A100", 312.0e12), ("L40S", 362.1e12), ("L4", 121.0e12),
    ("A10G", 70.0e12), ("A10", 125.0e12), ("A6000", 154.8e12),
)


def peak_bf16_flops(device_name: str) -> float | None:
    """The device's dense bf16 peak FLOP/s, or None for a device we have no data sheet for."""
    for key, peak in PEAK_BF16_FLOPS:
        if key.lower() in device_name.lower():
            return peak
    return None


def model_flops_utilisation(counts: ParamCounts, tokens_per_s: float, peak_flops: float,
                            devices: int = 1) -> float:
    """MFU (PaLM's definition): achieved *model* FLOP/s, C = per_token·D, over the hardware peak.

    Recomputation is overhead, not model FLOPs: GradCache's second forward pass and activation
    checkpointing make the same run slower, never "more utilised"."""
    if peak_flops <= 0 or devices <= 0:
        raise ValueError(f"peak_flops and devices must be positive (got {peak_flops}, {devices})")
    return counts.per_token * tokens_per_s / (peak_flops * devices)
