"""The method registry (``embtune.models.methods``) is the one list of fine-tuning methods.

Three claims: the params schema names exactly the registered methods; no other module of the
library writes two or more method names in one literal (tuple, list, set or dict keys), so the
registry cannot drift from a copy; and a method is what a user declares (:func:`declare`: its
registry entry and its part of the params schema), with no other module touched. A fifth method
(``lnonly``: only the LayerNorm parameters train) flows through plan -> train -> runs table ->
figures; one with its own integer hyper-parameter and schema section (``toplast``: the last k
blocks train) reaches the schema's validation, the plan, the synthetic tables, the runs table,
the study tables and the model card."""

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
from embtune.models.run_spec import MethodSettings
from embtune.plan import config

_one_thread = pytest.fixture(autouse=True)(one_thread)

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"
REGISTRY_FILE = SRC / "models" / "methods.py"
BUILT_IN = ("full", "freeze", "bias", "lora")       # paper 1, section 4 (the test's own copy)


def test_schema_enum_is_the_registry() -> None:
    assert registry.names()[:len(BUILT_IN)] == BUILT_IN      # paper 1's four first; a user's may follow
    schema = config.load_schema()
    assert schema["$defs"]["method"]["enum"] == list(registry.names())


def test_each_method_types_the_keys_its_variants_write() -> None:
    """A method's variants write only fields of its ``settings`` type, each of the declared type
    (the hooks read them as attributes), for every model of params.yaml's suite."""
    params = config.load_params([REPO / "params.yaml"])
    for method in registry.REGISTRY.values():
        for model in params["models"]:
            for tag, cfg, _ in method.variants(model, params["train"], method.name):
                own = {k: v for k, v in cfg.items() if k != "method"}
                assert set(own) <= set(method.settings.keys()), (method.name, tag)
                typed = method.settings.from_dict({k: v for k, v in own.items() if v is not None}, tag)
                written = [(k, v) for k, v in own.items() if v is not None]     # in the variant's order
                assert list(typed.to_dict().items()) == written, (method.name, tag)


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
def _apply_lnonly(model: Any, settings: MethodSettings) -> Any:
    import torch

    model.requires_grad_(False)
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.requires_grad_(True)
    return model


def _counts_lnonly(a: Arch, settings: MethodSettings) -> ParamCounts:
    # every block has a trainable norm, so back-propagation reaches the first block: N_B = N
    return ParamCounts(a.n, a.n, a.n, (2 * a.layers + 1) * a.norm)


def _lr_lnonly(model: dict[str, Any], train: dict[str, Any]) -> float:
    return 10 * model["pretrain_peak_lr"] / train["lr_divisor"]     # its own rule: 10x the default


LNONLY = registry.Method("lnonly", "LayerNorm only", "tab:purple", _apply_lnonly, _counts_lnonly,
                         peak_lr=_lr_lnonly)


def declare(monkeypatch: pytest.MonkeyPatch, method: registry.Method,
            section: dict[str, Any] | None = None) -> registry.Method:
    """Declares ``method`` the way a user does, in the two places a user edits: its registry entry
    (``methods.register``) and the params schema (its name in ``$defs.method``, its own
    ``train.<name>`` section if it has settings, its column in ``train.studies[].rows``)."""
    monkeypatch.setitem(registry.REGISTRY, method.name, method)
    schema = config.load_schema()
    schema["$defs"]["method"]["enum"].append(method.name)
    train = schema["properties"]["train"]["properties"]
    if section is not None:
        train[method.name] = section
    if method.hyper is not None:
        train["studies"]["items"]["properties"]["rows"]["items"]["enum"].append(method.hyper.column)
    monkeypatch.setattr(config, "load_schema", lambda *a, **k: copy.deepcopy(schema))
    return method


@pytest.fixture
def lnonly(monkeypatch):
    """``lnonly``: an entry and its name in the schema's method enum (no settings of its own)."""
    return declare(monkeypatch, LNONLY)


MODEL = {"name": "tiny-d64-l2", "source": "tiny", "hidden_size": 64, "num_layers": 2,
         "pretrain_peak_lr": 1.0e-3, "pretrain_steps": 10}
# GPT-NeoX, d = 64, 2 blocks: each block has two LayerNorms (weight + bias: 128 each), plus the
# final one: 5 x 128 trainable parameters.
HAND_N_U = 5 * 2 * 64


def _params(tmp_path: Path, extra: str = "lnonly", **sections: Any) -> dict[str, Any]:
    """The toy grid with ``extra`` beside full; ``sections``: more ``train`` keys (a method's own)."""
    train = {k: v for k, v in TRAIN_DEFAULTS.items() if k != "log_every_steps"}   # 0: off, tests only
    return config.load_params([REPO / "params.yaml", REPO / "presets" / "demo.yaml"], overrides={
        "paths": {"results": str(tmp_path / "results"), "processed": str(tmp_path / "processed")},
        "models": [MODEL],
        "train": {**train, "methods": ["full", extra], "budgets": [1.0e9], "seeds": [0], "studies": [],
                  "tokens_per_pair_estimate": 14, "gpu_hours_cap": None, **sections}})


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


