"""Typed run configs (``embtune.runconfig``): the run ids the sweep writes read back through
``parse_id``, hand-written ids, malformed ids and keys refused by name, and ``to_dict`` /
``from_dict`` giving back exactly the dicts the pipeline passes to the stages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from embtune.core.errors import DataError
from embtune.plan import config
from embtune.plan.config import load_params
from embtune.plan.query_sweep import query_plan
from embtune.plan.sweep import training_plan
from embtune.runconfig import QueryRunConfig, RunConfig, RunId

REPO = Path(__file__).resolve().parents[3]
PRESETS = {"paper": ["params.yaml"], "demo": ["params.yaml", "presets/demo.yaml"],
           "test": ["params.yaml", "presets/demo.yaml", "presets/test.yaml"]}


@pytest.fixture(scope="module", params=list(PRESETS))
def plan(request) -> dict:
    """Each preset's params and its plan, expanded by the sweep as the workflow does."""
    params = load_params([REPO / f for f in PRESETS[request.param]])
    runs, skipped, members = training_plan(params, apply_cap=False)
    qruns, qmembers = query_plan(params)
    return {"name": request.param, "params": params, "runs": runs, "skipped": skipped, "members": members,
            "qruns": qruns, "qmembers": qmembers}


# ------------------------------------------------------------------------------ training run ids
def test_every_planned_run_id_reads_back(plan) -> None:
    """Every id of the plan (runs, skips, study memberships) parses, writes back to itself, and
    names what its config holds: model, method, its hyper column, budget, seed, study."""
    member_of: dict[str, set[str]] = {}
    for m in plan["members"]:
        member_of.setdefault(m["run_id"], set()).add(m["study"])
    ids = {r["run_id"] for r in plan["runs"]} | {s.run_id for s in plan["skipped"]}
    assert ids == set(member_of)
    for run_id in ids:
        parsed = RunConfig.parse_id(run_id)
        assert str(parsed) == run_id
        assert parsed.columns()["study"] in member_of[run_id]   # the study that planned it first
    for run in plan["runs"]:
        got = RunConfig.parse_id(run["run_id"]).columns()
        assert (got["model"], got["method"], got["seed"]) == (run["model"]["name"], run["method"], run["seed"])
        assert got["budget"] == pytest.approx(run["budget"], rel=5e-3)        # 3 significant digits
        for hyper in ("lora_rank", "freeze_fraction"):
            assert got.get(hyper) == run.get(hyper)
    # not vacuous: the test preset and the paper plan hold study runs with factors in their ids
    with_factors = [i for i in ids if RunConfig.parse_id(i).factors]
    assert plan["name"] == "demo" or with_factors


def test_demo_ids_by_hand() -> None:
    """The demo grid's ids at 2.5e10, written out: full and LoRA r8 on the five smaller models;
    freeze-1of2 and bias on d32, d64 and d128 only (train.variant_models); lora-r32 and
    freeze-0of1 run at 1e11 only (train.variant_budgets). A step of 32 pairs x 2 sides x ~40
    tokens costs ~4-6 N D FLOPs, so 2.5e10 allows < train.min_steps 10 steps to full fine-tuning
    of d128 (~0.4M non-embedding parameters) and to LoRA r8 and full of the largest model (d192,
    ~0.9M): those are planned as skipped."""
    params = load_params([REPO / f for f in PRESETS["demo"]])
    runs, skipped, _ = training_plan(params, apply_cap=False)
    got = sorted(r["run_id"] for r in runs if "__c2.5e10__" in r["run_id"])
    want = sorted([f"tiny-d{d}-l2__{tag}__c2.5e10__s0" for d in (32, 48, 64, 96, 128) for tag in ("full", "lora-r8")
                   if (d, tag) != (128, "full")]
                  + [f"tiny-d{d}-l2__{tag}__c2.5e10__s0" for d in (32, 64, 128) for tag in ("freeze-1of2", "bias")])
    assert got == want
    assert sorted(s.run_id for s in skipped if "__c2.5e10__" in s.run_id) == \
        sorted(["tiny-d128-l2__full__c2.5e10__s0"] + [f"tiny-d192-l2__{tag}__c2.5e10__s0" for tag in ("full", "lora-r8")])


