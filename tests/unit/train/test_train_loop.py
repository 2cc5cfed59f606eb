"""The ``train`` stage: resume equals an uninterrupted run, outputs, skipped runs, bad losses,
the learning-rate schedule and the step planner."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers_train import one_thread, run_config, run_json, with_train

from embtune.core.optim import lr_multiplier, warmup_steps
from embtune.models.flops import ParamCounts
from embtune.runconfig import RunConfig
from embtune.stages import train as train_stage
from embtune.train import loop

_one_thread = pytest.fixture(autouse=True)(one_thread)


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.slow
@pytest.mark.parametrize("method,extra", [("full", {}), ("lora", {"lora_dropout": 0.1})])
def test_resume_matches_uninterrupted(tmp_path, fixture_dirs, method, extra) -> None:
    base, data = fixture_dirs
    run = RunConfig.from_dict({**run_json(base, data, method, budget=1.0e9), **extra})
    whole = loop.train_run(run, tmp_path / "a")
    part = loop.train_run(run, tmp_path / "b", stop_after_steps=5)
    assert part.status == "preempted" and (tmp_path / "b" / loop.STATE_FILE).exists()
    rest = loop.train_run(run, tmp_path / "b")
    assert whole.status == rest.status == "ok" and whole.metrics["steps"] >= 10
    assert [r["step"] for r in rest.curve] == list(range(1, whole.metrics["steps"] + 1))
    for key in ("flops", "tokens", "steps"):
        assert rest.metrics[key] == whole.metrics[key]
    assert rest.metrics["final_train_loss"] == pytest.approx(whole.metrics["final_train_loss"], rel=1e-6)
    assert rest.metrics["val_loss"] == pytest.approx(whole.metrics["val_loss"], rel=1e-6)
    a, b = _params(whole.model), _params(rest.model)
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6


def test_sigterm_checkpoints_and_stops(tmp_path, fixture_dirs) -> None:
    base, data = fixture_dirs
    stop = loop.StopFlag()
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        stop.install()
        signal.raise_signal(signal.SIGTERM)      # arrives before step 1: stop after that step
        res = loop.train_run(run_config(base, data, "full", budget=1.5e9), tmp_path / "ck", stop=stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    assert res.status == "preempted" and res.metrics["steps"] == 1
    assert (tmp_path / "ck" / loop.STATE_FILE).exists()


@pytest.mark.slow
def test_cli_outputs_after_preemption_and_resume(tmp_path, fixture_dirs) -> None:
    base, data = fixture_dirs
    run = run_json(base, data, "lora", budget=1.0e9)
    args = ["--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
            "--checkpoint-dir", str(tmp_path / "ck")]
    assert train_stage.main(args + ["--stop-after-steps", "3"]) == train_stage.EXIT_PREEMPTED
    assert not (tmp_path / "out" / "metrics.json").exists()
    assert train_stage.main(args) == 0
    out = tmp_path / "out"
    assert not (tmp_path / "ck").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "ok" and metrics["method"] == "lora"
    for key in ("final_train_loss", "val_loss", "flops", "tokens", "steps", "epochs", "n_total", "n_forward",
                "n_backward", "n_update", "trainable_fraction", "peak_lr", "wall_seconds",
                "throughput_tokens_per_s"):
        assert metrics[key] is not None, key
    # a CPU has no peak FLOP/s on record: both MFUs are null, with the reason, never a guess
    assert metrics["mfu_model"] is None and metrics["mfu_hardware"] is None and "cpu" in metrics["mfu_reason"]
    assert metrics["hardware_flops_per_token"] >= metrics["model_flops_per_token"] == 2 * (
        metrics["n_forward"] + metrics["n_backward"] + metrics["n_update"])
    curve = (out / "curve.csv").read_text().splitlines()
    assert curve[0] == "step,loss,lr,tokens,flops" and len(curve) == metrics["steps"] + 1
    assert int(curve[-1].split(",")[-1]) == metrics["flops"]
    adapter = json.loads((out / "trained" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(base)
    assert json.loads((out / "trained" / "embedding_config.json").read_text()) == {"pooling": "mean", "max_length": 12}
    assert (out / "trained" / "tokenizer.json").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run"]["run_id"] == run["run_id"] and "packages" in manifest


def test_full_model_saved_loads_back(tmp_path, fixture_dirs) -> None:
    from transformers import AutoModel

    base, data = fixture_dirs
    run = run_config(base, data, "bias", budget=1.0e9)
    res = loop.train_run(run, tmp_path / "ck")
    assert res.status == "ok"
    train_stage.write_outputs(tmp_path / "out", res, run)
    loaded = AutoModel.from_pretrained(tmp_path / "out" / "trained")
    ref = dict(res.model.named_parameters())
    for n, p in loaded.named_parameters():
        assert torch.equal(p, ref[n].detach()), n


@pytest.mark.parametrize("budget,max_epochs,needle", [(1e7, 3.0, "min_steps"), (1e13, 1.0, "max_epochs")])
def test_infeasible_run_is_skipped(tmp_path, fixture_dirs, budget, max_epochs, needle) -> None:
    base, data = fixture_dirs
    run = run_json(base, data, "full", budget=budget, max_epochs=max_epochs)
    rc = train_stage.main(["--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
                    "--checkpoint-dir", str(tmp_path / "ck")])
    assert rc == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["status"] == "skipped" and needle in metrics["skip_reason"]
    assert (tmp_path / "out" / "trained" / "README.txt").read_text().startswith("skipped:")
    assert (tmp_path / "out" / "curve.csv").read_text() == "step,loss,lr,tokens,flops\n"


def test_non_finite_loss_is_a_clear_error(tmp_path, fixture_dirs) -> None:
    base, data = fixture_dirs
    # temperature 0 is refused where a run config is read (embtune.core.ranges); past that check the
    # loop still stops on the non-finite loss it gives
    run = with_train(run_config(base, data, "full", budget=1.5e9), temperature=0.0)
    with pytest.raises(FloatingPointError, match="loss is"):
        loop.train_run(run, tmp_path / "ck")


def _closed_form(t: float, total: int, w: int, floor: float) -> float:
    """Paper 1's schedule written out (docs/fidelity.md#P1-LR-SCHEDULE): linear 0 -> 1 over
    [0, W], then floor + (1 - floor)/2 (1 + cos(pi (t - W)/(T - W))) down to ``floor`` at T."""
    if t <= w:
        return t / w
    return floor + (1 - floor) / 2 * (1 + np.cos(np.pi * (t - w) / (total - w)))


@pytest.mark.parametrize("floor", [0.0, 0.1])
def test_schedule_is_the_closed_form_at_mid_step(floor: float) -> None:
    total = 50
    w = warmup_steps(total, 0.1)
    lrs = [lr_multiplier(s, total, 0.1, floor) for s in range(total)]
    assert w == 5
    # hand values: update 0 runs at t = 0.5 -> 0.5/5; update 4 at t = 4.5 -> 0.9
    assert lrs[0] == pytest.approx(0.1, abs=1e-15) and lrs[4] == pytest.approx(0.9, abs=1e-15)
    # the middle of the decay (t = 27.5 = W + (T - W)/2) is exactly halfway between 1 and floor
    assert lr_multiplier(27, total, 0.1, floor) == pytest.approx((1 + floor) / 2, abs=1e-15)
    assert lrs == pytest.approx([_closed_form(k + 0.5, total, w, floor) for k in range(total)], abs=1e-15)
    assert lrs[0] > 0 and min(lrs[w:]) > floor   # no update runs at LR 0 or the floor, not even the last
    assert lr_multiplier(total, total, 0.1, floor) == pytest.approx(floor)   # s(T)


def test_optimizer_follows_the_schedule_step_by_step() -> None:
    """The LR each AdamW update actually uses, through ``build_optimizer``'s LambdaLR."""
    model = torch.nn.Linear(2, 1)
    run = with_train(run_config(Path("base"), Path("data"), peak_lr=3e-4), weight_decay=0.1,
                     warmup_fraction=0.25, final_lr_fraction=0.0)
    opt, sched = loop.build_optimizer(model, run, 12)
    used = []
    for _ in range(12):
        used.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    expected = [3e-4 * _closed_form(k + 0.5, 12, 3, 0.0) for k in range(12)]
    assert used == pytest.approx(expected, rel=1e-12)
    assert used[0] == pytest.approx(3e-4 / 6) and used[-1] == pytest.approx(3e-4 * (1 + np.cos(np.pi * 8.5 / 9)) / 2)


