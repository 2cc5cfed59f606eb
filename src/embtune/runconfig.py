"""Typed run configs: one training run (paper 1) or one query-tuning run (paper 2), and its id.

Why one module: a run id is a directory name, a Snakemake wildcard and the join key of every
table, so it is written by the sweep and read back by the runs table and the query table. When
each side spelled the format on its own, a change to one silently broke the other. Here each
kind of run is a frozen dataclass that owns

- its fields (what the stage needs to run it; a training run's, with its typed sections, are
  :class:`~embtune.models.run_spec.TrainingRun`'s, one layer down, so that the memory estimate in
  ``models/`` reads the same typed run),
- its id format (``make_id``) and the inverse (``parse_id``: a ``ValueError`` naming the bad id),
- its JSON form: ``to_dict`` is exactly the dict the pipeline passes around (the rules hand it
  to the stage as ``--run-config-json``, manifests record it, and the rerun hashes depend on it,
  so the same config always gives byte-identical JSON); ``from_dict`` is the inverse and refuses
  a missing or unknown key by name.

:mod:`embtune.plan.sweep` builds them from the params; the ``train`` and ``tune-query`` stages parse
them with ``from_dict``.

Training run id: ``<model>__<method tag>__c<budget>__s<seed>``, e.g.
``tiny-d64-l2__lora-r8__c1e12__s0``. A study's own run (``train.studies``, paper 1 App. D/F)
ends in ``__<study>__<factor>-<value>...`` (factors sorted), so it never takes a main-grid id.
The method tag is the method registry's (:mod:`embtune.models.methods`: each method's
``variants`` writes it, its ``parse_tag`` reads it back).

Query run id: ``default``, or what differs from ``query_tuning.defaults`` as ``<key>-<value>``
joined by ``+`` (keys sorted), e.g. ``lr-1e-07`` or ``batch_size-28+lr_scaling-sqrt``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from embtune.core.ranges import check_value
from embtune.models import methods as registry
from embtune.models.model_spec import ModelSpec, check_type
from embtune.models.run_spec import Planned, RunData, TrainingRun, TrainSettings, section, setting

SEP = "__"      # between the parts of a training run id (no model or study name contains it)

#: A valid query run id (the params schema's ``$defs/name`` pattern): a path component, no ``..``/``__``.
RUN_NAME = re.compile(r"^(?!.*(?:\.\.|__))[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STARTS_WITH_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*-")


def format_budget(budget: float) -> str:
    """1.5e15 -> '1.5e15'; 2.4e16 -> '2.4e16' (short, filesystem-friendly, round-trips)."""
    exp = math.floor(math.log10(budget))
    mant = budget / 10**exp
    return f"{mant:.3g}e{exp}"


def fmt_value(value: Any) -> str:
    """A setting's value as an id writes it: ``{:g}`` for floats (``1e-07``, ``0.1``), else ``str``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _key_value(part: str, what: str, the_id: str) -> tuple[str, str]:
    key, sep, value = part.partition("-")
    if not sep or not value or not _KEY.fullmatch(key):
        raise ValueError(f"{what} {the_id!r}: {part!r} is not <key>-<value>")
    return key, value


# ------------------------------------------------------------------------------ training runs
@dataclass(frozen=True)
class RunId:
    """The parts of a training run id; ``str()`` writes the id, :meth:`RunConfig.parse_id` reads it."""

    model: str
    tag: str                                        # the method registry's tag: full, lora-r8, freeze-2of6
    budget: float
    seed: int
    study: str | None = None                        # None: the main grid
    factors: tuple[tuple[str, str], ...] = ()       # (factor, value as the id writes it), sorted

    def __str__(self) -> str:
        suffix = "" if self.study is None else SEP + SEP.join(
            [self.study, *(f"{k}-{v}" for k, v in self.factors)])
        return f"{self.model}{SEP}{self.tag}{SEP}c{format_budget(self.budget)}{SEP}s{self.seed}{suffix}"

    @property
    def method(self) -> str:
        return registry.parse_tag(self.tag)["method"]

    def columns(self) -> dict[str, Any]:
        """What the id tells the runs table: model, method and its hyper column (``lora_rank``,
        ``freeze_fraction``, as the method parses its tag), study (``main`` for the main grid),
        budget, seed."""
        return {"model": self.model, **registry.parse_tag(self.tag), "study": self.study or "main",
                "budget": self.budget, "seed": self.seed}


