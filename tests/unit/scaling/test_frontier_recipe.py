"""Frontier lines, exact crossovers, and the recipe on either side of a known crossover."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from embtune.core.io import read_json, write_json, write_parquet
from embtune.models.methods import analytic_counts
from embtune.scaling.frontier import best_method, crossover, crossovers, fit_line, predict_interval
from embtune.scaling.recipe import make_recipe
from embtune.scaling.synthetic import PYTHIA, synthetic_runs
from embtune.stages import recipe as recipe_mod


def test_crossover_of_two_known_lines_is_exact():
    a = {"slope": -0.2, "intercept": 8.0}
    b = {"slope": -0.25, "intercept": 9.0}
    assert crossover(a, b) == pytest.approx(math.exp(20.0), rel=1e-12)   # (9 − 8)/(0.25 − 0.2)
    (c,) = crossovers({"full": a, "lora": b})
    assert c["better_below"] == "full" and c["better_above"] == "lora"
    assert crossover(a, {"slope": -0.2, "intercept": 9.0}) is None       # parallel


def test_papers_rounded_lines_cross_near_2_8e23_not_9e16():
    full, lora = {"slope": -0.21, "intercept": 8.39}, {"slope": -0.22, "intercept": 8.93}
    c = crossover(full, lora)
    assert c == pytest.approx(math.exp(54.0), rel=1e-9) and 2.8e23 < c < 2.9e23
    assert best_method({"full": full, "lora": lora}, 9.06e16)[0] == "full"


def test_fit_line_recovers_a_power_law_and_bootstrap_interval_contains_it():
    c = np.geomspace(1e15, 1e18, 6)
    loss = np.exp(-0.1 * np.log(c) + 4.0) * np.exp(np.random.default_rng(0).normal(0, 0.005, 6))
    line = fit_line(c, loss, n_bootstrap=200, seed=1)
    assert line["slope"] == pytest.approx(-0.1, abs=0.01)
    lo, hi = predict_interval(line, 1e17)
    assert lo < math.exp(-0.1 * math.log(1e17) + 4.0) < hi


CROSS = math.exp(40.0)   # ≈ 2.35e17


def known_fits(metric: str = "final_train_loss") -> dict:
    """full and lora lines crossing at e^40; both fitted on budgets 1e15..1e19."""
    rng = {"x_min": 1e15, "x_max": 1e19, "n_points": 5}
    return {
        "settings": {"loss_column": metric},
        "frontier": {"lines": {"full": {"slope": -0.20, "intercept": 8.0 + 0.0, **rng},
                               "lora": {"slope": -0.25, "intercept": 10.0, **rng},
                               "bias": {"skipped": "needs >= 2 distinct budgets"}}},
        "optimal_n": {"full": {"slope": 0.5, "intercept": math.log(1e8) - 0.5 * math.log(1e17)},
                      "lora": {"slope": 0.5, "intercept": math.log(4e8) - 0.5 * math.log(1e17)}},
    }


@pytest.fixture(scope="module")
def runs():
    return synthetic_runs(models=PYTHIA, budgets=[1e15, 1e16, 1e17, 1e18], methods=("full", "lora"),
                          settings={"lora": {"ranks": [8, 32, 128]}})


def test_recipe_picks_the_method_on_either_side_of_a_known_crossover(runs):
    below = make_recipe(CROSS / 3, known_fits(), runs)
    above = make_recipe(CROSS * 3, known_fits(), runs)
    assert below["method"] == "full" and above["method"] == "lora"
    assert not below["extrapolated"] and not above["extrapolated"]
    assert below["predicted_loss"] == pytest.approx(math.exp(-0.2 * math.log(CROSS / 3) + 8.0), rel=1e-12)


def test_recipe_model_tokens_steps_and_rank(runs):
    rec = make_recipe(CROSS * 3, known_fits(), runs, batch_size=512, tokens_per_pair=100.0)
    n_star = math.exp(0.5 * math.log(CROSS * 3) + math.log(4e8) - 0.5 * math.log(1e17))
    assert rec["optimal_N"] == pytest.approx(n_star)
    suite = {name: (h, layers) for name, h, layers in PYTHIA}
    n_of = {name: analytic_counts(h, nl, "full").n_total for name, (h, nl) in suite.items()}
    nearest = min(n_of, key=lambda m: abs(math.log(n_of[m]) - math.log(n_star)))
    assert rec["model"] == nearest
    rank = rec["hyperparameters"]["lora_rank"]
    assert rank in (8, 32, 128) and rec["hyperparameter_source"]["observed_budget"] == 1e18
    counts = analytic_counts(*suite[nearest], "lora", lora_rank=rank)
    assert rec["tokens"] == pytest.approx(CROSS * 3 / counts.per_token, rel=1e-12)
    assert rec["steps"] == pytest.approx(rec["tokens"] / 100.0 / 512, rel=1e-12)


def test_recipe_prices_the_lora_setting_it_recommends(runs):
    import polars as pl

    with_emb = runs.with_columns(lora_alpha=pl.lit(8.0), lora_embed_in=pl.lit(True))
    rec = make_recipe(CROSS * 3, known_fits(), with_emb)
    assert rec["hyperparameters"]["lora_embed_in"] is True and rec["hyperparameters"]["lora_alpha"] == 8.0
    d, layers = {name: (h, nl) for name, h, nl in PYTHIA}[rec["model"]]
    r = rec["hyperparameters"]["lora_rank"]
    # hand count (MLP 4d): N = L·(12d² + 13d) + 2d; adapters r·16d per block + r·d on the embeddings
    n, adapter = layers * (12 * d * d + 13 * d) + 2 * d, layers * r * 16 * d + r * d
    assert rec["tokens"] == pytest.approx(CROSS * 3 / (2 * (2 * (n + adapter) + adapter)), rel=1e-12)
    assert rec["trainable_fraction"] == pytest.approx(adapter / (n + adapter), rel=1e-12)


def test_recipe_flags_extrapolation(runs):
    rec = make_recipe(1e21, known_fits(), runs)
    assert rec["extrapolated"] is True
    assert any("extrapolation" in w for w in rec["warnings"])


def test_recipe_uses_the_given_suite_and_measured_tokens_per_pair(runs):
    suite = [{"name": "big", "hidden_size": 4096, "num_layers": 32},
             {"name": "small", "hidden_size": 256, "num_layers": 6}]
    rec = make_recipe(1e16, known_fits(), runs, suite=suite)
    assert rec["model"] == "small" and rec["tokens_per_pair"] == pytest.approx(110.0)


def test_recipe_cli_writes_and_prints(tmp_path, runs, capsys):
    write_parquet(tmp_path / "runs.parquet", runs)
    write_json(tmp_path / "fits.json", known_fits())
    out = tmp_path / "recipe.json"
    suite = json.dumps([{"name": n, "hidden_size": h, "num_layers": nl} for n, h, nl in PYTHIA])
    assert recipe_mod.main(["--budget", "3e17", "--fits", str(tmp_path / "fits.json"), "--runs",
                            str(tmp_path / "runs.parquet"), "--suite-json", suite, "--batch-size", "1024",
                            "--out", str(out)]) == 0
    rec = read_json(out)
    assert rec["method"] == "lora" and rec["batch_size"] == 1024
    assert '"method": "lora"' in capsys.readouterr().out


def test_crossover_outside_fitted_range_is_marked():
    a = {"slope": -0.2, "intercept": 8.0, "x_min": 1e15, "x_max": 1e18}
    b = {"slope": -0.25, "intercept": 9.0, "x_min": 1e15, "x_max": 1e18}
    (c,) = crossovers({"full": a, "lora": b})
    assert c["in_fitted_range"] is False            # e^20 ≈ 4.9e8 FLOP
