"""Load a trained checkpoint as a text embedder, for evaluation.

Why one loader: MTEB and PND evaluation must embed exactly as training did (same pooling, same
truncation), whatever way the checkpoint was saved. Contract with ``embtune train``:

* ``model_dir`` holds a full HF model (``AutoModel.from_pretrained`` works), or a peft LoRA
  adapter (``adapter_config.json``, whose ``base_model_name_or_path`` is the base model dir).
  Adapters are merged (``merge_and_unload``) so inference costs the same as a full model.
* tokenizer files (falling back to the base model dir for adapters);
* ``embedding_config.json`` = ``{"pooling": "mean"|"last", "max_length": int}``. Without it
  (e.g. an off-the-shelf MiniLM folder) we mean-pool and truncate at the tokenizer's limit.

Encoding sorts texts by token length so each batch carries little padding, pads on the right
(last-token pooling assumes it), and restores the caller's order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtune.core.errors import DataError, one_line
from embtune.models.pooling import Pooling, pool

EMBEDDING_CONFIG = "embedding_config.json"
ADAPTER_CONFIG = "adapter_config.json"
DEFAULT_MAX_LENGTH = 512


@dataclass(frozen=True)
class EmbeddingConfig:
    pooling: Pooling = "mean"
    max_length: int = DEFAULT_MAX_LENGTH


def read_embedding_config(model_dir: Path, tokenizer_limit: int | None = None) -> EmbeddingConfig:
    """``embedding_config.json`` if present, else mean pooling at the model's length limit
    (``sentence_bert_config.json``'s ``max_seq_length``, else the tokenizer's)."""
    path = model_dir / EMBEDDING_CONFIG
    if path.is_file():
        raw = json.loads(path.read_text(encoding="utf-8"))
        return EmbeddingConfig(pooling=raw.get("pooling", "mean"),
                               max_length=int(raw.get("max_length", DEFAULT_MAX_LENGTH)))
    st_config = model_dir / "sentence_bert_config.json"  # sentence-transformers folders (MiniLM)
    if st_config.is_file():
        limit = json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length", tokenizer_limit)
    else:
        limit = tokenizer_limit
    limit = limit if limit and limit < 100_000 else DEFAULT_MAX_LENGTH
    return EmbeddingConfig(max_length=int(limit))


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so padding stays small."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


class Embedder:
    """A model + tokenizer + pooling rule; ``encode`` maps texts to float32 vectors."""

    def __init__(self, model: Any, tokenizer: Any, config: EmbeddingConfig,
                 device: str | torch.device = "cpu") -> None:
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "right"
        if self.tokenizer.pad_token is None:        # GPT-2 and many Llama tokenizers have none:
            if self.tokenizer.eos_token is None:    # padding is masked, so any id serves
                raise ValueError("the tokenizer has neither a pad nor an eos token to pad with")
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.config = config
        self.device = torch.device(device)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def _tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(texts), truncation=True, max_length=self.config.max_length,
                             padding=False)
        return [ids if ids else [self.tokenizer.pad_token_id] for ids in enc["input_ids"]]

    def _embed_batch(self, ids: list[list[int]]) -> np.ndarray:
        batch = self.tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt")
        input_ids = batch["input_ids"].to(self.device)
        mask = batch["attention_mask"].to(self.device)
        autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with torch.no_grad(), autocast:
            hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        return pool(hidden.float(), mask, self.config.pooling).cpu().numpy().astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embeddings in the order of ``texts``, shape (len(texts), hidden), float32."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self._tokenize(texts)
        for idx in length_sorted_batches([len(x) for x in ids], batch_size):
            out[idx] = self._embed_batch([ids[i] for i in idx])
        return out


def check_weight_files(model_dir: str | Path) -> None:
    """Raise :class:`DataError` naming the file when a ``*.safetensors`` in ``model_dir`` is
    truncated or corrupt, or when the folder has a ``config.json`` but no weights at all.

    Why before loading: transformers reports a bad file as a bare ``SafetensorError`` (or as a
    missing file) without saying which one; reading each header is cheap (it checks that the
    header parses and that its tensors cover the file exactly, so a truncated copy fails)."""
    from safetensors import SafetensorError, safe_open

    from embtune.core.model_files import check_model_folder

    folder = Path(model_dir)
    if not folder.is_dir():
        return  # a hub id: resolved and checked by the hub client
    check_model_folder(folder)  # config sizes, tokenizer files, no pickle weights: before any build
    files = sorted(folder.rglob("*.safetensors"))  # sentence-transformers keep modules in subfolders
    for path in files:
        try:
            with safe_open(str(path), framework="pt") as fh:
                fh.keys()
        except (SafetensorError, OSError) as err:
            raise DataError(f"{path}: corrupt or truncated safetensors file ({one_line(err)}); "
                            "expected the complete weights a finished training run saves "
                            "(re-run that run's training)") from None
    has_weights = files or any(folder.glob("*.bin")) or any(folder.glob("*.safetensors.index.json"))
    if (folder / "config.json").is_file() and not has_weights:
        raise DataError(f"{folder}: config.json but no weights file; expected model.safetensors "
                        "(an interrupted save? re-run training)")


def nonfinite_parameters(model: torch.nn.Module) -> list[tuple[str, int, int]]:
    """``(name, non-finite count, size)`` of every parameter holding NaN or inf (buffers are left
    out: some models keep ``-inf`` attention masks there on purpose)."""
    bad = []
    for name, tensor in model.named_parameters():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad.append((name, int((~torch.isfinite(tensor)).sum()), tensor.numel()))
    return bad


def _resolve_base(model_dir: Path, base: str) -> str:
    """An adapter's base path may be relative to the adapter dir, to the cwd, or a hub id."""
    candidate = model_dir / base
    return str(candidate) if not Path(base).is_absolute() and candidate.is_dir() else base


