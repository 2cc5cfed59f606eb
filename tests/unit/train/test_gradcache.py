"""GradCache gradients equal full-batch gradients (fp32, ≤ 1e-5) for all four methods."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from transformers import AutoModel

from embtune.models.build import tiny_config
from embtune.models.methods import apply_method
from embtune.train.gradcache import gradcache_step
from embtune.train.loop import contrastive_loss_fn, embed, length_sorted_chunks, make_chunks
from embtune.train.losses import symmetric_infonce, triplet_margin_loss
from embtune.train.pairs import Pairs

RUNS = {
    "full": {"method": "full"},
    "freeze": {"method": "freeze", "frozen_blocks": 1},
    "bias": {"method": "bias"},
    "lora": {"method": "lora", "lora_rank": 4, "lora_alpha": 8.0, "lora_dropout": 0.0},
}

from helpers_train import one_thread  # noqa: E402  (tests/ is on sys.path via conftest)

_one_thread = pytest.fixture(autouse=True)(one_thread)


def _pairs(n: int, vocab: int = 100, ctx: int = 10) -> Pairs:
    rng = random.Random(1)
    seqs = lambda: [[rng.randrange(2, vocab) for _ in range(rng.randint(2, ctx))] for _ in range(n)]  # noqa: E731
    return Pairs.from_lists(seqs(), seqs())


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("method", list(RUNS))
@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_gradcache_matches_full_batch(method: str, pooling: str) -> None:
    torch.manual_seed(0)
    model = AutoModel.from_config(tiny_config({"hidden_size": 64, "num_layers": 2}, 100, 1, 0))
    model = apply_method(model, RUNS[method])
    if method == "lora":   # B starts at zero: perturb so gradients reach the A matrices too
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.normal_(0, 0.02)
    pairs, idx = _pairs(12), list(range(12))
    loss_fn = contrastive_loss_fn(0.05)
    encode = lambda c: embed(model, c, pooling)  # noqa: E731

    full_chunks = make_chunks(pairs, idx, 12, 1)          # one chunk per side = plain full batch
    full_loss = loss_fn(torch.cat([encode(c) for c in full_chunks]))
    full_loss.backward()
    reference = _grads(model)
    model.zero_grad(set_to_none=True)

    loss = gradcache_step(encode, make_chunks(pairs, idx, 5, 1), loss_fn)
    cached = _grads(model)
    assert abs(loss.item() - full_loss.item()) <= 1e-5
    assert reference.keys() == cached.keys() and reference
    worst = max((reference[k] - cached[k]).abs().max().item() for k in reference)
    assert worst <= 1e-5, worst
    assert max(g.abs().max().item() for g in reference.values()) > 1e-3   # not vacuous

    model.zero_grad(set_to_none=True)   # the single-pass shortcut (batch fits in one chunk)
    loss = gradcache_step(encode, make_chunks(pairs, idx, 5, 1), loss_fn, single_pass=True)
    single = _grads(model)
    assert abs(loss.item() - full_loss.item()) <= 1e-5
    assert max((reference[k] - single[k]).abs().max().item() for k in reference) <= 1e-5

    model.zero_grad(set_to_none=True)   # length-sorted chunks (what training uses), order restored
    chunks, restore = length_sorted_chunks(pairs, idx, 5, 1)
    loss = gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]))
    resorted = _grads(model)
    assert abs(loss.item() - full_loss.item()) <= 1e-5
    assert max((reference[k] - resorted[k]).abs().max().item() for k in reference) <= 1e-5


def test_symmetric_infonce_by_hand() -> None:
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    p = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    s = torch.tensor([[1.0, 2 ** -0.5], [0.0, 2 ** -0.5]]) / 0.5
    rows = -(torch.log_softmax(s, 1).diagonal()).mean()
    cols = -(torch.log_softmax(s.T, 1).diagonal()).mean()
    assert torch.allclose(symmetric_infonce(q, p, 0.5), (rows + cols) / 2)


def test_triplet_margin_loss() -> None:
    q = torch.tensor([[1.0, 0.0]])
    pos, neg = torch.tensor([[1.0, 1.0]]), torch.tensor([[0.0, 1.0]])
    # cos: d_pos = 1 - 1/sqrt2, d_neg = 1 -> relu(d_pos - d_neg + m) = relu(m - 1/sqrt2)
    assert triplet_margin_loss(q, pos, neg, 0.1, "cos").item() == pytest.approx(0.0)
    assert triplet_margin_loss(q, pos, neg, 1.0, distance="cos").item() == pytest.approx(1 - 2 ** -0.5, abs=1e-6)
    # dist: d_pos = 1, d_neg = sqrt2
    assert triplet_margin_loss(q, pos, neg, 0.5, distance="dist").item() == pytest.approx(1 - 2 ** 0.5 + 0.5, abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_margin_loss_matches_torch_triplet_margin_loss(seed: int) -> None:
    """docs/fidelity.md#P2-TRIPLET-DISTANCE: ``dist`` is torch.nn.TripletMarginLoss (p = 2, mean)
    on the raw vectors, or on the unit vectors with ``unit``; ``cos`` is torch's
    TripletMarginWithDistanceLoss with d = 1 - cos. Random raw-scale vectors (norm ~5, as pooled
    encoder outputs), margin 0.1 and 2.0 (so that some triplets are active)."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(seed)
    q, pos, neg = (torch.randn(32, 16, generator=g) * 1.3 for _ in range(3))
    for margin in (0.1, 2.0):
        ref = torch.nn.TripletMarginLoss(margin=margin, p=2.0, eps=0.0)
        assert triplet_margin_loss(q, pos, neg, margin, "dist").item() == pytest.approx(ref(q, pos, neg).item(), rel=1e-5)
        unit = [F.normalize(x, dim=-1) for x in (q, pos, neg)]
        assert triplet_margin_loss(q, pos, neg, margin, "dist", unit=True).item() == pytest.approx(
            ref(*unit).item(), rel=1e-5, abs=1e-7)
        cos = torch.nn.TripletMarginWithDistanceLoss(
            distance_function=lambda a, b: 1 - F.cosine_similarity(a, b, dim=-1), margin=margin)
        assert triplet_margin_loss(q, pos, neg, margin, "cos").item() == pytest.approx(cos(q, pos, neg).item(), rel=1e-5)
    assert triplet_margin_loss(q, pos, neg, 2.0, "dist").item() > 0   # not vacuous


def test_the_default_triplet_distance_is_euclidean() -> None:
    """Paper 2's "triple margin loss with margin 0.1" read as torch's TripletMarginLoss (Euclidean)."""
    from embtune.plan.config import load_params

    repo = Path(__file__).resolve().parents[3]
    defaults = load_params([repo / "params.yaml"])["query_tuning"]["defaults"]
    assert (defaults["distance"], defaults["dist_embeddings"], defaults["margin"]) == ("dist", "raw", 0.1)
