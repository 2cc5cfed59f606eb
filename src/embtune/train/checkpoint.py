"""Training checkpoints without pickle, tied to the run config and data they were made with.

Layout of a checkpoint directory (``--checkpoint-dir``):

* ``tensors-<step>-<nonce>.safetensors``: every tensor of the state (trainable parameters,
  optimizer moments and step counters, RNG states), flat, keyed by its path in the state;
* ``state.json`` (written last, atomically): everything else (progress, optimizer param groups,
  scheduler counters, Python/numpy RNG state) with ``{"__tensor__": key}`` where a tensor was,
  the fingerprints of the run config, training data and base model, the run config itself,
  and the name and size of the tensors file it belongs to.

Why two files and not ``torch.save``: a pickle runs code when loaded, and checkpoints sit on
shared cluster filesystems; safetensors and JSON are data only. Why a fresh tensors file per
save: ``state.json`` is the commit point, so a kill at any moment leaves either the previous
``state.json`` with its own (still present) tensors file, or the new pair; stale tensors files
are removed after the commit.

Why fingerprints: a checkpoint left by a run whose learning rate, temperature, batch size or data
has since changed must not be resumed under the new config (the manifest would then claim one
config for a run trained under two). Resuming such a checkpoint raises :class:`CheckpointError`
naming what differs; the fix is to delete the checkpoint directory, and that choice is left to a
person because a SLURM requeue would otherwise silently throw away the progress or mix configs.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtune.core.run_identity import RUNTIME_KEYS

STATE_FILE = "state.json"
LEGACY_FILES = ("state.pt",)          # pickle checkpoints of embtune < this format: never loaded
FORMAT = "embtune-checkpoint/1"
TENSORS_GLOB = "tensors-*.safetensors"

# Run-config keys that change how a run is logged or checkpointed, not what it computes; a
# changed value does not make a checkpoint stale (e.g. checkpointing more often after a requeue).
# The run's runtime keys (embtune.core.run_identity: intervals, GradCache chunk, paths) are the same set.
RESUME_NEUTRAL_KEYS = RUNTIME_KEYS


class CheckpointError(ValueError):
    """A checkpoint that cannot or must not be resumed; the message says what to delete."""


# --------------------------------------------------------------------------- fingerprints
def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train.batch_size": 8, ...}``: nested dicts as dotted keys (lists stay values)."""
    if not isinstance(obj, Mapping) or not obj:
        return {prefix: obj}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def resume_config(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run config as the fingerprint sees it: private ``_`` keys and the keys in
    :data:`RESUME_NEUTRAL_KEYS` left out."""
    flat = _flat({k: v for k, v in run.items() if not str(k).startswith("_")})
    return {k: v for k, v in flat.items() if k not in RESUME_NEUTRAL_KEYS}


def config_fingerprint(run: Mapping[str, Any]) -> str:
    from embtune.core.io import json_sha256

    return json_sha256(resume_config(run))


def run_fingerprints(run: Mapping[str, Any]) -> dict[str, str]:
    """sha256 of the run config (canonical JSON), of its training data directory and of its base
    model directory. Directories are fingerprinted from their manifests and file sizes
    (:func:`embtune.core.io.dir_fingerprint`), so a resume does not re-read gigabytes."""
    from embtune.core.io import dir_fingerprint

    return {"config": config_fingerprint(run),
            "train_data": dir_fingerprint(run["data"]["train_dir"]),
            "base_model": dir_fingerprint(run["base_model_dir"])}


def config_diff(old: Mapping[str, Any], new: Mapping[str, Any], limit: int = 8) -> list[str]:
    """``key: old -> new`` for every differing (dotted) key, at most ``limit`` of them."""
    keys = sorted(set(old) | set(new))
    missing = object()
    lines = [f"{k}: {old.get(k, missing)!r} -> {new.get(k, missing)!r}".replace(repr(missing), "(absent)")
             for k in keys if old.get(k, missing) != new.get(k, missing)]
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


# --------------------------------------------------------------------------- state <-> tensors + JSON
_TAGS = ("__tensor__", "__ndarray__", "__tuple__", "__items__")


def split_state(obj: Any, path: str = "") -> tuple[Any, dict[str, torch.Tensor]]:
    """A nested state (dicts, lists, tuples, tensors, numpy arrays, scalars) -> a JSON-able
    skeleton plus ``{key: tensor}``; tensors and arrays are replaced by ``{"__tensor__": key}``.

    Tuples and dicts with non-string keys are tagged so :func:`join_state` restores them exactly
    (``random.setstate`` wants tuples; the optimizer's state is keyed by parameter index)."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(x: Any, at: str) -> Any:
        if isinstance(x, torch.Tensor):
            tensors[at] = x.detach().cpu().contiguous()
            return {"__tensor__": at}
        if isinstance(x, np.ndarray):
            signed = x.dtype.kind == "u" and x.dtype.itemsize > 1   # torch lacks most unsigned types
            arr = x.view(f"i{x.dtype.itemsize}") if signed else x
            tensors[at] = torch.from_numpy(np.ascontiguousarray(arr)).clone()
            return {"__ndarray__": at, "dtype": x.dtype.str}
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, tuple):
            return {"__tuple__": [walk(v, f"{at}/{i}") for i, v in enumerate(x)]}
        if isinstance(x, list):
            return [walk(v, f"{at}/{i}") for i, v in enumerate(x)]
        if isinstance(x, Mapping):
            if all(isinstance(k, str) and not k.startswith("__") for k in x):
                return {k: walk(v, f"{at}/{k}") for k, v in x.items()}
            return {"__items__": [[walk(k, f"{at}/#{i}"), walk(v, f"{at}/{k}")]
                                  for i, (k, v) in enumerate(x.items())]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"checkpoint state at {at or '/'}: cannot store a {type(x).__name__}")

    return walk(obj, path), tensors


def join_state(skeleton: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """Inverse of :func:`split_state`; a missing tensor key raises ``KeyError`` with the key."""
    if isinstance(skeleton, list):
        return [join_state(v, tensors) for v in skeleton]
    if not isinstance(skeleton, dict):
        return skeleton
    if "__tensor__" in skeleton:
        return tensors[skeleton["__tensor__"]]
    if "__ndarray__" in skeleton:
        dtype = np.dtype(skeleton["dtype"])
        arr = tensors[skeleton["__ndarray__"]].numpy()
        return arr.view(dtype) if arr.dtype != dtype else arr
    if "__tuple__" in skeleton:
        return tuple(join_state(v, tensors) for v in skeleton["__tuple__"])
    if "__items__" in skeleton:
        return {join_state(k, tensors): join_state(v, tensors) for k, v in skeleton["__items__"]}
    return {k: join_state(v, tensors) for k, v in skeleton.items()}


# --------------------------------------------------------------------------- RNG and model state
def rng_state() -> dict[str, Any]:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Only what training changes: frozen weights are re-read from the base model on resume."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


# --------------------------------------------------------------------------- save / load
def save_checkpoint(ckpt_dir: Path, run: Mapping[str, Any], fingerprints: Mapping[str, str],
                    model: torch.nn.Module, opt: Any, sched: Any, progress: Mapping[str, Any]) -> Path:
    """Write a tensors file, then commit it with ``state.json``, then drop older tensors files."""
    from safetensors.torch import save_file

    from embtune.core.io import atomic_path, sha256_file, write_json

    ckpt_dir = Path(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    state = {"model": trainable_state(model), "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict(), "rng": rng_state()}
    skeleton, tensors = split_state(state)
    nonce = secrets.token_hex(4)
    name = f"tensors-{int(progress['step']):08d}-{nonce}.safetensors"
    with atomic_path(ckpt_dir / name) as tmp:
        save_file(tensors, str(tmp), metadata={"format": FORMAT, "nonce": nonce})
    write_json(ckpt_dir / STATE_FILE, {
        "format": FORMAT, "run_id": run["run_id"], "fingerprints": dict(fingerprints),
        "config": resume_config(run), "progress": dict(progress), "state": skeleton,
        "tensors": {"file": name, "bytes": (ckpt_dir / name).stat().st_size, "nonce": nonce,
                    "sha256": sha256_file(ckpt_dir / name)}})   # content hash, checked at resume
    for old in ckpt_dir.glob(TENSORS_GLOB):
        if old.name != name:
            old.unlink(missing_ok=True)
    return ckpt_dir / STATE_FILE


def _fail(ckpt_dir: Path, what: str) -> CheckpointError:
    return CheckpointError(f"{what}\nDelete the checkpoint directory {ckpt_dir} to start this run "
                           "from step 0 (its progress is lost); embtune never deletes it for you.")


def read_state(ckpt_dir: Path) -> dict[str, Any] | None:
    """``state.json`` of ``ckpt_dir`` (None when there is no checkpoint), checked for shape.

    A pickle file from an older embtune is refused, never opened."""
    ckpt_dir = Path(ckpt_dir)
    for legacy in LEGACY_FILES:
        if (ckpt_dir / legacy).exists():
            raise _fail(ckpt_dir, f"{ckpt_dir / legacy}: a pickle checkpoint (older embtune format); "
                                  "it is not loaded, because unpickling a file runs code.")
    path = ckpt_dir / STATE_FILE
    if not path.exists():
        return None     # no commit yet (a kill during the first save leaves only a tensors file)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _fail(ckpt_dir, f"{path}: corrupt checkpoint state ({err}).") from None
    needed = ("format", "run_id", "fingerprints", "config", "progress", "state", "tensors")
    if not isinstance(state, dict) or state.get("format") != FORMAT or any(k not in state for k in needed):
        got = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise _fail(ckpt_dir, f"{path}: not an {FORMAT} state file (format {got!r}, "
                              f"expected keys {', '.join(needed)}).")
    return state


def check_compatible(ckpt_dir: Path, state: Mapping[str, Any], run: Mapping[str, Any],
                     fingerprints: Mapping[str, str]) -> None:
    """Raise :class:`CheckpointError` unless the checkpoint was made by this run id, this run
    config and the same training data and base model."""
    path = Path(ckpt_dir) / STATE_FILE
    if state["run_id"] != run["run_id"]:
        raise _fail(ckpt_dir, f"{path} belongs to run {state['run_id']!r}, not {run['run_id']!r}.")
    saved = state["fingerprints"]
    stale = [k for k in fingerprints if saved.get(k) != fingerprints[k]]
    if not stale:
        return
    lines = [f"{path}: the checkpoint was made with a different {', '.join(k.replace('_', ' ') for k in stale)}; "
             "resuming would train one run under two setups while its manifest records only the new one."]
    for key in stale:
        lines.append(f"  {key} fingerprint: checkpoint {str(saved.get(key))[:12]}, now {fingerprints[key][:12]}")
    if "config" in stale:
        lines += [f"  {d}" for d in config_diff(state["config"], resume_config(run))]
    if "train_data" in stale:
        lines.append(f"  training data: {run['data']['train_dir']}")
    if "base_model" in stale:
        lines.append(f"  base model: {run['base_model_dir']}")
    raise _fail(ckpt_dir, "\n".join(lines))


def read_tensors(ckpt_dir: Path, state: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors file ``state.json`` commits to, checked against its recorded size and nonce."""
    from safetensors import SafetensorError, safe_open

    from embtune.core.io import sha256_file

    info = state["tensors"]
    path = Path(ckpt_dir) / str(info.get("file", ""))
    if not path.is_file() or path.parent != Path(ckpt_dir) or not path.name.endswith(".safetensors"):
        raise _fail(ckpt_dir, f"{path}: tensors file named by {STATE_FILE} is missing.")
    size = path.stat().st_size
    if size != info.get("bytes"):
        raise _fail(ckpt_dir, f"{path}: corrupt checkpoint tensors ({size} bytes, "
                              f"{STATE_FILE} recorded {info.get('bytes')}).")
    if "sha256" in info and sha256_file(path) != info["sha256"]:   # bytes changed in place
        raise _fail(ckpt_dir, f"{path}: corrupt checkpoint tensors (content hash differs from the "
                              f"sha256 {STATE_FILE} recorded).")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            if (fh.metadata() or {}).get("nonce") != info.get("nonce"):
                raise _fail(ckpt_dir, f"{path}: tensors file does not belong to {STATE_FILE}.")
            return {k: fh.get_tensor(k) for k in fh.keys()}
    except (SafetensorError, OSError) as err:
        raise _fail(ckpt_dir, f"{path}: corrupt checkpoint tensors ({err}).") from None


def load_checkpoint(ckpt_dir: Path, run: Mapping[str, Any], fingerprints: Mapping[str, str],
                    model: torch.nn.Module, opt: Any, sched: Any) -> dict[str, Any] | None:
    """Restore model, optimizer, scheduler and RNG from ``ckpt_dir``; return the saved progress
    (None when there is no checkpoint). Refuses (:class:`CheckpointError`) a checkpoint of another
    run, config, data or base model, a corrupt one, and any pickle file."""
    ckpt_dir = Path(ckpt_dir)
    state = read_state(ckpt_dir)
    if state is None:
        return None
    check_compatible(ckpt_dir, state, run, fingerprints)
    tensors = read_tensors(ckpt_dir, state)
    try:
        restored = join_state(state["state"], tensors)
        names = {n for n, _ in model.named_parameters()}
        missing = set(restored["model"]) - names
        if missing:
            raise _fail(ckpt_dir, f"{ckpt_dir / STATE_FILE}: checkpoint has parameters the model lacks: "
                                  f"{sorted(missing)[:3]}")
        model.load_state_dict(restored["model"], strict=False)
        opt.load_state_dict(restored["optimizer"])
        sched.load_state_dict(restored["scheduler"])
        set_rng_state(restored["rng"])
    except (KeyError, TypeError, RuntimeError) as err:
        raise _fail(ckpt_dir, f"{ckpt_dir / STATE_FILE}: checkpoint state does not fit this run ({err!r}).") from None
    return dict(state["progress"])
