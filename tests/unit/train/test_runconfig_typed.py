"""Typed run configs all the way into the loops.

The training loop and the query tuner take :class:`~embtune.runconfig.RunConfig` /
:class:`~embtune.runconfig.QueryRunConfig`; ``RunConfig``'s nested sections are dataclasses
(``TrainSettings``, ``Planned`` with a typed ``ParamCounts``, ``RunData``). These tests check that
the typing holds (a mistyped or missing key is refused by its dotted name), that the JSON form
is unchanged by it (hand-written dict, byte-identical JSON), and that no run-config dict is
read again inside ``train/`` and the training stages.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from embtune.models.flops import ParamCounts
from embtune.models.method_hooks import LoraSettings
from embtune.models.model_spec import ModelSpec
from embtune.models.run_spec import MethodConfig, MethodSettings
from embtune.runconfig import Planned, QueryRunConfig, RunConfig, RunData, TrainSettings

SRC = Path(__file__).resolve().parents[3] / "src" / "embtune"

#: Written by hand in the order the sweep has always written it (the JSON the rules pass).
TRAIN = {"batch_size": 8, "context_length": 12, "temperature": 0.05, "logit_scale": "inverse",
         "weight_decay": 0.1, "warmup_fraction": 0.1, "final_lr_fraction": 0, "pooling": "mean",
         "gradcache_chunk": 3, "gradient_checkpointing": False, "compile": "none", "min_steps": 3, "max_epochs": 3,
         "checkpoint_every_steps": 4, "log_every_steps": 10, "final_loss_window": 3,
         "final_loss_fraction": 0.05}
RUN = {"run_id": "tiny-d64-l2__lora-r8__c1e9__s0", "model": {"name": "tiny-d64-l2", "hidden_size": 64,
                                                                   "num_layers": 2},
       "method": "lora", "lora_rank": 8, "lora_alpha": 16.0, "lora_dropout": 0.0, "budget": 1e9, "seed": 0,
       "peak_lr": 0.001, "planned": {"n_total": 100, "n_forward": 120, "n_backward": 120, "n_update": 20,
                                     "tokens": 2.5e6, "steps": 12.5},
       "train": TRAIN, "data": {"train_dir": "d/bge_packed", "tokenizer_dir": "d/tok"},
       "base_model_dir": "r/base_models/tiny-d64-l2"}


def test_sections_are_typed_and_the_json_form_is_unchanged() -> None:
    run = RunConfig.from_dict(RUN)
    assert isinstance(run.train, TrainSettings) and isinstance(run.data, RunData)
    assert isinstance(run.planned, Planned) and run.planned.counts == ParamCounts(100, 120, 120, 20)
    assert run.planned.counts.per_token == 2 * (120 + 120 + 20)
    assert (run.train.batch_size, run.train.pooling, run.data.train_dir) == (8, "mean", "d/bge_packed")
    assert run.method_config == MethodConfig("lora", LoraSettings(lora_rank=8, lora_alpha=16.0, lora_dropout=0.0))
    # ints where floats are declared stay ints: "max_epochs": 3 is not rewritten as 3.0
    assert json.dumps(run.to_dict()) == json.dumps(RUN)
    assert list(run.to_dict()["train"]) == list(TRAIN) == list(TrainSettings.keys())


@pytest.mark.parametrize("change,needle", [
    (("train", "batch_size", "8"), "train.batch_size: expected an int, got '8'"),
    (("train", "gradient_checkpointing", 1), "train.gradient_checkpointing: expected a bool, got 1"),
    (("train", "temperature", True), "train.temperature: expected a float, got True"),
    (("train", "temprature", 0.05), "train: unknown key 'temprature'"),
    (("planned", "n_update", 2.5), "planned.n_update: expected an int, got 2.5"),
    (("data", "train_dir", None), "data.train_dir: expected a str, got None"),
    ((None, "seed", "0"), "seed: expected an int, got '0'"),
    (("model", "hidden_size", "64"), "model.hidden_size: expected an int, got '64'"),
    (("model", "hiden_size", 64), "model: unknown key 'hiden_size'"),
    ((None, "lora_rank", "8"), "lora_rank: expected an int, got '8'"),
    ((None, "lora_embed_in", 1), "lora_embed_in: expected a bool, got 1"),
    ((None, "frozen_blocks", 1), "unknown key 'frozen_blocks' (method lora takes lora_rank, lora_alpha"),
])
def test_a_mistyped_or_unknown_key_is_refused_by_its_dotted_name(change, needle) -> None:
    section, key, value = change
    bad = json.loads(json.dumps(RUN))
    (bad[section] if section else bad)[key] = value
    with pytest.raises(ValueError, match=re.escape(needle)):
        RunConfig.from_dict(bad)
    missing = json.loads(json.dumps(RUN))
    del missing["train"]["pooling"]
    with pytest.raises(ValueError, match=re.escape("train: missing key 'pooling'")):
        RunConfig.from_dict(missing)


def test_method_settings_are_typed_and_write_only_the_keys_set() -> None:
    """The method's own keys become its registry entry's settings type; a key not set stays unset
    and unwritten (this config has no ``lora_embed_in``), so the JSON is the one read."""
    run = RunConfig.from_dict(RUN)
    assert isinstance(run.settings, LoraSettings) and run.settings.lora_embed_in is None
    assert run.settings.to_dict() == {"lora_rank": 8, "lora_alpha": 16.0, "lora_dropout": 0.0}
    full = RunConfig.from_dict({k: v for k, v in RUN.items() if not k.startswith("lora_")} | {"method": "full"})
    assert type(full.settings) is MethodSettings and full.to_dict()["budget"] == 1e9
    assert list(full.to_dict())[:4] == ["run_id", "model", "method", "budget"]


def test_the_model_is_typed_and_written_as_the_params_wrote_it() -> None:
    """The params entry's keys in its order (the JSON the ids and hashes were made from); a field
    given later (``dataclasses.replace``) follows them."""
    entry = {"num_layers": 2, "name": "m", "source": "tiny", "hidden_size": 64, "pretrain_peak_lr": 2e-3}
    run = RunConfig.from_dict({**RUN, "model": entry})
    assert isinstance(run.model, ModelSpec) and (run.model.hidden_size, run.model.family) == (64, None)
    assert json.dumps(run.to_dict()["model"]) == json.dumps(entry)
    hub = dataclasses.replace(run.model, source="hub", id="EleutherAI/pythia-14m")
    assert list(hub.to_dict()) == [*entry, "id"] and hub.to_dict()["source"] == "hub"
    with pytest.raises(ValueError, match=re.escape("model: missing key 'num_layers'")):
        RunConfig.from_dict({**RUN, "model": {"name": "m", "hidden_size": 64}})


def test_the_method_hooks_read_no_settings_dict() -> None:
    """The hooks take their method's typed settings: no ``settings[...]``/``.get`` (nor the
    ``run``/``cfg`` mapping) in the hooks' module."""
    path = SRC / "models" / "method_hooks.py"
    assert [_subscripts_of(path, name) for name in ("settings", "run", "cfg")] == [[], [], []]


