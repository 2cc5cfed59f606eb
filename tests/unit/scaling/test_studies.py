"""Paper 1's appendix studies (train.studies): expansion, ids, dedup with the main grid, exclusion
from the main fits, App. D tables and App. F's predicted-vs-actual (Fig. 20)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from embtune.plan.config import ParamsError, load_params, validate
from embtune.plan.sweep import max_context_length, mteb_run_ids, training_plan, training_runs
from embtune.scaling.laws import modified_loss
from embtune.scaling.runs_table import build_table, parse_run_id, run_row, skipped_row

REPO = Path(__file__).resolve().parents[3]

TEMPERATURE = {"name": "appD-temperature", "models": ["tiny-d128-l2"],
               "base": {"methods": ["full"], "budgets": [1.0e11]},
               "cross": {"inv_temperature": [40, 20, 10], "weight_decay": [0.1, 0.0]},
               "metric": "mteb_average", "rows": ["inv_temperature"]}
LORA_LR = {"name": "appD-lora-lr", "models": ["tiny-d128-l2"],
           "base": {"methods": ["lora"], "budgets": [1.0e11], "lora": {"ranks": [8, 32]}},
           "cross": {"peak_lr": [1e-3, 5e-3]}, "rows": ["peak_lr", "lora_rank"]}
APP_F = {"name": "appF", "models": ["tiny-d96-l2", "tiny-d128-l2"],
         "base": {"methods": ["full"], "budgets": [2.0e11, 4.0e11], "batch_size": 64, "context_length": 48},
         "predict": {"law": "modified", "data": "steps"}}


@pytest.fixture(scope="module")
def demo() -> dict:
    """The demo grid (5 tiny models; full, LoRA r8/r32, freeze 0 and 1/2, bias over per-variant budgets), no studies."""
    return load_params([REPO / "params.yaml", REPO / "presets/demo.yaml"])


def _with(demo: dict, *studies: dict) -> dict:
    params = copy.deepcopy(demo)
    params["train"]["studies"] = [copy.deepcopy(s) for s in studies]
    return validate(params)


def test_study_expansion_by_hand(demo: dict) -> None:
    params = _with(demo, TEMPERATURE, LORA_LR, APP_F)
    runs, skipped, members = training_plan(params)
    main = [r for r in runs if parse_run_id(r["run_id"])["study"] == "main"]
    # 6 models x (full 6 budgets + LoRA r8 6) + 3 models (d32, d64, d128: train.variant_models) x
    # (r32 1 + freeze-0 1 + freeze-1/2 2 + bias 2) = 90 cells, less 10 (< min_steps 10): full d96
    # at 1.25e10, d128 up to 2.5e10, d192 up to 5e10; LoRA r8 d96 and d128 at 1.25e10, d192 up to
    # 2.5e10: 80
    assert len(main) == 80 and len(skipped) == 10
    assert {s.run_id.split("__")[0] for s in skipped} == {"tiny-d96-l2", "tiny-d128-l2", "tiny-d192-l2"}
    new = {r["run_id"]: r for r in runs[80:]}
    # temperature: 3 x 2 points, (1/40, 0.1) is the main full run at 1e11; LoRA: 2 rates x 2 ranks,
    # ranks 8 and 32 at 5e-3 (the demo's LoRA rate) are main LoRA runs at 1e11; App. F: 2 models x
    # 2 budgets, all new (batch 64)
    assert len(new) == (6 - 1) + (4 - 2) + 4
    t20 = new["tiny-d128-l2__full__c1e11__s0__appD-temperature__inv_temperature-20__weight_decay-0"]
    assert t20["train"]["temperature"] == pytest.approx(0.05) and t20["train"]["weight_decay"] == 0.0
    assert new["tiny-d128-l2__lora-r32__c1e11__s0__appD-lora-lr__peak_lr-0.001"]["peak_lr"] == 1e-3
    assert "tiny-d128-l2__lora-r32__c1e11__s0__appD-lora-lr__peak_lr-0.005" not in new    # the main r32 run
    f = new["tiny-d128-l2__full__c4e11__s0__appF"]
    assert (f["train"]["batch_size"], f["train"]["context_length"]) == (64, 48)
    # the plan's steps use the study's batch: tokens / (pairs-per-step estimate x 64)
    assert f["planned"]["steps"] == pytest.approx(f["planned"]["tokens"] / 40 / 64)   # demo.yaml: 40 tokens per pair
    # memberships: the main run that is the (1/40, 0.1) point belongs to the study too
    temp = [m for m in members if m["study"] == "appD-temperature"]
    assert len(temp) == 6
    point = next(m for m in temp if m["factors"] == {"inv_temperature": 40, "weight_decay": 0.1})
    assert point["run_id"] == "tiny-d128-l2__full__c1e11__s0"
    assert max_context_length(params) == 48


def test_study_ids_never_take_a_main_id_and_read_back(demo: dict) -> None:
    params = _with(demo, TEMPERATURE, LORA_LR, APP_F)
    runs, _, members = training_plan(params)
    ids = [r["run_id"] for r in runs]
    assert len(ids) == len(set(ids))
    for m in members:
        parsed = parse_run_id(m["run_id"])
        assert parsed["study"] in ("main", m["study"])
        assert parsed["model"] and parsed["method"] and parsed["budget"] > 0
    assert parse_run_id("tiny-d128-l4__full__c4e11__s0__appF") == {
        "model": "tiny-d128-l4", "method": "full", "study": "appF", "budget": 4e11, "seed": 0}


def test_adding_studies_keeps_the_main_grid_unchanged(demo: dict) -> None:
    before, _ = training_runs(demo)
    after, _ = training_runs(_with(demo, TEMPERATURE, LORA_LR, APP_F))
    assert after[:len(before)] == before


def test_mteb_only_for_main_and_mteb_studies(demo: dict) -> None:
    params = _with(demo, TEMPERATURE, LORA_LR, APP_F)
    runs, _, members = training_plan(params)
    mteb = mteb_run_ids(params, runs, members)
    assert len(mteb) == 80 + 5                              # main + the temperature study's new runs
    assert not any("appF" in r or "lora-lr" in r for r in mteb)


def test_paper_studies_plan(demo: dict) -> None:
    paper = load_params([REPO / "params.yaml"])
    runs, skipped, members = training_plan(paper)
    assert max_context_length(paper) == 512
    f = [m for m in members if m["study"] == "appF"]
    assert len(f) == 5 * 4 * 17                             # App. F: 5 models x 4 budgets x variants
    temp = [m for m in members if m["study"] == "appD-temperature"]
    assert sorted({m["factors"]["inv_temperature"] for m in temp}) == [1, 10, 30, 35, 40, 50]


def _errors(demo: dict, study: dict) -> str:
    params = copy.deepcopy(demo)
    params["train"]["studies"] = [study]
    with pytest.raises(ParamsError) as info:
        validate(params)
    return str(info.value)


def test_study_validation_names_the_key(demo: dict) -> None:
    err = _errors(demo, {**TEMPERATURE, "models": ["pythia-1b"]})
    assert "train.studies[0].models[0]: 'pythia-1b' is not in models" in err
    err = _errors(demo, {**TEMPERATURE, "base": {"batchsize": 2}})
    assert "train.studies[0].base.batchsize: unknown setting" in err
    err = _errors(demo, {**TEMPERATURE, "base": {"batch_size": 1}})
    assert "train.studies[0].base.batch_size" in err
    err = _errors(demo, {**TEMPERATURE, "rows": ["pooling"]})
    assert "'pooling' is not one of the study's cross factors" in err
    err = _errors(demo, {**TEMPERATURE, "cross": {"inv_temperature": [-1]}})
    assert "train.studies[0].cross.inv_temperature[0]" in err
    err = _errors(demo, {**TEMPERATURE, "base": {"methods": ["full"], "budgets": [1.0e3]}})
    assert "study 'appD-temperature' has no feasible run" in err and "min_steps" in err


# ------------------------------------------------------------------ runs table and main fits
def test_runs_table_has_a_study_column() -> None:
    ok = run_row("m__full__c1e11__s0__appF", {"final_train_loss": 1.0, "status": "ok"}, {}, None)
    assert ok["study"] == "appF" and ok["method"] == "full"
    assert run_row("m__full__c1e11__s0", {}, {}, None)["study"] == "main"
    assert skipped_row("m__bias__c1e11__s0__appD-bias-lr__peak_lr-0.01", "few steps")["study"] == "appD-bias-lr"
    table = build_table([ok, skipped_row("m__full__c1e11__s0", "x")])
    assert table.schema["study"] == pl.String and set(table["study"]) == {"appF", "main"}


def _study_rows(table: pl.DataFrame, factor: float = 3.0) -> pl.DataFrame:
    """Copies of the rows as a study's runs with very different losses (would move any fit)."""
    return table.with_columns((pl.col("run_id") + "__appF").alias("run_id"), pl.lit("appF").alias("study"),
                              pl.col("final_train_loss") * factor)