def test_fifth_method_counts_match_the_model(lnonly, monkeypatch) -> None:
    """Its analytic declaration and the instantiated model's count agree on another family too."""
    from transformers import AutoConfig, AutoModel

    spec = {"family": "gpt2", "hidden_size": 32, "num_layers": 3, "num_attention_heads": 4}
    model = AutoModel.from_config(AutoConfig.for_model("gpt2", n_embd=32, n_layer=3, n_head=4, vocab_size=50,
                                                       n_positions=16))
    assert families.family_of(model).name == "gpt2"
    counted = registry.count_params(registry.apply_method(model, {"method": "lnonly"}), "lnonly")
    assert counted == registry.planned_counts(spec, {"method": "lnonly"})
    assert counted.n_update == (2 * 3 + 1) * 2 * 32      # ln_1, ln_2 per block + ln_f, weight + bias
    # and the toy method with its own column, at k = 2 of 3 blocks (GPT-2, d = 32: a block is
    # 12 d^2 + 13 d, ln_f 2 d)
    monkeypatch.setitem(registry.REGISTRY, "toplast", TOPLAST)
    run = {"method": "toplast", "top_blocks": 2}
    counted = registry.count_params(registry.apply_method(model, run), "toplast")
    assert counted == registry.planned_counts(spec, run)
    assert counted.n_update == counted.n_backward == 2 * (12 * 32 * 32 + 13 * 32) + 2 * 32


# ------------------------------------------------------------------ a method with its own hyper-parameter
def test_the_study_rows_enum_is_the_factors_and_the_registry_columns() -> None:
    from embtune.plan.sweep import STUDY_FACTORS, study_row_columns

    rows = config.load_schema()["properties"]["train"]["properties"]["studies"]["items"]["properties"]["rows"]
    assert rows["items"]["enum"] == [*STUDY_FACTORS, *study_row_columns()]
    assert {"lora_rank", "freeze_fraction"} <= set(study_row_columns())   # the test's own copy of the two


@dataclasses.dataclass(frozen=True)
class TopLastSettings(MethodSettings):
    """Its run-config key, typed: the hooks read ``top_blocks`` as an attribute."""

    top_blocks: int | None = None


def _apply_toplast(model: Any, settings: TopLastSettings) -> Any:
    family = families.family_of(model)
    stack = families.blocks(model, family)
    model.requires_grad_(True)
    for module in families.lookup_modules(model, family) + stack[:len(stack) - int(settings.top_blocks or 0)]:
        module.requires_grad_(False)
    return model


def _counts_toplast(a: Arch, settings: TopLastSettings) -> ParamCounts:
    active = (settings.top_blocks or 0) * a.block + a.norm      # the last k blocks and the final norm
    return ParamCounts(a.n, a.n, active, active)


def _variants_toplast(model: dict[str, Any], train: dict[str, Any], name: str) -> list:
    layers = model["num_layers"]
    return [(f"{name}-k{k}", {"method": name, "top_blocks": k}, None if k <= layers else f"{k} > {layers} blocks")
            for k in train[name]["blocks"]]


#: Its integer hyper-parameter, the number of trained blocks counted from the top: the entry ...
TOPLAST = registry.Method(
    "toplast", "Last blocks only", "tab:brown", _apply_toplast, _counts_toplast, _variants_toplast,
    registry.Hyper(column="top_blocks", axis="blocks trained", title="Last blocks", logx=False, figure="fig_top",
                   caption="top blocks", point_label=lambda k: f"k{k}", integer=True),
    settings=TopLastSettings, parse_tag=lambda tag: {"top_blocks": int(tag.rpartition("-k")[2])},
    reported=(("top_blocks", "last {} blocks trained"),), card_row=("blocks trained", ("top_blocks",)),
    synthetic_law={"E": 0.10, "a_d": -0.5, "b_d": 40.0, "alpha": 0.25, "a_s": 20.0, "b_s": 1.5, "c_s": 30.0,
                   "beta": 0.22})
#: ... and its section of the params schema (``train.toplast``), as workflow/schemas/ would hold it
TOPLAST_SECTION = {
    "type": "object", "additionalProperties": False, "default": {"blocks": [1]},
    "description": "Last-blocks grid.",
    "properties": {"blocks": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1},
                              "description": "Blocks trained, counted from the last."}}}


