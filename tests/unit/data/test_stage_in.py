"""Stage-in (issue 22, part 1): the real ``huggingface_hub`` client against a loopback hub.

`embtune stage-in snapshot` and `embtune fetch --record` download at a revision, record the commit
it resolved to and each file's sha256 (checked here with hashlib against the bytes the hub holds);
the manifest gathers the records; a compute stage that finds an artifact missing exits 2 with one
line naming it and the rule that fetches it; once the hub is stopped nothing can be fetched.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from helpers_hub import LoopbackHub  # noqa: E402

from embtune.data.store import STAGE_RECORD, require_staged, verify  # noqa: E402
from embtune.errors import DataError  # noqa: E402
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


def test_pickle_weights_beside_safetensors_are_not_staged_and_alone_are_refused(hub: LoopbackHub,
                                                                              tmp_path: Path) -> None:
    """Many hub repos carry pytorch_model.bin beside model.safetensors: the pickle is not staged
    (the load's no-pickle check would refuse the whole folder); a revision with only pickle
    weights is refused at stage-in, naming it, before anything is downloaded."""
    pickle = b"\x80\x04K\x01."                                  # a real pickle: protocol 4, the int 1
    both = {**MODEL_FILES, "pytorch_model.bin": pickle}
    hub.add("model", "org/both", both, revisions=("main",))
    out = tmp_path / "both"
    proc = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/both",
                    "--revision", "main", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "model.safetensors").is_file() and not (out / "pytorch_model.bin").exists()
    assert "pytorch_model.bin" not in json.loads((out / STAGE_RECORD).read_text())["files"]

    only = {k: v for k, v in both.items() if k != "model.safetensors"}
    hub.add("model", "org/only-pickle", only, revisions=("step143000",))
    bad = _embtune(hub.url, tmp_path / "hf", "stage-in", "snapshot", "--repo-id", "org/only-pickle",
                   "--revision", "step143000", "--out", str(tmp_path / "only"))
    assert bad.returncode == 2, bad.stderr
    last = bad.stderr.strip().splitlines()[-1]
    assert "org/only-pickle@step143000: only pickle weights (pytorch_model.bin)" in last and "safetensors" in last
    assert not (tmp_path / "only").exists()
    assert not any("/resolve/" in r and "only-pickle" in r for r in hub.requests)   # nothing downloaded


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
