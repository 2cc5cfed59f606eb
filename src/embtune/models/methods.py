"""The fine-tuning methods (paper 1, section 4): the one registry every stage reads.

Why one registry: the sweep expands a method's variants, the training stage applies it, the FLOP
accounting counts it, the fits and figures order and colour it, and the params schema names it.
Each :class:`Method` declares all of that in one place (also the method tag of the run ids its
variants write and ``parse_tag`` reads back, and its own run-config keys as a typed settings class
that its hooks read: :class:`~embtune.models.run_spec.MethodSettings`, :mod:`embtune.runconfig`),
so adding a method is one declaration here (or a :func:`register` call from its own module;
the built-in four's model and count hooks are in :mod:`embtune.models.method_hooks`)
plus its name in the schema's ``$defs.method`` enum (tests/contracts/test_method_registry.py checks the
two agree and that no other module lists names).

Methods: ``full`` (everything), ``freeze`` (first k blocks and the embedding lookups frozen),
``bias`` (only bias vectors, LayerNorm biases included), ``lora`` (peft adapters on every dense
layer of every block, "all the dense layers" in section 4.2; ``lora_embed_in`` also adapts the
token embeddings, as the authors' released config does). Which modules are blocks, lookups and
dense layers comes from the model's family (``embtune.models.families``: GPT-NeoX, Llama, Qwen2,
GPT-2). Why count from the real model too: the FLOP budget C = 2·D·(N_F+N_B+N_U) is spent with
these numbers, so they must describe what actually runs; tests assert :func:`count_params` equals
the planning-time :func:`planned_counts` and hand counts (formulas: ``embtune.models.flops``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from embtune.models import families
from embtune.models.flops import Arch, ParamCounts, arch_of
from embtune.models.method_hooks import (
    FreezeSettings,
    LoraSettings,
    Problem,
    apply_bias,
    apply_freeze,
    apply_full,
    apply_lora,
    check_freeze,
    counts_bias,
    counts_freeze,
    counts_full,
    counts_lora,
    freeze_fractions,
    lora_alpha,
)
from embtune.models.run_spec import MethodConfig, MethodSettings

if TYPE_CHECKING:
    import torch

#: (id tag, run-config settings, skip reason or None): one variant of a method for one model.
Variant = tuple[str, dict[str, Any], "str | None"]


@dataclass(frozen=True, kw_only=True)
class Hyper:
    """A method's hyper-parameter column: what the sweep expands, the runs table holds and the
    IsoFLOP profile picks the best of (paper 1 plots "the optimal choice" per point)."""

    column: str                             # run-config and runs-table column
    axis: str                               # x label of its effect figure
    title: str                              # and its title
    logx: bool                              # effect figure on a log x axis
    figure: str                             # effect figure's name (Figs 3 and 5)
    caption: str
    point_label: Callable[[Any], str]       # annotation of an IsoFLOP point with this value
    loss_flops_figure: str | None = None    # loss-vs-FLOP figure by S (Figs 18, 19), if any
    integer: bool = False                   # an integer column (a rank), else a float (a fraction)


def _one_variant(model: Mapping[str, Any], train: Mapping[str, Any], name: str) -> list[Variant]:
    return [(name, {"method": name}, None)]


@dataclass(frozen=True)
class Method:
    """Everything the pipeline needs to know about one fine-tuning method."""

    name: str
    label: str                              # human-readable name in titles ("Full fine-tuning")
    color: str                              # matplotlib colour in every per-method figure
    # (model, its settings) -> model to train; (Arch, its settings) -> analytic N, N_F, N_B, N_U.
    # The settings are an instance of ``settings`` (Any: each hook takes its own method's type).
    apply: Callable[[Any, Any], Any]
    counts: Callable[[Arch, Any], ParamCounts]
    variants: Callable[[Mapping[str, Any], Mapping[str, Any], str], list[Variant]] = _one_variant
    hyper: Hyper | None = None
    #: its run-config keys besides "method", typed (the keys its variants set; embtune.runconfig)
    settings: type[MethodSettings] = MethodSettings
    complete: Callable[[Mapping[str, Any], dict[str, Any]], None] | None = None  # derive settings (recipe)
    parse_tag: Callable[[str], dict[str, Any]] = lambda tag: {}   # id tag -> hyper column
    peak_lr: Callable[[Mapping[str, Any], Mapping[str, Any]], float] | None = None  # (model, train)
    recompute_fraction: float = 2 / 3       # activation checkpointing's re-run share (embtune.plan.cost)
    isoflop_figure: str | None = None       # paper figure id of its IsoFLOP profile ("fig02a")
    synthetic_law: Mapping[str, float] | None = None  # modified-law truth of synthetic tables
    synthetic_settings: Mapping[str, Any] | None = None  # its train.<name> section there (paper grid)
    #: model card (models/st_export.py): ``trained/`` is an adapter and the sentence-transformers
    #: model is the merged copy beside it (and the run's ``model/``), and the paragraph that says so
    merged_export: bool = False
    card_note: str = ""
    #: settings a run's metrics.json records (and its model card's method line words each, one
    #: ``{}`` for the value), and the card's hyper-parameter row: (label, run-config keys shown)
    reported: tuple[tuple[str, str], ...] = ()
    card_row: tuple[str, tuple[str, ...]] | None = None
    #: peak-memory estimate (models/memory.py): hidden-size vectors its backward saves per token and
    #: block (None: full fine-tuning's), and whether its trainable tensors include the embeddings
    saved_vectors: int | None = None
    trains_embeddings: bool = False
    #: the reference the other methods are drawn against (paper 1's Fig. 15: full fine-tuning)
    reference: bool = False
    #: one of the methods paper 1's Algorithm 1 returns ("Use full fine-tuning ... else Use LoRA",
    #: §4.4); the recipe chooses among these unless ``analyze.recipe_methods: any``
    in_algorithm1: bool = False
    #: plan-time check of its own settings against the models (config_checks.grid_checks):
    #: (train, models) -> (problems, warnings), each ((key path), what)
    check: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]],
                    tuple[list[Problem], list[Problem]]] | None = None


#: name -> Method, in plot/table order. Tests may add a method with ``monkeypatch.setitem``.
REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    if method.name in REGISTRY:
        raise ValueError(f"method {method.name!r} is already registered")
    REGISTRY[method.name] = method
    return method


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> Method:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (expected one of {', '.join(REGISTRY)})") from None


def ordered(present: Iterable[str]) -> list[str]:
    """``present`` in registry order, unknown names last (sorted)."""
    present = set(present)
    return [m for m in REGISTRY if m in present] + sorted(present - set(REGISTRY))


def algorithm1() -> tuple[str, ...]:
    """The methods flagged ``in_algorithm1`` (full fine-tuning and LoRA), in registry order."""
    return tuple(m.name for m in REGISTRY.values() if m.in_algorithm1)


def reference() -> Method:
    """The method flagged ``reference`` (full fine-tuning)."""
    return next(m for m in REGISTRY.values() if m.reference)


def color(name: str) -> str | None:
    return REGISTRY[name].color if name in REGISTRY else None


def hyper_column(name: str) -> str | None:
    m = REGISTRY.get(name)
    return m.hyper.column if m and m.hyper else None


def hyper_columns() -> list[str]:
    """Every method's hyper-parameter column, in registry order (runs-table columns)."""
    return [m.hyper.column for m in REGISTRY.values() if m.hyper]


