"""Which query-tower parameters stay frozen: the rows of paper 2, Table 1 (plus §3.3's ``odw``).

Why name patterns and not module objects: the spec must mean the same thing for every BERT /
XLM-R style encoder whatever wrapper prefix sentence-transformers puts in front
(``0.auto_model.`` in older releases, ``0.model.`` in newer ones), and a test must be able to list
exactly which names a spec freezes. Patterns anchor on the HF module names
(``embeddings.``, ``encoder.layer.<i>.``), never on the wrapper prefix.

Specs (rows of Table 1, top to bottom):

* ``none``      nothing frozen
* ``emb.base``  word/position/token-type embeddings (not the embedding LayerNorm)
* ``emb``       the whole embeddings module
* ``emb_b0a``   emb + block 0 attention (self-attention and its output dense/LayerNorm)
* ``emb_b0ai``  + block 0 intermediate
* ``emb_b0aio`` + block 0 ``output.dense`` (weight and bias; not the block's output LayerNorm)
* ``emb_b0``    emb + all of block 0
* ``emb_b0-K``  emb + blocks 0..K (``emb_b0-5``, ``emb_b0-10``); K is clamped to ``n_blocks - 2``
  so the last block stays trainable — Table 1's B0-10 on a 12-block model is "everything up to
  the last transformer block B11" (docs/fidelity.md#P2-FREEZE-SPECS) — and a model with fewer
  than 2 blocks raises :class:`FreezeSpecError`
* ``emb_odw``   emb + ``encoder.layer.<i>.output.dense.weight`` in every block (§3.3). The
  attention's ``attention.output.dense.weight`` is a different layer (Table 15 lists them apart)
  and stays trainable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

FREEZE_SPECS = ("none", "emb.base", "emb", "emb_b0a", "emb_b0ai", "emb_b0aio", "emb_b0",
                "emb_b0-5", "emb_b0-10", "emb_odw")

_BLOCK = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.(.+)$")
_EMB = re.compile(r"(?:^|\.)embeddings\.(.+)$")
_EMB_BASE = ("word_embeddings.", "position_embeddings.", "token_type_embeddings.")
_RANGE = re.compile(r"^emb_b0-(\d+)$")
_BLOCK0_PARTS = {"emb_b0a": ("attention.",),
                 "emb_b0ai": ("attention.", "intermediate."),
                 "emb_b0aio": ("attention.", "intermediate.", "output.dense.")}


class FreezeSpecError(ValueError):
    """A freeze spec that is unknown or cannot be applied to this model."""


@dataclass(frozen=True)
class FreezePlan:
    """What a spec resolves to on one model: frozen names and how the spec was interpreted."""

    spec: str
    frozen: frozenset[str]
    trainable: frozenset[str]
    note: str = ""


def block_of(name: str) -> int | None:
    """Transformer block index of a parameter name, or None outside the blocks."""
    m = _BLOCK.search(name)
    return int(m.group(1)) if m else None


def count_blocks(names: Iterable[str]) -> int:
    """Number of transformer blocks, from the highest ``encoder.layer.<i>`` index."""
    idx = [b for b in map(block_of, names) if b is not None]
    return max(idx) + 1 if idx else 0


def _in_embeddings(name: str, base_only: bool) -> bool:
    m = _EMB.search(name)
    if not m:
        return False
    return m.group(1).startswith(_EMB_BASE) if base_only else True


def _block_part(name: str, block: int | None, parts: tuple[str, ...]) -> bool:
    """Does ``name`` lie in block ``block`` (any block if None) under one of ``parts``?"""
    m = _BLOCK.search(name)
    if not m or (block is not None and int(m.group(1)) != block):
        return False
    return m.group(2).startswith(parts)


def _last_frozen_block(spec: str, n_blocks: int) -> tuple[int, str]:
    """Upper block index for ``emb_b0-K``, clamped so at least the last block trains."""
    k = int(_RANGE.match(spec).group(1))  # type: ignore[union-attr]
    if n_blocks < 2:
        raise FreezeSpecError(f"freeze spec {spec!r} needs a model with >= 2 transformer blocks "
                              f"(this one has {n_blocks}); nothing would be left to tune")
    top = min(k, n_blocks - 2)
    note = "" if top == k else (f"{spec}: clamped to blocks 0-{top} of {n_blocks} "
                                f"(the last block stays trainable)")
    return top, note


def check_spec(spec: str) -> None:
    """Raise :class:`FreezeSpecError` for a name that is neither listed nor ``emb_b0-K``."""
    if spec not in FREEZE_SPECS and not _RANGE.match(spec):
        raise FreezeSpecError(f"unknown freeze spec {spec!r} (expected one of "
                              f"{', '.join(FREEZE_SPECS)} or emb_b0-K)")


def is_frozen(spec: str, name: str, n_blocks: int) -> bool:
    """Whether parameter ``name`` is frozen under ``spec`` on a model with ``n_blocks`` blocks."""
    check_spec(spec)
    if spec == "none":
        return False
    if spec == "emb.base":
        return _in_embeddings(name, base_only=True)
    if _in_embeddings(name, base_only=False):
        return spec == "emb" or spec.startswith("emb_")
    if spec == "emb":
        return False
    if spec in _BLOCK0_PARTS:
        return _block_part(name, 0, _BLOCK0_PARTS[spec])
    if spec == "emb_b0":
        return block_of(name) == 0
    if spec == "emb_odw":
        return _block_part(name, None, ("output.dense.weight",))
    top, _ = _last_frozen_block(spec, n_blocks)  # emb_b0-K (check_spec admitted nothing else)
    b = block_of(name)
    return b is not None and b <= top


def plan_freeze(spec: str, names: Iterable[str]) -> FreezePlan:
    """Resolve ``spec`` on a model's parameter names (pure; apply with :func:`apply_freeze`)."""
    check_spec(spec)
    names = list(names)
    n_blocks = count_blocks(names)
    if spec != "none" and not any(_EMB.search(n) for n in names):
        raise FreezeSpecError(f"freeze spec {spec!r}: no '*.embeddings.*' parameters in this model; "
                              f"only BERT/XLM-R style names are supported")
    note = _last_frozen_block(spec, n_blocks)[1] if _RANGE.match(spec) else ""
    frozen = frozenset(n for n in names if is_frozen(spec, n, n_blocks))
    return FreezePlan(spec, frozen, frozenset(names) - frozen, note)


def apply_freeze(model, spec: str) -> FreezePlan:  # noqa: ANN001 (torch.nn.Module)
    """Set ``requires_grad`` on ``model`` per ``spec``; returns the plan for the manifest."""
    plan = plan_freeze(spec, [n for n, _ in model.named_parameters()])
    for name, param in model.named_parameters():
        param.requires_grad_(name not in plan.frozen)
    return plan
