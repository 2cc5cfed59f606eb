"""Per-epoch LR schedules (paper 2, Table 19) and batch-size LR scaling (Tables 6-7)."""

from __future__ import annotations

import math

import pytest

from embtune.train.query_schedules import SCHEDULERS, scaled_lr, scheduled_lr

A0, T = 5e-8, 10


@pytest.mark.parametrize("t", [0, 1, 4, 9, 10])
def test_each_scheduler_matches_its_formula(t):
    assert scheduled_lr(A0, "none", t, T) == A0
    assert scheduled_lr(A0, "L", t, T) == pytest.approx(A0 * (1 - t / T), rel=1e-12, abs=0)
    assert scheduled_lr(A0, "Q", t, T) == pytest.approx(A0 * (1 - (t / T) ** 2), rel=1e-12, abs=0)
    assert scheduled_lr(A0, "E0.95", t, T) == pytest.approx(A0 * 0.95**t, rel=1e-12)
    assert scheduled_lr(A0, "E0.98", t, T) == pytest.approx(A0 * 0.98**t, rel=1e-12)


def test_first_epoch_runs_at_initial_rate_and_orderings():
    assert {s: scheduled_lr(A0, s, 0, T) for s in SCHEDULERS} == {s: A0 for s in SCHEDULERS}
    # Q decays slower than L early on; E0.95 faster than E0.98
    assert scheduled_lr(A0, "Q", 3, T) > scheduled_lr(A0, "L", 3, T)
    assert scheduled_lr(A0, "E0.95", 3, T) < scheduled_lr(A0, "E0.98", 3, T)


def test_bad_scheduler_and_args():
    with pytest.raises(ValueError, match="unknown scheduler"):
        scheduled_lr(A0, "cosine", 0, T)
    with pytest.raises(ValueError):
        scheduled_lr(A0, "L", -1, T)


@pytest.mark.parametrize("batch, linear, sqrt", [
    (7, 2.5e-8, 3.54e-8), (14, 5e-8, 5e-8), (28, 1e-7, 7.07e-8), (56, 2e-7, 1e-7), (112, 4e-7, 1.41e-7)])
def test_lr_scaling_reproduces_tables_6_and_7(batch, linear, sqrt):
    assert scaled_lr(5e-8, batch, "linear") == pytest.approx(linear, rel=1e-9)
    assert scaled_lr(5e-8, batch, "sqrt") == pytest.approx(sqrt, rel=5e-3)  # paper rounds to 3 digits
    assert scaled_lr(5e-8, batch, "none") == 5e-8


def test_sweep_lr_effective_uses_the_same_rule():
    from embtune.sweep import query_runs

    params = {"query_tuning": {
        "models": [{"name": "m", "source": "local", "id": "x"}],
        "defaults": {"lr": 5e-8, "batch_size": 14, "margin": 0.1, "lr_scaling": "sqrt"},
        "sweeps": {"batch_size": [7, 56]}}}
    runs = {r["batch_size"]: r for r in query_runs(params)}
    for b, r in runs.items():
        assert r["lr_effective"] == pytest.approx(scaled_lr(5e-8, b, "sqrt"), rel=1e-12)
    assert math.isclose(runs[56]["lr_effective"], 1e-7)