def hyper_types() -> dict[str, bool]:
    """Every hyper-parameter column -> whether it holds integers (runs-table and plan dtypes)."""
    return {m.hyper.column: m.hyper.integer for m in REGISTRY.values() if m.hyper}


def hyper_value(column: str, value: Any) -> Any:
    """``value`` in its column's type (int or float); None stays None."""
    if value is None:
        return None
    return int(value) if hyper_types().get(column) else float(value)


def point_label(name: str, row: Mapping[str, Any]) -> str:
    """An IsoFLOP point's annotation: its hyper-parameter value ('' without one)."""
    m = REGISTRY.get(name)
    if m is None or m.hyper is None or row.get(m.hyper.column) is None:
        return ""
    return m.hyper.point_label(row[m.hyper.column])


def parse_tag(tag: str) -> dict[str, Any]:
    """A run id's method tag (``lora-r8``, ``freeze-2of6``) -> method and hyper column."""
    name = tag.split("-")[0]
    return {"method": name, **(REGISTRY[name].parse_tag(tag) if name in REGISTRY else {})}


def method_config(cfg: Mapping[str, Any] | MethodConfig) -> MethodConfig:
    """The typed method and settings of a mapping with a ``method`` key and the method's own keys
    (a variant's settings, a recipe's hyper-parameters, a test's literal); other keys are ignored."""
    if isinstance(cfg, MethodConfig):
        return cfg
    method = get(cfg["method"])
    return MethodConfig(method.name, method.settings.from_dict(cfg, f"method {method.name}", strict=False))


def planned_counts(spec: Mapping[str, Any], cfg: MethodConfig | Mapping[str, Any]) -> ParamCounts:
    """Analytic N, N_F, N_B, N_U of a params ``models`` entry under a method and its settings
    (a mapping is read by :func:`method_config`)."""
    c = method_config(cfg)
    return get(c.method).counts(arch_of(spec), c.settings)


