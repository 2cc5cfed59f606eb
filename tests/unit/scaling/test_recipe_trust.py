"""The recipe judged by paper 1's own tests (bootstrap agreement of the frontier, the held-out
model, the fitted range), the paper's method set, and law parameters reported honestly:
against brute-force enumeration and data drawn from known laws over several seeds."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from embtune.core.io import read_json, write_json, write_parquet
from embtune.plots.fits_text import fit_trust_lines
from embtune.scaling.fit import FLOOR_FINDING, fit_law
from embtune.scaling.fit_laws import fit_all, fit_method_laws, law_rows
from embtune.scaling.laws import CHINCHILLA, MODIFIED
from embtune.scaling.recipe import make_recipe
from embtune.scaling.recipe_trust import bootstrap_agreement
from embtune.scaling.synthetic import PYTHIA, synthetic_runs
from embtune.stages import recipe as recipe_mod

SUITE = [{"name": f"m{i}", "N": n} for i, n in enumerate([1e6, 4e6, 1.6e7, 6.4e7])]

# A hand-built frontier: three optimal points per method. Which method wins at C = 1e13 and
# which model its optimal-N line lands on depend on which points a resample draws.
POINTS = {
    "full": [{"budget": 1e12, "N": 1e6, "loss": 2.00}, {"budget": 1e13, "N": 4e6, "loss": 1.62},
             {"budget": 1e14, "N": 1.6e7, "loss": 1.40}],
    "lora": [{"budget": 1e12, "N": 4e6, "loss": 2.10}, {"budget": 1e13, "N": 4e6, "loss": 1.60},
             {"budget": 1e14, "N": 6.4e7, "loss": 1.30}],
}


def brute_force_agreement(points, budget, chosen):
    """Exact probability, over every equally likely pair of resamples (3³ × 3³) in which every
    method draws >= 2 budgets (else it has no line and the pair is left out), that the lowest
    predicted loss at ``budget`` and the suite model nearest its optimal-N line are ``chosen``
    (np.polyfit per resample)."""
    names = sorted(points)
    per_method = []
    for m in names:
        pts = points[m]
        outcomes = []
        for draw in itertools.product(range(len(pts)), repeat=len(pts)):
            c = np.log([pts[i]["budget"] for i in draw])
            if np.ptp(c) == 0:
                outcomes.append(None)
                continue
            a, b = np.polyfit(c, np.log([pts[i]["loss"] for i in draw]), 1)
            an, bn = np.polyfit(c, np.log([pts[i]["N"] for i in draw]), 1)
            outcomes.append((a * math.log(budget) + b, an * math.log(budget) + bn))
        per_method.append(outcomes)
    hits = total = 0
    for combo in itertools.product(*per_method):
        if any(o is None for o in combo):
            continue
        total += 1
        _, ln_n, method = min((o[0], o[1], m) for o, m in zip(combo, names))
        model = min(SUITE, key=lambda s: abs(math.log(s["N"]) - ln_n))["name"]
        hits += (method, model) == chosen
    return hits / total


@pytest.mark.parametrize("chosen", [("lora", "m1"), ("lora", "m2"), ("full", "m1")])
def test_bootstrap_agreement_matches_exhaustive_enumeration(chosen):
    exact = brute_force_agreement(POINTS, 1e13, chosen)
    n = 40000
    got = bootstrap_agreement(POINTS, "loss", ["full", "lora"], SUITE, 1e13, chosen, n, seed=3)
    assert abs(got["fraction"] - exact) < 4 * math.sqrt(exact * (1 - exact) / n) + 1e-9, (got, exact)
    assert 0.0 < exact < 1.0 or chosen == ("full", "m1")


def test_a_clear_cut_frontier_agrees_in_every_resample():
    pts = {"lora": [{"budget": c, "N": 4e6, "loss": 3.0 * c ** -0.05} for c in (1e12, 1e13, 1e14)],
           "full": [{"budget": c, "N": 1e6, "loss": 9.0 * c ** -0.05} for c in (1e12, 1e13, 1e14)]}
    got = bootstrap_agreement(pts, "loss", ["full", "lora"], SUITE, 3e13, ("lora", "m1"), 500, seed=0)
    assert got["fraction"] == 1.0 and got["method_fraction"] == 1.0


def chinchilla_runs(seed, E=0.3, bump=1.0):
    """Full fine-tuning runs whose loss follows one Chinchilla law (S ignored) × 1% lognormal
    noise; ``bump`` multiplies the largest model's losses (a law that cannot predict it)."""
    law = {"full": {"E": E, "a_d": 0.0, "b_d": 40.0, "alpha": 0.3, "a_s": 0.0, "b_s": 1.0, "c_s": 400.0, "beta": 0.3}}
    runs = synthetic_runs(models=PYTHIA[:5], budgets=[1.5e15, 6e15, 2.4e16, 9.6e16], methods=("full",),
                          params=law, seed=seed)
    import polars as pl

    big = runs["N"] == runs["N"].max()
    return runs.with_columns(pl.when(big).then(pl.col("final_train_loss") * bump)
                             .otherwise(pl.col("final_train_loss")).alias("final_train_loss"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holdout_test_passes_on_a_known_law_and_fails_when_the_largest_model_departs(seed):
    runs = chinchilla_runs(seed)
    rec = make_recipe(2e16, fit_all(runs, n_boot=0, seed=seed), runs, n_bootstrap=400)
    held = rec["trust"]["holdout"]
    assert held["holdout_model"] == PYTHIA[4][0] and held["rmse_log"] <= 0.05
    assert rec["method"] == "full" and rec["trust"]["in_fitted_range"]
    assert rec["trust"]["bootstrap_agreement"] == rec["bootstrap_agreement"]["fraction"]
    bad_runs = chinchilla_runs(seed, bump=1.25)        # ln 1.25 = 0.22: far past 0.05
    bad = make_recipe(2e16, fit_all(bad_runs, n_boot=0, seed=seed), bad_runs, n_bootstrap=400)
    assert bad["trust"]["holdout"]["rmse_log"] == pytest.approx(math.log(1.25), abs=0.05)
    assert bad["trustworthy"] is False and any("held-out" in w for w in bad["trust"]["why_not"])
    out = make_recipe(1e19, fit_all(runs, n_boot=0, seed=seed), runs, n_bootstrap=100)
    assert out["trustworthy"] is False and out["trust"]["in_fitted_range"] is False
    assert any("outside the fitted range" in w for w in out["trust"]["why_not"])


def test_no_floor_is_a_finding_not_an_untrustworthy_fit():
    """Loss drawn from E = 0 (no floor) over six noise seeds: E is not identified (its 95%
    interval reaches 0; a 95% interval may miss the truth now and then, so >= 4 of 6) and the fit
    says what that means; α and β stay identified and every fit is trustworthy. From E = 0.5
    E is identified every time."""
    N = np.repeat(np.geomspace(1e6, 3e9, 8), 6)
    D = np.tile(np.geomspace(1e7, 1e10, 6), 8)
    floors = 0
    for seed in range(6):
        noise = np.exp(np.random.default_rng(seed).normal(0, 0.01, len(N)))
        for E in (0.0, 0.5):
            loss = CHINCHILLA.loss({"E": E, "A": 30.0, "B": 200.0, "alpha": 0.3, "beta": 0.3}, N, D) * noise
            fit = fit_law(CHINCHILLA, N, D, np.ones_like(N), loss, n_bootstrap=40, seed=seed)
            assert fit["trustworthy"] and fit["converged"], (seed, E, fit["trust_issues"])
            assert fit["identified"]["alpha"] and fit["identified"]["beta"]
            assert (FLOOR_FINDING in fit["findings"]) is (not fit["identified"]["E"])
            if E:
                assert fit["identified"]["E"], seed
            else:
                floors += not fit["identified"]["E"]
    assert floors >= 4


def test_a_law_with_more_parameters_than_rows_carry_is_not_fitted_and_the_report_says_so():
    runs = synthetic_runs(models=PYTHIA[:3], budgets=[1.5e15, 6e15, 2.4e16, 9.6e16, 3.8e17],
                          methods=("full",))             # 2 fitted sizes x 5 budgets = 10 rows
    out = fit_method_laws(law_rows(runs, "full", "final_train_loss"), "final_train_loss", 1e-3, 0,
                          "largest_model", 0)
    assert out["chinchilla"]["n_train"] == 10           # 5 free parameters: 2 rows each
    assert "more free parameters than the data carry" in out["modified"]["skipped"]   # 6 free
    lines = fit_trust_lines({"laws": {"full": out}})
    (line,) = [x for x in lines if "full / modified" in x]
    assert "not fitted" in line and "more free parameters than the data carry" in line
    assert len(fit_law(MODIFIED, *(np.ones(3),) * 4).get("skipped", "")) > 0


def freeze_best_runs():
    """Freeze tuning with the lowest loss at every budget (its law shifted down by 20%)."""
    from embtune.scaling.synthetic import TRUE_PARAMS

    params = dict(TRUE_PARAMS)
    params["freeze"] = {**TRUE_PARAMS["full"], "E": TRUE_PARAMS["full"]["E"] * 0.5,
                        "b_d": TRUE_PARAMS["full"]["b_d"] * 0.5, "c_s": TRUE_PARAMS["full"]["c_s"] * 0.5}
    return synthetic_runs(models=PYTHIA[:4], budgets=[1.5e15, 6e15, 2.4e16], methods=("full", "lora", "freeze"),
                          settings={"lora": {"ranks": [8]}}, params=params)


def test_recipe_returns_full_or_lora_by_default_and_any_method_as_the_option(tmp_path, capsys):
    runs = freeze_best_runs()
    fits = fit_all(runs, n_boot=0)
    at = 6e15
    losses = {m: math.exp(fits["frontier"]["lines"][m]["slope"] * math.log(at) + fits["frontier"]["lines"][m]["intercept"])
              for m in ("full", "lora", "freeze")}
    assert min(losses, key=losses.get) == "freeze"      # the premise: freeze has the lowest loss
    write_parquet(tmp_path / "runs.parquet", runs)
    write_json(tmp_path / "fits.json", fits)
    base = ["--budget", str(at), "--fits", str(tmp_path / "fits.json"), "--runs", str(tmp_path / "runs.parquet")]
    assert recipe_mod.main([*base, "--out", str(tmp_path / "paper.json")]) == 0
    assert recipe_mod.main([*base, "--method-set", "any", "--out", str(tmp_path / "any.json")]) == 0
    capsys.readouterr()
    paper, anym = read_json(tmp_path / "paper.json"), read_json(tmp_path / "any.json")
    assert paper["method"] == min(("full", "lora"), key=losses.get) and paper["method_set"] == "paper"
    assert paper["methods_considered"] == ["full", "lora"]
    assert anym["method"] == "freeze" and anym["method_set"] == "any"
    assert json.dumps(paper["bootstrap_agreement"])     # recorded, JSON-clean
