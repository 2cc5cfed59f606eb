"""Parameter counts of the four methods on a real tiny GPT-NeoX vs hand counts, and the FLOPs a
training run records vs C = 2·D·(N_F+N_B+N_U) with D counted independently from the data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from transformers import AutoModel

from embtune.models.build import tiny_config
from embtune.models.flops import analytic_counts
from embtune.models.methods import apply_method, count_params

D, L = 64, 2
# Hand count of one Pythia block at d=64 (intermediate 256): two LayerNorms (weight+bias),
# fused QKV, attention output, MLP up and down, all with biases.
BLOCK = 2 * 2 * 64 + (64 * 192 + 192) + (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64)
N = L * BLOCK + 2 * 64                                   # + final LayerNorm = 100096
BIASES = L * (192 + 64 + 256 + 64 + 2 * 64) + 64         # bias-only: 1472
LORA_R4 = L * 4 * ((64 + 192) + (64 + 64) + (64 + 256) + (256 + 64))   # r·(in+out) per layer

from helpers_train import one_thread

_one_thread = pytest.fixture(autouse=True)(one_thread)


def _model(hidden: int = D, layers: int = L, vocab: int = 100) -> torch.nn.Module:
    torch.manual_seed(0)
    return AutoModel.from_config(tiny_config({"hidden_size": hidden, "num_layers": layers}, vocab, 1, 0))


CASES = {
    "full": ({"method": "full"}, (N, N, N, N)),
    "freeze": ({"method": "freeze", "frozen_blocks": 1}, (N, N, BLOCK + 128, BLOCK + 128)),
    "bias": ({"method": "bias"}, (N, N, N, BIASES)),
    "lora": ({"method": "lora", "lora_rank": 4, "lora_alpha": 4.0, "lora_dropout": 0.0}, (N, N, N, LORA_R4)),
}


def test_hand_count_constants() -> None:
    assert N == 100096 and BLOCK == 49984 and BIASES == 1472 and LORA_R4 == 8192


@pytest.mark.parametrize("name", list(CASES))
def test_counts_match_hand_count_and_analytic(name: str) -> None:
    run, expected = CASES[name]
    counts = count_params(apply_method(_model(), run), run["method"])
    assert (counts.n_total, counts.n_forward, counts.n_backward, counts.n_update) == expected
    assert counts == analytic_counts(D, L, run["method"], frozen_blocks=run.get("frozen_blocks", 0),
                                     lora_rank=run.get("lora_rank"))


@pytest.mark.parametrize("hidden,layers,k", [(96, 3, 2), (64, 4, 0), (128, 1, 0)])
def test_counts_agree_with_analytic_other_shapes(hidden: int, layers: int, k: int) -> None:
    for run in ({"method": "full"}, {"method": "freeze", "frozen_blocks": k}, {"method": "bias"},
                {"method": "lora", "lora_rank": 8, "lora_alpha": 8.0}):
        counts = count_params(apply_method(_model(hidden, layers), run), run["method"])
        assert counts == analytic_counts(hidden, layers, run["method"], frozen_blocks=k,
                                         lora_rank=run.get("lora_rank")), run


def test_flop_formula_per_method() -> None:
    tokens = 1000
    full = count_params(apply_method(_model(), CASES["full"][0]), "full")
    assert full.per_token * tokens == 6 * N * tokens
    frz = count_params(apply_method(_model(), CASES["freeze"][0]), "freeze")
    assert frz.per_token * tokens == 2 * N * tokens + 4 * (BLOCK + 128) * tokens


@pytest.mark.parametrize("method", ["full", "freeze"])
def test_run_records_exact_flops_and_spends_budget(tmp_path, method: str) -> None:
    from helpers_train import make_base_model, make_shards, run_config

    from embtune.train.loop import train_run

    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 64, 8, 190, 12)
    budget = 1.5e9 if method == "full" else 1.0e9
    run = run_config(base, data, method, budget=budget, max_epochs=5.0)
    res = train_run(run, tmp_path / "ckpt")
    m = res.metrics
    assert res.status == "ok"
    # D counted independently: every row's real tokens, per planned epoch permutation.
    frame = pl.concat([pl.read_parquet(f) for f in sorted(data.glob("train-*.parquet"))])
    lengths = (frame["query_tokens"] + frame["pos_tokens"]).to_numpy()
    idx = np.concatenate([np.random.default_rng([0, e]).permutation(64)[:64 // 8 * 8] for e in range(5)])
    per_step = [int(lengths[idx[s * 8:(s + 1) * 8]].sum()) for s in range(m["steps"] + 1)]
    assert m["tokens"] == sum(per_step[:-1])
    per_token = 6 * N if method == "full" else 2 * N + 4 * (BLOCK + 128)
    assert m["flops"] == per_token * m["tokens"] <= budget
    assert m["flops"] + per_token * per_step[-1] > budget          # the next batch would overshoot
    assert [r["flops"] for r in res.curve][-1] == m["flops"]


def test_mfu_by_hand_and_device_peaks() -> None:
    from embtune.models.flops import ParamCounts, model_flops_utilisation, peak_bf16_flops

    full = ParamCounts(n_total=85_056_000, n_forward=85_056_000, n_backward=85_056_000, n_update=85_056_000)
    # 6·N FLOP per token at 1e6 tokens/s = 5.10336e14 FLOP/s; on one H100 SXM (989.4 TFLOP/s) ...
    assert model_flops_utilisation(full, 1e6, 989.4e12) == pytest.approx(6 * 85_056_000 * 1e6 / 989.4e12)
    assert model_flops_utilisation(full, 1e6, 989.4e12, devices=2) == pytest.approx(0.2579, abs=1e-4)
    assert peak_bf16_flops("NVIDIA H100 80GB HBM3") == 989.4e12
    assert peak_bf16_flops("NVIDIA H100 PCIe") == 756.0e12
    assert peak_bf16_flops("NVIDIA H200") == 989.4e12
    assert peak_bf16_flops("NVIDIA A100-SXM4-80GB") == 312.0e12
    assert peak_bf16_flops("NVIDIA A10G") == 70.0e12 and peak_bf16_flops("NVIDIA L40S") == 362.1e12
    assert peak_bf16_flops("cpu") is None
    with pytest.raises(ValueError, match="positive"):
        model_flops_utilisation(full, 1e6, 0.0)
