"""Decoder families: where each architecture keeps what paper 1's methods and FLOP counts name.

Paper 1 states its four methods for Pythia (GPT-NeoX) and leaves "other families of models" open
(section 5). The methods are defined by roles, not by module names: *token embeddings* (frozen by
block freezing, excluded from N: "non-token-embedding parameters", section 3.5), *transformer
blocks* (what block freezing counts), *bias parameters* (bias-only tuning: "only bias parameters
are fine-tuned") and *dense layers* (LoRA on "all the dense layers of the network", section 4.2).
This registry says, per family, which modules play each role and what shapes they have, so that
training (``methods.apply_method``/``count_params``) and planning (``methods.analytic_counts``)
read one description.

=========  =========================  ============  =================================  ===========
family     blocks / final norm        lookups       dense layers (LoRA targets)        biases
=========  =========================  ============  =================================  ===========
gpt_neox   layers / final_layer_norm  embed_in      attention.query_key_value,         dense + norm
           (LayerNorm)                              attention.dense, mlp.dense_h_to_4h,
                                                    mlp.dense_4h_to_h
llama      layers / norm (RMSNorm)    embed_tokens  self_attn.{q,k,v,o}_proj,          none unless
                                                    mlp.{gate,up,down}_proj            configured
qwen2      layers / norm (RMSNorm)    embed_tokens  as llama                           q, k, v only
gpt2       h / ln_f (LayerNorm)       wte, wpe      attn.c_attn, attn.c_proj,          dense + norm
                                                    mlp.c_fc, mlp.c_proj (Conv1D)
=========  =========================  ============  =================================  ===========

Readings (see also the ledger): GPT-2's learned position table ``wpe`` is an embedding *lookup*
like ``wte``: it costs no FLOPs per token, so it is excluded from N like the token embeddings and
frozen with them by block freezing (it sits below the first block; training it would send the
backward pass through every block). Rotary embeddings have no parameters. RMSNorm weights are
scales, not biases: a Llama without ``attention_bias``/``mlp_bias`` has no bias parameters, and
bias-only tuning is refused for it at planning time rather than silently training something else.

No torch or transformers import at module level: the sweep plans the grid from this file alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from embtune.models.model_spec import ModelSpec

DEFAULT_FAMILY = "gpt_neox"


@dataclass(frozen=True)
class Dense:
    """One dense layer of a block: its ``path`` inside the block (a peft target suffix), in → out."""

    path: str
    fan_in: int
    fan_out: int
    bias: bool


@dataclass(frozen=True)
class Dims:
    """The architecture numbers the parameter counts depend on (params keys in the comments)."""

    hidden: int             # hidden_size
    layers: int             # num_layers
    intermediate: int       # intermediate_size
    heads: int              # num_attention_heads
    kv_heads: int           # num_key_value_heads (grouped-query attention; = heads without it)
    head_dim: int           # head_dim (hidden / heads unless set)
    attention_bias: bool    # attention_bias (gpt_neox, llama)
    mlp_bias: bool          # mlp_bias (llama)


@dataclass(frozen=True)
class Family:
    """Where one architecture keeps the roles the methods name (see the module docstring)."""

    name: str
    model_type: str                         # transformers ``config.model_type``
    blocks: str                             # attribute of the base model holding the blocks
    lookups: tuple[str, ...]                # embedding tables: no FLOPs, not in N
    token_embedding: str                    # the table ``train.lora.embed_in`` adapts
    final_norm: str
    norm_bias: bool                         # LayerNorm (weight + bias) vs RMSNorm (weight only)
    dense: Callable[[Dims], tuple[Dense, ...]]
    fan_in_fan_out: bool                    # weights stored in × out (GPT-2's Conv1D)
    mlp_ratio: int | None                   # default intermediate_size / hidden_size; None: required
    grouped_query: bool                     # num_key_value_heads and head_dim apply
    bias_options: Mapping[str, bool]        # configurable bias flags and their defaults
    #: ``source: tiny``'s transformers config from the dims, max positions and token ids
    #: (models/build.py); None: the family cannot be built from scratch here
    tiny_config: Callable[[Dims, int, dict[str, Any]], Any] | None = None
    #: attribute of the ``*ForCausalLM`` that holds the base model: a LoRA adapter saved on the
    #: causal LM has its weights under it (models/embedder.py)
    causal_lm_prefix: str = "model"

    def lora_targets(self) -> list[str]:
        """peft ``target_modules``: every dense layer's path inside a block (suffix match)."""
        return sorted({layer.path for layer in self.dense(_PROBE)})

    def bias_free_reason(self, dims: Dims) -> str | None:
        """Why bias-only tuning cannot run on this architecture, or None when it has biases.

        Paper 1: "only bias parameters are fine-tuned"; with none there is no method to run, and
        training the norms' scales instead would be a different method under the same name."""
        if self.norm_bias or any(layer.bias for layer in self.dense(dims)):
            return None
        flags = ", ".join(f"{k}={getattr(dims, k)}" for k in self.bias_options) or "fixed by the architecture"
        return (f"bias-only tuning needs bias parameters; a {self.name} model has none here "
                f"({flags}; its RMSNorms have weights only)")


