"""Fused kernels for the training step, each chosen where the device has it and kept because it
was measured to help (benchmarks/kernels_measured.json; on a GPU: ``make gpu-check``).

- **Attention**: PyTorch's fused ``scaled_dot_product_attention`` (``attn_implementation="sdpa"``)
  for every family that supports it (all four of ``models.families`` do), eager attention where a
  family does not. transformers 5 already defaults to it; asking explicitly keeps a default that
  changes between releases from silently changing the kernel (and the throughput the plan uses).
  On CPU, 1.15x eager's real tokens/s for a tiny GPT-NeoX at context 75.
- **AdamW**: ``fused=True`` (one kernel per step for all parameters, on CUDA and on CPU): on CPU
  2.5x faster than the per-parameter loop and 3.9x than ``foreach`` for 5.8M parameters.
- **torch.compile** (``train.compile``, off by default): ``inductor`` generates fused kernels for
  the encoder, ``aot_eager`` only traces (it checks the path, cheaply, and is what CI runs). Chunk
  widths are rounded up to a multiple of :data:`WIDTH_MULTIPLE` and the width is marked dynamic
  within [``WIDTH_MULTIPLE``, context], so one graph serves every length bucket instead of one
  recompile per distinct width. On CPU inductor does not pay: a 260 s first step, then 0.85x
  eager; whether it pays on a GPU is ``make gpu-check``'s step 6.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

ATTENTION = "sdpa"
COMPILE_BACKENDS = ("none", "inductor", "aot_eager")
WIDTH_MULTIPLE = 8       # bf16 tensor-core tiles want multiples of 8; also the compile buckets


def load_pretrained(base_dir: str, **kwargs: Any) -> torch.nn.Module:
    """``AutoModel.from_pretrained`` with SDPA attention, or eager where the family has no SDPA."""
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(base_dir, attn_implementation=ATTENTION, **kwargs)
    except ValueError as err:           # transformers: "... does not support ... sdpa ..."
        if "sdpa" not in str(err).lower() and "scaled_dot_product" not in str(err).lower():
            raise
        return AutoModel.from_pretrained(base_dir, attn_implementation="eager", **kwargs)


def adamw(params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with the fused implementation (the same update as the per-parameter loop)."""
    return torch.optim.AdamW(list(params), lr=lr, weight_decay=weight_decay, fused=True)


def width_multiple(backend: str) -> int:
    """What chunk widths are rounded up to: 1 (no extra padding) unless the encoder is compiled."""
    return 1 if backend == "none" else WIDTH_MULTIPLE


def compiled(module: torch.nn.Module, backend: str, context_length: int) -> Callable[..., Any]:
    """``module`` itself, or a ``torch.compile``d call of it whose token width is dynamic within
    the length buckets (:func:`width_multiple` .. ``context_length``)."""
    if backend == "none":
        return module
    if backend not in COMPILE_BACKENDS:
        raise ValueError(f"train.compile: unknown backend {backend!r} (expected one of {', '.join(COMPILE_BACKENDS)})")
    fn = torch.compile(module, backend=backend)
    low, high = min(WIDTH_MULTIPLE, context_length), context_length

    def call(*, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
        if high > low:              # one graph for every bucket width; 0/1 are always specialised
            for t in (input_ids, attention_mask):
                torch._dynamo.mark_dynamic(t, 1, min=low, max=high)
        return fn(input_ids=input_ids, attention_mask=attention_mask)

    return call
