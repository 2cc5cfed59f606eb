"""Stage-in: the real ``huggingface_hub`` client against a loopback hub.

`embtune stage-in snapshot` and `embtune fetch --record` download at a revision, record the commit
it resolved to and each file's sha256 (checked here with hashlib against the bytes the hub holds);
the manifest gathers the records; a compute stage that finds an artifact missing exits 2 with one
line naming it and the rule that fetches it; once the hub is stopped nothing can be fetched.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from helpers_hub import LoopbackHub  # noqa: E402

from embtune.core.errors import DataError  # noqa: E402
from embtune.core.layout import Store  # noqa: E402
from embtune.core.model_files import PICKLE_SUFFIXES  # noqa: E402
from embtune.data.store import STAGE_RECORD, pickle_plan, require_staged, verify  # noqa: E402
from embtune.models.encoders import resolve_encoder_path  # noqa: E402

MODEL_FILES = {"config.json": b'{"model_type": "gpt_neox"}', "model.safetensors": os.urandom(4096),
               "tokenizer.json": b"{}", "onnx/model.onnx": b"not staged"}
DATA = b'{"query": "q", "pos": ["p"], "neg": ["n"]}\n' * 50


def _embtune(hub_url: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    # HF_HUB_OFFLINE=1 as the Makefile exports it: the stage-in stages go online by themselves
    env = {**os.environ, "HF_ENDPOINT": hub_url, "HF_HUB_OFFLINE": "1", "HF_HOME": str(home),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-m", "embtune.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture()
def hub():
    with LoopbackHub() as h:
        yield h


def test_snapshot_at_revision_records_commit_and_hashes(hub: LoopbackHub, tmp_path: Path) -> None:
    sha = hub.add("model", "EleutherAI/pythia-14m", MODEL_FILES, revisions=("main", "step143000"))
    out = tmp_path / "store/models/EleutherAI/pythia-14m/step143000"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "EleutherAI/pythia-14m",
                    "--revision", "step143000", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert any("/api/models/EleutherAI/pythia-14m/revision/step143000" in r for r in hub.requests), hub.requests
    record = json.loads((out / STAGE_RECORD).read_text())
    wanted = {k: hashlib.sha256(v).hexdigest() for k, v in MODEL_FILES.items() if not k.startswith("onnx/")}
    assert record["commit"] == sha and record["revision"] == "step143000"
    assert record["repo_id"] == "EleutherAI/pythia-14m" and record["files"] == wanted
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted([*wanted, STAGE_RECORD])
    assert (out / "model.safetensors").read_bytes() == MODEL_FILES["model.safetensors"]
    assert verify(out) == [] and require_staged(out, "x") == out
    (out / "config.json").write_text("{}")
    assert verify(out) == ["config.json"]

    bad = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "EleutherAI/pythia-14m",
                   "--revision", "step1", "--out", str(tmp_path / "bad"))
    assert bad.returncode != 0 and not (tmp_path / "bad").exists()


def test_pickle_weights_beside_safetensors_are_not_staged(hub: LoopbackHub, tmp_path: Path) -> None:
    """Many hub repos carry pytorch_model.bin beside model.safetensors: the pickle is not staged
    (the load's no-pickle check would refuse the whole folder)."""
    pickled = b"\x80\x04K\x01."                                 # a real pickle: protocol 4, the int 1
    hub.add("model", "org/both", {**MODEL_FILES, "pytorch_model.bin": pickled}, revisions=("main",))
    out = tmp_path / "both"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/both",
                    "--revision", "main", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "model.safetensors").is_file() and not (out / "pytorch_model.bin").exists()
    record = json.loads((out / STAGE_RECORD).read_text())
    assert "pytorch_model.bin" not in record["files"] and "converted" not in record