def _gpt_neox(x: Dims) -> tuple[Dense, ...]:
    d, i, ab = x.hidden, x.intermediate, x.attention_bias
    return (Dense("attention.query_key_value", d, 3 * d, ab), Dense("attention.dense", d, d, ab),
            Dense("mlp.dense_h_to_4h", d, i, True), Dense("mlp.dense_4h_to_h", i, d, True))


def _gpt2(x: Dims) -> tuple[Dense, ...]:
    d, i = x.hidden, x.intermediate
    return (Dense("attn.c_attn", d, 3 * d, True), Dense("attn.c_proj", d, d, True),
            Dense("mlp.c_fc", d, i, True), Dense("mlp.c_proj", i, d, True))


def _gated(x: Dims, qkv_bias: bool, o_bias: bool, mlp_bias: bool) -> tuple[Dense, ...]:
    """Llama-style block: separate q/k/v (k, v narrower under grouped-query attention), gated MLP."""
    d, i, q, kv = x.hidden, x.intermediate, x.heads * x.head_dim, x.kv_heads * x.head_dim
    return (Dense("self_attn.q_proj", d, q, qkv_bias), Dense("self_attn.k_proj", d, kv, qkv_bias),
            Dense("self_attn.v_proj", d, kv, qkv_bias), Dense("self_attn.o_proj", q, d, o_bias),
            Dense("mlp.gate_proj", d, i, mlp_bias), Dense("mlp.up_proj", d, i, mlp_bias),
            Dense("mlp.down_proj", i, d, mlp_bias))


def _llama(x: Dims) -> tuple[Dense, ...]:
    return _gated(x, x.attention_bias, x.attention_bias, x.mlp_bias)


def _qwen2(x: Dims) -> tuple[Dense, ...]:
    return _gated(x, True, False, False)          # Qwen2: q/k/v biases, none elsewhere


def _gpt_neox_config(x: Dims, positions: int, tokens: dict[str, Any]) -> Any:
    """Pythia-like: rotary on 25% of each head, parallel residual."""
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(hidden_size=x.hidden, num_hidden_layers=x.layers, num_attention_heads=x.heads,
                         intermediate_size=x.intermediate, rotary_pct=0.25, use_parallel_residual=True,
                         attention_bias=x.attention_bias, max_position_embeddings=positions, **tokens)


def _gpt2_config(x: Dims, positions: int, tokens: dict[str, Any]) -> Any:
    from transformers import GPT2Config

    return GPT2Config(n_embd=x.hidden, n_layer=x.layers, n_head=x.heads, n_inner=x.intermediate,
                      n_positions=positions, **tokens)


