"""The fused kernels of training give what the plain ones give: SDPA attention (every family) vs
eager attention, fused AdamW vs AdamW's update written out by hand, a compiled encoder vs the
module, and the compile option reaches the schema."""

from __future__ import annotations

import pytest
import torch
from helpers_train import one_thread
from transformers import AutoModel, GPT2Config, GPTNeoXConfig, LlamaConfig, Qwen2Config

from embtune.models import families
from embtune.train import kernels

_one_thread = pytest.fixture(autouse=True)(one_thread)

CONFIGS = {
    "gpt_neox": lambda: GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                                      num_attention_heads=2, rotary_pct=0.25, vocab_size=50, pad_token_id=1),
    "gpt2": lambda: GPT2Config(n_embd=32, n_layer=2, n_inner=64, n_head=2, n_positions=32, vocab_size=50,
                               pad_token_id=1),
    "llama": lambda: LlamaConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=48, num_attention_heads=4,
                                 num_key_value_heads=2, max_position_embeddings=32, vocab_size=50, pad_token_id=1),
    "qwen2": lambda: Qwen2Config(hidden_size=32, num_hidden_layers=2, intermediate_size=48, num_attention_heads=4,
                                 num_key_value_heads=2, max_position_embeddings=32, vocab_size=50, pad_token_id=1),
}


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(2, 50, (3, 9), generator=g)
    mask = torch.tensor([[1] * 9, [1] * 4 + [0] * 5, [1] * 7 + [0] * 2])
    return ids.masked_fill(mask == 0, 1), mask


def test_every_family_is_covered() -> None:
    assert set(CONFIGS) == set(families.FAMILIES)


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_sdpa_is_loaded_for_every_family_and_matches_eager(family: str, tmp_path) -> None:
    torch.manual_seed(0)
    AutoModel.from_config(CONFIGS[family]()).save_pretrained(tmp_path)
    fused = kernels.load_pretrained(str(tmp_path), dtype=torch.float32).eval()
    eager = AutoModel.from_pretrained(str(tmp_path), attn_implementation="eager").eval()
    assert fused.config._attn_implementation == "sdpa" and eager.config._attn_implementation == "eager"
    ids, mask = _batch()
    with torch.no_grad():
        a = fused(input_ids=ids, attention_mask=mask).last_hidden_state
        b = eager(input_ids=ids, attention_mask=mask).last_hidden_state
    real = mask.bool()
    assert (a[real] - b[real]).abs().max().item() <= 1e-5          # padded positions may differ


def test_fused_adamw_is_adamw_written_out() -> None:
    """θ ← θ − lr·(m̂/(√v̂ + ε) + λ·θ) with m, v the bias-corrected moments (Loshchilov & Hutter)."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(5, 3))
    ref = w.detach().clone()
    opt = kernels.adamw([w], lr=0.01, weight_decay=0.1)
    assert opt.defaults["fused"] is True
    m, v = torch.zeros_like(ref), torch.zeros_like(ref)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, 4):
        g = torch.randn(5, 3)
        w.grad = g.clone()
        opt.step()
        ref *= 1 - 0.01 * 0.1
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        ref -= 0.01 * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
    assert torch.allclose(w.detach(), ref, atol=1e-6)


@pytest.mark.slow          # torch.compile of the encoder: ~16 s on 2 cores, the slowest unit test
def test_compiled_encoder_matches_the_module_across_bucket_widths() -> None:
    from embtune.train.loop import embed
    from embtune.train.pairs import Pairs

    torch.manual_seed(0)
    model = AutoModel.from_config(CONFIGS["gpt_neox"]()).eval()
    assert kernels.compiled(model, "none", 12) is model and kernels.width_multiple("none") == 1
    call = kernels.compiled(model, "aot_eager", 12)
    pairs = Pairs.from_lists([[5, 6, 7], [8] * 10, [9] * 12, [4, 4]], [[3]] * 4, 12)
    for rows in ([0, 3], [1], [2, 0]):            # widths 8, 12 (10 rounded, capped), 12
        chunk = pairs.query.pad(torch.tensor(rows).numpy(), 12, 1, kernels.width_multiple("aot_eager"))
        assert chunk[0].shape[1] % 8 == 0 or chunk[0].shape[1] == 12
        with torch.no_grad():
            assert torch.allclose(embed(call, chunk, "mean"), embed(model, chunk, "mean"), atol=1e-5)
    with pytest.raises(ValueError, match="train.compile: unknown backend 'tvm'"):
        kernels.compiled(model, "tvm", 12)


def test_compile_option_is_in_the_schema_and_params() -> None:
    from embtune.plan.config import load_schema

    prop = load_schema()["properties"]["train"]["properties"]["compile"]
    assert tuple(prop["enum"]) == kernels.COMPILE_BACKENDS and prop["default"] == "none"
