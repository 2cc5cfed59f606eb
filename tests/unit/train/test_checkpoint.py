"""Training checkpoints: safetensors + JSON round trips, refusal of a checkpoint made with another
config, data or base model, clear errors for corrupt ones, and resume after a save that died
half-way (still equal to an uninterrupted run)."""

from __future__ import annotations

import copy
import json
import math
import random
import shutil

import numpy as np
import pytest
import torch
from helpers_train import make_base_model, make_shards, one_thread, run_config

from embtune.runconfig import RunConfig
from embtune.stages import train as train_stage
from embtune.train import checkpoint as ck
from embtune.train import loop, tracking

_one_thread = pytest.fixture(autouse=True)(one_thread)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    return make_base_model(root), make_shards(root / "bge", 64, 10, 190, 12)


@pytest.fixture(scope="module")
def partial(tmp_path_factory, dirs):
    """A checkpoint of a run pre-empted after 2 steps (copied per test before it is altered)."""
    base, data = dirs
    run = run_config(base, data, "full", budget=1.0e9)
    ckpt = tmp_path_factory.mktemp("partial") / "ck"
    assert loop.train_run(run, ckpt, stop_after_steps=2).status == "preempted"
    return run, ckpt


def _copy(partial, tmp_path):
    """The run config's JSON form (to alter) and a copy of the checkpoint."""
    run, ckpt = partial
    shutil.copytree(ckpt, tmp_path / "ck")
    return copy.deepcopy(run.to_dict()), tmp_path / "ck"


def _json_roundtrip(obj):
    """What a save + load does to a state: JSON skeleton and tensors through a safetensors file."""
    from safetensors.torch import load, save

    skeleton, tensors = ck.split_state(obj)
    return ck.join_state(json.loads(json.dumps(skeleton)), load(save(tensors)))


# --------------------------------------------------------------------------- the format
def test_state_round_trip_keeps_types_and_values() -> None:
    state = {
        "t": {"f32": torch.randn(3, 2), "bf16": torch.randn(4).bfloat16(), "u8": torch.arange(7, dtype=torch.uint8),
              "i64": torch.tensor([-(2 ** 40), 5]), "b": torch.tensor([True, False]), "scalar": torch.tensor(3.5)},
        "by_index": {0: {"step": torch.tensor(2.0)}, 7: {"x": 1}},
        "tup": ("MT19937", np.arange(5, dtype=np.uint32) * 4_000_000_000 // 5, 3, 0, 0.25),
        "lists": [[1, 2.5, None, "s", True], []],
        "nan": math.nan, "__odd_key": {"__tensor__": "not a tag"},
    }
    got = _json_roundtrip(state)
    for k, v in state["t"].items():
        assert got["t"][k].dtype == v.dtype and torch.equal(got["t"][k], v), k
    assert set(got["by_index"]) == {0, 7} and torch.equal(got["by_index"][0]["step"], torch.tensor(2.0))
    assert isinstance(got["tup"], tuple) and got["tup"][0] == "MT19937" and got["tup"][2:] == (3, 0, 0.25)
    assert got["tup"][1].dtype == np.uint32 and np.array_equal(got["tup"][1], state["tup"][1])
    assert got["lists"] == state["lists"] and math.isnan(got["nan"])
    assert got["__odd_key"] == {"__tensor__": "not a tag"}


def test_rng_state_round_trip_replays_the_same_draws() -> None:
    saved = _json_roundtrip(ck.rng_state())
    want = (torch.rand(3), np.random.rand(3), [random.random() for _ in range(3)])
    torch.rand(5), np.random.rand(5), random.random()      # move every generator on
    ck.set_rng_state(saved)
    got = (torch.rand(3), np.random.rand(3), [random.random() for _ in range(3)])
    assert torch.equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]


