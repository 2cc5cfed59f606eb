"""Progress with ETA: a tqdm bar on a terminal, plain periodic lines elsewhere (SLURM,
log files), both showing count, rate, ETA and the current loss; ``--no-progress`` turns it off."""

from __future__ import annotations

import io
import re

import pytest

from embtune.jobs import progress


@pytest.fixture(autouse=True)
def _enabled(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.delenv("EMBTUNE_PROGRESS_EVERY", raising=False)


def test_terminal_gets_a_tqdm_bar_with_loss_rate_and_eta() -> None:
    out = io.StringIO()
    with progress.Progress(10, "train r1", unit="step", stream=out, tty=True) as bar:
        for i in range(4):
            bar.update(1, loss=1.0 / (i + 1))
        bar.bar.refresh()
        text = out.getvalue()
    assert "\r" in text                                   # redrawn in place
    last = text.split("\r")[-1]
    assert "train r1" in last and "4/10" in last and "step/s" in last
    assert re.search(r"<\d\d:\d\d", last), last            # tqdm's ETA
    assert "loss=0.25" in last


def test_non_tty_gets_plain_periodic_lines() -> None:
    out = io.StringIO()
    with progress.Progress(10, "train r1", unit="step", stream=out, tty=False, every_s=0) as bar:
        for i in range(3):
            bar.update(1, loss=2.0 - i)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 3                                # one per update (every 0 s), the last not repeated
    assert lines[2].startswith("train r1: 3/10 (30%) step, ") and "step/s" in lines[2]
    assert "ETA " in lines[2] and lines[2].endswith("loss 0")


def test_non_tty_lines_are_rate_limited() -> None:
    out = io.StringIO()
    with progress.Progress(1000, "encode", stream=out, tty=False, every_s=3600) as bar:
        for _ in range(1000):
            bar.update(1)
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[-1]]   # only the final line
    assert out.getvalue().startswith("encode: 1000/1000 (100%) it")


def test_no_progress_silences_both(monkeypatch) -> None:
    progress.disable()
    for tty in (True, False):
        out = io.StringIO()
        with progress.Progress(5, "x", stream=out, tty=tty, every_s=0) as bar:
            bar.update(5, loss=1.0)
        assert out.getvalue() == ""


def test_iterate_yields_every_item_once() -> None:
    out = io.StringIO()
    assert list(progress.iterate(range(7), "items", stream=out, tty=False, every_s=0)) == list(range(7))
    assert out.getvalue().splitlines()[-1].startswith("items: 7/7 (100%) it")


@pytest.mark.slow          # a whole (tiny) training run: ~9 s on 2 cores; the formatting is tested above
def test_training_shows_progress_in_a_log(tmp_path, monkeypatch, capfd) -> None:
    """A real (tiny) training run, stderr not a terminal: periodic plain lines with the loss."""
    from helpers_train import make_base_model, make_shards, run_config

    from embtune.train import loop

    monkeypatch.setenv("EMBTUNE_PROGRESS_EVERY", "0")
    base, data = make_base_model(tmp_path), make_shards(tmp_path / "bge", 48, 8, 190, 12)
    res = loop.train_run(run_config(base, data, budget=4e8, min_steps=2), tmp_path / "ck", log_with="none")
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("train tiny__full")]
    assert len(lines) >= res.metrics["steps"]
    assert f"{res.metrics['steps']}/{res.metrics['steps']} (100%) step" in lines[-1] and " loss " in lines[-1]
