"""params.yaml validation: bad params fail before any job runs, naming the key."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embtune.plan.config import ParamsError, deep_merge, load_params, read_yaml, validate

REPO = Path(__file__).resolve().parents[3]


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


@pytest.mark.parametrize("revision", ["refs/pr/12", "0123456789abcdef0123456789abcdef01234567", "step143000", "v1.0"])
def test_hub_revisions_a_pr_ref_or_a_commit_are_valid(paper: dict, revision: str) -> None:
    """The hub's safetensors-conversion PRs (refs/pr/N) and pinned commits can be staged."""
    ok = copy.deepcopy(paper)
    ok["models"][0]["revision"] = ok["query_tuning"]["models"][0]["revision"] = revision
    assert validate(ok)["models"][0]["revision"] == revision


@pytest.mark.parametrize("revision", ["refs/pr/x", "refs/heads/main", "../step1", "refs/pr/1/..", "a b"])
def test_other_revisions_name_the_key(paper: dict, revision: str) -> None:
    bad = copy.deepcopy(paper)
    bad["models"][1]["revision"] = revision
    msg = _errors(bad)
    assert "models[1].revision" in msg and revision in msg, msg


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


@pytest.mark.slow
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
    assert main(["validate-params", str(cfg)]) == 2


# ------------------------------------------------------------ hostile / broken input
BASE = [REPO / "params.yaml", REPO / "presets/demo.yaml"]


def _load_refused(tmp_path: Path, text: str) -> tuple[Path, str]:
    """Layer a preset holding ``text`` over params + demo; return (preset, error message)."""
    preset = tmp_path / "bad.yaml"
    preset.write_text(text, encoding="utf-8")
    with pytest.raises(ParamsError) as info:
        load_params([*BASE, preset])
    return preset, str(info.value)


@pytest.mark.parametrize(("text", "key"), [
    ("train: {budgets: [1.0e+11, .inf]}", "train.budgets[1]"),
    ("train: {budgets: [.nan]}", "train.budgets[0]"),
    ("train: {temperature: .inf}", "train.temperature"),
    ("train: {method_lr: {full: .nan}}", "train.method_lr.full"),
    ("train: {weight_decay: .nan}", "train.weight_decay"),
    ("train: {warmup_fraction: .nan}", "train.warmup_fraction"),
    ("train: {freeze: {fractions: [.nan]}}", "train.freeze.fractions[0]"),
    ("query_tuning: {defaults: {lr: .inf}}", "query_tuning.defaults.lr"),
    ("query_tuning: {sweeps: {lr: [1.0e-6, -.inf]}}", "query_tuning.sweeps.lr[1]"),
    ("analyze: {recipe_budgets: [.inf]}", "analyze.recipe_budgets[0]"),
    ("models: [{name: m, source: tiny, hidden_size: 64, num_layers: 2, pretrain_peak_lr: .inf}]",
     "models[0].pretrain_peak_lr"),
])
def test_non_finite_numbers_name_the_key_and_file(tmp_path: Path, text: str, key: str) -> None:
    preset, msg = _load_refused(tmp_path, text)
    assert f"{preset}: {key}: must be a finite number" in msg, msg


def test_infinite_budget_is_an_error_not_an_overflow(tmp_path: Path) -> None:
    # before: the schema accepted inf (> 0) and the planner died in format_budget (OverflowError)
    preset, msg = _load_refused(tmp_path, "train: {budgets: [.inf]}")
    assert f"{preset}: train.budgets[0]" in msg


@pytest.mark.parametrize(("text", "key", "written", "suggested"), [
    ("train: {budgets: [1.0e+11, 2.0e+11, 1e11]}", "train.budgets[2]", "1e11", "1.0e+11"),
    ("train: {budgets: [1.0e11]}", "train.budgets[0]", "1.0e11", "1.0e+11"),
    ("train: {temperature: 25e-3}", "train.temperature", "25e-3", "25.0e-3"),
    ("analyze: {recipe_budgets: [3E17]}", "analyze.recipe_budgets[0]", "3E17", "3.0e+17"),
])
def test_yaml11_exponent_strings_get_a_hint(tmp_path: Path, text: str, key: str, written: str,
                                            suggested: str) -> None:
    preset, msg = _load_refused(tmp_path, text)
    assert f"{preset}: {key}: '{written}' is not of type 'number'" in msg, msg
    assert f"write {suggested}" in msg
    # the suggestion is what YAML 1.1 reads as the number that was meant
    assert yaml.safe_load(suggested) == float(written)


