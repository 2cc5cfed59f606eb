"""The typed sections of one training run, and each ``train.*`` setting declared once.

Why here, in ``models/``: the peak-memory estimate (:mod:`embtune.models.memory`) reads a run's
model, method, counts and train settings, and the method hooks (:mod:`embtune.models.method_hooks`)
its method's settings (:class:`MethodSettings`); both sit below the run configs. So the fields of a
run (:class:`TrainingRun`) and its sections live at the bottom; :class:`embtune.runconfig.RunConfig`
adds what needs the method registry on top of them (the id format, the JSON form, the check of a
method's own keys).

One declaration per setting: each field of :class:`TrainSettings` carries its type, its default
(absent: the setting is required), its help text and its source (the paper's section or the
docs/fidelity.md row it follows, or why it is not the paper's). The params schema's ``train``
section states the same type, default and description, and params.yaml sets every one:
tests/contracts/test_setting_declarations.py checks the three against these fields.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from embtune.core.ranges import check_value
from embtune.models.flops import ParamCounts
from embtune.models.model_spec import ModelSpec, check_type, kind_of


def setting(help: str, source: str, default: Any = dataclasses.MISSING,
            choices: tuple[str, ...] = ()) -> Any:
    """A dataclass field that declares a setting: its ``default`` (none: required), its ``help``
    (the params schema's description), its ``source`` (paper section or ledger row) and, for a
    string, its ``choices`` (the schema's enum)."""
    return field(default=default, metadata={"help": help, "source": source, "choices": choices})


def section(cls: Any, what: str, raw: Any) -> dict[str, Any]:
    """The keys of one nested section, exactly the fields of ``cls`` (by name), type-checked."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{what} must be an object, got {raw!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    missing = [k for k in names if k not in raw]
    unknown = [k for k in raw if k not in names]
    if missing or unknown:
        raise ValueError(f"{what}: " + (f"missing key {missing[0]!r}" if missing else f"unknown key {unknown[0]!r}"))
    for f in dataclasses.fields(cls):
        check_type(f"{what}.{f.name}", raw[f.name], str(f.type))
        choices = f.metadata.get("choices")
        if choices and raw[f.name] not in choices:
            raise ValueError(f"{what}.{f.name}: expected one of {', '.join(choices)}, got {raw[f.name]!r}")
        check_value(f"{what}.{f.name}", f.name, raw[f.name])
    return {k: copy.deepcopy(raw[k]) for k in names}


@dataclass(frozen=True)
class MethodSettings:
    """A method's own run-config keys besides ``method`` (LoRA's rank, freeze's blocks), typed.

    Each method declares a subclass in its registry entry (:mod:`embtune.models.methods`), so the
    hooks that apply and count it read attributes, not keys. A field is ``None`` while the method's
    variants did not set it, and an unset field is not written: the JSON form is the keys the
    variants wrote, in the field order, so the run ids, rerun hashes and fingerprints stay those of
    the dict the sweep built. A field with ``metadata={"recipe": False}`` is one the recipe does
    not carry over from the run it measured (LoRA's dropout: a training knob, not the setting)."""

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def recipe_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("recipe", True))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str, *, strict: bool = True) -> Self:
        """The method's keys of ``raw`` (a run config, a variant's or a runs-table row's settings),
        type-checked as declared; ``strict``: a key the method does not take is an error."""
        unknown = [k for k in raw if k not in cls.keys()]
        if strict and unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r}")
        kinds = {f.name: kind_of(f.type) for f in dataclasses.fields(cls)}
        values = {k: raw[k] for k in cls.keys() if raw.get(k) is not None}
        for key, value in values.items():
            check_type(f"{where}: {key}", value, kinds[key])
        return cls(**copy.deepcopy(values))

    def to_dict(self) -> dict[str, Any]:
        """The set fields, in declaration order (the run config's keys after ``method``)."""
        return {k: getattr(self, k) for k in self.keys() if getattr(self, k) is not None}

    def embedding_rank(self) -> int:
        """Rank of an adapter on the token embeddings (0: none), for the memory estimate."""
        return 0


@dataclass(frozen=True)
class MethodConfig:
    """A method and its typed settings: what the registry's ``apply`` and ``counts`` hooks read."""

    method: str
    settings: MethodSettings = field(default_factory=MethodSettings)


_NOT_PAPER = "not in the paper: "