class _RunsCode:
    """Unpickled by the full unpickler, this would run ``touch <marker>``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _saved(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@pytest.mark.slow
def test_a_pickle_only_revision_is_converted_beside_a_safetensors_main(hub: LoopbackHub, tmp_path: Path) -> None:
    """Pythia's layout: safetensors in main, pytorch_model.bin only in step143000 (plus a pickle
    that is not weights, never downloaded). The staged step folder holds safetensors with the
    tensors torch.save wrote; the record names both files' sha256; a refs/pr/N revision stages
    into its refs~pr~N folder."""
    from safetensors.torch import load_file

    state = {"embed_in.weight": torch.arange(12.0).reshape(3, 4), "final_layer_norm.bias": torch.ones(4).half()}
    weights = _saved(state)
    step = {"config.json": MODEL_FILES["config.json"], "tokenizer.json": b"{}", "pytorch_model.bin": weights,
            "training_args.bin": b"\x80\x04K\x01."}
    main_sha = hub.add("model", "org/pythia", MODEL_FILES, revisions=("main", "refs/pr/3"))
    step_sha = hub.add("model", "org/pythia", step, revisions=("step143000",))
    assert main_sha != step_sha
    out = tmp_path / "step"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/pythia",
                    "--revision", "step143000", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("(3 files, 1 converted from pickle)"), proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "embtune-stage.json", "model.safetensors",
                                                     "tokenizer.json"]
    got = load_file(out / "model.safetensors")
    assert sorted(got) == sorted(state) and all(torch.equal(got[k], v) and got[k].dtype == v.dtype
                                                for k, v in state.items())
    record = json.loads((out / STAGE_RECORD).read_text())
    assert record["commit"] == step_sha
    assert record["converted"] == [{"from": "pytorch_model.bin", "from_sha256": hashlib.sha256(weights).hexdigest(),
                                    "to": "model.safetensors",
                                    "to_sha256": hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()}]
    assert record["files"]["model.safetensors"] == record["converted"][0]["to_sha256"] and verify(out) == []
    assert not any("training_args.bin" in r for r in hub.requests if "/resolve/" in r)

    store = Store(tmp_path / "store")
    pr = store.snapshot("org/pythia", "refs/pr/3")
    assert pr.name == "refs~pr~3" and store.revision_of(pr.name) == "refs/pr/3"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/pythia",
                    "--revision", "refs/pr/3", "--out", str(pr))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((pr / STAGE_RECORD).read_text())["commit"] == main_sha


@pytest.mark.slow
def test_pickle_revisions_that_cannot_be_converted_are_refused(hub: LoopbackHub, tmp_path: Path) -> None:
    """Pickles that are not transformers weights: refused before any download (other pickles
    beside transformers weights: left out of the download, the weights converted). Weights whose
    pickle calls a function: refused by the restricted loader, naming the file, with nothing run
    and nothing staged."""
    with pytest.raises(DataError, match=r"org/x@step1: only pickle files \(model.ckpt\), none of them transformers "
                                        r"weights; .* refs/pr/N\)"):
        pickle_plan("org/x", "step1", ["config.json", "model.ckpt"])        # before any download
    assert pickle_plan("org/x", "main", ["pytorch_model.bin", "model.safetensors"]) == (
        tuple(f"*{s}" for s in PICKLE_SUFFIXES), False)
    assert pickle_plan("org/x", "step1", ["config.json", "pytorch_model-00001-of-00002.bin", "optimizer[1].pt",
                                          "pytorch_model-00002-of-00002.bin", "pytorch_model.bin.index.json"]) == (
        ("optimizer[[]1].pt",), True)

    marker = tmp_path / "ran"
    evil = pickle.dumps({"w": _RunsCode(marker)}, protocol=2)
    hub.add("model", "org/evil", {"config.json": MODEL_FILES["config.json"], "pytorch_model.bin": evil})
    bad = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/evil",
                   "--revision", "main", "--out", str(tmp_path / "evil"))
    assert bad.returncode == 2, bad.stderr
    last = bad.stderr.strip().splitlines()[-1]
    assert "pytorch_model.bin: refused by torch's weights-only loader" in last and "posix.system" in last, last
    assert not marker.exists() and not (tmp_path / "evil").exists()


def test_fetch_records_dataset_file_and_manifest(hub: LoopbackHub, tmp_path: Path) -> None:
    sha = hub.add("dataset", "sentence-transformers/embedding-training-data", {"msmarco-triplets.jsonl.gz": DATA})
    hub.add("model", "intfloat/multilingual-e5-small", {"modules.json": b"[]"})
    raw = tmp_path / "raw/hf/sentence-transformers/embedding-training-data/msmarco-triplets.jsonl.gz"
    rec = tmp_path / "store/records/datasets/x.json"
    proc = _embtune(hub.url, tmp_path / "hf", "fetch", "--uri",
                    "hf://datasets/sentence-transformers/embedding-training-data/msmarco-triplets.jsonl.gz",
                    "--out", str(raw), "--record", str(rec))
    assert proc.returncode == 0, proc.stderr
    assert raw.read_bytes() == DATA
    record = json.loads(rec.read_text())
    assert record["commit"] == sha and record["sha256"] == hashlib.sha256(DATA).hexdigest()
    assert record["path"] == str(raw) and record["file"] == "msmarco-triplets.jsonl.gz"

    enc = tmp_path / "store/models/intfloat/multilingual-e5-small/main"
    assert _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "intfloat/multilingual-e5-small",
                    "--revision", "main", "--out", str(enc)).returncode == 0
    manifest = tmp_path / "store/manifest.json"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "manifest", "--snapshots", str(enc), "--records", str(rec),
                    "--extra-files", str(raw), "--out", str(manifest))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(manifest.read_text())
    assert set(doc["artifacts"]) == {enc.as_posix(), str(raw)}
    assert doc["artifacts"][enc.as_posix()]["repo_id"] == "intfloat/multilingual-e5-small"
    assert doc["files"] == {raw.as_posix(): hashlib.sha256(DATA).hexdigest()}

    hub.stop()   # the compute side: nothing can be fetched any more
    again = _embtune(hub.url, tmp_path / "hf2", "fetch", "--uri",
                     "hf://datasets/sentence-transformers/embedding-training-data/msmarco-triplets.jsonl.gz",
                     "--out", str(tmp_path / "again"))
    assert again.returncode != 0 and not (tmp_path / "again").exists()


def test_missing_artifact_is_one_line_naming_the_rule(tmp_path: Path) -> None:
    missing = tmp_path / "store/models/EleutherAI/pythia-14m/step143000"
    proc = _embtune("http://127.0.0.1:9", tmp_path / "hf", "build-tokenizer", "--source", "hub", "--id",
                    "EleutherAI/pythia-14m", "--revision", "step143000", "--staged", str(missing),
                    "--out", str(tmp_path / "tok"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "EleutherAI/pythia-14m@step143000" in lines[0] and "rule stage_snapshot" in lines[0], lines[0]
    assert "snakemake stage_in" in lines[0]
    spec = {"name": "e5", "source": "hub", "id": "intfloat/multilingual-e5-small", "revision": "main",
            "path": str(tmp_path / "nope")}
    with pytest.raises(DataError, match=r"intfloat/multilingual-e5-small@main is not staged.*rule stage_snapshot"):
        resolve_encoder_path(spec)
    # a half-finished download (no record yet) is not taken for a staged one
    (tmp_path / "nope").mkdir()
    (tmp_path / "nope" / "config.json").write_text("{}")
    with pytest.raises(DataError):
        resolve_encoder_path(spec)