def test_unknown_freeze_specs_are_caught_at_validation(tmp_path: Path) -> None:
    preset, msg = _load_refused(tmp_path, "query_tuning: {defaults: {freeze: emb_b1}, "
                                          "sweeps: {freeze: [none, emb.base, embeddings]}}")
    assert f"{preset}: query_tuning.defaults.freeze: unknown freeze spec 'emb_b1'" in msg
    assert f"{preset}: query_tuning.sweeps.freeze[2]: unknown freeze spec 'embeddings'" in msg


def test_empty_grid_is_an_error(tmp_path: Path) -> None:
    # every (model, method, budget) falls below min_steps: nothing would train, exit code was 0
    preset, msg = _load_refused(tmp_path, "train: {budgets: [1.0e+3], methods: [full]}")
    assert f"{preset}: train: the grid has no feasible run" in msg and "min_steps" in msg


def test_freeze_fraction_that_fits_no_model_is_an_error(tmp_path: Path) -> None:
    # demo suite: 2 blocks. 0.33 is k/L for no model (it used to become 21/64 and skip all)
    preset, msg = _load_refused(tmp_path, "train: {methods: [freeze], freeze: {fractions: [0.5, 0.33]}}")
    assert f"{preset}: train.freeze.fractions[1]: 0.33 is not k/L" in msg, msg
    assert "fractions[0]" not in msg


def test_freeze_fraction_that_fits_some_models_warns_naming_the_key(tmp_path: Path) -> None:
    preset = tmp_path / "partial.yaml"
    preset.write_text(  # 1/4 of 4 blocks; not of 2
        "models:\n"
        "  - {name: tiny-d64-l2, source: tiny, hidden_size: 64, num_layers: 2, pretrain_peak_lr: 1.0e-3}\n"
        "  - {name: tiny-d64-l4, source: tiny, hidden_size: 64, num_layers: 4, pretrain_peak_lr: 1.0e-3}\n"
        "train: {freeze: {fractions: [0.25]}}\n")
    with pytest.warns(UserWarning, match=r"train\.freeze\.fractions\[0\]: 0\.25 is k/L only for L in \[4\]"):
        load_params([*BASE, preset])


@pytest.mark.parametrize(("text", "line", "key"), [
    ("train:\n  budgets: [1.0e+11]\ntrain:\n  seeds: [1]\n", 3, "train"),
    ("train:\n  budgets: [1.0e+11]\n  seeds: [1]\n  budgets: [2.0e+11]\n", 4, "budgets"),
    ("models:\n  - {name: a, name: b, source: tiny, hidden_size: 64, num_layers: 2, pretrain_peak_lr: 1.0e-3}\n",
     2, "name"),
])
def test_duplicate_keys_name_file_and_line(tmp_path: Path, text: str, line: int, key: str) -> None:
    preset, msg = _load_refused(tmp_path, text)
    assert f"{preset}:{line}: duplicate key '{key}'" in msg, msg


@pytest.mark.slow
def test_duplicate_key_in_a_preset_fails_snakemake_with_file_and_line(tmp_path: Path) -> None:
    preset = tmp_path / "dup.yaml"
    preset.write_text(f"paths: {{results: {tmp_path}/results}}\ntrain:\n  methods: [full]\ntrain:\n  seeds: [1]\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile",
                           str(REPO / "presets/demo.yaml"), str(preset)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert f"{preset}:4: duplicate key 'train'" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_errors_name_the_file_that_set_the_key(tmp_path: Path) -> None:
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("train: {budgets: [-1.0]}\nseed: -3\n")
    second.write_text("train: {temperature: -1.0}\n")  # merges into train; budgets stay first's
    with pytest.raises(ParamsError) as info:
        load_params([REPO / "params.yaml", first, second])
    msg = str(info.value)
    assert f"{first}: train.budgets[0]" in msg and f"{first}: seed" in msg
    assert f"{second}: train.temperature" in msg