def test_study_runs_stay_out_of_the_main_fits() -> None:
    from embtune.scaling.fit_laws import fit_all
    from embtune.scaling.synthetic import PYTHIA, synthetic_runs

    main = synthetic_runs(models=PYTHIA[:5], budgets=[1.5e15, 6e15, 2.4e16, 9.6e16], methods=("full", "bias"))
    main = main.with_columns(pl.lit("main").alias("study"))
    both = pl.concat([main, _study_rows(main)])
    a = fit_all(main, n_boot=0, holdout="none")
    b = fit_all(both, n_boot=0, holdout="none")
    for method in ("full", "bias"):
        assert a["laws"][method]["modified"]["params"] == b["laws"][method]["modified"]["params"]
        assert a["laws"][method]["modified"]["n_train"] == main.filter(pl.col("method") == method).height
    assert a["optimal_points"] == b["optimal_points"]


# ------------------------------------------------------------------ App. D tables
def test_best_table_by_hand() -> None:
    """Table 1: the best MTEB average per temperature over the weight decays; a failed run counts
    in n_runs but never wins."""
    from embtune.scaling.appendix import best_table

    frame = pl.DataFrame({
        "run_id": ["a", "b", "c", "d", "e"], "inv_temperature": [40.0, 40.0, 20.0, 20.0, 10.0],
        "weight_decay": [0.0, 0.1, 0.0, 0.1, 0.0], "model": ["m"] * 5, "method": ["freeze"] * 5,
        "budget": [1e11] * 5, "status": ["ok", "ok", "ok", "failed", "skipped"],
        "mteb_average": [0.50, 0.51, 0.47, 0.90, None]})
    table = best_table(frame, {"cross": {"inv_temperature": [], "weight_decay": []}, "rows": ["inv_temperature"]},
                       "mteb_average")
    got = {r["inv_temperature"]: (r["mteb_average"], r["best_run_id"], r["n_runs"], r["n_finished"])
           for r in table.iter_rows(named=True)}
    assert got == {10.0: (None, None, 1, 0), 20.0: (0.47, "c", 2, 1), 40.0: (0.51, "b", 2, 2)}
    # losses: the lowest wins, and without rows the table groups by every factor
    frame = frame.with_columns(pl.col("mteb_average").alias("final_train_loss"))
    table = best_table(frame, {"cross": {"inv_temperature": [], "weight_decay": []}}, "final_train_loss")
    assert table.height == 5
    best = best_table(frame, {"cross": {"inv_temperature": []}, "rows": ["inv_temperature"]}, "final_train_loss")
    assert best.filter(pl.col("inv_temperature") == 40.0)["best_run_id"][0] == "a"


