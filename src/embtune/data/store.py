"""The project store: every external artifact a study needs, staged on the login node (stage
``stage-in``, driver :mod:`embtune.stages.stage_in`; ``hf://`` dataset files through ``fetch``).

Why: compute nodes have no network. The local rules of ``workflow/rules/stage_in.smk`` download
each hub model / encoder at its pinned revision into ``<store>/models/<repo id>/<revision>/``
(``embtune.core.layout.Store``) with the real ``huggingface_hub`` client (``HF_ENDPOINT`` honoured);
compute jobs then read only those folders with the hub offline. Each artifact gets a *record*:
repo id, the revision asked for, the commit it resolved to and the sha256 of every file. A
snapshot's record is ``STAGE_RECORD`` inside its folder (written last: its presence means the
download completed); ``manifest`` gathers every record into one JSON.

A compute job that finds an artifact missing raises :class:`~embtune.core.errors.DataError` naming
the artifact and the rule that fetches it (``embtune`` prints one line and exits 2).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError
from embtune.core.io import read_json, sha256_file

STAGE_RECORD = "embtune-stage.json"   # inside a snapshot folder: its record (the commit marker)
SNAPSHOT_RULE = "stage_snapshot"      # the local rule that downloads a snapshot
DATASET_RULE = "fetch_hf"             # the local rule that downloads an hf:// dataset file
STAGE_TARGET = "stage_in"             # the target that stages everything (run on the login node)
#: Files of a model repo that torch / sentence-transformers never read (other frameworks' weights,
#: ONNX / OpenVINO exports): not staged, so a large repo costs only what the jobs load.
IGNORE_PATTERNS = ("*.h5", "*.msgpack", "*.ot", "*.tflite", "tf_model*", "flax_model*", "rust_model*",
                   "onnx/*", "openvino/*", "*.onnx")


def go_online() -> None:
    """The stage-in stages are the study's network step: they download even where the shell
    exports HF_HUB_OFFLINE=1 for every other job (the Makefile, a cluster's login profile). Must
    run before ``huggingface_hub`` is first imported (it reads the variable once)."""
    if "huggingface_hub" in sys.modules:
        return
    os.environ["HF_HUB_OFFLINE"] = "0"


def file_hashes(folder: Path) -> dict[str, str]:
    """posix path -> sha256 of every file under ``folder`` (the record itself excluded)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel != STAGE_RECORD:
            out[rel] = sha256_file(path)
    return out


def _glob_literal(name: str) -> str:
    """``name`` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def pickle_plan(repo_id: str, revision: str, files: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """(patterns that keep pickle files out of the store, whether to convert pickle weights).

    Why here: a staged folder holding ``pytorch_model.bin`` beside ``model.safetensors`` (many
    hub repos carry both) would be refused whole by the no-pickle check when a compute job loads
    it, hours later. So pickle files are not downloaded where safetensors weights exist. A
    revision with pickle weights only (Pythia's step branches) is downloaded and converted
    (:mod:`embtune.data.pickle_weights`); other pickle files (optimizer states, training
    arguments) are never downloaded. A revision whose only weights are pickles that are not
    transformers weights is refused on the login node, naming it."""
    from embtune.core.model_files import PICKLE_SUFFIXES
    from embtune.data.pickle_weights import is_pickle_weights

    pickles = [f for f in files if f.endswith(PICKLE_SUFFIXES)]
    if not pickles:
        return (), False
    if any(f.endswith(".safetensors") for f in files):
        return tuple(f"*{suffix}" for suffix in PICKLE_SUFFIXES), False
    if not any(is_pickle_weights(f) for f in pickles):
        raise DataError(f"{repo_id}@{revision}: only pickle files ({', '.join(sorted(pickles)[:3])}), none of "
                        "them transformers weights; expected model.safetensors or pytorch_model*.bin at this "
                        "revision: pin a revision that has them (a branch, tag, 40-hex commit or the hub's "
                        "safetensors-conversion PR, refs/pr/N)")
    return tuple(_glob_literal(f) for f in sorted(pickles) if not is_pickle_weights(f)), True


def snapshot(repo_id: str, revision: str, dest: Path, repo_type: str = "model",
             ignore_patterns: Sequence[str] = IGNORE_PATTERNS) -> dict[str, Any]:
    """Download ``repo_id`` at ``revision`` into the (new, empty) folder ``dest``; returns its
    record. The revision is resolved to a commit first and the files are fetched at that commit,
    so the record names exactly what was downloaded even if the branch moves meanwhile. A model's
    pickle weights are never staged: they are left out, or converted to safetensors where they
    are the revision's only weights (:func:`pickle_plan`; the record's ``converted`` lists each
    pickle file's sha256 beside its safetensors twin's)."""
    from huggingface_hub import HfApi, snapshot_download

    from embtune.core.model_files import refuse_pickle_weights

    info = HfApi().repo_info(repo_id, repo_type=repo_type, revision=revision)
    convert = False
    if repo_type == "model":
        listed = [s.rfilename for s in (info.siblings or [])]
        skip, convert = pickle_plan(repo_id, revision, listed)
        ignore_patterns = (*ignore_patterns, *skip)
    snapshot_download(repo_id, repo_type=repo_type, revision=info.sha, local_dir=dest,
                      ignore_patterns=list(ignore_patterns))
    shutil.rmtree(dest / ".cache", ignore_errors=True)   # huggingface_hub's local_dir bookkeeping
    extra: dict[str, Any] = {}
    if convert:
        from embtune.data.pickle_weights import convert_folder

        extra["converted"] = convert_folder(dest)
        refuse_pickle_weights(dest)   # nothing a compute job would refuse is left behind
    files = file_hashes(dest)
    if not files:
        raise DataError(f"{repo_id}@{revision}: the hub listed no files to stage")
    return {"kind": repo_type, "repo_id": repo_id, "revision": revision, "commit": info.sha,
            "ignore_patterns": list(ignore_patterns), "files": files, **extra}


def dataset_file(repo_id: str, filename: str, revision: str = "main") -> tuple[Path, dict[str, Any]]:
    """One file of a dataset repo, resolved to a commit and downloaded into the hub cache:
    (its path, its record without the sha256 the caller adds once it is copied)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    meta = get_hf_file_metadata(hf_hub_url(repo_id, filename, repo_type="dataset", revision=revision))
    commit = meta.commit_hash or revision
    path = Path(hf_hub_download(repo_id, filename, repo_type="dataset", revision=commit))
    return path, {"kind": "dataset", "repo_id": repo_id, "revision": revision, "commit": commit, "file": filename}


def require_staged(folder: str | os.PathLike[str], artifact: str) -> Path:
    """``folder`` if the stage-in completed there, else a DataError naming ``artifact`` and the
    rule (and target) that fetches it."""
    path = Path(folder)
    if not (path / STAGE_RECORD).is_file():
        raise DataError(f"{path}: {artifact} is not staged (compute nodes are offline); fetch it on the login "
                        f"node: snakemake {STAGE_TARGET} (rule {SNAPSHOT_RULE})")
    return path


def verify(folder: Path) -> list[str]:
    """Files of a staged snapshot whose sha256 differs from its record (or are missing/extra)."""
    record = read_json(folder / STAGE_RECORD)
    actual = file_hashes(folder)
    wanted: Mapping[str, str] = record["files"]
    return sorted(name for name in set(wanted) | set(actual) if wanted.get(name) != actual.get(name))


def manifest(snapshots: Iterable[Path], records: Iterable[Path], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One JSON for the whole store: every snapshot's and dataset file's record, by path."""
    artifacts = {}
    for folder in snapshots:
        artifacts[Path(folder).as_posix()] = read_json(Path(folder) / STAGE_RECORD)
    for rec in records:
        record = read_json(rec)
        artifacts[record["path"]] = record
    return {"artifacts": dict(sorted(artifacts.items())), **(dict(extra) if extra else {})}


def hub_id(spec: Mapping[str, Any]) -> str:
    """The checkpoint to load: ``id``, or its ``-deduped`` twin for a Pythia model with
    ``variant: deduped`` (docs/fidelity.md#P1-PYTHIA-VARIANT; paper 1 uses the standard models).
    Here, not in models/build.py, because the workflow stages that repo on the login node."""
    ident = str(spec["id"])
    if (spec.get("variant", "standard") == "deduped" and spec.get("source") == "hub"
            and ident.startswith("EleutherAI/pythia-") and not ident.endswith("-deduped")):
        return ident + "-deduped"
    return ident