def test_a_method_with_its_own_hyper_parameter_reaches_schema_plan_and_synthetic_tables(tmp_path,
                                                                                        monkeypatch) -> None:
    """Declared here as a user would (entry + schema section): the schema validates and fills its
    section, the plan expands it, and the synthetic tables (scaling/synthetic.py) draw its variants
    from its section with its integer column and its law, counted by hand."""
    import polars as pl

    from embtune.plan.sweep import training_runs
    from embtune.plan.tables import plan_tables
    from embtune.scaling.synthetic import PYTHIA, synthetic_runs

    declare(monkeypatch, TOPLAST, TOPLAST_SECTION)
    # schema: the section's default fills in, its values are checked, naming the key
    assert _params(tmp_path, "toplast")["train"]["toplast"] == {"blocks": [1]}
    params = _params(tmp_path, "toplast", toplast={"blocks": [1, 2]})
    assert params["train"]["toplast"] == {"blocks": [1, 2]}
    with pytest.raises(config.ParamsError, match=r"train\.toplast\.blocks"):
        _params(tmp_path, "toplast", toplast={"blocks": [0]})
    with pytest.raises(config.ParamsError, match=r"train\.toplast"):
        _params(tmp_path, "toplast", toplast={"ranks": [8]})

    # plan: one run per value, N_U by hand (GPT-NeoX, d = 64: a block is 12 d^2 + 13 d, the final
    # LayerNorm 2 d)
    planned, _, _ = plan_tables(params)
    mine = planned.filter(pl.col("method") == "toplast").sort("top_blocks")
    assert mine["top_blocks"].to_list() == [1, 2] and planned.schema["top_blocks"] == pl.Int64
    assert mine["run_id"].to_list() == ["tiny-d64-l2__toplast-k1__c1e9__s0", "tiny-d64-l2__toplast-k2__c1e9__s0"]
    runs, _ = training_runs(params, apply_cap=False)
    assert [r["planned"]["n_update"] for r in runs if r["method"] == "toplast"] == [
        k * (12 * 64 * 64 + 13 * 64) + 2 * 64 for k in (1, 2)]

    # synthetic tables: its variants from its section (the default, or given), its own law
    assert synthetic_runs(models=PYTHIA[:1], budgets=[1e15], methods=("toplast",))["top_blocks"].to_list() == [1]
    runs = synthetic_runs(models=PYTHIA[:2], budgets=[1e15, 1e16], methods=("full", "toplast"),
                          settings={"toplast": {"blocks": [1, 3]}}, noise=0.0)
    assert runs.schema["top_blocks"] == pl.Int64
    rows = {(r["model"], r["top_blocks"], r["C"]): r for r in runs.filter(pl.col("method") == "toplast").iter_rows(
        named=True)}
    assert sorted(rows) == [(m, k, c) for m in ("pythia-14m", "pythia-31m") for k in (1, 3) for c in (1e15, 1e16)]
    for (model, k, c), row in rows.items():
        d = dict((n, h) for n, h, _ in PYTHIA)[model]
        assert row["N_U"] == k * (12 * d * d + 13 * d) + 2 * d
        assert row["run_id"] == f"{model}__toplast-k{k}__c{c:.0e}__s0".replace("e+", "e")
        # its own law (noise 0), paper 1's modified form written out:
        # L = E + (a_d ln D + b_d) / N^alpha + (a_s (1 - S)^b_s + c_s) / D^beta
        p, n, dd, frac = TOPLAST.synthetic_law, row["N"], row["D"], row["S"]
        law = (p["E"] + (p["a_d"] * math.log(dd) + p["b_d"]) / n ** p["alpha"]
               + (p["a_s"] * (1 - frac) ** p["b_s"] + p["c_s"]) / dd ** p["beta"])
        assert row["final_train_loss"] == pytest.approx(law, rel=1e-9)
        assert row["S"] == pytest.approx(row["N_U"] / row["N_F"])


def test_a_method_with_its_own_column_reaches_plan_metrics_table_studies_and_card(tmp_path, monkeypatch) -> None:
    """Declared here only: its column is in the planned-runs table, the run's metrics, the runs
    table (as integers), the study tables' group-by and the model card, with no module edited."""
    from embtune.models import st_export
    from embtune.plan.sweep import study_row_columns
    from embtune.plan.tables import plan_tables
    from embtune.runconfig import RunConfig
    from embtune.scaling import appendix, runs_table
    from embtune.train.loop import base_metrics

    declare(monkeypatch, TOPLAST, TOPLAST_SECTION)
    planned, _, _ = plan_tables(_params(tmp_path, "toplast", toplast={"blocks": [1, 2]}))
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

    declare(monkeypatch, dataclasses.replace(TOPLAST, check=check), TOPLAST_SECTION)
    with pytest.warns(ParamsWarning, match=r"train\.methods: trains all of \[2\] blocks"):
        _params(tmp_path, "toplast")
    with pytest.raises(config.ParamsError, match=r"train\.budgets.*too small for blocks \[2\]"):
        config.load_params([REPO / "params.yaml", REPO / "presets" / "demo.yaml"], overrides={
            "paths": {"results": str(tmp_path / "results"), "processed": str(tmp_path / "processed")},
            "models": [MODEL], "train": {"methods": ["full", "toplast"], "budgets": [1.0e5], "studies": []}})
    assert registry.reference().name == "full"       # Fig. 15's reference: one flagged method