def apply_method(model: torch.nn.Module, cfg: MethodConfig | Mapping[str, Any]) -> torch.nn.Module:
    """Set ``requires_grad`` (or wrap with LoRA) per the method; returns the model to train
    (a mapping is read by :func:`method_config`)."""
    c = method_config(cfg)
    return get(c.method).apply(model, c.settings)


def base_of(model: torch.nn.Module) -> torch.nn.Module:
    """The underlying transformer (unwraps a peft model)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


# ------------------------------------------ the variants, tags and recipe settings of each method
# (what each does to a model and to the counts: embtune.models.method_hooks)
# ----------------------------------------------------------------------------------- freeze
def _variants_freeze(model: Mapping[str, Any], train: Mapping[str, Any], name: str) -> list[Variant]:
    num_layers = model["num_layers"]
    fracs = freeze_fractions(num_layers, train["freeze"]["fractions"])
    out: list[Variant] = []
    if not fracs:
        out.append((f"{name}-auto", {"method": name},
                    f"{num_layers} blocks is divisible by neither 6 nor 8 (fractions: auto)"))
    for num, denom in fracs:
        frac = Fraction(num, denom)
        k = frac * num_layers
        reason = None if k.denominator == 1 else f"{frac} of {num_layers} blocks is not a whole number"
        out.append((f"{name}-{num}of{denom}", {"method": name, "freeze_fraction": float(frac),
                                                 "frozen_blocks": int(k) if reason is None else None}, reason))
    return out


def _complete_freeze(model: Mapping[str, Any], hyper: dict[str, Any]) -> None:
    if hyper.get("freeze_fraction") is not None:
        hyper["frozen_blocks"] = round(hyper["freeze_fraction"] * model["num_layers"])


def _parse_freeze(tag: str) -> dict[str, Any]:
    num, _, den = tag.partition("-")[2].partition("of")
    return {"freeze_fraction": int(num) / int(den)} if num.isdigit() and den.isdigit() else {}


# ------------------------------------------------------------------------------------- bias
def _variants_bias(model: Mapping[str, Any], train: Mapping[str, Any], name: str) -> list[Variant]:
    """Refused where the family has no biases (e.g. Llama)."""
    reason = families.family_of_spec(model).bias_free_reason(families.dims_of(model))
    return [(name, {"method": name}, reason)]


# ------------------------------------------------------------------------------------- lora
def _variants_lora(model: Mapping[str, Any], train: Mapping[str, Any], name: str) -> list[Variant]:
    lora = train["lora"]
    return [(f"{name}-r{rank}", {"method": name, "lora_rank": rank, "lora_alpha": lora_alpha(rank, lora["alpha"]),
                                 "lora_embed_in": bool(lora["embed_in"]), "lora_dropout": lora["dropout"]}, None)
            for rank in lora["ranks"]]


def _parse_lora(tag: str) -> dict[str, Any]:
    rank = tag.partition("-r")[2]
    return {"lora_rank": int(rank)} if rank.isdigit() else {}


# ------------------------------------------------------------------------- the built-in four
#: Modified-law parameters (raw units) of the synthetic runs tables, chosen to give paper-like losses.
_LAW = {"E": 0.10, "a_d": -0.5, "b_d": 40.0, "alpha": 0.25, "a_s": 0.0, "b_s": 1.0, "c_s": 30.0, "beta": 0.22}

register(Method("full", "Full fine-tuning", "tab:blue", apply_full, counts_full,
                isoflop_figure="fig02a", synthetic_law=_LAW, trains_embeddings=True, reference=True,
                in_algorithm1=True))
register(Method(
    "freeze", "Block freezing", "tab:green", apply_freeze, counts_freeze, _variants_freeze,
    Hyper(column="freeze_fraction", axis="fraction of frozen blocks", title="Block freezing", logx=False,
          figure="fig03_freeze_fraction", caption="Fig. 3: effect of the frozen-block fraction per model",
          point_label=lambda f: f"{1 - f:.2g} active", loss_flops_figure="fig18"),
    settings=FreezeSettings, complete=_complete_freeze, parse_tag=_parse_freeze,
    reported=(("frozen_blocks", "first {} transformer blocks frozen"),), check=check_freeze,
    isoflop_figure="fig02b", synthetic_law={**_LAW, "a_s": 25.0, "b_s": 1.5, "c_s": 32.0}))
register(Method("bias", "Bias-only", "tab:red", apply_bias, counts_bias, _variants_bias,
                isoflop_figure="fig04a", synthetic_law={**_LAW, "E": 0.35, "c_s": 60.0}, saved_vectors=13))
register(Method(
    "lora", "LoRA", "tab:orange", apply_lora, counts_lora, _variants_lora,
    Hyper(column="lora_rank", axis="LoRA rank", title="LoRA rank", logx=True, figure="fig05_lora_rank",
          caption="Fig. 5: effect of the LoRA rank per model", point_label=lambda r: f"r{r}",
          loss_flops_figure="fig19", integer=True),
    settings=LoraSettings, parse_tag=_parse_lora,
    reported=(("lora_rank", "rank {}"),), in_algorithm1=True,
    card_row=("LoRA rank / alpha / dropout", ("lora_rank", "lora_alpha", "lora_dropout")),
    recompute_fraction=1.0,
    isoflop_figure="fig04b", synthetic_law={**_LAW, "a_s": 10.0, "b_s": 2.0}, merged_export=True, saved_vectors=20,
    synthetic_settings={"ranks": [8, 16, 32, 64, 128, 256, 512, 1024, 2048]},   # §4.2's grid
    card_note=("\nThis run trained a LoRA adapter: the run's `trained/` is the peft adapter (load it with peft "
               "on the base model); `trained_merged/` and the run's `model/` hold the merged sentence-transformers "
               "model.\n")))


# ------------------------------------------------------------- counts from the instantiated model
def _lookup_tables(base: torch.nn.Module, family: families.Family) -> set[int]:
    """ids of the embedding tables: each lookup's weight and, with an embedding LoRA, its A
    (vocab×r, indexed by token id). Lookups cost no FLOPs; the paper counts none of them."""
    tables = {id(getattr(m, "base_layer", m).weight) for m in families.lookup_modules(base, family)}
    return tables | {id(p) for n, p in base.named_parameters() if "lora_embedding_A" in n}


def count_params(model: torch.nn.Module, method: str) -> ParamCounts:
    """N, N_F, N_B, N_U from the actual parameters (embedding lookups excluded: docs/fidelity.md#P1-FLOPS).

    N: the base model's parameters. N_F: everything that runs per token, LoRA adapters included
    (unmerged, they run beside the base weights). N_B: N_F less the modules below the first one
    (the embedding lookups, then the blocks in order) that holds a trainable tensor: autograd
    stops there. N_U: the trainable parameters. The same for every method: what differs is
    which tensors ``apply`` left trainable."""
    get(method)
    base = base_of(model)
    family = families.family_of(base)
    tables = _lookup_tables(base, family)

    def numel(modules: list[torch.nn.Module], *, adapters: bool = True, trainable: bool = False) -> int:
        return sum(p.numel() for m in modules for n, p in m.named_parameters()
                   if id(p) not in tables and (adapters or "lora_" not in n)
                   and (p.requires_grad or not trainable))

    stack = [families.lookup_modules(base, family), *([b] for b in families.blocks(base, family))]
    has_trainable = [any(p.requires_grad for m in group for p in m.parameters()) for group in stack]
    first = has_trainable.index(True) if any(has_trainable) else len(stack)
    n_forward = numel([base])
    return ParamCounts(n_total=numel([base], adapters=False), n_forward=n_forward,
                       n_backward=n_forward - sum(numel(group) for group in stack[:first]),
                       n_update=numel([base], trainable=True))


def model_counts(spec: Mapping[str, Any], method: str, *, frozen_blocks: int = 0,
                 lora_rank: int | None = None, lora_embed_in: bool = False) -> ParamCounts:
    """Counts for a params ``models`` entry (family and dims; see ``families.dims_of``), offline,
    from the method's declaration in the registry (``embtune.models.methods``: freeze's frozen
    blocks, bias-only's biases, LoRA's r·(in + out) per dense layer and r·d for an adapter on the
    token embeddings). ``methods.planned_counts`` takes a whole run config instead."""
    return planned_counts(spec, {"method": method, "frozen_blocks": frozen_blocks, "lora_rank": lora_rank,
                                 "lora_embed_in": lora_embed_in})


def analytic_counts(hidden: int, num_layers: int, method: str, *, intermediate: int | None = None,
                    family: str = families.DEFAULT_FAMILY, frozen_blocks: int = 0,
                    lora_rank: int | None = None, lora_embed_in: bool = False,
                    **dims: Any) -> ParamCounts:
    """:func:`model_counts` from dims given as arguments (``dims``: num_attention_heads,
    num_key_value_heads, head_dim, attention_bias, mlp_bias, where the family has them)."""
    spec = {"family": family, "hidden_size": hidden, "num_layers": num_layers,
            "intermediate_size": intermediate, **dims}
    return model_counts(spec, method, frozen_blocks=frozen_blocks, lora_rank=lora_rank,
                        lora_embed_in=lora_embed_in)
