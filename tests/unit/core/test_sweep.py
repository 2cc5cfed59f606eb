"""Grid expansion: the paper's grid, run ids, feasibility and the query-tuning sweeps."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from embtune.models.methods import analytic_counts
from embtune.plan.query_sweep import query_runs
from embtune.plan.sweep import freeze_fractions, training_runs
from embtune.runconfig import format_budget

REPO = Path(__file__).resolve().parents[3]


def test_pythia_non_embedding_counts_match_published_numbers() -> None:
    # Pythia's model card lists non-embedding parameters: 160M -> 85,056,000; 1.4B -> 1,208,602,624
    assert analytic_counts(768, 12, "full").n_total == 85_056_000
    assert analytic_counts(2048, 24, "full").n_total == 1_208_602_624


def test_freeze_fraction_grid_follows_divisibility() -> None:
    assert freeze_fractions(12, "auto") == [(k, 6) for k in range(6)]
    assert freeze_fractions(16, "auto") == [(k, 8) for k in range(8)]
    assert freeze_fractions(24, "auto") == [(k, 6) for k in range(6)]
    assert freeze_fractions(5, "auto") == []


def test_paper_grid_size_and_ids(paper: dict) -> None:
    runs, skipped = training_runs(paper)
    # 8 models x 6 budgets x (full + bias + 9 LoRA ranks + 6 or 8 freeze fractions)
    per_model = {6: 6, 12: 6, 24: 6, 16: 8, 32: 8}
    expected = sum(6 * (2 + 9 + per_model[m["num_layers"]]) for m in paper["models"])
    main = [r["run_id"] for r in runs] + [s.run_id for s in skipped]
    assert sum(rid.count("__") == 3 for rid in main) == expected
    # the studies' own runs, by hand: App. D temperature 6 x 3 weight decays, pooling 2, LoRA
    # 3 rates x 3 ranks, bias 3 rates, one point each equal to a main-grid run (1/40 and 0.1,
    # mean, 1e-3 at every rank, 1e-2); App. F 5 models x 4 budgets x (2 + 9 + 6) variants
    assert len(main) - expected == (18 - 1) + (2 - 1) + (9 - 3) + (3 - 1) + 5 * 4 * 17
    ids = [r["run_id"] for r in runs]
    assert len(set(ids)) == len(ids)
    assert "pythia-160m__lora-r128__c9.6e16__s0" in ids
    assert "pythia-1b__freeze-3of8__c3.8e17__s0" in ids
    # small budgets on big models cannot make min_steps and are skipped with a reason
    reasons = {s.run_id: s.reason for s in skipped}
    assert "pythia-2.8b__full__c1.5e15__s0" in reasons
    assert "min_steps" in reasons["pythia-2.8b__full__c1.5e15__s0"]


def test_run_config_carries_method_and_lr(paper: dict) -> None:
    runs = {r["run_id"]: r for r in training_runs(paper)[0]}
    lora = runs["pythia-160m__lora-r128__c9.6e16__s0"]
    assert lora["method"] == "lora" and lora["lora_rank"] == 128 and lora["peak_lr"] == 1e-3
    full = runs["pythia-160m__full__c9.6e16__s0"]
    assert full["peak_lr"] == pytest.approx(6e-5)  # Pythia-160M pre-training peak 6e-4 / 10
    frz = runs["pythia-160m__freeze-2of6__c9.6e16__s0"]
    assert frz["frozen_blocks"] == 4 and frz["freeze_fraction"] == pytest.approx(1 / 3)
    # planned tokens spend the budget exactly under C = 2(N_F + N_B + N_U) D
    p = frz["planned"]
    assert 2 * (p["n_forward"] + p["n_backward"] + p["n_update"]) * p["tokens"] == pytest.approx(9.6e16)


def test_lora_runs_follow_the_authors_alpha_and_plan_with_adapter_flops(paper: dict) -> None:
    runs = [r for r in training_runs(paper)[0] if r["method"] == "lora"]
    # peft's default lora_alpha (the authors' config sets only r and targets), no embedding adapter
    assert runs and all(r["lora_alpha"] == 8.0 and r["lora_embed_in"] is False for r in runs)
    lora = {r["run_id"]: r for r in runs}["pythia-160m__lora-r128__c9.6e16__s0"]
    # hand count, d=768, L=12: N = 85,056,000 (Pythia's card); adapters 12·128·(4d + 2d + 5d + 5d)
    n, adapter = 85_056_000, 12 * 128 * 16 * 768
    p = lora["planned"]
    assert (p["n_total"], p["n_forward"], p["n_backward"], p["n_update"]) == (n, n + adapter, n + adapter, adapter)
    assert p["tokens"] == pytest.approx(9.6e16 / (4 * (n + adapter) + 2 * adapter), rel=1e-12)

    params = copy.deepcopy(paper)
    params["train"]["lora"].update(alpha="rank", embed_in=True)
    runs = [r for r in training_runs(params)[0] if r["method"] == "lora"]
    assert all(r["lora_alpha"] == float(r["lora_rank"]) and r["lora_embed_in"] for r in runs)
    p = {r["run_id"]: r for r in runs}["pythia-160m__lora-r128__c9.6e16__s0"]["planned"]
    assert p["n_update"] == adapter + 128 * 768           # + B (d×r) of the embedding adapter


def test_lora_alpha_must_be_positive_or_rank(paper: dict) -> None:
    params = copy.deepcopy(paper)
    params["train"]["lora"]["alpha"] = "auto"
    with pytest.raises(ValueError, match="train.lora.alpha"):
        training_runs(params)


def test_explicit_fraction_not_whole_blocks_is_skipped(paper: dict) -> None:
    params = copy.deepcopy(paper)
    params["models"] = [dict(params["models"][0], num_layers=6)]
    params["train"]["methods"] = ["freeze"]
    params["train"]["freeze"] = {"fractions": [0.25]}
    params["train"]["studies"] = []
    runs, skipped = training_runs(params)
    assert not runs and all("not a whole number" in s.reason for s in skipped)


def test_format_budget_round_trips() -> None:
    for b in (1.5e15, 6e15, 2.4e16, 9.6e16, 3.8e17, 1.5e18, 2e11):
        assert float(format_budget(b)) == pytest.approx(b)


def test_query_runs_one_factor_at_a_time(paper: dict) -> None:
    runs = query_runs(paper)
    e5 = [r for r in runs if r["model"]["name"] == "multilingual-e5-small"]
    ids = [r["qrun_id"] for r in e5]
    assert ids[0] == "default" and len(ids) == len(set(ids))
    assert "lr-5e-08" not in ids            # the default value collapses onto 'default'
    assert "lr-1e-07" in ids and "freeze-none" in ids and "train_data-arxiv-math" in ids
    default = e5[0]
    assert default["lr"] == 5e-8 and default["batch_size"] == 14 and default["margin"] == 0.1


def test_query_lr_scaling_with_batch(paper: dict) -> None:
    params = copy.deepcopy(paper)
    params["query_tuning"]["defaults"]["lr_scaling"] = "sqrt"
    runs = {r["qrun_id"]: r for r in query_runs(params) if r["model"]["name"] == "e5-small-v2"}
    assert runs["batch_size-56"]["lr_effective"] == pytest.approx(5e-8 * 2)
    params["query_tuning"]["defaults"]["lr_scaling"] = "linear"
    runs = {r["qrun_id"]: r for r in query_runs(params) if r["model"]["name"] == "e5-small-v2"}
    assert runs["batch_size-56"]["lr_effective"] == pytest.approx(5e-8 * 4)


def test_query_batch_sweep_keeps_14000_samples_per_epoch(paper: dict) -> None:
    """Paper 2, Tables 6-8: "14000 samples per epoch" whatever the batch size; Table 9 keeps
    1000 batches instead (``epoch_size: batches``). Hand values: 14000 / B."""
    params = copy.deepcopy(paper)
    params["query_tuning"]["sweeps"] = {"batch_size": [7, 28, 56, 112, 100]}
    runs = {r["batch_size"]: r for r in query_runs(params) if r["model"]["name"] == "e5-small-v2"}
    assert {b: r["batches_per_epoch"] for b, r in runs.items()} == {
        14: 1000, 7: 2000, 28: 500, 56: 250, 112: 125, 100: 140}
    assert runs[56]["qrun_id"] == "batch_size-56"
    params["query_tuning"]["defaults"]["epoch_size"] = "batches"
    runs = query_runs(params)
    assert {r["batches_per_epoch"] for r in runs} == {1000}
    params["query_tuning"]["defaults"]["epoch_size"] = "steps"
    with pytest.raises(ValueError, match="epoch_size: 'steps'"):
        query_runs(params)


def test_variant_models_restrict_a_variant_to_the_named_models(paper: dict) -> None:
    """By hand on the paper grid: LoRA r32 on pythia-160m only, every freeze fraction on
    pythia-410m only (the method key), r8 and the other methods on every model; the tag wins
    over the method. A key that is no method is refused by name."""
    params = copy.deepcopy(paper)
    params["train"]["variant_models"] = {"lora-r32": ["pythia-160m"], "freeze": ["pythia-410m"],
                                         "lora": ["pythia-160m", "pythia-1b"]}
    runs, skipped = training_runs(params)
    every = [r["run_id"] for r in runs] + [s.run_id for s in skipped]
    main = [rid for rid in every if rid.count("__") == 3]
    by_tag: dict[str, set[str]] = {}
    for rid in main:
        model, tag = rid.split("__")[:2]
        by_tag.setdefault(tag, set()).add(model)
    names = {m["name"] for m in paper["models"]}
    assert by_tag["lora-r32"] == {"pythia-160m"}
    assert by_tag["lora-r8"] == {"pythia-160m", "pythia-1b"}
    assert {t for t in by_tag if t.startswith("freeze-")} and \
        all(ms == {"pythia-410m"} for t, ms in by_tag.items() if t.startswith("freeze-"))
    assert by_tag["full"] == names and by_tag["bias"] == names
    # the studies keep their own models: App. F still trains LoRA r32 on its five models
    assert sum("__lora-r32__" in rid and "__appF" in rid for rid in every) == 5 * 4
    # a name not in models is left out; a list naming none of them restricts nothing (a preset
    # that replaces models keeps the variant)
    params["train"]["variant_models"] = {"lora-r32": ["pythia-160m", "tiny-d32-l2"], "bias": ["tiny-d32-l2"]}
    runs, skipped = training_runs(params)
    ids = [r["run_id"] for r in runs] + [s.run_id for s in skipped]
    assert {rid.split("__")[0] for rid in ids if rid.count("__") == 3 and "__lora-r32__" in rid} == {"pythia-160m"}
    assert {rid.split("__")[0] for rid in ids if rid.count("__") == 3 and "__bias__" in rid} == names
    bad = copy.deepcopy(paper)
    bad["train"]["variant_models"] = {"lroa": ["pythia-160m"]}
    with pytest.raises(ValueError, match=r"train.variant_models: \['lroa'\] name no method"):
        training_runs(bad)
