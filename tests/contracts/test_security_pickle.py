"""Nothing embtune loads may run code: a crafted pickle where a training checkpoint lives is
refused and never unpickled, and no ``torch.load`` with pickle enabled is left in the repo."""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_config

from embtune.train import checkpoint as ck
from embtune.train import loop

ROOT = Path(__file__).resolve().parents[2]
_one_thread = pytest.fixture(autouse=True)(one_thread)


class _Payload:
    """Unpickling this calls ``open(marker, "w")``: a file appears if anything unpickles it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def _payload(marker: Path) -> bytes:
    return pickle.dumps(_Payload(marker))


def test_the_payload_is_live(tmp_path) -> None:
    """Guard for the tests below: unpickling the payload does create its marker file."""
    pickle.loads(_payload(tmp_path / "sanity")).close()
    assert (tmp_path / "sanity").exists()


@pytest.fixture(scope="module")
def run_and_ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("sec")
    base, data = make_base_model(root), make_shards(root / "bge", 64, 10, 190, 12)
    run = run_config(base, data, "full", budget=1.0e9)
    assert loop.train_run(run, root / "ck", stop_after_steps=2).status == "preempted"
    return run, root / "ck"


def test_pickle_state_pt_is_refused_not_loaded(tmp_path, run_and_ckpt) -> None:
    """An old-format (or planted) ``state.pt`` in the checkpoint directory: refused by name."""
    run, _ = run_and_ckpt
    marker = tmp_path / "pwned"
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "state.pt").write_bytes(_payload(marker))
    with pytest.raises(ck.CheckpointError, match="pickle checkpoint") as err:
        loop.train_run(run, tmp_path / "ck")
    assert str(tmp_path / "ck" / "state.pt") in str(err.value)
    assert not marker.exists()


@pytest.mark.parametrize("where", ["tensors_file", "outside_dir"])
def test_pickle_where_the_tensors_file_should_be_is_never_unpickled(tmp_path, run_and_ckpt, where) -> None:
    """A valid ``state.json`` pointing at a pickle (in place of the tensors file, or outside the
    checkpoint directory) is an error, and the payload never runs."""
    run, good = run_and_ckpt
    ckpt, marker = tmp_path / "ck", tmp_path / "pwned"
    shutil.copytree(good, ckpt)
    state = json.loads((ckpt / ck.STATE_FILE).read_text())
    if where == "tensors_file":
        (ckpt / state["tensors"]["file"]).write_bytes(_payload(marker))
    else:
        (tmp_path / "evil.pt").write_bytes(_payload(marker))
        state["tensors"]["file"] = "../evil.pt"
        (ckpt / ck.STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(ck.CheckpointError):
        loop.train_run(run, ckpt)
    assert not marker.exists()


def test_resume_calls_neither_torch_load_nor_pickle(tmp_path, run_and_ckpt, monkeypatch) -> None:
    import torch

    run, good = run_and_ckpt
    shutil.copytree(good, tmp_path / "ck")

    def forbidden(*args, **kwargs):
        raise AssertionError("a checkpoint load went through pickle")

    for mod, name in ((torch, "load"), (pickle, "load"), (pickle, "loads"), (pickle, "Unpickler")):
        monkeypatch.setattr(mod, name, forbidden)
    assert loop.train_run(run, tmp_path / "ck").status == "ok"


#: the one library module that reads pickle weights: stage-in's conversion of a pickle-only hub
#: revision, through torch's restricted loader only (tests/unit/data/test_pickle_weights.py)
RESTRICTED_LOADER = "src/embtune/data/pickle_weights.py"


def test_no_pickle_enabled_torch_load_in_the_repo() -> None:
    """torch.load with pickle enabled (``weights_only`` set to False) nowhere in code, tests, benchmarks or
    the workflow; library code has no torch.load at all but the restricted one of RESTRICTED_LOADER."""
    needle = "weights_only=" + "False"                      # not spelled out: this file is scanned too
    offenders = []
    for folder in ("src", "tests", "benchmarks", "workflow"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".smk"} or path.name == "Snakefile":
                text = path.read_text(encoding="utf-8", errors="replace")
                rel = path.relative_to(ROOT).as_posix()
                if re.search(re.escape(needle).replace("=", r"\s*=\s*"), text):
                    offenders.append(rel)
                calls = re.findall(r"torch\.load\(([^)]*)\)", text)
                if folder == "src" and "torch.load(" in text and (
                        rel != RESTRICTED_LOADER or not calls or not all("weights_only=True" in c for c in calls)):
                    offenders.append(f"{rel} (torch.load)")
    assert not offenders, offenders


def test_library_code_never_unpickles() -> None:
    """No ``pickle``/``dill``/``joblib`` loading in library code or the workflow: temp files and
    caches use JSON, Arrow or safetensors (a shared filesystem is writable by others)."""
    pattern = re.compile(r"^\s*(import (pickle|dill|cloudpickle)|from (pickle|dill|cloudpickle) import)"
                         r"|(pickle|dill|joblib)\.loads?\(", re.M)
    offenders = [str(p.relative_to(ROOT)) for folder in ("src", "workflow")
                 for p in (ROOT / folder).rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))
                 and p.relative_to(ROOT).as_posix() != RESTRICTED_LOADER]
    assert not offenders, offenders
    # the restricted loader's module imports pickle for its exception type only: it never unpickles itself
    text = (ROOT / RESTRICTED_LOADER).read_text(encoding="utf-8")
    assert not re.search(r"(pickle|dill|joblib)\.(loads?|Unpickler)\b", text)
    imports = re.findall(r"^\s*(?:import pickle|from pickle import).*$", text, re.M)
    assert len(imports) == 1 and re.fullmatch(r"\s*from pickle import UnpicklingError\s*(#.*)?", imports[0]), imports
