"""params.yaml validation: bad params fail before any job runs, naming the key."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embtune.config import ParamsError, deep_merge, load_params, read_yaml, validate

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper() -> dict:
    return read_yaml(REPO / "params.yaml")


def _errors(params: dict) -> str:
    with pytest.raises(ParamsError) as info:
        validate(copy.deepcopy(params))
    return str(info.value)


def test_paper_and_demo_params_are_valid() -> None:
    paper = load_params([REPO / "params.yaml"])
    demo = load_params([REPO / "params.yaml", REPO / "presets/demo.yaml"])
    assert [m["name"] for m in paper["models"]][0] == "pythia-14m"
    assert paper["train"]["batch_size"] == 1024 and paper["train"]["context_length"] == 75
    assert paper["train"]["temperature"] == pytest.approx(1 / 40)
    assert demo["models"][0]["source"] == "tiny"
    # the preset overrides only what differs: untouched keys come from params.yaml
    assert demo["train"]["temperature"] == paper["train"]["temperature"]
    assert demo["evaluate"]["mteb"]["tasks"] == paper["evaluate"]["mteb"]["tasks"]


def test_unknown_method_names_the_key(paper: dict) -> None:
    bad = copy.deepcopy(paper)
    bad["train"]["methods"] = ["full", "prefix-tuning"]
    msg = _errors(bad)
    assert "train.methods[1]" in msg and "prefix-tuning" in msg


def test_negative_budget_names_the_key(paper: dict) -> None:
    bad = copy.deepcopy(paper)
    bad["train"]["budgets"][2] = -1.0
    msg = _errors(bad)
    assert "train.budgets[2]" in msg and "-1.0" in msg


def test_missing_key_names_the_key(paper: dict) -> None:
    bad = copy.deepcopy(paper)
    del bad["train"]["batch_size"]
    msg = _errors(bad)
    assert "train" in msg and "'batch_size' is a required property" in msg


def test_unknown_key_is_rejected(paper: dict) -> None:
    bad = copy.deepcopy(paper)
    bad["train"]["batchsize"] = 4
    msg = _errors(bad)
    assert "train" in msg and "batchsize" in msg and "allowed keys" in msg


def test_cross_checks(paper: dict) -> None:
    bad = copy.deepcopy(paper)
    bad["models"].append(copy.deepcopy(bad["models"][0]))
    assert "duplicate model name 'pythia-14m'" in _errors(bad)
    bad = copy.deepcopy(paper)
    bad["data"]["mteb"] = {"source": "local"}
    assert "data.mteb.local_dir" in _errors(bad)


def test_defaults_are_filled(paper: dict) -> None:
    params = copy.deepcopy(paper)
    del params["train"]["pooling"]
    validate(params)
    assert params["train"]["pooling"] == "mean"


def test_deep_merge_replaces_lists_and_merges_maps() -> None:
    merged = deep_merge({"a": {"b": 1, "c": [1, 2]}, "d": 1}, {"a": {"c": [3]}})
    assert merged == {"a": {"b": 1, "c": [3]}, "d": 1}


def test_broken_params_fail_snakemake_before_any_job(tmp_path: Path, paper: dict) -> None:
    bad = copy.deepcopy(paper)
    bad["train"]["budgets"][0] = -5
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(bad))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(cfg)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "train.budgets[0]" in proc.stdout + proc.stderr


def test_cli_validate_params_reports_key(tmp_path: Path, paper: dict) -> None:
    from embtune.cli import main

    bad = copy.deepcopy(paper)
    bad["train"]["methods"] = ["fancy"]
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(bad))
    assert main(["validate-params", str(cfg)]) == 1