@dataclass(frozen=True)
class TrainSettings:
    """The ``train.*`` settings one run uses (the params schema's ``train``), in the JSON order.

    Values keep the type they were written with (``max_epochs: 3`` stays an int, which is a
    float to the type checker), so the JSON form, the rerun hashes and the checkpoint
    fingerprints do not depend on this class. A run config always carries every key: the
    defaults here are the params' defaults, which the schema fills in before the sweep runs."""

    batch_size: int = setting("Pairs per optimizer step (in-batch negatives).",
                              "paper 1 §4.1: 1024 sequences (docs/fidelity.md#P1-BATCH)")
    context_length: int = setting("Tokens per text after truncation.",
                                  "paper 1 §4.1, App. D: 75 tokens (docs/fidelity.md#P1-CONTEXT)")
    temperature: float = setting("InfoNCE temperature tau.",
                                 "paper 1 App. D.2: tau = 1/40 (docs/fidelity.md#P1-TEMPERATURE)")
    logit_scale: str = setting(
        "Logits = cos/tau (inverse, App. D) or cos*exp(tau) (exp, paper 1 §3.3 as printed); "
        "docs/fidelity.md#P1-LOGIT-SCALE.",
        "paper 1 §3.3 vs App. D (docs/fidelity.md#P1-LOGIT-SCALE)", "inverse", ("inverse", "exp"))
    weight_decay: float = setting("AdamW weight decay.",
                                  "paper 1 App. D: AdamW.weight_decay = 0.1 (docs/fidelity.md#P1-OPTIMIZER)", 0.1)
    warmup_fraction: float = setting("Linear warm-up share of steps.",
                                     "paper 1 §4.1: warm-up of 1/10 of the steps (docs/fidelity.md#P1-LR-SCHEDULE)",
                                     0.1)
    final_lr_fraction: float = setting(
        "Cosine decays to peak x this: 0 (App. D.1) or 0.1 (paper 1 §4.1); docs/fidelity.md#P1-LR-SCHEDULE.",
        "paper 1 App. D.1 vs §4.1 (docs/fidelity.md#P1-LR-SCHEDULE)", 0.0)
    pooling: str = setting("Masked mean or last-token pooling.",
                           "paper 1 §3.2, App. D.3 (docs/fidelity.md#P1-POOLING)", "mean", ("mean", "last"))
    gradcache_chunk: int = setting("Sequences per GradCache chunk.",
                                   "paper 1 §4.1 uses GradCache; the chunk is a memory knob "
                                   "(docs/fidelity.md#P1-GRADCACHE)", 512)
    gradient_checkpointing: bool = setting("Recompute activations in the backward pass.",
                                           "paper 1 §4.1 (docs/fidelity.md#P1-GRADCACHE)", True)
    compile: str = setting(
        "torch.compile the encoder (embtune.train.kernels): none (eager, default), inductor (fused "
        "generated kernels, for GPUs; compiling takes minutes), aot_eager (traces only: checks the path, "
        "no speed-up). Chunk widths are then rounded up to a multiple of 8 and the width is compiled as a "
        "dynamic dimension within the length buckets. Changes no result.",
        _NOT_PAPER + "a speed knob (embtune.train.kernels)", "none", ("none", "inductor", "aot_eager"))
    min_steps: int = setting("Skip configs that cannot make this many steps.",
                             _NOT_PAPER + "docs/fidelity.md#P1-MIN-STEPS", 10)
    max_epochs: float = setting("Skip configs needing more epochs of data.",
                                "paper 1 §4.1: less than one epoch (docs/fidelity.md#P1-EPOCHS)", 1.0)
    checkpoint_every_steps: int = setting("Periodic checkpoint interval.",
                                          _NOT_PAPER + "resuming after preemption", 200)
    log_every_steps: int = setting("Loss-curve logging interval.", _NOT_PAPER + "the loss curves' resolution", 10)
    final_loss_window: int = setting(
        "Final training loss = mean over the last N steps at most (see final_loss_fraction).",
        "paper 1 §5: the losses from the last steps (docs/fidelity.md#P1-FINAL-LOSS)", 20)
    final_loss_fraction: float = setting(
        "The final-loss window is at most ceil(this x steps) steps and never reaches into warm-up: "
        "n = max(1, min(final_loss_window, ceil(fraction x T), T - warm-up steps)) "
        "(docs/fidelity.md#P1-FINAL-LOSS).",
        "paper 1 §4.2, §5, App. C (docs/fidelity.md#P1-FINAL-LOSS)", 0.05)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


@dataclass(frozen=True)
class RunData:
    """Where a run's inputs are: the packed training pairs and the tokenizer."""

    train_dir: str
    tokenizer_dir: str


_PLANNED = ("n_total", "n_forward", "n_backward", "n_update", "tokens", "steps")


@dataclass(frozen=True)
class Planned:
    """What the sweep planned for a run before it runs: the analytic counts, tokens and steps."""

    counts: ParamCounts                 # N, N_F, N_B, N_U from the params dims (methods.planned_counts)
    tokens: float                       # D the budget allows
    steps: float                        # estimated from train.tokens_per_pair_estimate

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        return {"n_total": c.n_total, "n_forward": c.n_forward, "n_backward": c.n_backward,
                "n_update": c.n_update, "tokens": self.tokens, "steps": self.steps}

    @classmethod
    def from_dict(cls, raw: Any, what: str = "planned") -> Planned:
        if not isinstance(raw, Mapping):
            raise ValueError(f"{what} must be an object, got {raw!r}")
        bad = [k for k in _PLANNED if k not in raw] or [k for k in raw if k not in _PLANNED]
        if bad:
            raise ValueError(f"{what}: {'missing' if bad[0] not in raw else 'unknown'} key {bad[0]!r}")
        for k in _PLANNED:
            check_type(f"{what}.{k}", raw[k], "int" if k.startswith("n_") else "float")
            check_value(f"{what}.{k}", k, raw[k])
        return cls(ParamCounts(*(raw[k] for k in _PLANNED[:4])), raw["tokens"], raw["steps"])


@dataclass(frozen=True)
class TrainingRun:
    """The fields of one training run of paper 1's grid (or of a study): everything ``embtune
    train`` needs. :class:`embtune.runconfig.RunConfig` is this with its id and JSON form."""

    run_id: str
    model: ModelSpec                    # the params ``models`` entry
    method: str                         # a registered method (embtune.models.methods)
    settings: MethodSettings            # the method's own keys (its registry entry's type)
    budget: float                       # C, FLOP
    seed: int
    peak_lr: float
    planned: Planned                    # planning-time counts, tokens and steps (embtune.plan.sweep)
    train: TrainSettings                # the train.* settings the run uses
    data: RunData                       # train_dir, tokenizer_dir
    base_model_dir: str

    @property
    def method_config(self) -> MethodConfig:
        """The method and its settings: what the registry's ``apply`` reads."""
        return MethodConfig(self.method, self.settings)