def test_training_ids_by_hand() -> None:
    assert RunConfig.make_id("tiny-d64-l2", "lora-r8", 1e12, 0) == "tiny-d64-l2__lora-r8__c1e12__s0"
    assert RunConfig.make_id("pythia-160m", "freeze-2of6", 9.6e16, 1) == "pythia-160m__freeze-2of6__c9.6e16__s1"
    assert RunConfig.make_id("tiny-d64-l2", "full", 1.5e11, 0, "appF") == "tiny-d64-l2__full__c1.5e11__s0__appF"
    assert RunConfig.make_id("m", "bias", 2.4e16, 0, "appD-temperature",
                             {"weight_decay": 0.1, "inv_temperature": 40}) == \
        "m__bias__c2.4e16__s0__appD-temperature__inv_temperature-40__weight_decay-0.1"
    parsed = RunConfig.parse_id("tiny-d64-l2__freeze-1of2__c1.5e11__s0__appD-temperature"
                                "__inv_temperature-20__weight_decay-0.1")
    assert parsed == RunId("tiny-d64-l2", "freeze-1of2", 1.5e11, 0, "appD-temperature",
                           (("inv_temperature", "20"), ("weight_decay", "0.1")))
    assert parsed.columns() == {"model": "tiny-d64-l2", "method": "freeze", "freeze_fraction": 0.5,
                                "study": "appD-temperature", "budget": 1.5e11, "seed": 0}
    assert RunConfig.parse_id("tiny-d64-l2__lora-r8__c1e12__s3").columns() == {
        "model": "tiny-d64-l2", "method": "lora", "lora_rank": 8, "study": "main", "budget": 1e12, "seed": 3}


@pytest.mark.parametrize("bad", [
    "tiny__full__c1e9",                      # three parts
    "tiny__nosuch-r2__c1e9__s0",             # a method the registry does not know
    "tiny__full__cX__s0", "tiny__full__1e9__s0", "tiny__full__c1e9__sA", "tiny__full__c0__s0",
    "tiny__full__c1e9__s0____x",             # an empty study name
    "tiny__full__c1e9__s0__appD__noval",     # a factor without -<value>
    "__full__c1e9__s0",
])
def test_malformed_run_id_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        RunConfig.parse_id(bad)


def test_method_tag_comes_from_the_registry(monkeypatch) -> None:
    """A method registered later (as tests/contracts/test_method_registry.py's fifth) is an id's method too."""
    from embtune.models import methods as registry

    with pytest.raises(ValueError, match="unknown method 'lnonly'"):
        RunConfig.parse_id("m__lnonly__c1e9__s0")
    monkeypatch.setitem(registry.REGISTRY, "lnonly", registry.Method("lnonly", "LN", "k", None, None))
    assert RunConfig.parse_id("m__lnonly__c1e9__s0").method == "lnonly"


# -------------------------------------------------------------------------------- query run ids
def test_every_planned_query_id_reads_back(plan) -> None:
    """Each query id parses to settings the run really has (and writes back to itself); every
    setting it does not name is the default's (batches_per_epoch follows the batch size)."""
    defaults = plan["params"]["query_tuning"]["defaults"]
    ids = {r["qrun_id"] for r in plan["qruns"]}
    assert ids == {m["qrun_id"] for m in plan["qmembers"]}
    for run in plan["qruns"]:
        diff = QueryRunConfig.parse_id(run["qrun_id"])
        assert QueryRunConfig.make_id(diff) == run["qrun_id"]
        for key, value in diff.items():
            assert value == (pytest.approx(run[key], rel=1e-5) if isinstance(value, float) else run[key])
            assert type(value) is type(defaults[key]) or isinstance(value, float)
        same = {k for k in defaults if k not in diff and k != "batches_per_epoch"}
        assert {k: run[k] for k in same} == {k: defaults[k] for k in same}
    if plan["name"] == "test":      # the test preset's grids: several keys in one id
        assert any("+" in i for i in ids) and "default" in ids


def test_query_ids_by_hand() -> None:
    assert QueryRunConfig.make_id({}) == "default"
    assert QueryRunConfig.make_id({"lr": 1e-7}) == "lr-1e-07"
    assert QueryRunConfig.make_id({"lr_scaling": "sqrt", "batch_size": 28}) == "batch_size-28+lr_scaling-sqrt"
    assert QueryRunConfig.make_id({"weight_decay": 100.0, "lr": 1.5e-7}) == "lr-1.5e-07+weight_decay-100"
    assert QueryRunConfig.parse_id("default") == {}
    assert QueryRunConfig.parse_id("freeze-emb_b0-5") == {"freeze": "emb_b0-5"}
    assert QueryRunConfig.parse_id("train_data-arxiv-math") == {"train_data": "arxiv-math"}
    assert QueryRunConfig.parse_id("tune_doc_tower-True") == {"tune_doc_tower": True}
    assert QueryRunConfig.parse_id("batch_size-7+epoch_size-batches+lr-1e-05+optimizer-sgd+weight_decay-0.1") == {
        "batch_size": 7, "epoch_size": "batches", "lr": 1e-5, "optimizer": "sgd", "weight_decay": 0.1}
    # a '+' inside a value (an exponent) is not a separator
    assert QueryRunConfig.parse_id("lr-1e+20+train_data-arxiv-cs") == {"lr": 1e20, "train_data": "arxiv-cs"}
    with pytest.raises(ValueError, match="'sweep' is not a query_tuning.defaults key"):
        QueryRunConfig.make_id({"sweep": "lr"})


