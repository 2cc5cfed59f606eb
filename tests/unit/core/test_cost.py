"""The study's cost before it runs (embtune.plan.cost, embtune plan) and after (runs table, report).

References are written here: FLOPs and GPU-hours of a tiny grid counted by hand, the executed
FLOPs of real training steps counted by PyTorch's own FLOP counter, the cap's order by hand."""

from __future__ import annotations

import csv
import json
import types
from pathlib import Path

import polars as pl
import pytest

from embtune.models.flops import ParamCounts
from embtune.plan import tables as plan
from embtune.plan.config import load_params
from embtune.plan.cost import CostError, flops_per_second, hardware_per_token, trim_to_cap
from embtune.plan.sweep import training_runs
from embtune.plots.report import cost_markdown
from embtune.runconfig import RunConfig
from embtune.scaling.runs_table import build_table, collect
from embtune.stages import plan as plan_stage

REPO = Path(__file__).resolve().parents[3]
FPS = 1e12                       # hardware FLOP/s per GPU used throughout (hand numbers below)

# tiny-d64-l2 (GPT-NeoX, MLP 4d), counted by hand: a block has 2 LayerNorms (4d), QKV (3d² + 3d),
# attention output (d² + d), MLP (4d² + 4d + 4d² + d): 12d² + 13d = 49,152 + 832 = 49,984;
# two blocks + the final LayerNorm (2d = 128): N = 100,096.
N = 100_096
# bias-only updates: per block QKV 3d, attn-out d, MLP 4d + d, LayerNorms 2d = 11d = 704; x2 + final LN bias 64
N_BIAS = 1_472


def tiny_params(tmp_path: Path, **train: object) -> dict:
    preset = tmp_path / "tiny.yaml"
    preset.write_text(json.dumps({
        "paths": {"raw": "data/raw", "processed": str(tmp_path / "p"), "results": str(tmp_path / "r")},
        "models": [{"name": "tiny-d64-l2", "source": "tiny", "hidden_size": 64, "num_layers": 2,
                    "pretrain_peak_lr": 1e-3}],
        "train": {"methods": ["full", "bias"], "budgets": [1e12, 4e12, 1.6e13], "seeds": [0],
                  "batch_size": 8, "gradcache_chunk": 4, "gradient_checkpointing": True,
                  "min_steps": 1, "tokens_per_pair_estimate": 40, "studies": [], **train}}))
    return load_params([REPO / "params.yaml", preset])


# per token, by hand (C = 2(N_F + N_B + N_U); GradCache two-pass: + 2 N_F; checkpointing: + 2/3 · 2 N_B)
C_FULL = 6 * N
H_FULL = 6 * N + 2 * N + (2 / 3) * 2 * N
C_BIAS = 2 * N + 2 * N + 2 * N_BIAS
H_BIAS = C_BIAS + 2 * N + (2 / 3) * 2 * N


def hand_hours(budget: float, method: str) -> float:
    """A planned run spends its budget in paper FLOPs; hardware = budget · H/C; hours at FPS."""
    ratio = H_FULL / C_FULL if method == "full" else H_BIAS / C_BIAS
    return budget * ratio / FPS / 3600


