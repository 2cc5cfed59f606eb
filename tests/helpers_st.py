"""Load a sentence-transformers folder and fail on any warning it raises or logs.

Why a helper: transformers' library logger does not propagate to the root logger (pytest's
``caplog`` listens there), so its warnings (missing weights, tokenizer issues) would pass
unseen; the handler is attached to it explicitly. tests/unit/models/test_st_export.py shows that both kinds
of warning (sentence-transformers' and transformers') make it fail."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any


def load_quietly(path: str | Path, caplog: Any) -> Any:
    """``SentenceTransformer(path)`` with Python warnings as errors and no WARNING log record."""
    from sentence_transformers import SentenceTransformer

    caplog.clear()
    hf_logger = logging.getLogger("transformers")
    hf_logger.addHandler(caplog.handler)
    try:
        with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
            warnings.simplefilter("error")
            model = SentenceTransformer(str(path), device="cpu")
    finally:
        hf_logger.removeHandler(caplog.handler)
    loud = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert not loud, loud
    return model
