"""Length-bucketed GradCache chunks give the plain full-batch gradients; the MFU arithmetic by hand.

The gradient reference is written here from scratch: every text embedded alone (no padding, no
chunks, no sorting), mean-pooled by hand, and the symmetric InfoNCE written out with log-softmax,
differentiated by autograd. Nothing of it goes through ``pad``, ``embed``, ``pool`` or the loss
module the training step uses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers_train import one_thread  # noqa: E402  (tests/ is on sys.path via conftest)
from transformers import AutoModel

from embtune.models.build import tiny_config
from embtune.models.flops import ParamCounts
from embtune.train.gradcache import gradcache_step
from embtune.train.loop import contrastive_loss_fn, embed, length_sorted_chunks, make_chunks
from embtune.train.mfu import device_peak, hardware_per_token, run_mfu, utilisation
from embtune.train.pairs import Pairs

_one_thread = pytest.fixture(autouse=True)(one_thread)
TAU = 0.05


def _skewed(n: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    """Most texts short, a few long: the shape that makes batch-order chunks pad the most."""
    rng = np.random.default_rng(seed)
    rows = lambda: [rng.integers(2, 100, size=int(k)).tolist()  # noqa: E731
                    for k in np.clip(rng.lognormal(1.2, 0.7, n).round(), 1, 14)]
    return rows(), rows()


def _reference_grads(model, queries, positives) -> tuple[float, dict[str, torch.Tensor]]:
    def alone(ids: list[int]) -> torch.Tensor:          # one text, no padding: mean of its states
        return model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0)

    q = torch.stack([alone(r) for r in queries])
    p = torch.stack([alone(r) for r in positives])
    s = (q / q.norm(dim=1, keepdim=True)) @ (p / p.norm(dim=1, keepdim=True)).T / TAU
    loss = -(torch.log_softmax(s, 1).diagonal().mean() + torch.log_softmax(s.T, 1).diagonal().mean()) / 2
    loss.backward()
    grads = {n: w.grad.clone() for n, w in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    return loss.item(), grads


@pytest.mark.parametrize("seed", [0, 1])
def test_bucketed_chunks_give_the_plain_unsorted_gradients(seed: int) -> None:
    torch.manual_seed(seed)
    model = AutoModel.from_config(tiny_config({"hidden_size": 64, "num_layers": 2}, 100, 1, 0)).train()
    queries, positives = _skewed(13, seed)
    pairs = Pairs.from_lists(queries, positives, 12)     # context 12 truncates the longest rows
    idx = np.random.default_rng(seed).permutation(13)                     # a shuffled batch, as planned
    perm = lambda rows: [rows[i][:12] for i in idx]  # noqa: E731
    ref_loss, ref = _reference_grads(model, perm(queries), perm(positives))
    assert max(g.abs().max().item() for g in ref.values()) > 1e-3         # not vacuous
    loss_fn = contrastive_loss_fn(TAU)
    encode = lambda c: embed(model, c, "mean")  # noqa: E731
    for multiple in (1, 8):                       # 8: the widths train.compile rounds up to
        chunks, restore = length_sorted_chunks(pairs, idx, 4, 1, multiple)
        loss = gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]))
        got = {n: w.grad.clone() for n, w in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        assert abs(loss.item() - ref_loss) <= 1e-5
        worst = max((got[k] - ref[k]).abs().max().item() for k in ref)
        assert worst <= 1e-5, (multiple, worst)
        assert all(ids.shape[1] % multiple == 0 or ids.shape[1] == 12 for ids, _ in chunks)
    plain = make_chunks(pairs, idx, 4, 1)
    assert sum(ids.numel() for ids, _ in length_sorted_chunks(pairs, idx, 4, 1)[0]) < \
        sum(ids.numel() for ids, _ in plain)      # the point: fewer padded tokens


def test_width_rounding_is_capped_at_the_context() -> None:
    pairs = Pairs.from_lists([[5] * 3, [5] * 9, [5] * 11], [[6] * 2] * 3, 10)
    ids, mask = pairs.query.pad(np.array([0, 1, 2]), 10, 0, multiple=8)
    assert ids.shape == (3, 10) and mask.sum(1).tolist() == [3, 9, 10]   # 16 would exceed context 10
    ids, mask = pairs.query.pad(np.array([0]), 10, 0, multiple=8)
    assert ids.shape == (1, 8) and mask.sum().item() == 3 and (ids[0, 3:] == 0).all()


# --------------------------------------------------------------------------- MFU by hand
def test_mfu_by_hand_pythia_410m_on_an_h200() -> None:
    # Pythia-410M: N = 302,311,424 non-embedding parameters (24 blocks of 12,596,224 + final norm
    # 2,048); full fine-tuning: N_F = N_B = N_U = N, so 6N = 1,813,868,544 FLOP per real token.
    n = 302_311_424
    counts = ParamCounts(n, n, n, n)
    # GradCache's second forward adds 2N; checkpointing re-runs 2/3 of each block's forward (full
    # fine-tuning, embtune.plan.cost): + (2/3)·2N. Hardware per token: 6N + 2N + 4N/3 = 28N/3.
    assert hardware_per_token(counts, "full", gradcache_two_pass=True, checkpointing=True) == pytest.approx(28 * n / 3)
    assert hardware_per_token(counts, "full", gradcache_two_pass=False, checkpointing=False) == 6 * n
    # 80,602 real tokens/s (benchmarks/chunk_sweep_measured.json, chunk 512) on a 989.4 TFLOP/s H200:
    # model: 1,813,868,544 × 80,602 = 1.46201e14 FLOP/s -> 14.777 %
    # hardware, two passes, no checkpointing: 8N × 80,602 = 1.94935e14 -> 19.702 %
    out = run_mfu(counts, "full", tokens=80_602 * 10, seconds=10.0, two_pass=True, checkpointing=False,
                  device_type="cuda", device_name="NVIDIA H200")
    assert out["mfu_model"] == pytest.approx(0.14777, abs=5e-5)
    assert out["mfu_hardware"] == pytest.approx(0.19702, abs=5e-5)
    assert out["model_flops_per_token"] == 1_813_868_544 and out["hardware_flops_per_token"] == 8 * n
    assert out["peak_flops_per_device"] == 989.4e12 and out["mfu_reason"] is None
    # two A100s at 50k tokens/s in all: each device does half: 6N·50e3 / (2 × 312e12) = 14.5342 %
    two = run_mfu(counts, "full", tokens=50_000, seconds=1.0, two_pass=False, checkpointing=False,
                  device_type="cuda", device_name="NVIDIA A100-SXM4-80GB", devices=2)
    assert two["mfu_model"] == pytest.approx(0.145342, abs=5e-6) == two["mfu_hardware"]


@pytest.mark.parametrize("method", ["full", "freeze", "bias", "lora"])
def test_hardware_count_equals_the_planners(method: str) -> None:
    from embtune.plan import cost

    counts = ParamCounts(1000, 1100, 700, 300)
    for two_pass in (False, True):
        for ckpt in (False, True):
            kw = {"gradcache_two_pass": two_pass, "checkpointing": ckpt}
            assert hardware_per_token(counts, method, **kw) == cost.hardware_per_token(counts, method, **kw)


def test_mfu_lora_counts_adapters_and_is_null_without_a_peak() -> None:
    # LoRA: N_F = N_B = N + A, N_U = A (models.flops); N = 1,000, A = 100 -> 2·(1100+1100+100) = 4,600
    counts = ParamCounts(1000, 1100, 1100, 100)
    assert utilisation(counts.per_token, 4600 + 2 * 1100, 1e3, 1e9) == {
        "mfu_model": pytest.approx(4.6e-3), "mfu_hardware": pytest.approx(6.8e-3)}
    cpu = run_mfu(counts, "lora", tokens=1000, seconds=1.0, two_pass=True, checkpointing=False,
                  device_type="cpu", device_name="cpu")
    assert cpu["mfu_model"] is None and cpu["mfu_hardware"] is None and cpu["peak_flops_per_device"] is None
    assert "cpu" in cpu["mfu_reason"] and cpu["hardware_flops_per_token"] == 6800
    peak, why = device_peak("cuda", "Some Future GPU")
    assert peak is None and "Some Future GPU" in why
    assert run_mfu(counts, "lora", tokens=0, seconds=0.0, two_pass=False, checkpointing=False,
                   device_type="cuda", device_name="NVIDIA H100 80GB HBM3")["mfu_reason"] == "no timed steps (wall time 0)"
    assert math.isclose(device_peak("cuda", "NVIDIA H100 80GB HBM3")[0], 989.4e12)


# --------------------------------------------------------------------------- measured MFU -> the plan
def test_update_throughput_feeds_the_measured_curve_to_the_plan(tmp_path) -> None:
    import importlib.util
    import json
    from pathlib import Path

    from embtune.plan.study_cost import mfu_curve

    repo = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("update_throughput", repo / "benchmarks" / "update_throughput.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    original = (repo / "profiles" / "default" / "throughput.yaml").read_text()
    target = tmp_path / "throughput.yaml"
    target.write_text(original)
    measured = {"device": "NVIDIA H200", "date": "2026-11-29", "peak_flops_per_gpu": 989.4e12,
                "shapes": {"410m": {"n_total": 302311424, "mfu_hardware": 0.39404},
                           "70m": {"n_total": 18915328, "mfu_hardware": 0.0513},
                           "1b": {"n_total": 805736448, "error": "CUDA out of memory"}}}
    (tmp_path / "m.json").write_text(json.dumps(measured))
    assert mod.main([str(tmp_path / "m.json"), "--throughput", str(target), "--calibrate", "410m"]) == 0
    peak, curve, _ = mfu_curve(target)
    assert peak == 989.4e12 and curve == ((18915328.0, 0.0513), (302311424.0, 0.394))
    text = target.read_text()
    assert "hardware_flops_per_gpu_second: 3.899e+14" in text        # 0.39404 x 989.4e12 = 3.8986e14
    kept = [ln for ln in original.splitlines() if ln.startswith("#")]
    assert all(ln in text.splitlines() for ln in kept)               # every comment line stays
    assert mod.main([str(tmp_path / "m.json"), "--throughput", str(target)]) == 0   # idempotent
    assert target.read_text().count(mod.MARK) == 1 and mfu_curve(target)[1] == curve