#: Keys of every training run config, in the order the sweep writes them; a method's own
#: settings (``lora_rank``, ``frozen_blocks``, ...) follow ``method``.
_RUN_HEAD = ("run_id", "model", "method")
_RUN_TAIL = ("budget", "seed", "peak_lr", "planned", "train", "data", "base_model_dir")
_RUN_DICTS = ("model", "planned", "train", "data")


@dataclass(frozen=True)
class RunConfig(TrainingRun):
    """One training run of paper 1's grid (or of a study): its fields
    (:class:`~embtune.models.run_spec.TrainingRun`, which the memory estimate reads), its id and
    its JSON form, whose method keys the registry checks."""

    @classmethod
    def make_id(cls, model: str, tag: str, budget: float, seed: int, study: str | None = None,
                factors: Mapping[str, Any] | None = None) -> str:
        """The id of a run; ``study`` and its ``factors`` (a study's own run) end it."""
        pairs = tuple((k, fmt_value(v)) for k, v in sorted((factors or {}).items()))
        if pairs and study is None:
            raise ValueError(f"run id of {model} {tag}: factors {dict(pairs)} without a study")
        return str(RunId(model, tag, float(budget), int(seed), study, pairs))

    @classmethod
    def parse_id(cls, run_id: str) -> RunId:
        """The inverse of :meth:`make_id`; a ``ValueError`` naming ``run_id`` if it is not one."""
        parts = run_id.split(SEP) if isinstance(run_id, str) else []
        if len(parts) < 4 or not all(parts[:5]):
            raise ValueError(f"run id {run_id!r}: expected <model>__<method tag>__c<budget>__s<seed>"
                             f"[__<study>[__<factor>-<value>...]]")
        model, tag, budget, seed = parts[:4]
        try:
            registry.get(registry.parse_tag(tag)["method"])
        except ValueError as err:
            raise ValueError(f"run id {run_id!r}: method tag {tag!r}: {err}") from None
        try:
            if budget[:1] != "c" or seed[:1] != "s":
                raise ValueError
            value, number = float(budget[1:]), int(seed[1:])
        except ValueError:
            raise ValueError(f"run id {run_id!r}: expected c<budget>__s<seed> after the method tag, "
                             f"got {budget!r}, {seed!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"run id {run_id!r}: budget {budget[1:]!r} is not a positive number")
        factors = tuple(_key_value(p, "run id", run_id) for p in parts[5:])
        return RunId(model, tag, value, number, parts[4] if len(parts) > 4 else None, factors)

    def to_dict(self) -> dict[str, Any]:
        """The run config as the pipeline passes it (key order as the sweep has always written it)."""
        return copy.deepcopy({"run_id": self.run_id, "model": self.model.to_dict(), "method": self.method,
                              **self.settings.to_dict(), "budget": self.budget, "seed": self.seed,
                              "peak_lr": self.peak_lr, "planned": self.planned.to_dict(),
                              "train": dataclasses.asdict(self.train), "data": dataclasses.asdict(self.data),
                              "base_model_dir": self.base_model_dir})

    @classmethod
    def from_dict(cls, run: Mapping[str, Any]) -> RunConfig:
        """The inverse of :meth:`to_dict`: every key of the config, the method's own keys (the
        fields of its registry entry's ``settings`` type, type-checked) and nothing else."""
        if not isinstance(run, Mapping):
            raise ValueError(f"run config: expected a JSON object, got {type(run).__name__}")
        name = run.get("run_id", "?")
        missing = [k for k in (*_RUN_HEAD, *_RUN_TAIL) if k not in run]
        if missing:
            raise ValueError(f"run config {name!r}: missing key {missing[0]!r}")
        try:
            method = registry.get(run["method"])
        except ValueError as err:
            raise ValueError(f"run config {name!r}: method: {err}") from None
        own = method.settings.keys()
        unknown = [k for k in run if k not in (*_RUN_HEAD, *_RUN_TAIL, *own)]
        if unknown:
            raise ValueError(f"run config {name!r}: unknown key {unknown[0]!r} (method {method.name} "
                             f"takes {', '.join(own) or 'no settings of its own'})")
        for key in _RUN_DICTS:
            if not isinstance(run[key], Mapping):
                raise ValueError(f"run config {name!r}: {key} must be an object, got {run[key]!r}")
        for key, kind in (("budget", "float"), ("seed", "int"), ("peak_lr", "float"), ("base_model_dir", "str")):
            check_type(f"run config {name!r}: {key}", run[key], kind)
            check_value(f"run config {name!r}: {key}", key, run[key])
        where = f"run config {name!r}: "
        return cls(run_id=run["run_id"], model=ModelSpec.from_dict(run["model"], where + "model"), method=run["method"],
                   settings=method.settings.from_dict({k: run[k] for k in run if k in own}, where[:-2]),
                   budget=run["budget"], seed=run["seed"], peak_lr=run["peak_lr"],
                   planned=Planned.from_dict(run["planned"], where + "planned"),
                   train=TrainSettings(**section(TrainSettings, where + "train", run["train"])),
                   data=RunData(**section(RunData, where + "data", run["data"])),
                   base_model_dir=run["base_model_dir"])


# -------------------------------------------------------------------------- query-tuning runs
def _parse_bool(text: str) -> bool:
    if text not in ("True", "False"):
        raise ValueError(text)
    return text == "True"


_FROM_TEXT = {"float": float, "int": int, "str": str, "bool": _parse_bool}


@dataclass(frozen=True, kw_only=True)
class QueryRunConfig:
    """One query-tuning run of paper 2 (App. M): everything ``embtune tune-query`` needs.

    Its settings are the keys of ``query_tuning.defaults``, each declared once here (type,
    default, help, source: tests/contracts/test_setting_declarations.py holds the params schema
    and params.yaml to them), then ``batches_per_epoch`` resolved for the run's batch size and the learning
    rate actually used, ``lr_effective`` (both by :func:`embtune.plan.sweep.query_plan`)."""

    qrun_id: str
    model: dict[str, Any]               # the params ``query_tuning.models`` entry
    lr: float = setting("Learning rate.", "paper 2 §2.3, App. E: 5e-8 (docs/fidelity.md#P2-DEFAULTS)")
    batch_size: int = setting("Triplets per batch.", "paper 2 §2.3, App. E: 14 (docs/fidelity.md#P2-DEFAULTS)")
    margin: float = setting("Triplet margin.", "paper 2 §2.3: margin 0.1 (docs/fidelity.md#P2-DEFAULTS)")
    distance: str = setting(
        "Distance in the triplet loss: dist = Euclidean (of dist_embeddings), as torch's TripletMarginLoss and "
        "sentence-transformers' TripletLoss compute the loss paper 2 names; cos = 1 - cosine "
        "(docs/fidelity.md#P2-TRIPLET-DISTANCE).",
        "paper 2 App. E (docs/fidelity.md#P2-TRIPLET-DISTANCE)", "dist", ("cos", "dist"))
    dist_embeddings: str = setting(
        "The vectors the euclidean distance compares, in the dist triplet loss and PND's dist measure: the "
        "encoder's output before its Normalize module (raw, paper 2 Tables 1 and 3 report different cos and "
        "dist counts) or after it (normalized: dist is then a function of cos) "
        "(docs/fidelity.md#P2-DIST-EMBEDDINGS).",
        "paper 2 Tables 1, 3 (docs/fidelity.md#P2-DIST-EMBEDDINGS)", "raw", ("raw", "normalized"))
    batches_per_epoch: int = setting("Batches between validations.",
                                     "paper 2 App. E: 1000 batches per epoch (docs/fidelity.md#P2-EPOCH)", 1000)
    epoch_size: str = setting(
        "What stays fixed when a run's batch_size differs from the default's. samples: batches_per_epoch x "
        "default batch_size samples per epoch (paper 2 Tables 6-8, 10, 12: 14000); batches: batches_per_epoch "
        "batches (Tables 9, 11).",
        "paper 2 Tables 6-12 (docs/fidelity.md#P2-EPOCH)", "samples", ("samples", "batches"))
    patience: int = setting("Stop after this many non-improving epochs.",
                            "paper 2 App. E (docs/fidelity.md#P2-STOPPING)", 10)
    max_epochs: int = setting(
        "Hard cap on epochs: not in paper 2, which stops on patience only; also T of the L and Q schedules "
        "(docs/fidelity.md#P2-MAX-EPOCHS).", "not in the paper: docs/fidelity.md#P2-MAX-EPOCHS", 100)
    saved_epoch: str = setting(
        "Weights the run keeps: best = the epoch that last improved (loss and errors both below the best so "
        "far; epoch 0 = the untuned encoder), last = the epoch tuning stopped at. The paper says neither "
        "(docs/fidelity.md#P2-STOPPING).",
        "paper 2 App. E says neither (docs/fidelity.md#P2-STOPPING)", "best", ("best", "last"))
    weight_decay: float = setting(
        "Weight decay: decoupled for adamw (p <- p - lr*wd*p), an L2 gradient term for the other optimizers "
        "(torch semantics).", "paper 2 App. M.2 (docs/fidelity.md#P2-WEIGHT-DECAY)", 0.0)
    scheduler: str = setting("LR schedule (paper 2, Table 19).", "paper 2 Table 19 (docs/fidelity.md#P2-SCHEDULERS)",
                             "none", ("none", "L", "Q", "E0.95", "E0.98"))
    scheduler_unit: str = setting(
        "Clock of the schedule (docs/fidelity.md#P2-SCHEDULERS). epoch (default: the clock under which Table "
        "17's exponential rows still tune): t = epoch index, T = max_epochs. step: t = optimizer step over the "
        "whole run, T = max_epochs x batches_per_epoch (Table 19: t the current training step, T the total "
        "number of training steps; with early stopping the planned maximum).",
        "paper 2 Tables 17, 19 (docs/fidelity.md#P2-SCHEDULERS)", "epoch", ("step", "epoch"))
    optimizer: str = setting(
        "Optimizer (App. E, Table 20): adamax = betas (0.9, 0.999); adamax_nomomentum = betas (0, 0); sgd "
        "without momentum; adadelta (M.8).", "paper 2 App. E, Table 20 (docs/fidelity.md#P2-OPTIMIZERS)",
        "adamw", ("adamw", "adamax", "adamax_nomomentum", "sgd", "adadelta"))
    freeze: str = setting(
        "A freeze spec name (none, emb.base, emb, emb_b0a, emb_b0ai, emb_b0aio, emb_b0, emb_b0-5, emb_b0-10, "
        "emb_odw).", "paper 2 Table 1 (docs/fidelity.md#P2-FREEZE-SPECS)", "emb")
    lr_scaling: str = setting("Scale lr with batch_size/14.", "paper 2 App. M.1.1 (docs/fidelity.md#P2-LR-SCALING)",
                              "none", ("none", "linear", "sqrt"))
    train_data: str = setting(
        "Tuning data.", "paper 2 App. A: MS MARCO, or an arXiv domain (docs/fidelity.md#P2-MSMARCO-TRIPLETS, "
        "docs/fidelity.md#P2-ARXIV-FLAVOURS)", "msmarco", ("msmarco", "arxiv-math", "arxiv-physics", "arxiv-cs"))
    seed: int = setting("Tuning seed.", "not in the paper: one seed per run, recorded", 0)
    tune_doc_tower: bool = setting(
        "Tune the document tower too, as a second copy with the same freeze spec and one optimizer (paper 2 "
        "App. L, Fig. 11a E5-full); evaluation then embeds documents with the tuned tower. false = the "
        "paper's default: the text encoder is frozen.", "paper 2 §2.3, App. L (docs/fidelity.md#P2-BOTH-TOWERS)",
        False)
    lr_effective: float                 # the learning rate used (lr_scaling applied, by the sweep)

    DEFAULT_ID: ClassVar[str] = "default"

    @classmethod
    def setting_keys(cls) -> tuple[str, ...]:
        """The keys an id may name: those of ``query_tuning.defaults``."""
        return tuple(f.name for f in dataclasses.fields(cls) if "help" in f.metadata)

    @classmethod
    def make_id(cls, diff: Mapping[str, Any]) -> str:
        """``default``, or ``<key>-<value>`` per setting that differs from the defaults, joined by
        ``+`` (keys sorted); a ``ValueError`` if that is not a valid name (<= 100 characters)."""
        unknown = sorted(set(diff) - set(cls.setting_keys()))
        if unknown:
            raise ValueError(f"query run id: {unknown[0]!r} is not a query_tuning.defaults key")
        qrun = cls.DEFAULT_ID if not diff else "+".join(f"{k}-{fmt_value(v)}" for k, v in sorted(diff.items()))
        if len(qrun) > 100 or not RUN_NAME.match(qrun):
            raise ValueError(f"run id {qrun!r} is not a valid name (<= 100 letters, digits, _ . + -; "
                             f"no '..' or '__')")
        return qrun

    @classmethod
    def parse_id(cls, qrun_id: str) -> dict[str, Any]:
        """The inverse of :meth:`make_id`: what differs from the defaults, each value typed as its
        field (``lr-1e-07`` -> ``{"lr": 1e-07}``; ``default`` -> ``{}``); a ``ValueError`` naming
        ``qrun_id`` if it is not one."""
        if qrun_id == cls.DEFAULT_ID:
            return {}
        if not isinstance(qrun_id, str) or not qrun_id:
            raise ValueError(f"query run id {qrun_id!r}: expected 'default' or <key>-<value>[+...]")
        parts: list[str] = []
        for chunk in qrun_id.split("+"):
            if parts and not _STARTS_WITH_KEY.match(chunk):    # a '+' inside a value ("1e+20")
                parts[-1] += "+" + chunk
            else:
                parts.append(chunk)
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        out: dict[str, Any] = {}
        for part in parts:
            key, text = _key_value(part, "query run id", qrun_id)
            if key not in cls.setting_keys() or key in out:
                why = "twice" if key in out else "is not a query_tuning.defaults key"
                raise ValueError(f"query run id {qrun_id!r}: {key!r} {why}")
            try:
                out[key] = _FROM_TEXT[types[key]](text)
            except ValueError:
                raise ValueError(f"query run id {qrun_id!r}: {key} {text!r} is not a {types[key]}") from None
        return out

    def to_dict(self) -> dict[str, Any]:
        """The run config as the pipeline passes it (``qrun_id``, ``model``, the settings in the
        order of ``query_tuning.defaults``, ``lr_effective``)."""
        return copy.deepcopy({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def from_dict(cls, run: Mapping[str, Any]) -> QueryRunConfig:
        """The inverse of :meth:`to_dict`; refuses a missing or unknown key by name."""
        if not isinstance(run, Mapping):
            raise ValueError(f"query run config: expected a JSON object, got {type(run).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        name = run.get("qrun_id", "?")
        missing = [k for k in names if k not in run]
        unknown = [k for k in run if k not in names]
        if missing or unknown:
            what = f"missing key {missing[0]!r}" if missing else f"unknown key {unknown[0]!r}"
            raise ValueError(f"query run config {name!r}: {what}")
        if not isinstance(run["model"], Mapping):
            raise ValueError(f"query run config {name!r}: model must be an object, got {run['model']!r}")
        for f in dataclasses.fields(cls):
            if f.name != "model":
                check_type(f"query run config {name!r}: {f.name}", run[f.name], str(f.type))
                check_value(f"query run config {name!r}: {f.name}", f.name, run[f.name])
        return cls(**copy.deepcopy(dict(run)))