def test_plan_stops_before_budget_and_skips() -> None:
    counts = ParamCounts(10, 10, 10, 10)                     # 60 FLOP per token
    lengths = np.full(20, 5)                                 # batches of 4 pairs: 20 tokens, 1200 FLOP
    plan = loop.plan_steps(lengths, 4, 0, counts, budget=1200 * 7 + 1199, max_epochs=2.0, min_steps=2)
    assert plan.steps == 7 and plan.skip_reason is None and sum(plan.tokens) == 140
    assert sorted(np.concatenate(plan.batches[:5]).tolist()) == list(range(20))   # epoch 1 = permutation
    assert "max_epochs" in loop.plan_steps(lengths, 4, 0, counts, 1200 * 11, 2.0, 2).skip_reason
    assert loop.plan_steps(lengths, 4, 0, counts, 1200 * 10, 2.0, 2).skip_reason is None
    assert "min_steps" in loop.plan_steps(lengths, 4, 0, counts, 1200, 2.0, 2).skip_reason


@pytest.mark.slow
@pytest.mark.parametrize("method", ["freeze", "lora"])
def test_gradient_checkpointing_changes_nothing(tmp_path, fixture_dirs, method) -> None:
    """Checkpointing recomputes activations; with frozen blocks or peft the losses must not change."""
    base, data = fixture_dirs
    plain = loop.train_run(run_config(base, data, method, budget=8e8), tmp_path / "a")
    ckpt = loop.train_run(run_config(base, data, method, budget=8e8, gradient_checkpointing=True), tmp_path / "b")
    assert plain.status == ckpt.status == "ok"
    assert [r["loss"] for r in ckpt.curve] == pytest.approx([r["loss"] for r in plain.curve], rel=1e-6)


@pytest.mark.slow
def test_logit_scale_form_reaches_the_loss(tmp_path, fixture_dirs) -> None:
    """cos*exp(tau) at tau = ln 20 is the same run as cos/tau at tau = 1/20; another scale is not
    (docs/fidelity.md#P1-LOGIT-SCALE)."""
    base, data = fixture_dirs
    curves = {}
    for name, temperature, form in (("inverse", 0.05, "inverse"), ("exp", float(np.log(20.0)), "exp"),
                                    ("other", 0.5, "inverse")):
        run = run_config(base, data, "full", budget=1.5e9, temperature=temperature, logit_scale=form)
        res = loop.train_run(run, tmp_path / name)
        curves[name] = [r["loss"] for r in res.curve]
    assert len(curves["inverse"]) >= 3
    assert curves["exp"] == pytest.approx(curves["inverse"], rel=1e-5)
    assert curves["other"][0] != pytest.approx(curves["inverse"][0], rel=1e-3)