# ------------------------------------------------------------------ App. F / Fig. 20
def _law_table(params: dict, law: dict, noise: float, seed: int) -> pl.DataFrame:
    """A runs table for every planned run, losses drawn from ``law`` in (N, steps, S) x lognormal
    noise: App. F's premise that one law in training steps describes both batch settings."""
    rng = np.random.default_rng(seed)
    runs, _, _ = training_plan(params)
    rows = []
    for r in runs:
        p = r["planned"]
        s = p["n_update"] / p["n_forward"]
        loss = float(modified_loss(law, p["n_total"], p["steps"], s)) * float(np.exp(rng.normal(0, noise)))
        rows.append(run_row(r["run_id"], {"status": "ok", "n_total": p["n_total"], "n_forward": p["n_forward"],
                                          "n_backward": p["n_backward"], "n_update": p["n_update"],
                                          "tokens": p["tokens"], "steps": p["steps"], "flops": r["budget"],
                                          "final_train_loss": loss}, {"run_config": r}, None))
    return build_table(rows)


LAW_STEPS = {"E": 0.3, "a_d": -0.02, "b_d": 4.0, "alpha": 0.2, "a_s": 0.0, "b_s": 1.0, "c_s": 2.0, "beta": 0.3}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fig20_predictions_recover_a_known_law(demo: dict, seed: int) -> None:
    from embtune.scaling.appendix import predicted_vs_actual, study_frame

    params = copy.deepcopy(demo)
    params["train"]["budgets"] = [1e11, 2e11, 4e11, 8e11]     # 6 models x 4 budgets of full tuning
    params = _with(params, APP_F)
    runs = _law_table(params, LAW_STEPS, noise=0.005, seed=seed)
    _, _, members = training_plan(params)
    frame = study_frame(runs, members, params["train"]["studies"][0], "final_train_loss")
    points, summary = predicted_vs_actual(runs, frame, law_name="modified", data="steps")
    full = summary["methods"]["full"]
    assert full["fit"]["n_train"] == 24                       # main-grid full runs only
    assert full["predicted"]["n"] == 4                        # the four batch-64 runs
    assert full["predicted"]["mean_abs_rel_err"] < 0.02       # noise is 0.5 %
    pred = points.filter(pl.col("split") == "predicted")
    assert set(pred["run_id"]) == {m["run_id"] for m in members if m["study"] == "appF"}
    # the same law in tokens would be the wrong model of these losses: worse predictions
    _, tokens = predicted_vs_actual(runs, frame, law_name="modified", data="tokens")
    assert tokens["methods"]["full"]["predicted"]["mean_abs_rel_err"] > full["predicted"]["mean_abs_rel_err"]