def test_optimizer_and_scheduler_round_trip_continue_identically() -> None:
    """AdamW moments, step counts (keyed by int parameter index), betas as a tuple and the
    LambdaLR counters come back such that the next steps equal those of the original objects."""
    torch.manual_seed(0)

    def make(model):
        opt = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))

    a = torch.nn.Linear(4, 3)
    opt_a, sched_a = make(a)
    x = torch.randn(8, 4)
    for _ in range(3):
        a(x).square().sum().backward()
        opt_a.step(), sched_a.step(), opt_a.zero_grad()
    b = copy.deepcopy(a)
    opt_b, sched_b = make(b)
    opt_b.load_state_dict(_json_roundtrip(opt_a.state_dict()))
    sched_b.load_state_dict(_json_roundtrip(sched_a.state_dict()))
    for model, opt, sched in ((a, opt_a, sched_a), (b, opt_b, sched_b)):
        for _ in range(2):
            model(x).square().sum().backward()
            opt.step(), sched.step(), opt.zero_grad()
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert sched_a.get_last_lr() == sched_b.get_last_lr()


def test_checkpoint_files_are_json_and_safetensors(partial) -> None:
    _, ckpt = partial
    # the tracker's live folder (embtune.train.tracking.DIR) sits beside the checkpoint's two files
    names = sorted(p.name for p in ckpt.iterdir() if p.name != tracking.DIR)
    assert len(names) == 2 and names[0] == ck.STATE_FILE and names[1].endswith(".safetensors")
    state = json.loads((ckpt / ck.STATE_FILE).read_text())
    assert state["progress"]["step"] == 2 and state["tensors"]["file"] == names[1]
    assert set(state["fingerprints"]) == {"config", "train_data", "base_model"}
    raw = (ckpt / names[1]).read_bytes()
    header_len = int.from_bytes(raw[:8], "little")                     # the safetensors layout
    assert json.loads(raw[8:8 + header_len])["__metadata__"]["format"] == ck.FORMAT


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("key,value,line", [
    ("peak_lr", 2e-3, "peak_lr: 0.001 -> 0.002"),
    ("train.temperature", 0.1, "train.temperature: 0.05 -> 0.1"),
    ("train.batch_size", 16, "train.batch_size: 8 -> 16"),
])
def test_changed_config_is_refused(tmp_path, partial, key, value, line) -> None:
    run, ckpt = _copy(partial, tmp_path)
    section, _, name = key.rpartition(".")
    (run[section] if section else run)[name] = value
    with pytest.raises(ck.CheckpointError) as err:
        loop.train_run(RunConfig.from_dict(run), ckpt)
    msg = str(err.value)
    assert str(ckpt) in msg and "different config" in msg and line in msg and "Delete the checkpoint directory" in msg
    assert "train data" not in msg and "base model" not in msg


def test_changed_config_exits_3_with_the_reason_on_the_cli(tmp_path, partial, capsys) -> None:
    run, ckpt = _copy(partial, tmp_path)
    run["train"]["temperature"] = 0.07
    rc = train_stage.main(["--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
                    "--checkpoint-dir", str(ckpt)])
    assert rc == train_stage.EXIT_BAD_CHECKPOINT != train_stage.EXIT_PREEMPTED
    assert "train.temperature: 0.05 -> 0.07" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and (ckpt / ck.STATE_FILE).exists()   # nothing deleted


def test_changed_training_data_or_base_model_is_refused(tmp_path) -> None:
    base, data = make_base_model(tmp_path / "m"), make_shards(tmp_path / "bge", 64, 10, 190, 12, seed=0)
    run = run_config(base, data, "full", budget=1.0e9)
    assert loop.train_run(run, tmp_path / "ck", stop_after_steps=2).status == "preempted"
    make_shards(data, 64, 10, 190, 12, seed=1)             # same path and size, other pairs
    with pytest.raises(ck.CheckpointError, match="different train data") as err:
        loop.train_run(run, tmp_path / "ck")
    assert "different config" not in str(err.value) and str(data) in str(err.value)
    make_shards(data, 64, 10, 190, 12, seed=0)             # back to the original data
    make_base_model(tmp_path / "m", seed=1)                # rebuilt base model, other weights
    with pytest.raises(ck.CheckpointError, match="different base model"):
        loop.train_run(run, tmp_path / "ck")


def test_a_resume_neutral_key_change_resumes(tmp_path, partial) -> None:
    run, ckpt = _copy(partial, tmp_path)
    run["train"]["log_every_steps"] = 100
    res = loop.train_run(RunConfig.from_dict(run), ckpt)
    assert res.status == "ok" and res.curve[0]["step"] == 1 and res.metrics["steps"] > 2