def _gated_config(config_class: str, **extra: Any) -> Callable[[Dims, int, dict[str, Any]], Any]:
    """A Llama-style config (``LlamaConfig``, ``Qwen2Config``) from the dims; ``extra`` names the
    dims the class takes beyond the shared ones (Llama's bias flags)."""
    def build(x: Dims, positions: int, tokens: dict[str, Any]) -> Any:
        import transformers

        cls = getattr(transformers, config_class)
        return cls(hidden_size=x.hidden, num_hidden_layers=x.layers, num_attention_heads=x.heads,
                   num_key_value_heads=x.kv_heads, head_dim=x.head_dim, intermediate_size=x.intermediate,
                   max_position_embeddings=positions, **{k: getattr(x, v) for k, v in extra.items()}, **tokens)

    return build


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family(name="gpt_neox", model_type="gpt_neox", blocks="layers", lookups=("embed_in",),
           token_embedding="embed_in", final_norm="final_layer_norm", norm_bias=True, dense=_gpt_neox,
           fan_in_fan_out=False, mlp_ratio=4, grouped_query=False, bias_options={"attention_bias": True},
           tiny_config=_gpt_neox_config, causal_lm_prefix="gpt_neox"),
    Family(name="llama", model_type="llama", blocks="layers", lookups=("embed_tokens",),
           token_embedding="embed_tokens", final_norm="norm", norm_bias=False, dense=_llama,
           fan_in_fan_out=False, mlp_ratio=None, grouped_query=True,
           bias_options={"attention_bias": False, "mlp_bias": False},
           tiny_config=_gated_config("LlamaConfig", attention_bias="attention_bias", mlp_bias="mlp_bias")),
    Family(name="qwen2", model_type="qwen2", blocks="layers", lookups=("embed_tokens",),
           token_embedding="embed_tokens", final_norm="norm", norm_bias=False, dense=_qwen2,
           fan_in_fan_out=False, mlp_ratio=None, grouped_query=True, bias_options={},
           tiny_config=_gated_config("Qwen2Config")),
    Family(name="gpt2", model_type="gpt2", blocks="h", lookups=("wte", "wpe"), token_embedding="wte",
           final_norm="ln_f", norm_bias=True, dense=_gpt2, fan_in_fan_out=True, mlp_ratio=4,
           grouped_query=False, bias_options={}, tiny_config=_gpt2_config, causal_lm_prefix="transformer"),
)}
_PROBE = Dims(8, 1, 8, 1, 1, 8, True, True)       # any shape: only the paths are read


def register(family: Family) -> Family:
    """Add a family (a new decoder architecture; a test may add a toy one and :func:`unregister` it)."""
    if family.name in FAMILIES:
        raise ValueError(f"model family {family.name!r} is registered twice")
    FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    FAMILIES.pop(name, None)


def get_family(name: str) -> Family:
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r} (expected one of {sorted(FAMILIES)})")
    return FAMILIES[name]


def family_of_config(config: Any) -> Family:
    """The family of a transformers config, from its ``model_type``."""
    model_type = getattr(config, "model_type", None)
    for fam in FAMILIES.values():
        if fam.model_type == model_type:
            return fam
    raise ValueError(f"model_type {model_type!r} is not a supported decoder family "
                     f"(supported: {sorted(f.model_type for f in FAMILIES.values())}); "
                     "add it to embtune.models.families.FAMILIES")


def family_of(model: Any) -> Family:
    """The family of an instantiated base model (``AutoModel``; unwrap peft first)."""
    return family_of_config(model.config)


def blocks(model: Any, family: Family | None = None) -> list[Any]:
    """The transformer blocks of a base model, bottom to top."""
    return list(getattr(model, (family or family_of(model)).blocks))


def lookup_modules(model: Any, family: Family | None = None) -> list[Any]:
    """The embedding-lookup modules (peft-wrapped ones as they are)."""
    return [getattr(model, name) for name in (family or family_of(model)).lookups]


