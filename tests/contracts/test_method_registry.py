"""The method registry (``embtune.models.methods``) is the one list of fine-tuning methods.

Three claims: the params schema names exactly the registered methods; no other module of the
library writes two or more method names in one literal (tuple, list, set or dict keys), so the
registry cannot drift from a copy; and a fifth method declared only in this file (``lnonly``:
only the LayerNorm parameters train) flows through plan -> train -> runs table -> figures with
no other module touched."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from helpers_train import TRAIN_DEFAULTS, make_base_model, make_shards, one_thread

from embtune.models import families
from embtune.models import methods as registry
from embtune.models.flops import Arch, ParamCounts
from embtune.plan import config

_one_thread = pytest.fixture(autouse=True)(one_thread)

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"
REGISTRY_FILE = SRC / "models" / "methods.py"
BUILT_IN = ("full", "freeze", "bias", "lora")       # paper 1, section 4 (the test's own copy)


def test_schema_enum_is_the_registry() -> None:
    assert list(registry.names()) == list(BUILT_IN)
    schema = config.load_schema()
    assert schema["$defs"]["method"]["enum"] == list(registry.names())


def _literal_lists(source: str, names: set[str]) -> list[tuple[int, list[str]]]:
    """(line, names) of every tuple/list/set literal, or dict's keys, naming >= 2 methods."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
        hits = [x.value for x in items if isinstance(x, ast.Constant) and x.value in names]
        if len(hits) >= 2:
            found.append((node.lineno, hits))
    return found


def test_the_detector_finds_a_list() -> None:
    names = set(BUILT_IN)
    assert _literal_lists('ORDER = ("full", "freeze", "bias")\nC = {"lora": 1, "bias": 2}\n', names) == \
        [(1, ["full", "freeze", "bias"]), (2, ["lora", "bias"])]
    assert _literal_lists('x = ("full",)\nif m == "lora": pass\n', names) == []


def test_method_names_are_listed_only_in_the_registry() -> None:
    names = set(registry.names())
    bad = [f"{path.relative_to(REPO)}:{line}: {hits}"
           for path in sorted(SRC.rglob("*.py")) if path != REGISTRY_FILE
           for line, hits in _literal_lists(path.read_text(), names)]
    pattern = re.compile(r"[\[(]\s*['\"]?(?:%s)['\"]?\s*,\s*['\"]?(?:%s)\b" % (("|".join(names),) * 2))
    rules = [*(REPO / "workflow").rglob("*.smk"), REPO / "workflow" / "Snakefile"]
    bad += [f"{p.relative_to(REPO)}: {m.group(0)}" for p in rules if p.exists()
            for m in pattern.finditer(p.read_text())]
    assert not bad, "method names listed outside embtune/models/methods.py:\n" + "\n".join(bad)


# ------------------------------------------------------------------ a fifth method, from here only
def _apply_lnonly(model: Any, run: dict[str, Any]) -> Any:
    import torch

    model.requires_grad_(False)
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.requires_grad_(True)
    return model


def _counts_lnonly(a: Arch, cfg: dict[str, Any]) -> ParamCounts:
    # every block has a trainable norm, so back-propagation reaches the first block: N_B = N
    return ParamCounts(a.n, a.n, a.n, (2 * a.layers + 1) * a.norm)


def _lr_lnonly(model: dict[str, Any], train: dict[str, Any]) -> float:
    return 10 * model["pretrain_peak_lr"] / train["lr_divisor"]     # its own rule: 10x the default


LNONLY = registry.Method("lnonly", "LayerNorm only", "tab:purple", _apply_lnonly, _counts_lnonly,
                         peak_lr=_lr_lnonly)


@pytest.fixture
def lnonly(monkeypatch):
    """Registers ``lnonly`` and adds it to the schema's method enum, as its module would."""
    monkeypatch.setitem(registry.REGISTRY, "lnonly", LNONLY)
    schema = config.load_schema()
    schema["$defs"]["method"]["enum"].append("lnonly")
    monkeypatch.setattr(config, "load_schema", lambda *a, **k: copy.deepcopy(schema))
    return LNONLY


MODEL = {"name": "tiny-d64-l2", "source": "tiny", "hidden_size": 64, "num_layers": 2,
         "pretrain_peak_lr": 1.0e-3, "pretrain_steps": 10}
# GPT-NeoX, d = 64, 2 blocks: each block has two LayerNorms (weight + bias: 128 each), plus the
# final one: 5 x 128 trainable parameters.
HAND_N_U = 5 * 2 * 64


