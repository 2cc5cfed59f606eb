"""Source files: ``hf://datasets/...`` URIs and their download (stage ``fetch``, driver
:mod:`embtune.stages.fetch`), and file globs.

Why a stage of its own: downloads are the only network step, so isolating them lets every other
stage run offline from ``data/raw`` and lets Snakemake/DVC track the raw file like any output.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from embtune.data.jsonl import DataError

HF_DATASET_PREFIX = "hf://datasets/"


@dataclass(frozen=True)
class HubFile:
    """One file of a Hugging Face dataset repo."""

    repo_id: str
    filename: str


def parse_hf_uri(uri: str) -> HubFile:
    """Split ``hf://datasets/<org>/<name>/<file...>`` into repo id and in-repo path.

    Why strict: a malformed URI would otherwise surface as an opaque 404 from the hub."""
    if not uri.startswith(HF_DATASET_PREFIX):
        raise DataError(f"{uri}: not an hf://datasets/<org>/<name>/<file> URI")
    parts = uri[len(HF_DATASET_PREFIX):].split("/")
    if len(parts) < 3 or not all(parts):
        raise DataError(f"{uri}: expected hf://datasets/<org>/<name>/<file>")
    return HubFile(repo_id=f"{parts[0]}/{parts[1]}", filename="/".join(parts[2:]))


def is_hf_uri(text: str) -> bool:
    return text.startswith("hf://")


def hub_download(uri: str) -> Path:
    """Resolve an hf:// dataset URI to a local (cached) path via ``huggingface_hub``."""
    from huggingface_hub import hf_hub_download

    ref = parse_hf_uri(uri)
    return Path(hf_hub_download(repo_id=ref.repo_id, filename=ref.filename, repo_type="dataset"))


def expand_files(patterns: Iterable[str]) -> list[str]:
    """Expand file globs in order (sorted within a pattern, duplicates removed).

    Why an error on no match: a typo in params.yaml would otherwise mean training on no data."""
    out: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        matches = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matches:
            raise DataError(f"{pattern}: no file matches this pattern")
        for path in matches:
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out
