"""LR schedules (paper 2, Table 19) per optimizer step and batch-size LR scaling (Tables 6-7).

Each schedule is checked against Table 19's closed form written out here, at every step of a
multi-epoch run, so a schedule that restarts at each epoch (or counts epochs) would fail."""

from __future__ import annotations

import math

import pytest

from embtune.core.optim import SCHEDULERS, epoch_lrs, lr_factor, scaled_lr, scheduled_lr

A0 = 5e-8
B, E = 7, 5            # batches per epoch, max epochs
T = B * E              # Table 19's T on the step clock: the planned number of steps

TABLE_19 = {           # alpha(t) with t the current step, T the total number of steps
    "none": lambda t, total: A0,
    "L": lambda t, total: A0 * (1 - t / total),
    "Q": lambda t, total: A0 * (1 - (t / total) ** 2),
    "E0.95": lambda t, total: 0.95**t * A0,
    "E0.98": lambda t, total: 0.98**t * A0,
}


def _run_lrs(scheduler: str, unit: str) -> list[float]:
    """Every step's rate of a full E-epoch run, epoch lists concatenated in order."""
    return [lr for epoch in range(E) for lr in epoch_lrs(A0, scheduler, unit, epoch, B, E)]


def test_table_19_lists_every_scheduler_we_offer():
    assert set(SCHEDULERS) == set(TABLE_19)


@pytest.mark.parametrize("scheduler", sorted(TABLE_19))
def test_step_clock_matches_table_19_at_every_step(scheduler):
    got = _run_lrs(scheduler, "step")
    assert len(got) == T
    for t, lr in enumerate(got):
        assert lr == pytest.approx(TABLE_19[scheduler](t, T), rel=1e-12, abs=0), (scheduler, t)


def test_step_clock_runs_on_across_epoch_boundaries():
    """The step count does not restart with an epoch: hand values at the 0->1 boundary (t = 6, 7)
    and the last step (t = 34) of a 5 x 7-step run."""
    lrs = {s: _run_lrs(s, "step") for s in SCHEDULERS}
    assert lrs["L"][B - 1] / A0 == pytest.approx(29 / 35, rel=1e-12)
    assert lrs["L"][B] / A0 == pytest.approx(0.8, rel=1e-12)
    assert lrs["Q"][B] / A0 == pytest.approx(0.96, rel=1e-12)
    # 0.95**7 = 0.95**4 * 0.95**3 = 0.81450625 * 0.857375; 0.98**7 = 0.92236816 * 0.941192
    assert lrs["E0.95"][B] / A0 == pytest.approx(0.6983372960937497, rel=1e-12)
    assert lrs["E0.98"][B] / A0 == pytest.approx(0.8681255332467, rel=1e-12)
    assert lrs["L"][T - 1] / A0 == pytest.approx(1 / 35, rel=1e-12)  # never reaches 0 in the run
    for s in ("L", "Q", "E0.95", "E0.98"):                          # strictly decreasing
        assert all(a > b for a, b in zip(lrs[s], lrs[s][1:])), s
    assert all(lr == A0 for lr in lrs["none"])


@pytest.mark.parametrize("scheduler", sorted(TABLE_19))
def test_epoch_clock_is_constant_within_an_epoch(scheduler):
    got = _run_lrs(scheduler, "epoch")
    for step, lr in enumerate(got):
        assert lr == pytest.approx(TABLE_19[scheduler](step // B, E), rel=1e-12, abs=0)


def test_first_step_runs_at_the_initial_rate():
    for s in SCHEDULERS:
        for unit in ("step", "epoch"):
            assert epoch_lrs(A0, s, unit, 0, B, E)[0] == A0


def test_factor_is_capped_past_T():
    assert lr_factor("L", 2 * T, T) == 0.0 and lr_factor("Q", T + 1, T) == 0.0


def test_bad_scheduler_unit_and_args():
    with pytest.raises(ValueError, match="unknown scheduler 'cosine'"):
        scheduled_lr(A0, "cosine", 0, T)
    with pytest.raises(ValueError, match="unknown scheduler_unit 'batch'"):
        epoch_lrs(A0, "L", "batch", 0, B, E)
    with pytest.raises(ValueError, match="t must be >= 0"):
        scheduled_lr(A0, "L", -1, T)
    with pytest.raises(ValueError, match="T >= 1"):
        scheduled_lr(A0, "L", 0, 0)


@pytest.mark.parametrize("batch, linear, sqrt", [
    (7, 2.5e-8, 3.54e-8), (14, 5e-8, 5e-8), (28, 1e-7, 7.07e-8), (56, 2e-7, 1e-7), (112, 4e-7, 1.41e-7)])
def test_lr_scaling_reproduces_tables_6_and_7(batch, linear, sqrt):
    assert scaled_lr(5e-8, batch, "linear") == pytest.approx(linear, rel=1e-9)
    assert scaled_lr(5e-8, batch, "sqrt") == pytest.approx(sqrt, rel=5e-3)  # paper rounds to 3 digits
    assert scaled_lr(5e-8, batch, "none") == 5e-8


def test_sweep_lr_effective_uses_the_same_rule():
    from embtune.plan.config import fill_defaults, load_schema
    from embtune.plan.query_sweep import query_runs

    params = {"query_tuning": {
        "models": [{"name": "m", "source": "local", "id": "x"}],
        "defaults": {"lr": 5e-8, "batch_size": 14, "margin": 0.1, "lr_scaling": "sqrt",
                     "batches_per_epoch": 1000},
        "sweeps": {"batch_size": [7, 56]}}}
    schema = load_schema()   # the schema's defaults, as the workflow's validated params carry them
    runs = {r["batch_size"]: r for r in query_runs(fill_defaults(params, schema, schema))}
    for b, r in runs.items():
        assert r["lr_effective"] == pytest.approx(scaled_lr(5e-8, b, "sqrt"), rel=1e-12)
    assert math.isclose(runs[56]["lr_effective"], 1e-7)
