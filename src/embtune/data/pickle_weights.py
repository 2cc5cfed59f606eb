"""Pickle weights (``pytorch_model*.bin``) converted to safetensors at stage-in, on the login node.

Why: EleutherAI's Pythia step branches (``step143000``, the paper's final checkpoints) hold
``pytorch_model*.bin`` only; the hub's safetensors conversions were merged into ``main`` alone.
embtune never unpickles with the full unpickler (a pickle runs whatever code it names), so each
file is read with torch's restricted loader (``torch.load(weights_only=True)``: tensors, dicts
and plain values only; any other global is refused before it is called) and written back as
safetensors (data only), sharded checkpoints with their ``*.index.json`` too. The pickle files
are then removed from the staged folder, so compute jobs only ever see safetensors; the stage
record keeps each pickle's sha256 beside its safetensors twin's.

Why this loop and not transformers' ``save_pretrained``: that needs the model instantiated
(a 2.8B model is ~11 GB of RAM on the login node); here the zip checkpoint is memory-mapped
(``mmap``) and safetensors writes straight from those pages (``save_file`` passes pointers, no
copy), never building a model.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError, one_line
from embtune.core.io import atomic_path, sha256_file, write_json

#: transformers' pickle weight files: one file or shards ``pytorch_model-00001-of-00003.bin``
WEIGHTS_RE = re.compile(r"(?:^|/)pytorch_model(?:-\d+-of-\d+)?\.bin$")
INDEX_SUFFIX = "pytorch_model.bin.index.json"


def is_pickle_weights(name: str) -> bool:
    """A file name (posix, relative to the repo) that transformers loads as pickle weights."""
    return bool(WEIGHTS_RE.search(name))


def safetensors_name(name: str) -> str:
    """``[dir/]pytorch_model[-k-of-n].bin`` -> ``[dir/]model[-k-of-n].safetensors`` (the names
    transformers and sentence-transformers look for first)."""
    head, _, base = name.rpartition("/")
    new = "model" + base[len("pytorch_model"):-len(".bin")] + ".safetensors"
    return f"{head}/{new}" if head else new


def _refusal(path: Path, err: BaseException) -> str:
    """The line of torch's weights-only message that names what was refused (its advice to
    retry with the restriction off is exactly what must not be done)."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    named = [ln for ln in lines if re.search(r"global|unsupported|not allowed", ln, re.I)
             and not ln.startswith("Weights only load failed")]
    text = one_line(named[0] if named else (lines[-1] if lines else type(err).__name__))
    return text.split(". ")[0].rstrip(".")   # the finding, not torch's advice on allow-listing it


def load_state_dict(path: Path) -> dict[str, Any]:
    """The tensors of a pickle weights file through torch's restricted loader, or a DataError
    naming the file. Nothing in the file is executed: a global outside torch's allow-list (e.g.
    ``os.system``) is refused by the loader before it is called."""
    from pickle import UnpicklingError  # the restricted loader's refusal; nothing here unpickles

    import torch

    zipped = zipfile.is_zipfile(path)   # torch >= 1.6 format: can be memory-mapped, not read into RAM
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=zipped)
    except UnpicklingError as err:
        raise DataError(f"{path}: refused by torch's weights-only loader ({_refusal(path, err)}); "
                        "nothing in it was run and it is not converted; expected a state dict of tensors "
                        "(pin a revision with model.safetensors if this file is not plain weights)") from None
    except (RuntimeError, EOFError, ValueError, OSError) as err:
        raise DataError(f"{path}: not a readable torch checkpoint ({one_line(err)[:300]}); expected "
                        "a state dict saved with torch.save") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: holds a {type(obj).__name__}; expected a state dict (name -> tensor)")
    bad = [k for k, v in obj.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise DataError(f"{path}: entries {bad[:3]!r} are not name -> tensor; expected a state dict of tensors")
    return obj


def _unshared(state: dict[str, Any]) -> dict[str, Any]:
    """Each tensor with storage of its own: safetensors refuses tensors that share memory (tied
    weights, views); every name is kept, so transformers ties them again on load."""
    seen: set[int] = set()
    out = {}
    for name, t in state.items():
        storage = t.untyped_storage()
        whole = t.is_contiguous() and t.storage_offset() == 0 and t.nbytes == storage.nbytes()
        key = storage.data_ptr()
        if t.numel() and (key in seen or not whole):
            t = t.contiguous().clone()
        seen.add(key)
        out[name] = t
    return out


def convert_file(src: Path, dst: Path) -> None:
    """One pickle weights file -> one safetensors file, written atomically (temp + rename)."""
    from safetensors.torch import save_file

    tensors = _unshared(load_state_dict(src))
    with atomic_path(dst) as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt"})


def _convert_index(folder: Path, index: str, done: dict[str, str]) -> None:
    """``pytorch_model.bin.index.json`` -> ``model.safetensors.index.json`` naming the converted
    shards (its ``metadata`` kept); every shard it names must have been converted."""
    path = folder / index
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        weight_map = doc["weight_map"]
        new_map = {name: safetensors_name(shard) for name, shard in weight_map.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"{path}: not a transformers shard index; expected JSON with a 'weight_map' "
                        "of tensor name -> pytorch_model-*.bin") from None
    prefix = index[: -len(INDEX_SUFFIX)]
    missing = sorted({prefix + s for s in weight_map.values()} - set(done))
    if missing:
        raise DataError(f"{path}: names shard(s) {missing[:3]} that the revision does not hold; "
                        "expected every shard of the index")
    write_json(folder / f"{prefix}model.safetensors.index.json",
               {**doc, "weight_map": dict(sorted(new_map.items()))})


def convert_folder(folder: Path) -> list[dict[str, str]]:
    """Convert every ``pytorch_model*.bin`` under ``folder`` (and its shard index) to safetensors,
    then remove the pickle files. Returns one record per converted file: its name and sha256 and
    its safetensors twin's name and sha256."""
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    done: dict[str, str] = {}
    records = []
    for name in (n for n in names if is_pickle_weights(n)):
        target = safetensors_name(name)
        if (folder / target).exists():
            raise DataError(f"{folder / target}: exists beside {name}; expected one of the two")
        convert_file(folder / name, folder / target)
        done[name] = target
        records.append({"from": name, "from_sha256": sha256_file(folder / name),
                        "to": target, "to_sha256": sha256_file(folder / target)})
    for index in (n for n in names if n.endswith(INDEX_SUFFIX)):
        _convert_index(folder, index, done)
        target = index[: -len(INDEX_SUFFIX)] + "model.safetensors.index.json"
        records.append({"from": index, "from_sha256": sha256_file(folder / index),
                        "to": target, "to_sha256": sha256_file(folder / target)})
        (folder / index).unlink()
    for name in done:
        (folder / name).unlink()
    return records