def _params(tmp_path: Path, extra: str = "lnonly") -> dict[str, Any]:
    train = {k: v for k, v in TRAIN_DEFAULTS.items() if k != "log_every_steps"}   # 0: off, tests only
    return config.load_params([REPO / "params.yaml", REPO / "presets" / "demo.yaml"], overrides={
        "paths": {"results": str(tmp_path / "results"), "processed": str(tmp_path / "processed")},
        "models": [MODEL],
        "train": {**train, "methods": ["full", extra], "budgets": [1.0e9], "seeds": [0], "studies": [],
                  "tokens_per_pair_estimate": 14, "gpu_hours_cap": None}})


def test_schema_refuses_an_unregistered_method(tmp_path) -> None:
    with pytest.raises(config.ParamsError, match="train.methods"):
        _params(tmp_path)


def test_a_fifth_method_flows_from_plan_to_figures(tmp_path, lnonly) -> None:
    from embtune.plan.sweep import training_runs
    from embtune.plots import figures as F
    from embtune.plots import report
    from embtune.scaling import runs_table
    from embtune.stages import train as train_stage

    # plan: the sweep expands it (one variant, no hyper-parameter) and counts it from the dims
    runs, skipped = training_runs(_params(tmp_path), apply_cap=False)
    assert not skipped
    run = next(r for r in runs if r["method"] == "lnonly")
    assert run["run_id"] == "tiny-d64-l2__lnonly__c1e9__s0"
    assert run["planned"]["n_update"] == HAND_N_U
    assert run["planned"]["n_forward"] == run["planned"]["n_backward"] == run["planned"]["n_total"]
    full = next(r for r in runs if r["method"] == "full")
    assert (full["peak_lr"], run["peak_lr"]) == (pytest.approx(1e-3), pytest.approx(1e-2))  # demo: divisor 1

    # train: the stage's own CLI, on a base model with the planned dims
    base = make_base_model(tmp_path / "fixture", hidden=64, layers=2)
    data = make_shards(tmp_path / "fixture" / "bge", 64, 10, 190, 12)
    run = {**run, "base_model_dir": str(base), "data": {"train_dir": str(data), "tokenizer_dir": str(base)}}
    out = tmp_path / "runs" / run["run_id"]
    assert train_stage.main(["--run-config-json", json.dumps(run), "--out-dir", str(out),
                      "--checkpoint-dir", str(tmp_path / "ck")]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "ok" and metrics["n_update"] == HAND_N_U     # the instantiated model agrees

    # runs table: the row carries the method and its counts
    table = runs_table.build_table(runs_table.collect(tmp_path / "runs", []))
    row = table.row(0, named=True)
    assert (row["method"], row["N_U"], row["status"]) == ("lnonly", HAND_N_U, "ok")
    assert math.isfinite(row["final_train_loss"]) and row["S"] == pytest.approx(HAND_N_U / row["N_F"])

    # figures: its own IsoFLOP profile, and its registry colour in the per-method figures
    specs = {s.name: s for s in report.paper1_specs(table, {})}
    iso = specs["isoflop_lnonly"]
    assert iso.skipped is None and iso.data["model"].to_list() == ["tiny-d64-l2"]
    assert iso.draw(iso.data) is not None
    front, why = report.frontier_data(table, "final_train_loss", False)
    assert why is None
    fig = F.frontier_figure(front, "loss", "frontier")
    assert fig.axes[0].lines[0].get_color() == "tab:purple"
    assert registry.ordered(["lnonly", "bias", "full"]) == ["full", "bias", "lnonly"]


def test_fifth_method_counts_match_the_model(lnonly) -> None:
    """Its analytic declaration and the instantiated model's count agree on another family too."""
    from transformers import AutoConfig, AutoModel

    spec = {"family": "gpt2", "hidden_size": 32, "num_layers": 3, "num_attention_heads": 4}
    model = AutoModel.from_config(AutoConfig.for_model("gpt2", n_embd=32, n_layer=3, n_head=4, vocab_size=50,
                                                       n_positions=16))
    assert families.family_of(model).name == "gpt2"
    counted = registry.count_params(registry.apply_method(model, {"method": "lnonly"}), "lnonly")
    assert counted == registry.planned_counts(spec, {"method": "lnonly"})
    assert counted.n_update == (2 * 3 + 1) * 2 * 32      # ln_1, ln_2 per block + ln_f, weight + bias


# ------------------------------------------------------------------ a method with its own hyper-parameter
def test_the_study_rows_enum_is_the_factors_and_the_registry_columns() -> None:
    from embtune.plan.sweep import STUDY_FACTORS, study_row_columns

    rows = config.load_schema()["properties"]["train"]["properties"]["studies"]["items"]["properties"]["rows"]
    assert rows["items"]["enum"] == [*STUDY_FACTORS, *study_row_columns()]
    assert {"lora_rank", "freeze_fraction"} <= set(study_row_columns())   # the test's own copy of the two


def _variants_toplast(model: dict[str, Any], train: dict[str, Any], name: str) -> list:
    return [(f"{name}-k{k}", {"method": name, "top_blocks": k}, None) for k in (1, 2)]


TOPLAST = registry.Method(
    "toplast", "Last blocks only", "tab:brown", _apply_lnonly, _counts_lnonly, _variants_toplast,
    registry.Hyper(column="top_blocks", axis="blocks trained", title="Last blocks", logx=False, figure="fig_top",
                   caption="top blocks", point_label=lambda k: f"k{k}", integer=True),
    settings=("top_blocks",), parse_tag=lambda tag: {"top_blocks": int(tag.rpartition("-k")[2])},
    reported=(("top_blocks", "last {} blocks trained"),), card_row=("blocks trained", ("top_blocks",)))


def test_a_method_with_its_own_column_reaches_plan_metrics_table_studies_and_card(tmp_path, monkeypatch) -> None:
    """Declared here only: its column is in the planned-runs table, the run's metrics, the runs
    table (as integers), the study tables' group-by and the model card, with no module edited."""
    from embtune.models import st_export
    from embtune.plan.sweep import study_row_columns
    from embtune.plan.tables import plan_tables
    from embtune.runconfig import RunConfig
    from embtune.scaling import appendix, runs_table
    from embtune.train.loop import base_metrics

    monkeypatch.setitem(registry.REGISTRY, "toplast", TOPLAST)
    schema = config.load_schema()
    schema["$defs"]["method"]["enum"].append("toplast")
    monkeypatch.setattr(config, "load_schema", lambda *a, **k: copy.deepcopy(schema))
    planned, _, _ = plan_tables(_params(tmp_path, "toplast"))
    mine = planned.filter(planned["method"] == "toplast")
    assert mine["top_blocks"].to_list() == [1, 2] and planned.schema["top_blocks"] == __import__("polars").Int64
    assert "top_blocks" in study_row_columns() and "top_blocks" in appendix.run_columns()

    cfg = RunConfig.from_dict({**_run_dict(tmp_path), "method": "toplast", "top_blocks": 2,
                               "run_id": "tiny-d64-l2__toplast-k2__c1e9__s0"})
    metrics = {**base_metrics(cfg, None), "status": "ok", "steps": 3, "final_train_loss": 1.5}
    assert metrics["top_blocks"] == 2
    row = runs_table.build_table([runs_table.run_row(cfg.run_id, metrics, {}, None)]).row(0, named=True)
    assert row["top_blocks"] == 2 and isinstance(row["top_blocks"], int)
    assert st_export._method_text(metrics) == "Last blocks only (last 2 blocks trained)"
    card = st_export.training_card(metrics, {"top_blocks": 2}, {})
    assert "| blocks trained | 2 |" in card


def _run_dict(tmp_path: Path) -> dict[str, Any]:
    """One planned full run of the toy grid, as the sweep writes it."""
    from embtune.plan.sweep import training_runs

    runs, _ = training_runs(_params(tmp_path, "toplast"), apply_cap=False)
    return next(r for r in runs if r["method"] == "full")


def test_a_method_checks_its_own_settings_at_validation(tmp_path, monkeypatch) -> None:
    """``Method.check`` (freeze's whole-block fractions): what a toy method's check returns is a
    params error naming its key, or a warning, with no module edited."""
    from embtune.plan.config_checks import ParamsWarning

    def check(train, models):
        layers = sorted({m["num_layers"] for m in models})
        if train["budgets"][0] < 1e6:
            return [(("train", "budgets", 0), f"too small for blocks {layers}")], []
        return [], [(("train", "methods"), f"trains all of {layers} blocks")]

    monkeypatch.setitem(registry.REGISTRY, "toplast", dataclasses.replace(TOPLAST, check=check))
    schema = config.load_schema()
    schema["$defs"]["method"]["enum"].append("toplast")
    monkeypatch.setattr(config, "load_schema", lambda *a, **k: copy.deepcopy(schema))
    with pytest.warns(ParamsWarning, match=r"train\.methods: trains all of \[2\] blocks"):
        _params(tmp_path, "toplast")
    with pytest.raises(config.ParamsError, match=r"train\.budgets.*too small for blocks \[2\]"):
        config.load_params([REPO / "params.yaml", REPO / "presets" / "demo.yaml"], overrides={
            "paths": {"results": str(tmp_path / "results"), "processed": str(tmp_path / "processed")},
            "models": [MODEL], "train": {"methods": ["full", "toplast"], "budgets": [1.0e5], "studies": []}})
    assert registry.reference().name == "full"       # Fig. 15's reference: one flagged method
