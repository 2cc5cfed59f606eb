"""The training loop's callback protocol (embtune.train.callbacks): what the loop relies on,
checked without a model. Every callback sees every step even when an earlier one asks to stop
(the checkpoint callback's all-reduce must run on every rank at every step); a divergence stops
the run before the optimiser step with what the run had done; the checkpoint callback saves on
its period and at a pre-emption, and stops only a run that has steps left."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from embtune.train import callbacks as cb
from embtune.train.failures import EXPLODE_STEPS, Diverged


class Recorder(cb.Callback):
    def __init__(self, name: str, log: list, stop_at: int | None = None) -> None:
        self.name, self.log, self.stop_at = name, log, stop_at

    def on_step(self, prog: cb.Progress, step: cb.StepEnd) -> bool:
        self.log.append((self.name, prog.step))
        return prog.step == self.stop_at

    def on_end(self, prog: cb.Progress, metrics) -> None:
        self.log.append((self.name, "end", metrics is None))


def _step(loss: float = 1.0, tokens: int = 10) -> cb.StepEnd:
    return cb.StepEnd(loss=loss, lr=0.1, seconds=0.5, tokens=tokens)


def test_every_callback_sees_a_step_an_earlier_one_stops_and_the_end() -> None:
    log: list = []
    group = cb.Callbacks([Recorder("a", log, stop_at=2), Recorder("b", log)])
    prog = cb.Progress()
    stops = []
    for _ in range(3):
        prog.advance(_step(), per_token=6)
        stops.append(group.on_step(prog, _step()))
    group.on_end(prog, None)
    assert stops == [False, True, False]
    assert log == [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3),
                   ("a", "end", True), ("b", "end", True)]


def test_progress_counts_tokens_flops_time_and_the_curve() -> None:
    prog = cb.Progress()
    prog.advance(cb.StepEnd(2.0, 0.1, 0.25, 7), per_token=6)
    prog.advance(cb.StepEnd(1.5, 0.2, 0.5, 5), per_token=6)
    assert (prog.step, prog.tokens, prog.flops, prog.wall) == (2, 12, 72, 0.75)
    assert prog.curve[-1] == {"step": 2, "loss": 1.5, "lr": 0.2, "tokens": 12, "flops": 72}


def _run(batch_size: int = 8) -> SimpleNamespace:
    return SimpleNamespace(run_id="r", peak_lr=1e-3, method="full",
                           train=SimpleNamespace(batch_size=batch_size, temperature=0.05),
                           data=SimpleNamespace(train_dir="data/x"))


class _Side:
    def __init__(self, lengths: list[int]) -> None:
        self._lengths = np.asarray(lengths)

    def lengths(self, _context: int, idx: np.ndarray) -> np.ndarray:
        return self._lengths[idx]


def test_divergence_stops_with_the_causes_and_the_partial_record() -> None:
    pairs = SimpleNamespace(context_length=12, side=lambda s: _Side([0, 3, 0, 4] if s == "query" else [2, 2, 0, 2]))
    sched = SimpleNamespace(get_last_lr=lambda: [3e-4])
    check = cb.DivergenceCheck(_run(), sched, "no", pairs)
    prog = cb.Progress()
    prog.advance(_step(loss=2.0), per_token=6)
    check.on_loss(prog, 2.0, np.arange(4))                  # finite and below ln 8 + 3: nothing
    with pytest.raises(Diverged) as err:
        check.on_loss(prog, math.nan, np.arange(4))
    text = str(err.value)
    assert "loss is nan at step 2" in text and "lr 0.0003" in text
    assert "2 empty queries and 1 empty positives" in text and "no mixed precision" in text
    assert err.value.partial["steps"] == 1 and err.value.partial["last_finite_loss"] == 2.0
    # exploding: above ln(8) + 3 for EXPLODE_STEPS steps in a row
    check = cb.DivergenceCheck(_run(), sched, "bf16", pairs)
    for _ in range(EXPLODE_STEPS - 1):
        check.on_loss(prog, 6.0, np.arange(4))
    with pytest.raises(Diverged, match="consecutive steps"):
        check.on_loss(prog, 6.0, np.arange(4))


def test_checkpoints_on_the_period_and_at_a_preemption(monkeypatch, tmp_path) -> None:
    saved: list[int] = []
    monkeypatch.setattr(cb, "save_checkpoint", lambda *a: saved.append(a[-1]["step"]))
    monkeypatch.setattr(cb, "run_fingerprints", lambda as_json: {})     # (checked in test_checkpoint.py)
    acc = SimpleNamespace(num_processes=1, is_main_process=True, wait_for_everyone=lambda: None)
    run = SimpleNamespace(to_dict=lambda: {"run_id": "r"}, train=SimpleNamespace(checkpoint_every_steps=2))
    stop = SimpleNamespace(signum=None)
    ckpt = cb.Checkpointing(tmp_path, run, None, None, None, acc, total=5, stop=stop)
    prog = cb.Progress()
    stops = []
    for step in range(1, 6):
        prog.advance(_step(), per_token=6)
        if step == 3:
            stop.signum = 15                                # SIGTERM during step 3
        stops.append(ckpt.on_step(prog, _step()))
        stop.signum = None
    # step 2: periodic; 3: pre-empted (saved, stops); 4: periodic; 5: the last, never saved here
    assert saved == [2, 3, 4] and stops == [False, False, True, False, False]
    # the test hook: stop after this invocation's 2nd step; at the plan's last step, no stop
    ckpt = cb.Checkpointing(tmp_path, run, None, None, None, acc, total=2, stop_after_steps=2)
    prog, saved[:], stops = cb.Progress(), [], []
    for _ in range(2):
        prog.advance(_step(), per_token=6)
        stops.append(ckpt.on_step(prog, _step()))
    assert saved == [2] and stops == [False, False]