def _adapter_wraps_causal_lm(model_dir: Path) -> bool:
    """True when the adapter was trained on a ``*ForCausalLM`` (weights under each family's
    ``causal_lm_prefix``: ``gpt_neox.``, ``model.`` for Llama/Qwen2, ``transformer.`` for GPT-2);
    training saves adapters on the base."""
    from safetensors import safe_open

    from embtune.models.families import FAMILIES

    path = model_dir / "adapter_model.safetensors"
    if not path.is_file():
        return False
    with safe_open(str(path), framework="pt") as fh:
        marks = {f".model.{fam.causal_lm_prefix}." for fam in FAMILIES.values()}
        return any(mark in key for key in fh.keys() for mark in marks)


def _load_merged_adapter(model_dir: Path) -> tuple[Any, str]:
    """Base model + LoRA adapter, merged; returns (model, base path)."""
    from peft import PeftModel
    from transformers import AutoModel, AutoModelForCausalLM

    raw = json.loads((model_dir / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    base = _resolve_base(model_dir, raw["base_model_name_or_path"])
    check_weight_files(base)
    causal = _adapter_wraps_causal_lm(model_dir)
    base_model = (AutoModelForCausalLM if causal else AutoModel).from_pretrained(base)
    merged = PeftModel.from_pretrained(base_model, str(model_dir)).merge_and_unload()
    return (merged.base_model if causal else merged), base


def _load_tokenizer(model_dir: Path, fallback: str | None) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir))
    except (OSError, ValueError):
        if fallback is None:
            raise
        return AutoTokenizer.from_pretrained(fallback)


def load_embedder(model_dir: str | Path, device: str | None = None) -> Embedder:
    """An :class:`Embedder` for a full model dir or a LoRA adapter dir (merged)."""
    from transformers import AutoModel

    model_dir = Path(model_dir)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    check_weight_files(model_dir)
    base: str | None = None
    if (model_dir / ADAPTER_CONFIG).is_file():
        model, base = _load_merged_adapter(model_dir)
    else:
        model = AutoModel.from_pretrained(str(model_dir))
    tokenizer = _load_tokenizer(model_dir, base)
    config = read_embedding_config(model_dir, getattr(tokenizer, "model_max_length", None))
    return Embedder(model, tokenizer, config, device)