def unaccounted_modules(model: Any, family: Family | None = None) -> list[str]:
    """Top-level modules holding parameters that are neither lookups, blocks nor the final norm:
    the counts would miss them (empty for every model the registry describes)."""
    fam = family or family_of(model)
    known = {*fam.lookups, fam.blocks, fam.final_norm}
    return sorted(name for name, child in model.named_children()
                  if name not in known and any(True for _ in child.parameters()))


def family_of_spec(spec: ModelSpec | Mapping[str, Any]) -> Family:
    return get_family(ModelSpec.of(spec).family or DEFAULT_FAMILY)


def dims_of(spec: ModelSpec | Mapping[str, Any]) -> Dims:
    """Dims from a params ``models`` entry; unset keys take the family's defaults. Errors name the
    entry and key, since planning-time counts (every run's budget) depend on them."""
    spec = ModelSpec.of(spec)
    fam = family_of_spec(spec)
    where = f"models[{spec.name}] (family {fam.name})"
    d, layers = int(spec.hidden_size), int(spec.num_layers)
    inter = spec.intermediate_size
    if inter is None:
        if fam.mlp_ratio is None:
            raise ValueError(f"{where}: intermediate_size is required (a gated MLP has no standard width)")
        inter = fam.mlp_ratio * d
    allowed = set(fam.bias_options) | ({"num_key_value_heads", "head_dim"} if fam.grouped_query else set())
    for key in ("attention_bias", "mlp_bias", "num_key_value_heads", "head_dim"):
        if getattr(spec, key) is not None and key not in allowed:
            raise ValueError(f"{where}: {key} does not apply to this family (applies: {sorted(allowed) or 'none'})")
    heads = int(spec.num_attention_heads or max(1, d // 32))
    head_dim = int(spec.head_dim or d // heads)
    biases = {k: v if getattr(spec, k) is None else bool(getattr(spec, k)) for k, v in fam.bias_options.items()}
    return Dims(hidden=d, layers=layers, intermediate=int(inter), heads=heads,
                kv_heads=int(spec.num_key_value_heads or heads), head_dim=head_dim,
                attention_bias=biases.get("attention_bias", False), mlp_bias=biases.get("mlp_bias", False))


def spec_of_config(config: Any) -> dict[str, Any]:
    """A params-style ``models`` entry (family and dims) read from a transformers config."""
    fam = family_of_config(config)
    d, heads = int(config.hidden_size), int(config.num_attention_heads)
    inter = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * d
    spec: dict[str, Any] = {"family": fam.name, "hidden_size": d, "num_layers": int(config.num_hidden_layers),
                            "intermediate_size": int(inter), "num_attention_heads": heads}
    if fam.grouped_query:
        spec["num_key_value_heads"] = int(getattr(config, "num_key_value_heads", None) or heads)
        spec["head_dim"] = int(getattr(config, "head_dim", None) or d // heads)
    spec.update({k: bool(getattr(config, k, v)) for k, v in fam.bias_options.items()})
    return spec


def shape_mismatches(spec: ModelSpec | Mapping[str, Any], config: Any) -> list[str]:
    """What differs, in the shapes the counts use, between a params entry and a model's config.

    Empty when planning-time counts equal the real model's (the keys of ``Dims`` determine them)."""
    real, want = spec_of_config(config), ModelSpec.of(spec).family or DEFAULT_FAMILY
    if real["family"] != want:
        return [f"family: params {want!r}, model {real['family']!r}"]
    mine, theirs = dims_of(spec), dims_of(real)
    fam = family_of_spec(real)
    out = []
    for key, a, b in (("hidden_size", mine.hidden, theirs.hidden), ("num_layers", mine.layers, theirs.layers),
                      ("intermediate_size", mine.intermediate, theirs.intermediate)):
        if a != b:
            out.append(f"{key}: params {a}, model {b}")
    if fam.dense(mine) != fam.dense(theirs) and not out:
        out.append("attention shapes (num_attention_heads / num_key_value_heads / head_dim / biases): "
                   + ", ".join(f"{k}={real[k]}" for k in real if k not in ("family", "hidden_size", "num_layers",
                                                                        "intermediate_size"))
                   + " in the model")
    return out