def test_paper_query_ids_by_hand(paper) -> None:
    """Some ids of params.yaml's sweeps and grids (paper 2, App. M), as written out by hand."""
    ids = {r["qrun_id"] for r in query_plan(paper)[0] if r["model"]["name"] == "multilingual-e5-small"}
    assert {"default", "lr-1e-08", "lr-2e-07", "weight_decay-100", "batch_size-56", "freeze-emb_b0-5",
            "tune_doc_tower-True", "train_data-arxiv-math", "batch_size-28+lr_scaling-sqrt",
            "batch_size-56+lr-1e-07+weight_decay-0.05"} <= ids


@pytest.mark.parametrize("bad", ["lr", "lr-abc", "nosuch-1", "batch_size-7.5", "tune_doc_tower-yes",
                                 "lr-1e-05+lr-2e-05", "", "-1"])
def test_malformed_query_id_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        QueryRunConfig.parse_id(bad)


def test_query_settings_are_the_schema_defaults() -> None:
    """The dataclass's settings and the params schema's ``query_tuning.defaults`` are one list."""
    schema = config.load_schema()["properties"]["query_tuning"]["properties"]["defaults"]["properties"]
    assert list(QueryRunConfig.setting_keys()) == list(schema)


# ------------------------------------------------------------------------------ the JSON dicts
def test_dicts_round_trip_exactly(plan) -> None:
    """``to_dict(from_dict(d))`` is ``d`` for every planned run: same keys in the same order, and
    byte-identical JSON as the rules pass it (sorted keys) and as written unsorted."""
    pairs = [(RunConfig, r) for r in plan["runs"]] + [(QueryRunConfig, r) for r in plan["qruns"]]
    assert pairs
    for cls, d in pairs:
        back = cls.from_dict(json.loads(json.dumps(d))).to_dict()
        assert back == d and list(back) == list(d)
        assert json.dumps(back, sort_keys=True) == json.dumps(d, sort_keys=True)
        assert json.dumps(back) == json.dumps(d)


def test_from_dict_names_a_missing_or_unknown_key(plan) -> None:
    lora = next((r for r in plan["runs"] if r["method"] == "lora"), None)
    full = next(r for r in plan["runs"] if r["method"] == "full")
    with pytest.raises(ValueError, match=r"missing key 'peak_lr'"):
        RunConfig.from_dict({k: v for k, v in full.items() if k != "peak_lr"})
    with pytest.raises(ValueError, match=r"unknown key 'lora_rank'.*method full"):
        RunConfig.from_dict({**full, "lora_rank": 8})
    with pytest.raises(ValueError, match=r"method: unknown method 'nosuch'"):
        RunConfig.from_dict({**full, "method": "nosuch"})
    with pytest.raises(ValueError, match=r"train must be an object"):
        RunConfig.from_dict({**full, "train": [1]})
    if lora is not None:        # a method's own keys are optional, its registry entry lists them
        short = {k: v for k, v in lora.items() if k != "lora_embed_in"}
        assert RunConfig.from_dict(short).to_dict() == short
    q = plan["qruns"][0]
    with pytest.raises(ValueError, match=r"missing key 'tune_doc_tower'"):
        QueryRunConfig.from_dict({k: v for k, v in q.items() if k != "tune_doc_tower"})
    with pytest.raises(ValueError, match=r"unknown key 'sweep'"):
        QueryRunConfig.from_dict({**q, "sweep": "default"})


def test_stages_refuse_a_bad_config_before_running(tmp_path, capsys) -> None:
    """The train and tune-query stages parse their ``--run-config-json`` first: a bad key is a
    data error (``embtune`` exits 2 with one line naming it), and nothing is written."""
    from embtune import cli
    from embtune.stages import train as train_stage

    params = load_params([REPO / f for f in PRESETS["demo"]])
    run = {**training_plan(params, apply_cap=False)[0][0], "temprature": 0.05}
    qrun = {k: v for k, v in query_plan(params)[0][0].items() if k != "margin"}
    for argv in (["train", "--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
                  "--checkpoint-dir", str(tmp_path / "ck")],
                 ["tune-query", "--run-config-json", json.dumps(qrun), "--data-dir", str(tmp_path / "processed"),
                  "--out-dir", str(tmp_path / "qout")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--run-config-json" in err
        assert ("'temprature'" if argv[0] == "train" else "'margin'") in err
    assert not any(tmp_path.iterdir())
    with pytest.raises(DataError, match="Expecting"):
        train_stage.main(["--run-config-json", "{not json", "--out-dir", str(tmp_path / "o"),
                          "--checkpoint-dir", str(tmp_path / "c")])