def test_query_run_config_fields_are_type_checked() -> None:
    q = {"qrun_id": "default", "model": {"name": "m"}, "lr": 1e-5, "batch_size": 14, "margin": 0.1,
         "distance": "cos", "dist_embeddings": "raw", "batches_per_epoch": 1000, "epoch_size": "samples", "patience": 2, "max_epochs": 10, "saved_epoch": "best",
         "weight_decay": 0, "scheduler": "none", "scheduler_unit": "step", "optimizer": "adamw", "freeze": "emb",
         "lr_scaling": "none", "train_data": "msmarco", "seed": 0, "tune_doc_tower": False, "lr_effective": 1e-5}
    assert json.dumps(QueryRunConfig.from_dict(q).to_dict()) == json.dumps(q)
    with pytest.raises(ValueError, match=re.escape("patience: expected an int, got 2.0")):
        QueryRunConfig.from_dict({**q, "patience": 2.0})


def test_replace_keeps_the_sections_typed() -> None:
    run = RunConfig.from_dict(RUN)
    hotter = dataclasses.replace(run, train=dataclasses.replace(run.train, temperature=0.1))
    assert hotter.to_dict()["train"]["temperature"] == 0.1 and run.train.temperature == 0.05


def _subscripts_of(path: Path, name: str) -> list[int]:
    """Lines where ``name[...]`` or ``name.get(...)`` is read (a dict-shaped run config)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
            lines.append(node.lineno)
        if (isinstance(node, ast.Attribute) and node.attr == "get" and isinstance(node.value, ast.Name)
                and node.value.id == name):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("module", ["train/loop.py", "train/callbacks.py", "train/query_tower.py", "stages/train.py",
                                    "stages/tune_query.py", "models/memory.py", "plan/gpus.py"])
def test_the_loops_and_their_stages_read_no_run_config_dict(module: str) -> None:
    """No ``run[...]``/``run.get(...)`` (nor ``t[...]`` of a train section) and no
    ``from_dict(...).to_dict()`` round trip: the typed config goes in as it is, down to the
    peak-memory estimate and the GPU class it picks."""
    path = SRC / module
    assert _subscripts_of(path, "run") == []
    if module in ("train/loop.py", "train/callbacks.py", "stages/train.py", "models/memory.py"):   # t = run.train
        assert _subscripts_of(path, "t") == []
    assert "_planned_steps" not in path.read_text()
    assert not re.search(r"from_dict\([^\n]*\)\.to_dict\(\)", path.read_text())


def test_the_subscript_check_can_fail(tmp_path: Path) -> None:
    code = tmp_path / "m.py"
    code.write_text("def f(run, t):\n    a = run['train']\n    return t.get('x'), run.train\n")
    assert _subscripts_of(code, "run") == [2] and _subscripts_of(code, "t") == [3]