def test_plan_cost_of_a_tiny_grid_matches_hand_count(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    tiny_params(tmp_path)                       # writes tiny.yaml, read below
    out = tmp_path / "cost.csv"
    files = [str(REPO / "params.yaml"), str(tmp_path / "tiny.yaml")]
    assert plan_stage.main([*files, "--flops-per-second", str(FPS), "--out-cost", str(out)]) == 0
    cost = {r["run_id"]: r for r in csv.DictReader(out.open())}
    assert len(cost) == 6
    for row in cost.values():
        budget, method = float(row["budget"]), row["method"]
        assert float(row["paper_flops"]) == pytest.approx(budget, rel=1e-12)
        assert float(row["hardware_flops"]) == pytest.approx(budget * (H_FULL / C_FULL if method == "full"
                                                                       else H_BIAS / C_BIAS), rel=1e-12)
        assert float(row["gpu_hours"]) == pytest.approx(hand_hours(budget, method), rel=1e-12)
        assert row["two_pass_gradcache"] == "true" and row["status"] == "planned"
    total = sum(hand_hours(b, m) for b in (1e12, 4e12, 1.6e13) for m in ("full", "bias"))
    text = capsys.readouterr().out
    assert "6 training runs planned, 0 skipped, 0 dropped" in text
    total_line = next(line for line in text.splitlines() if line.strip().startswith("total"))
    assert total_line.split()[1] == "6"                                  # runs
    assert float(total_line.split()[2]) == pytest.approx(2 * 2.1e13, rel=1e-3)   # paper FLOPs
    assert float(total_line.split()[-1]) == pytest.approx(total, rel=1e-3)        # GPU-hours
    assert sum(1 for line in text.splitlines() if line.strip().startswith("tiny-d64-l2")) == 2


def test_single_pass_and_no_checkpointing_cost_exactly_the_paper_flops(tmp_path: Path) -> None:
    params = tiny_params(tmp_path, gradcache_chunk=16, gradient_checkpointing=False)   # 2 x 8 <= 16
    _, _, cost = plan.plan_tables(params, FPS)
    assert (cost["hardware_flops"] == cost["paper_flops"]).all()
    assert not cost["two_pass_gradcache"].any()


@pytest.mark.parametrize(("cap_units", "dropped"), [
    # hours in units of 1e12 FLOP-budget-hours: full r_f = H_FULL/C_FULL, bias r_b = H_BIAS/C_BIAS;
    # the grid costs 21 (r_f + r_b); the top budget (16) holds 16 (r_f + r_b), bias first (r_b > r_f).
    (lambda rf, rb: 21 * (rf + rb) + 1, set()),                                 # fits: nothing dropped
    (lambda rf, rb: 21 * (rf + rb) - 16 * rb + 0.01, {("1.6e13", "bias")}),     # dropping top bias suffices
    (lambda rf, rb: 21 * (rf + rb) - 16 * rb - 1, {("1.6e13", "bias"), ("1.6e13", "full")}),
    (lambda rf, rb: 5 * (rf + rb) - 4 * rb + 0.01, {("1.6e13", "bias"), ("1.6e13", "full"), ("4e12", "bias")}),
])
def test_gpu_hour_cap_drops_whole_profiles_from_the_top(tmp_path: Path, cap_units, dropped) -> None:
    rf, rb = H_FULL / C_FULL, H_BIAS / C_BIAS
    cap = cap_units(rf, rb) * 1e12 / FPS / 3600
    params = tiny_params(tmp_path, gpu_hours_cap=cap)
    runs, skipped = training_runs(params, flops_per_second=FPS)
    got = {(r.run_id.split("__")[2][1:], r.run_id.split("__")[1]) for r in skipped}
    assert got == dropped
    assert all(s.status == "dropped" and "train.gpu_hours_cap" in s.reason for s in skipped)
    assert len(runs) == 6 - len(dropped)
    assert sum(hand_hours(r["budget"], r["method"]) for r in runs) <= cap
    planned, skipped_df, cost = plan.plan_tables(params, FPS)       # the plan agrees with the Snakefile's RUNS
    assert set(planned["run_id"]) == {r["run_id"] for r in runs}
    assert set(skipped_df.filter(pl.col("status") == "dropped")["run_id"]) == {s.run_id for s in skipped}
    assert set(cost.filter(pl.col("status") == "dropped")["run_id"]) == {s.run_id for s in skipped}


def test_dropped_runs_are_missing_in_the_runs_table_and_the_report(tmp_path: Path) -> None:
    rf, rb = H_FULL / C_FULL, H_BIAS / C_BIAS
    params = tiny_params(tmp_path, gpu_hours_cap=(21 * (rf + rb) - 16 * rb + 0.01) * 1e12 / FPS / 3600)
    files = [str(REPO / "params.yaml"), str(tmp_path / "tiny.yaml")]
    paths = {k: tmp_path / f"{k}.csv" for k in ("runs", "skipped", "cost")}
    assert plan_stage.main([*files, "--flops-per-second", str(FPS), "--out-runs", str(paths["runs"]),
                      "--out-skipped", str(paths["skipped"]), "--out-cost", str(paths["cost"])]) == 0
    from embtune.scaling.runs_table import read_skipped_csv

    skipped = read_skipped_csv(paths["skipped"])
    table = build_table(collect(None, skipped))
    assert table["status"].to_list() == ["dropped"]
    assert table["budget"].to_list() == [1.6e13] and table["method"].to_list() == ["bias"]
    lines = cost_markdown(table, pl.read_csv(paths["cost"]))
    assert any("Dropped by `train.gpu_hours_cap`: 1 runs" in line for line in lines)
    assert params["train"]["gpu_hours_cap"] > 0


def test_measured_time_and_the_estimate_meet_in_the_report(tmp_path: Path) -> None:
    """A finished run's metrics.json → device_seconds and hardware FLOPs in the runs table → the
    report's measured/estimated ratio and achieved throughput, checked by hand."""
    params = tiny_params(tmp_path)
    runs, _ = training_runs(params)
    run = next(r for r in runs if r["method"] == "full" and r["budget"] == 1e12)
    tokens = 1_000_000
    metrics = {"run_id": run["run_id"], "method": "full", "status": "ok", "n_total": N, "n_forward": N,
               "n_backward": N, "n_update": N, "tokens": tokens, "flops": C_FULL * tokens, "steps": 10,
               "wall_seconds": 0.5, "world_size": 2, "device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3"}
    d = tmp_path / "runs" / run["run_id"]
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps(metrics))
    (d / "manifest.json").write_text(json.dumps({"run": run}))
    table = build_table(collect(tmp_path / "runs", []))
    row = table.row(0, named=True)
    # 2 processes of batch 4 each: 2 x 4 = 8 > chunk 4 -> two passes; checkpointing on
    assert row["hardware_flops"] == pytest.approx(H_FULL * tokens, rel=1e-12)
    assert row["device_seconds"] == 1.0 and row["device"] == "NVIDIA H100 80GB HBM3"
    _, _, cost = plan.plan_tables(params, FPS)
    text = "\n".join(cost_markdown(table, cost))
    est_h = hand_hours(1e12, "full")
    line = next(x for x in text.splitlines() if x.startswith("| full |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1] == "1"
    assert float(cells[2]) == pytest.approx(est_h, rel=1e-3)
    assert float(cells[3]) == pytest.approx(1 / 3600, rel=1e-3)
    assert float(cells[4]) == pytest.approx((1 / 3600) / est_h, rel=1e-2)
    assert float(cells[5]) == pytest.approx(H_FULL * tokens / 1.0, rel=1e-2)
    assert "NVIDIA H100 80GB HBM3" in text


def test_throughput_is_read_from_one_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "throughput.yaml"
    f.write_text("hardware_flops_per_gpu_second: 2.5e+14\n")
    assert flops_per_second(f, environ={}) == 2.5e14
    assert flops_per_second(f, environ={"EMBTUNE_FLOPS_PER_SECOND": "1e13"}) == 1e13
    assert flops_per_second(environ={}) > 0                       # the shipped profiles/default file
    for bad in ("hardware_flops_per_gpu_second: -1\n", "hardware_flops_per_gpu_second: fast\n", "other: 1\n"):
        f.write_text(bad)
        with pytest.raises(CostError, match="throughput.yaml"):
            flops_per_second(f, environ={})
    with pytest.raises(CostError, match="EMBTUNE_FLOPS_PER_SECOND"):
        flops_per_second(f, environ={"EMBTUNE_FLOPS_PER_SECOND": "0"})
    smk = (REPO / "workflow/rules/resources.smk").read_text()
    assert "flops_per_second()" in smk and "5e13" not in smk


def test_slurm_runtime_request_uses_the_plans_gpu_hours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """resources.smk's train_runtime = the 5-minute lead of the time-limit signal + 1.3 x the hours
    `embtune plan` prices the run at (its hardware FLOPs, counted by hand above, at its size's rate
    on throughput.yaml's MFU curve; 0.1 s for each planned step; 5 min of start-up), times the
    attempt; the job asks SLURM for SIGUSR1 300 s before its limit (a short request: a quarter)."""
    import math

    from embtune.plan import study_cost

    runs, _ = training_runs(tiny_params(tmp_path))
    scope = {"RUNS": {r["run_id"]: r for r in runs}, "config": {}, "WorkflowError": RuntimeError,
             "RUN_CONFIGS": {r["run_id"]: RunConfig.from_dict(r) for r in runs},    # common.smk's typed plan
             "workflow": types.SimpleNamespace(is_main_process=True)}               # the controller's
    exec(compile((REPO / "workflow/rules/resources.smk").read_text(), "resources.smk", "exec"), scope)  # noqa: S102
    big = next(r for r in runs if r["budget"] == 1.6e13 and r["method"] == "bias")
    peak, curve, _ = study_cost.mfu_curve()
    rate = study_cost.flops_per_second_at(N, peak, curve)
    hours = hand_hours(1.6e13, "bias") * FPS / rate + big["planned"]["steps"] * 0.1 / 3600 + 5 / 60
    minutes = 5 + 1.3 * hours * 60
    for attempt in (1, 2):
        assert scope["train_runtime"]({"run": big["run_id"]}, attempt) == math.ceil(minutes) * attempt
        assert scope["train_slurm_extra"]({"run": big["run_id"]}, attempt) == "--signal=USR1@300"
    assert scope["signal_option"](1) == "--signal=USR1@15" and scope["signal_option"](20) == "--signal=USR1@300"


def test_cap_trimming_needs_no_runs_when_the_grid_fits() -> None:
    assert trim_to_cap([], 1.0, FPS) == ([], [])


# --------------------------------------------------------------------------- executed FLOPs
def _executed_matmul_flops(method: str, checkpointing: bool, two_pass: bool, d: int, layers: int,
                           rank: int, tokens_per_seq: int, batch: int) -> float:
    """Linear-layer FLOPs (aten.mm/addmm; attention's bmm excluded) of one real training step,
    counted by torch.utils.flop_counter, per real token."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModel

    from embtune.models.build import tiny_config
    from embtune.models.methods import apply_method
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, enable_checkpointing

    torch.manual_seed(0)
    model = AutoModel.from_config(tiny_config({"hidden_size": d, "num_layers": layers}, 300, 1, 0),
                                  attn_implementation="eager")
    model = apply_method(model, {"method": method, "frozen_blocks": layers - 1, "lora_rank": rank,
                                 "lora_alpha": 8.0})
    if checkpointing:
        enable_checkpointing(model)
    model.train()
    ids = torch.randint(2, 300, (2 * batch, tokens_per_seq))        # no padding: every token is real
    mask = torch.ones_like(ids)
    chunk = batch // 2 if two_pass else 2 * batch
    chunks = [(ids[i:i + chunk], mask[i:i + chunk]) for i in range(0, 2 * batch, chunk)]
    encode = lambda c: model(input_ids=c[0], attention_mask=c[1]).last_hidden_state.mean(1)  # noqa: E731
    with FlopCounterMode(display=False) as counter:
        gradcache_step(encode, chunks, contrastive_loss_fn(0.05), single_pass=not two_pass)
    counts = {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}
    return (counts.get("aten.mm", 0) + counts.get("aten.addmm", 0)) / ids.numel()


@pytest.mark.parametrize("method", ["full", "freeze", "bias", "lora"])
@pytest.mark.parametrize(("checkpointing", "two_pass"), [(False, False), (False, True), (True, False), (True, True)])
def test_hardware_flops_match_torch_flop_counter(method: str, checkpointing: bool, two_pass: bool) -> None:
    """The formula, applied to the matmul weights (counted by hand), against what PyTorch executes.

    Matmul weights of a GPT-NeoX block: QKV 3d², attention output d², MLP 8d² = 12d²; LoRA adds
    r·(in + out) per adapted layer: r·(4d + 2d + 5d + 5d) = 16·r·d. Biases and LayerNorms are
    not matmuls (bias: nothing it updates is a matmul weight)."""
    d, layers, rank = 64, 3, 4
    w = layers * 12 * d * d
    adapters = layers * 16 * rank * d
    counts = {"full": ParamCounts(w, w, w, w), "freeze": ParamCounts(w, w, w // layers, w // layers),
              "bias": ParamCounts(w, w, w, 0), "lora": ParamCounts(w, w + adapters, w + adapters, adapters)}[method]
    predicted = hardware_per_token(counts, method, gradcache_two_pass=two_pass, checkpointing=checkpointing)
    measured = _executed_matmul_flops(method, checkpointing, two_pass, d, layers, rank, tokens_per_seq=12, batch=8)
    loss_matmul = 2 * 8 * 8 * d * 4 / (16 * 12)           # q·pᵀ and its two backward products, per token
    if method == "lora":
        # the paper's N_B includes back-propagation into block 0's input, which autograd skips
        # (documented bound in embtune.plan.cost: at most 2·(7/12)·N_F/L per token)
        gap = predicted - measured
        assert 0 < gap <= 2 * (7 / 12) * (w + adapters) / layers + loss_matmul
    else:
        assert measured == pytest.approx(predicted, abs=loss_matmul + 1)


def test_checkpointing_leaves_gradients_unchanged() -> None:
    """enable_checkpointing drops transformers' input-grad hook: same gradients, bitwise, for every method."""
    import torch
    from transformers import AutoModel

    from embtune.models.build import tiny_config
    from embtune.models.methods import apply_method
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, enable_checkpointing

    def grads(method: str, checkpointing: bool) -> dict[str, torch.Tensor]:
        torch.manual_seed(0)
        model = AutoModel.from_config(tiny_config({"hidden_size": 64, "num_layers": 3}, 300, 1, 0))
        model = apply_method(model, {"method": method, "frozen_blocks": 2, "lora_rank": 4, "lora_alpha": 8.0})
        if method == "lora":                                 # non-zero B so every adapter gets a gradient
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    torch.nn.init.normal_(p, std=0.02)
        if checkpointing:
            enable_checkpointing(model)
        model.train()
        gen = torch.Generator().manual_seed(1)
        ids = torch.randint(2, 300, (16, 10), generator=gen)
        mask = torch.ones_like(ids)
        mask[::3, 7:] = 0
        chunks = [(ids[i:i + 4], mask[i:i + 4]) for i in range(0, 16, 4)]
        encode = lambda c: model(input_ids=c[0], attention_mask=c[1]).last_hidden_state.mean(1)  # noqa: E731
        gradcache_step(encode, chunks, contrastive_loss_fn(0.05))
        return {n: p.grad for n, p in model.named_parameters() if p.requires_grad}

    for method in ("full", "freeze", "bias", "lora"):
        plain, ckpt = grads(method, False), grads(method, True)
        assert plain.keys() == ckpt.keys()
        for name in plain:
            assert ckpt[name] is not None and bool(ckpt[name].abs().sum() > 0), (method, name)
            assert torch.equal(plain[name], ckpt[name]), (method, name)
