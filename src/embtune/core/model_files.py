"""Checks of a model or tokenizer folder before transformers reads it.

Why: transformers fills a config's missing sizes with the class defaults (a GPT-NeoX config
without ``hidden_size``/``num_hidden_layers`` builds a 6144×44 model, 24 GB of RAM, before
anything fails), reports a truncated ``tokenizer.json`` as a bare JSON error without the file's
name, and would unpickle a ``pytorch_model.bin`` (running whatever code it holds). Each check
here reads only small JSON files and a few bytes, and raises
:class:`~embtune.core.errors.DataError` naming the file, the field and what was expected.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError

#: config keys each model type must set (aliases: GPT-2 names them n_embd, n_layer, n_head)
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "gpt2": ("n_embd", "n_layer", "n_head", "vocab_size"),
}
DEFAULT_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
#: upper bounds far above any model embtune trains or evaluates, far below a runaway default
MAX_SIZE = {"hidden_size": 32768, "n_embd": 32768, "num_hidden_layers": 256, "n_layer": 256,
            "num_attention_heads": 512, "n_head": 512, "vocab_size": 1 << 22,
            "intermediate_size": 1 << 18, "max_position_embeddings": 1 << 20}
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
TOKENIZER_JSON = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _json_file(path: Path, expected: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        reason = err.msg if isinstance(err, json.JSONDecodeError) else "invalid UTF-8"
        where = f" at line {err.lineno} column {err.colno}" if isinstance(err, json.JSONDecodeError) else ""
        raise DataError(f"{path}: truncated or invalid JSON ({reason}{where}); expected {expected}") from None


def check_model_config(path: str | Path) -> dict[str, Any]:
    """A transformers ``config.json``: ``model_type`` set, its family's size keys present, each a
    positive integer within :data:`MAX_SIZE`, and the hidden size divisible by the heads."""
    p = Path(path)
    config = _json_file(p, "a transformers model config")
    if not isinstance(config, dict):
        raise DataError(f"{p}: a JSON {type(config).__name__}; expected a transformers model config (an object)")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise DataError(f"{p}: field 'model_type' missing; expected a transformers model config")
    required = REQUIRED_KEYS.get(model_type, DEFAULT_KEYS)
    missing = [k for k in required if k not in config]
    if missing:
        raise DataError(f"{p}: field(s) {', '.join(missing)} missing; expected the sizes of a {model_type} "
                        "model (transformers would build its default size instead)")
    for key, limit in MAX_SIZE.items():
        value = config.get(key)
        if value is None and key not in required:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
            raise DataError(f"{p}: field {key!r} is {value!r}; expected an integer in 1..{limit}")
    hidden, heads = config.get(required[0]), config.get(required[2])
    if hidden % heads and not config.get("head_dim"):
        raise DataError(f"{p}: field {required[0]!r} {hidden} is not divisible by {required[2]!r} {heads}; "
                        "expected whole attention heads")
    return config


def check_tokenizer_files(folder: str | Path) -> None:
    """The tokenizer JSON files present in ``folder`` parse, and ``tokenizer.json`` holds a model."""
    root = Path(folder)
    for name in TOKENIZER_JSON:
        p = root / name
        if p.is_file():
            obj = _json_file(p, "a complete Hugging Face tokenizer file")
            if name == "tokenizer.json" and (not isinstance(obj, dict) or "model" not in obj):
                raise DataError(f"{p}: field 'model' missing; expected a Hugging Face tokenizer.json")


def is_pickle(path: Path) -> bool:
    """A raw pickle (protocol 2+ starts with 0x80) or torch's zip of pickles (``data.pkl``)."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head[:1] == b"\x80":
        return True
    if head == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as zf:
                return any(n.endswith(".pkl") for n in zf.namelist())
        except zipfile.BadZipFile:
            return False
    return False


def refuse_pickle_weights(folder: str | Path) -> None:
    """No pickle weights file (``pytorch_model.bin``, ``*.pt``...) in ``folder``: never loaded."""
    root = Path(folder)
    for p in sorted(root.rglob("*")):
        if p.suffix in PICKLE_SUFFIXES and p.is_file() and is_pickle(p):
            raise DataError(f"{p}: a pickle weights file; it is not loaded, because unpickling runs code; "
                            "expected model.safetensors (convert it with safetensors where it was made)")


def check_model_folder(folder: str | Path) -> None:
    """Everything above for a model folder (a hub id that is not a folder is left to the hub
    client): pickle weights, every ``config.json`` that names a ``model_type`` (sentence-
    transformers keep the model in a subfolder) and the top-level one, tokenizer files."""
    root = Path(folder)
    if not root.is_dir():
        return
    refuse_pickle_weights(root)
    for p in sorted(root.rglob("config.json")):
        if p.parent == root and not (root / "adapter_config.json").is_file():
            check_model_config(p)
        elif '"model_type"' in p.read_text(encoding="utf-8", errors="replace"):
            check_model_config(p)
    for sub in {p.parent for p in root.rglob("tokenizer*.json")}:
        check_tokenizer_files(sub)
