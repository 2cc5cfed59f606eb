"""A decoder family is one declaration: ``models.families.Family`` owns its
transformers config class (``tiny_config``: models/build.py has no per-family code) and the
prefix under which a causal LM keeps its base weights (``causal_lm_prefix``: models/embedder.py).
A toy family (Mistral, not one of the four) is registered from this test alone and goes through
the planner's analytic counts, ``source: tiny``'s config builder, the method registry's
``apply``/``count_params`` and the adapter check; the schema's family enum is the registry's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from embtune.models import build, families, methods
from embtune.models.families import Family
from embtune.plan.config import load_schema

SRC = Path(__file__).resolve().parents[2] / "src" / "embtune"
X = {"hidden_size": 64, "num_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
     "head_dim": 16, "intermediate_size": 96}
#: Mistral's block, written out by hand: q 64x64, k 64x32, v 64x32, o 64x64, gate/up 64x96, down 96x64,
#: no biases, two RMSNorm weights of 64; plus the final norm.
HAND_N = 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96 + 2 * 64) + 64


@pytest.fixture()
def mistral():
    fam = families.register(Family(
        name="mistral", model_type="mistral", blocks="layers", lookups=("embed_tokens",),
        token_embedding="embed_tokens", final_norm="norm", norm_bias=False,
        dense=lambda x: families._gated(x, False, False, False), fan_in_fan_out=False, mlp_ratio=None,
        grouped_query=True, bias_options={}, tiny_config=families._gated_config("MistralConfig")))
    yield fam
    families.unregister("mistral")


def test_schema_family_enum_is_the_registry() -> None:
    enum = load_schema()["$defs"]["decoder_model"]["properties"]["family"]["enum"]
    assert enum == list(families.FAMILIES)


def test_a_toy_family_from_the_test_alone(mistral) -> None:
    from transformers import AutoModel

    spec = {"name": "toy", "family": "mistral", **X}
    config = build.tiny_config(spec, vocab_size=100, pad_token_id=1, eos_token_id=0)
    assert type(config).__name__ == "MistralConfig" and config.num_key_value_heads == 2
    model = AutoModel.from_config(config)
    assert families.family_of(model) is mistral
    for method, settings in (("full", {}), ("freeze", {"frozen_blocks": 1}),
                             ("lora", {"lora_rank": 2, "lora_alpha": 4.0})):
        planned = methods.planned_counts(spec, {"method": method, **settings})
        counted = methods.count_params(methods.apply_method(AutoModel.from_config(config),
                                                            {"method": method, **settings}), method)
        assert planned == counted, method
    assert methods.model_counts(spec, "full").n_total == HAND_N
    assert mistral.bias_free_reason(families.dims_of(spec))           # no biases: bias-only cannot run


def test_build_and_embedder_name_no_family() -> None:
    """No per-family branch or prefix literal left in the two modules a new family used to edit."""
    for rel in ("models/build.py", "models/embedder.py"):
        consts = {n.value for n in ast.walk(ast.parse((SRC / rel).read_text()))
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not consts & {"gpt_neox", "llama", "qwen2", "gpt2", ".gpt_neox.", ".model.model."}, rel