def test_appendix_stage_writes_tables_and_fig20(demo: dict, tmp_path: Path) -> None:
    from embtune.stages import appendix_tables as appendix

    params = copy.deepcopy(demo)
    params["train"]["budgets"] = [1e11, 2e11, 4e11, 8e11]
    params = _with(params, TEMPERATURE, LORA_LR, APP_F)
    runs = _law_table(params, LAW_STEPS, noise=0.005, seed=0)
    runs = runs.with_columns((1.0 - pl.col("final_train_loss") / 10).alias("mteb_average"))
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    grid = json.dumps({k: params[k] for k in ("models", "train", "paths")})
    out = tmp_path / "appendix"
    assert appendix.main(["--runs", str(path), "--params-json", grid, "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    for study in ("appD-temperature", "appD-lora-lr", "appF"):
        assert {f"{study}.csv", f"{study}.md", f"{study}_runs.csv"} <= names
    assert {"appF_predicted.csv", "appF_fit.json", "appF_predicted.png", "manifest.json"} <= names
    table = pl.read_csv(out / "appD-temperature.csv")
    assert table["inv_temperature"].to_list() == [10.0, 20.0, 40.0] and (table["n_runs"] == 2).all()
    lora = pl.read_csv(out / "appD-lora-lr.csv")
    assert lora.height == 4 and set(lora["lora_rank"]) == {8, 32}
    fit = json.loads((out / "appF_fit.json").read_text())
    assert fit["data"] == "steps" and fit["methods"]["full"]["predicted"]["n"] == 4


def test_headline_summary_is_the_main_grid() -> None:
    """A study at another temperature reaches other loss values: never the 'best loss' headline."""
    from embtune.plots.summary import training_summary

    rows = [run_row("m__full__c1e11__s0", {"status": "ok", "final_train_loss": 1.0, "flops": 1e11}, {}, None),
            run_row("m__full__c1e11__s0__appD-temperature__inv_temperature-1",
                    {"status": "ok", "final_train_loss": 0.2, "flops": 1e11}, {}, None)]
    got = training_summary(build_table(rows))
    assert got["best_final_train_loss"] == {"full": 1.0}
    assert (got["runs_ok"], got["study_runs_ok"]) == (1, 1)
