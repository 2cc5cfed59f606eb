"""Parameter counts and FLOPs of the four methods on real tiny GPT-NeoX models vs hand counts, and
the FLOPs a training run records vs C = 2·D·(N_F+N_B+N_U) with D counted independently.

The hand counts are written here from the architecture (paper 1, section 3.5: N_F, N_B, N_U are
non-token-embedding parameters): a GPT-NeoX block is four dense layers with biases
(QKV d→3d, attention output d→d, MLP d→i and i→d) and two LayerNorms (weight + bias); the model
ends with one LayerNorm. An unmerged LoRA of rank r on a dense layer in→out adds r·(in+out)
parameters that run, are back-propagated through and are updated with every token. A LoRA on the
token embeddings adds a vocab×r lookup table (a token embedding, not counted) and a d×r matrix.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from helpers_train import one_thread
from transformers import AutoModel

from embtune.models.build import tiny_config
from embtune.models.flops import ParamCounts, training_flops
from embtune.models.methods import analytic_counts, apply_method, count_params

_one_thread = pytest.fixture(autouse=True)(one_thread)

VOCAB = 100


def dense_layers(d: int, i: int) -> list[tuple[int, int]]:
    """(in, out) of a block's four dense layers: QKV, attention output, MLP up, MLP down."""
    return [(d, 3 * d), (d, d), (d, i), (i, d)]


def hand_counts(d: int, layers: int, i: int, method: str, *, k: int = 0, r: int = 0,
                embed_in: bool = False) -> tuple[int, int, int, int]:
    """(N, N_F, N_B, N_U) by hand."""
    weights = sum(a * b for a, b in dense_layers(d, i))
    dense_biases = sum(b for _, b in dense_layers(d, i))
    ln_weights, ln_biases = 2 * d, 2 * d                 # two LayerNorms per block
    block = weights + dense_biases + ln_weights + ln_biases
    final_ln = d + d
    n = layers * block + final_ln
    if method == "full":
        return n, n, n, n
    if method == "freeze":                               # blocks k.. and the final LN train
        active = (layers - k) * block + final_ln
        return n, n, active, active
    if method == "bias":                                 # every bias vector, LayerNorm biases too
        biases = layers * (dense_biases + ln_biases) + d
        return n, n, n, biases
    adapter = layers * sum(r * (a + b) for a, b in dense_layers(d, i)) + (r * d if embed_in else 0)
    return n, n + adapter, n + adapter, adapter


def hand_flops(method: str, n: int, n_trained: int, tokens: int) -> int:
    """The paper's per-method forms (section 3.5, 4.2; the authors' code has the same)."""
    return {"full": 6 * n * tokens,
            "freeze": 2 * n * tokens + 4 * n_trained * tokens,
            "bias": 4 * n * tokens + 2 * n_trained * tokens}[method]


def _model(hidden: int, layers: int, inter: int | None = None) -> torch.nn.Module:
    torch.manual_seed(0)
    spec = {"hidden_size": hidden, "num_layers": layers, "intermediate_size": inter}
    return AutoModel.from_config(tiny_config(spec, VOCAB, 1, 0))


# (d, L, intermediate): 4d MLP, narrower and wider MLPs, one head and several heads.
SHAPES = [(64, 2, 256), (96, 3, 160), (32, 4, 200), (128, 1, 64)]


def _runs(layers: int) -> list[dict]:
    out = [{"method": "full"}, {"method": "bias"}]
    out += [{"method": "freeze", "frozen_blocks": k} for k in sorted({0, layers - 1})]
    out += [{"method": "lora", "lora_rank": r, "lora_alpha": 8.0, "lora_embed_in": e}
            for r in (1, 4, 48) for e in (False, True)]
    return out


def test_hand_count_anchor() -> None:
    # d=64, L=2, MLP 256 worked through once: block = 4·64 + (64·192+192) + (64·64+64)
    # + (64·256+256) + (256·64+64) = 49,984; N = 2·49,984 + 128 = 100,096; LoRA r=4 adds
    # 2·4·(256+128+320+320) = 8,192; its embedding adapter 4·64 = 256.
    assert hand_counts(64, 2, 256, "full") == (100_096,) * 4
    assert hand_counts(64, 2, 256, "lora", r=4) == (100_096, 108_288, 108_288, 8_192)
    assert hand_counts(64, 2, 256, "lora", r=4, embed_in=True) == (100_096, 108_544, 108_544, 8_448)
    assert hand_counts(64, 2, 256, "bias") == (100_096, 100_096, 100_096, 1_472)


@pytest.mark.parametrize("d,layers,inter", SHAPES)
def test_counts_and_flops_equal_hand_counts(d: int, layers: int, inter: int) -> None:
    tokens = 12_345
    for run in _runs(layers):
        method = run["method"]
        want = hand_counts(d, layers, inter, method, k=run.get("frozen_blocks", 0),
                           r=run.get("lora_rank", 0), embed_in=run.get("lora_embed_in", False))
        model = apply_method(_model(d, layers, inter), run)
        got = count_params(model, method)
        assert (got.n_total, got.n_forward, got.n_backward, got.n_update) == want, run
        planned = analytic_counts(d, layers, method, intermediate=inter,
                                  frozen_blocks=run.get("frozen_blocks", 0),
                                  lora_rank=run.get("lora_rank"),
                                  lora_embed_in=run.get("lora_embed_in", False))
        assert planned == got, run
        n, n_f, n_b, n_u = want
        assert training_flops(got, tokens) == 2 * (n_f + n_b + n_u) * tokens
        if method == "lora":       # 4·(N + N_adapter)·D + 2·N_adapter·D
            assert training_flops(got, tokens) == 4 * (n + n_u) * tokens + 2 * n_u * tokens
        else:
            assert training_flops(got, tokens) == hand_flops(method, n, n_u, tokens), run
        assert got.trainable_fraction == n_u / n_f and 0 < got.trainable_fraction <= 1


