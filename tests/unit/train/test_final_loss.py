"""The fitted loss never averages warm-up steps (docs/fidelity.md#P1-FINAL-LOSS).

Hand counts: a run of T steps warms up for W = round(0.1·T) updates (updates 1..W, 1-based). The
window is n = max(1, min(20, ceil(0.05·T), T − W)):

* T = 12: W = round(1.2) = 1 (update 1 is warm-up); ceil(0.6) = 1, so n = 1: update 12 only.
  With the fraction at 1 (the old "last 20"): min(20, 12, 11) = 11, updates 2..12, where the old
  window (the last 20 of 12 = all 12) contained warm-up update 1.
* T = 40: W = 4, ceil(2.0) = 2 -> updates 39, 40.  T = 400: W = 40, ceil(20) = 20 -> the last 20.
* T = 1: W = round(0.1) = 0 -> n = 1.  T = 5 with warm-up fraction 1: T − W = 0 -> n = 1 (the last).
"""

from __future__ import annotations

import math

import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_config, with_train

from embtune.train.final_loss import final_loss, final_window

_one_thread = pytest.fixture(autouse=True)(one_thread)


@pytest.mark.parametrize("steps,max_window,fraction,warmup,want", [
    (12, 20, 0.05, 0.1, 1), (12, 20, 1.0, 0.1, 11), (40, 20, 0.05, 0.1, 2), (400, 20, 0.05, 0.1, 20),
    (1, 20, 0.05, 0.1, 1), (5, 20, 1.0, 1.0, 1), (0, 20, 0.05, 0.1, 0)])
def test_window_hand_counts(steps, max_window, fraction, warmup, want) -> None:
    assert final_window(steps, max_window, fraction, warmup) == want


def test_final_loss_is_the_mean_of_the_window() -> None:
    losses = [9.0] + [float(k) for k in range(11)]        # warm-up update 1 is the outlier 9.0
    assert final_loss(losses, 20, 1.0, 0.1) == (sum(range(11)) / 11, 11)
    assert final_loss(losses, 20, 0.05, 0.1) == (10.0, 1)
    assert math.isnan(final_loss([], 20, 0.05, 0.1)[0])
    with pytest.raises(ValueError):
        final_window(10, 20, 0.0, 0.1)


def test_a_12_step_run_fits_no_warmup_step(tmp_path) -> None:
    """A real 12-step training run: its final_train_loss is the last update's loss (default
    fraction), and with the fraction at 1 the mean of updates 2..12, never update 1."""
    from embtune.train import loop

    base, data = make_base_model(tmp_path), make_shards(tmp_path / "bge", 64, 10, 190, 12)
    # 8.2e8 FLOP: the 13th update of this fixture would spend 8.56e8 (measured), so 12 run
    run = with_train(run_config(base, data, "full", budget=8.2e8), final_loss_window=20,
                     final_loss_fraction=0.05)
    res = loop.train_run(run, tmp_path / "a")
    losses = [r["loss"] for r in res.curve]
    assert res.metrics["steps"] == len(losses) == 12
    assert res.metrics["final_loss_steps"] == 1
    assert res.metrics["final_train_loss"] == pytest.approx(losses[11], rel=1e-12)
    assert res.metrics["val_loss"] is not None and math.isfinite(res.metrics["val_loss"])
    res = loop.train_run(with_train(run, final_loss_fraction=1.0), tmp_path / "b")
    losses = [r["loss"] for r in res.curve]
    assert res.metrics["final_loss_steps"] == 11
    assert res.metrics["final_train_loss"] == pytest.approx(sum(losses[1:]) / 11, rel=1e-12)
    assert res.metrics["final_train_loss"] != pytest.approx(sum(losses) / 12, rel=1e-9)
