"""Pickle weights -> safetensors at stage-in: the converted tensors equal the ones torch.save
wrote (compared here tensor by tensor with torch.equal, dtype and shape included), shards and their
index are converted together, and a pickle that would run code is refused naming the file, with
nothing run (a marker file it would create stays absent)."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtune.core.errors import DataError
from embtune.core.io import sha256_file
from embtune.data.pickle_weights import convert_folder, safetensors_name


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    emb = torch.randn(11, 6, generator=g)
    return {"gpt_neox.embed_in.weight": emb,
            "embed_out.weight": emb,                                   # tied: the same storage
            "gpt_neox.layers.0.mlp.dense_h_to_4h.weight": torch.randn(24, 6, generator=g).half(),
            "gpt_neox.layers.0.attention.bias": torch.tril(torch.ones(4, 4, dtype=torch.bool)),
            "gpt_neox.layers.0.attention.rotary_emb.inv_freq": torch.randn(3, generator=g)[::2],   # a view
            "gpt_neox.final_layer_norm.weight": torch.randn(6, generator=g).to(torch.bfloat16),
            "step": torch.tensor(143000), "empty": torch.zeros(0, 3, dtype=torch.int32)}


def _assert_same(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and torch.equal(got[k], v), k


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_one_file_converts_to_equal_tensors(tmp_path: Path, zipped: bool) -> None:
    state = _state()
    torch.save(state, tmp_path / "pytorch_model.bin", _use_new_zipfile_serialization=zipped)
    pickle_sha = sha256_file(tmp_path / "pytorch_model.bin")
    records = convert_folder(tmp_path)
    assert not (tmp_path / "pytorch_model.bin").exists()
    _assert_same(load_file(tmp_path / "model.safetensors"), state)
    assert records == [{"from": "pytorch_model.bin", "from_sha256": pickle_sha, "to": "model.safetensors",
                        "to_sha256": sha256_file(tmp_path / "model.safetensors")}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]   # no temp file left


def test_shards_and_their_index(tmp_path: Path) -> None:
    state = _state()
    names = sorted(state)
    shards = {"pytorch_model-00001-of-00002.bin": names[:3], "pytorch_model-00002-of-00002.bin": names[3:]}
    for shard, keys in shards.items():
        torch.save({k: state[k].clone() for k in keys}, tmp_path / shard)
    index = {"metadata": {"total_size": 1234}, "weight_map": {k: s for s, ks in shards.items() for k in ks}}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    records = convert_folder(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"]
    new_index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert new_index["metadata"] == {"total_size": 1234}
    assert new_index["weight_map"] == {k: s.replace("pytorch_model", "model").replace(".bin", ".safetensors")
                                       for k, s in index["weight_map"].items()}
    got = {}
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        got.update(load_file(tmp_path / shard))
    _assert_same(got, state)
    assert [r["from"] for r in records] == [*shards, "pytorch_model.bin.index.json"]


def test_an_index_naming_a_missing_shard_is_refused(tmp_path: Path) -> None:
    torch.save({"a": torch.ones(2)}, tmp_path / "pytorch_model-00001-of-00002.bin")
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps(
        {"weight_map": {"a": "pytorch_model-00001-of-00002.bin", "b": "pytorch_model-00002-of-00002.bin"}}))
    with pytest.raises(DataError, match=r"pytorch_model.bin.index.json: names shard\(s\) \['pytorch_model-00002"):
        convert_folder(tmp_path)


class _RunsCode:
    """Unpickling this calls os.system (the full unpickler would create the marker file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("how", ["torch.save", "raw pickle"])
def test_a_pickle_that_runs_code_is_refused_and_nothing_runs(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "pytorch_model.bin"
    if how == "torch.save":
        torch.save({"w": torch.ones(2), "x": _RunsCode(marker)}, evil)
    else:                                              # protocol 2, as torch < 1.6 wrote weights
        evil.write_bytes(pickle.dumps({"x": _RunsCode(marker)}, protocol=2))
    with pytest.raises(DataError) as err:
        convert_folder(tmp_path)
    msg = str(err.value)
    assert msg.startswith(f"{evil}: refused by torch's weights-only loader") and "system" in msg, msg
    assert "False" not in msg and "trust" not in msg     # torch's advice to unpickle fully is not passed on
    assert not marker.exists() and not (tmp_path / "model.safetensors").exists()


def test_not_a_state_dict(tmp_path: Path) -> None:
    torch.save([torch.ones(1)], tmp_path / "pytorch_model.bin")
    with pytest.raises(DataError, match=r"pytorch_model.bin: holds a list; expected a state dict"):
        convert_folder(tmp_path)
    torch.save({"step": 3, "w": torch.ones(1)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(DataError, match=r"entries \['step'\] are not name -> tensor"):
        convert_folder(tmp_path)


def test_names() -> None:
    assert safetensors_name("pytorch_model.bin") == "model.safetensors"
    assert safetensors_name("2_Dense/pytorch_model.bin") == "2_Dense/model.safetensors"
    assert safetensors_name("pytorch_model-00002-of-00003.bin") == "model-00002-of-00003.safetensors"