def test_trainable_fraction_stays_a_fraction_at_high_rank() -> None:
    # d=32, L=4, MLP 200, r=48: N = 69,600 and N_adapter = 4·48·656 = 125,952 > N, so N_U/N would
    # be 1.81; S = N_U/N_F = 125,952 / 195,552.
    counts = count_params(apply_method(_model(32, 4, 200), {"method": "lora", "lora_rank": 48,
                                                            "lora_alpha": 8.0}), "lora")
    assert (counts.n_total, counts.n_update) == (69_600, 125_952)
    assert counts.trainable_fraction == pytest.approx(125_952 / 195_552, rel=1e-15)


@pytest.mark.parametrize("r,embed_in", [(4, False), (4, True), (48, True)])
def test_peft_trainable_parameters_are_n_update(r: int, embed_in: bool) -> None:
    d, layers, inter = 96, 3, 160
    model = apply_method(_model(d, layers, inter), {"method": "lora", "lora_rank": r,
                                                   "lora_alpha": 8.0, "lora_embed_in": embed_in})
    trainable, _ = model.get_nb_trainable_parameters()
    n_update = hand_counts(d, layers, inter, "lora", r=r, embed_in=embed_in)[3]
    # peft also trains the embedding adapter's vocab×r lookup table: a token embedding, not in N_U.
    assert trainable == n_update + (r * VOCAB if embed_in else 0)
    assert count_params(model, "lora").n_update == n_update


@pytest.mark.parametrize("r,alpha", [(4, 8.0), (16, 8.0), (16, 16.0), (2, 3.0)])
def test_adapter_output_is_scaled_by_alpha_over_rank(r: int, alpha: float) -> None:
    d, layers, inter = 64, 2, 96
    model = apply_method(_model(d, layers, inter), {"method": "lora", "lora_rank": r,
                                                   "lora_alpha": alpha, "lora_embed_in": True})
    adapted = {n.removeprefix("base_model.model.") for n, m in model.named_modules()
               if hasattr(m, "base_layer") and hasattr(m, "scaling")}
    per_block = {"attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"}
    assert adapted == {f"layers.{b}.{m}" for b in range(layers) for m in per_block} | {"embed_in"}
    gen = torch.Generator().manual_seed(r)
    with torch.no_grad():
        for name, module in model.named_modules():
            if name.endswith("layers.1.mlp.dense_h_to_4h"):
                a, b = module.lora_A["default"].weight, module.lora_B["default"].weight
                b.copy_(torch.randn(b.shape, generator=gen))        # B starts at zero
                x = torch.randn(5, d, generator=gen)
                delta = module(x) - module.base_layer(x)
                torch.testing.assert_close(delta, alpha / r * (x @ a.T @ b.T), rtol=1e-5, atol=1e-5)
            if name.endswith("embed_in"):
                a, b = module.lora_embedding_A["default"], module.lora_embedding_B["default"]
                a.copy_(torch.randn(a.shape, generator=gen))        # A starts at zero here
                ids = torch.tensor([[3, 7, 7, 99]])
                delta = module(ids) - module.base_layer(ids)
                torch.testing.assert_close(delta, alpha / r * (a.T[ids] @ b.T), rtol=1e-5, atol=1e-5)


def test_lora_without_embed_in_leaves_the_embeddings_alone() -> None:
    model = apply_method(_model(64, 2, 256), {"method": "lora", "lora_rank": 4, "lora_alpha": 8.0})
    assert not any("embed_in.lora" in n for n, _ in model.named_parameters())


def test_counts_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="N_U <= N_B <= N_F"):
        ParamCounts(n_total=10, n_forward=10, n_backward=10, n_update=11)


N64 = hand_counts(64, 2, 256, "full")[0]
LORA4 = hand_counts(64, 2, 256, "lora", r=4)[3]
BLOCK64 = (N64 - 128) // 2


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "freeze", "lora"])
def test_run_records_exact_flops_and_spends_budget(tmp_path, method: str) -> None:
    from helpers_train import make_base_model, make_shards, run_config

    from embtune.train.loop import train_run

    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 64, 8, 190, 12)
    budget = 1.0e9 if method == "freeze" else 1.5e9
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
    per_token = {"full": 6 * N64, "freeze": 2 * N64 + 4 * (BLOCK64 + 128),   # helpers: 1 of 2 frozen, r=4
                 "lora": 4 * (N64 + LORA4) + 2 * LORA4}[method]
    assert m["flops"] == per_token * m["tokens"] <= budget
    assert m["flops"] + per_token * per_step[-1] > budget          # the next batch would overshoot
    assert [r["flops"] for r in res.curve][-1] == m["flops"]
    assert m["trainable_fraction"] == pytest.approx(
        {"full": 1.0, "freeze": (BLOCK64 + 128) / N64, "lora": LORA4 / (N64 + LORA4)}[method], rel=1e-15)


def test_mfu_by_hand_and_device_peaks() -> None:
    from embtune.models.flops import model_flops_utilisation, peak_bf16_flops

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