def test_packed_data_fingerprint_follows_the_source_manifest(tmp_path) -> None:
    """pack-pairs records its source's manifest digest, so two packs of equally sized data
    from different prepare-bge runs have different fingerprints without hashing the arrays."""
    from embtune.core.io import dir_fingerprint
    from embtune.train.pairs import pack_pairs

    fps = []
    for seed in (0, 0, 1):
        bge = make_shards(tmp_path / f"bge{len(fps)}", 30, 5, 190, 12, seed=0)
        (bge / "manifest.json").write_text(json.dumps({"stage": "prepare-bge", "seed": seed}))
        pack_pairs(bge, tmp_path / "packed")
        meta = json.loads((tmp_path / "packed" / "meta.json").read_text())
        meta["source"] = "same"                     # only the manifest digest may tell them apart
        (tmp_path / "packed" / "meta.json").write_text(json.dumps(meta))
        fps.append(dir_fingerprint(tmp_path / "packed"))
    assert fps[0] == fps[1] != fps[2]


# --------------------------------------------------------------------------- corruption
def _tensors_file(ckpt):
    return ckpt / json.loads((ckpt / ck.STATE_FILE).read_text())["tensors"]["file"]


@pytest.mark.parametrize("damage,needle", [
    ("truncate_tensors", "corrupt checkpoint tensors"),
    ("garble_tensors_header", "corrupt checkpoint tensors"),
    ("drop_tensors", "tensors file named by state.json is missing"),
    ("truncate_json", "corrupt checkpoint state"),
    ("wrong_format", "not an embtune-checkpoint/1 state file"),
])
def test_corrupt_checkpoint_names_the_file_and_what_to_delete(tmp_path, partial, damage, needle) -> None:
    run, ckpt = _copy(partial, tmp_path)
    tensors, state = _tensors_file(ckpt), ckpt / ck.STATE_FILE
    if damage == "truncate_tensors":
        tensors.write_bytes(tensors.read_bytes()[:-100])
        bad = tensors
    elif damage == "garble_tensors_header":
        data = bytearray(tensors.read_bytes())
        data[8:40] = b"}" * 32
        tensors.write_bytes(bytes(data))
        bad = tensors
    elif damage == "drop_tensors":
        tensors.unlink()
        bad = tensors
    elif damage == "truncate_json":
        state.write_text(state.read_text()[:200])
        bad = state
    else:
        state.write_text(json.dumps({"format": "something-else"}))
        bad = state
    with pytest.raises(ck.CheckpointError) as err:
        loop.train_run(RunConfig.from_dict(run), ckpt)
    msg = str(err.value)
    assert needle in msg and str(bad) in msg and f"Delete the checkpoint directory {ckpt}" in msg


@pytest.mark.slow
def test_resume_after_a_save_killed_before_its_commit_equals_uninterrupted(tmp_path, dirs, monkeypatch) -> None:
    """The tensors file of step 4 is written, then the commit (state.json) fails: the step-2
    checkpoint must still load, and the resumed run must equal one never interrupted."""
    import embtune.core.io

    base, data = dirs
    run = run_config(base, data, "full", budget=1.0e9)
    whole = loop.train_run(run, tmp_path / "a")
    assert loop.train_run(run, tmp_path / "b", stop_after_steps=2).status == "preempted"

    real = embtune.core.io.write_json

    def dies_on_commit(path, obj):
        if str(path).endswith(ck.STATE_FILE):
            raise KeyboardInterrupt("killed during the commit")
        real(path, obj)

    monkeypatch.setattr(embtune.core.io, "write_json", dies_on_commit)
    with pytest.raises(KeyboardInterrupt):
        loop.train_run(run, tmp_path / "b")                 # periodic save at step 4 dies
    monkeypatch.setattr(embtune.core.io, "write_json", real)
    assert len(list((tmp_path / "b").glob(ck.TENSORS_GLOB))) == 2     # the orphan and the committed one
    assert ck.read_state(tmp_path / "b")["progress"]["step"] == 2
    rest = loop.train_run(run, tmp_path / "b")
    assert rest.metrics["steps"] == whole.metrics["steps"] and rest.metrics["flops"] == whole.metrics["flops"]
    assert rest.metrics["final_train_loss"] == pytest.approx(whole.metrics["final_train_loss"], rel=1e-6)
    assert rest.metrics["val_loss"] == pytest.approx(whole.metrics["val_loss"], rel=1e-6)
