"""Scaling-law fitting: parameter recovery from known laws, held-out error within the noise,
bootstrap coverage, graceful skips, and the runs-table / fit-scaling stages end to end."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from embtune.io import read_json, write_parquet
from embtune.scaling import fit_cli, runs_table
from embtune.scaling.fit import fit_law
from embtune.scaling.fit_cli import fit_all, fit_method_laws
from embtune.scaling.laws import CHINCHILLA, MODIFIED, make_features
from embtune.scaling.synthetic import PYTHIA, TRUE_PARAMS, synthetic_runs

NOISE = 0.01


def grid(with_s: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """8 model sizes × 6 budgets (× 4 trainable fractions), D = C / 6N as in an IsoFLOP grid."""
    rows = [(n, c / (6 * n), s) for n in np.geomspace(1e6, 3e9, 8) for c in np.geomspace(1e15, 1e18, 6)
            for s in ((1.0, 0.5, 0.1, 0.01) if with_s else (1.0,))]
    return tuple(np.array(col) for col in zip(*rows))  # type: ignore[return-value]


def noisy(law, params, N, D, S, seed=0):
    rng = np.random.default_rng(seed)
    return law.loss(params, N, D, S) * np.exp(rng.normal(0, NOISE, len(N)))


def test_chinchilla_recovers_known_parameters_and_predicts_held_out_model():
    true = {"E": 0.3, "A": 60.0, "B": 400.0, "alpha": 0.3, "beta": 0.35}
    N, D, S = grid(False)
    loss = noisy(CHINCHILLA, true, N, D, S)
    fit = fit_law(CHINCHILLA, N, D, S, loss, holdout=N == N.max(), n_bootstrap=40)
    p = fit["params"]
    assert fit["converged"] and fit["grad_norm"] < 1e-3
    assert p["alpha"] == pytest.approx(true["alpha"], abs=0.03)
    assert p["beta"] == pytest.approx(true["beta"], abs=0.02)
    assert p["E"] == pytest.approx(true["E"], abs=0.05)
    assert fit["holdout"]["rmse_log"] < 2 * NOISE          # held-out error within the noise
    lo, hi = fit["bootstrap"]["ci95"]["beta"]
    assert lo <= true["beta"] <= hi


def test_modified_law_recovers_known_parameters():
    true = {"E": 0.15, "a_d": -2.0, "b_d": 80.0, "alpha": 0.3, "a_s": 300.0, "b_s": 1.5,
            "c_s": 200.0, "beta": 0.35}
    N, D, S = grid(True)
    loss = noisy(MODIFIED, true, N, D, S, seed=1)
    fit = fit_law(MODIFIED, N, D, S, loss, holdout=N == N.max())
    p = fit["params"]
    assert fit["converged"]
    for key, tol in (("alpha", 0.03), ("beta", 0.02), ("b_s", 0.1)):
        assert p[key] == pytest.approx(true[key], abs=tol), key
    assert p["a_s"] == pytest.approx(true["a_s"], rel=0.15)
    assert fit["holdout"]["rmse_log"] < 2 * NOISE
    assert fit["train_rmse_log"] < 1.2 * NOISE


def test_modified_law_beats_chinchilla_on_held_out_model_when_s_matters():
    runs = synthetic_runs(models=PYTHIA, budgets=[1.5e15, 6e15, 2.4e16, 9.6e16],
                          methods=("lora",), ranks=[8, 64, 512])
    rows = fit_cli.law_rows(runs, "lora", "final_train_loss")
    out = fit_method_laws(rows, "final_train_loss", 1e-3, 0, "largest_model", 0)
    assert out["holdout_model"] == "pythia-2.8b"
    assert out["comparison"]["better"] == "modified"
    assert out["modified"]["holdout"]["rmse_log"] < 2 * NOISE
    assert out["modified"]["params"]["beta"] == pytest.approx(TRUE_PARAMS["lora"]["beta"], abs=0.03)


def test_unidentified_s_terms_are_pinned_not_fitted():
    N, D, S = grid(False)          # S = 1 everywhere (full fine-tuning)
    loss = noisy(MODIFIED, TRUE_PARAMS["full"], N, D, S)
    fit = fit_law(MODIFIED, N, D, S, loss)
    assert fit["fixed"] == {"a_s": 0.0, "b_s": 1.0}
    assert fit["params"]["a_s"] == 0.0


def test_too_few_rows_is_a_recorded_skip():
    N, D, S = np.array([1e6, 2e6, 4e6]), np.array([1e9, 1e9, 2e9]), np.ones(3)
    out = fit_law(CHINCHILLA, N, D, S, np.array([1.0, 0.9, 0.8]))
    assert "skipped" in out and "training rows" in out["skipped"]


@pytest.mark.parametrize("law", [CHINCHILLA, MODIFIED])
def test_internal_raw_round_trip_and_analytic_gradient(law):
    N, D, S = grid(True)
    x = make_features(N, D, S)
    raw = TRUE_PARAMS["lora"] if law is MODIFIED else {"E": 0.3, "A": 60.0, "B": 400.0, "alpha": 0.3, "beta": 0.35}
    theta = law.from_raw(raw, x)
    assert law.to_raw(theta, x) == pytest.approx(raw, rel=1e-10)
    np.testing.assert_allclose(np.exp(law.log_predict(theta, x)), law.loss(raw, N, D, S), rtol=1e-10)
    _, jac = law.log_and_jacobian(theta, x)
    for i in range(len(theta)):
        h = 1e-6
        up, dn = theta.copy(), theta.copy()
        up[i] += h
        dn[i] -= h
        fd = (law.log_predict(up, x) - law.log_predict(dn, x)) / (2 * h)
        np.testing.assert_allclose(jac[:, i], fd, rtol=1e-4, atol=1e-7)


def _write_run(d, run_id, metrics, manifest, mteb=None):
    rd = d / run_id
    rd.mkdir(parents=True)
    (rd / "metrics.json").write_text(json.dumps(metrics))
    (rd / "manifest.json").write_text(json.dumps(manifest))
    if mteb is not None:
        (rd / "mteb.json").write_text(json.dumps(mteb))


def test_collect_runs_builds_one_row_per_run_and_keeps_skips(tmp_path):
    runs = tmp_path / "runs"
    model = {"name": "tiny-d128-l2", "hidden_size": 128, "num_layers": 2}
    _write_run(runs, "tiny-d128-l2__lora-r8__c2e11__s0",
               {"status": "ok", "skip_reason": None, "final_train_loss": 1.5, "val_loss": 1.6,
                "flops": 2e11, "tokens": 84000, "steps": 10, "n_total": 396800, "n_forward": 413184,
                "n_backward": 413184, "n_update": 16384,          # no trainable_fraction: S from N_U/N_F
                "method": "lora", "model": "tiny-d128-l2", "budget": 2e11, "peak_lr": 1e-3},
               {"run_config": {"method": "lora", "lora_rank": 8, "lora_alpha": 8.0, "lora_embed_in": False,
                               "model": model, "budget": 2e11, "seed": 0, "train": {"batch_size": 32}}},
               {"status": "ok", "tasks": {"STS15": 0.5, "SciFact": 0.25}, "average": 0.375})
    _write_run(runs, "tiny-d128-l2__freeze-1of2__c2e11__s0",
               {"status": "skipped", "skip_reason": "too few steps", "method": "freeze"},
               {"method": "freeze", "freeze_fraction": 0.5, "frozen_blocks": 1, "model": model,
                "budget": 2e11, "seed": 0})
    skipped = tmp_path / "skipped.csv"
    skipped.write_text("run_id,reason\ntiny-d192-l4__freeze-auto__c6e11__s0,not divisible\n")
    out = tmp_path / "runs.parquet"
    assert runs_table.main(["--runs-dir", str(runs), "--skipped-csv", str(skipped), "--out", str(out)]) == 0
    t = pl.read_parquet(out)
    assert t.height == 3
    ok = t.filter(pl.col("status") == "ok").row(0, named=True)
    assert ok["N"] == 396800 and ok["lora_rank"] == 8 and ok["hidden_size"] == 128
    assert ok["S"] == pytest.approx(16384 / (396800 + 16384)) and ok["C"] == 2e11 and ok["D"] == 84000
    assert ok["lora_alpha"] == 8.0 and ok["lora_embed_in"] is False
    assert ok["mteb_average"] == 0.375 and ok["mteb_STS15"] == 0.5
    assert ok["tokens_per_pair"] == pytest.approx(84000 / (10 * 32))
    plan = t.filter(pl.col("run_id").str.contains("auto")).row(0, named=True)
    assert plan["status"] == "skipped" and plan["model"] == "tiny-d192-l4" and plan["budget"] == 6e11
    frz = t.filter(pl.col("run_id").str.contains("1of2")).row(0, named=True)
    assert frz["skip_reason"] == "too few steps" and frz["freeze_fraction"] == 0.5


def test_fit_scaling_cli_on_demo_sized_table_records_skips(tmp_path):
    demo = synthetic_runs(models=[("tiny-d128-l2", 128, 2), ("tiny-d128-l4", 128, 4), ("tiny-d192-l4", 192, 4)],
                          budgets=[2e11, 6e11], ranks=[8, 32])
    path = tmp_path / "runs.parquet"
    write_parquet(path, demo)
    out = tmp_path / "fits.json"
    assert fit_cli.main(["--runs", str(path), "--bootstrap", "20", "--out", str(out)]) == 0
    fits = read_json(out)
    assert set(fits) >= {"settings", "methods", "laws", "optimal_points", "optimal_n", "frontier", "mteb"}
    assert "skipped" in fits["laws"]["full"]["chinchilla"]            # 4 rows < 5 parameters + 2
    assert fits["frontier"]["lines"]["full"]["n_points"] == 2
    assert "skipped" in fits["frontier"]["lines"]["full"]["bootstrap"]
    assert fits["mteb"]["spearman_rho"] < -0.9


def test_fit_all_full_precision_and_crossovers_present():
    fits = fit_all(synthetic_runs(models=PYTHIA[:5], budgets=[1.5e15, 6e15, 2.4e16],
                                  methods=("full", "bias"), ranks=[8]), n_boot=10)
    line = fits["frontier"]["lines"]["full"]
    assert isinstance(line["slope"], float) and len(repr(line["slope"])) > 8
    assert fits["frontier"]["crossovers"][0]["methods"] == ["bias", "full"]


def test_parallel_fit_equals_serial():
    runs = synthetic_runs(models=PYTHIA[:4], budgets=[1.5e15, 6e15, 2.4e16], methods=("full", "bias"))
    serial = fit_all(runs, n_boot=5)
    parallel = fit_all(runs, n_boot=5, workers=2)
    assert parallel["laws"] == serial["laws"]
