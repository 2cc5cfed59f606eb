"""A params ``models`` entry (paper 1's decoder suite), typed.

Why a type and not the params dict: a training run carries its model's entry into the train
stage, where the FLOP counts, the memory estimate and the method hooks read its dims. Read as
attributes, a missing or mistyped dim is an error naming the run and key when the run config is
read, not a ``KeyError`` deep in a count. Why at the bottom of ``models/`` (no import from the
package): :mod:`embtune.models.families` reads the dims from it, and everything counts through
the families.

The JSON form is the entry as the params wrote it: the same keys in the same order (``written``),
so the run configs, their ids, rerun hashes and checkpoint fingerprints do not depend on this
class. The params schema (``$defs/decoder_model``) validates the entries before the sweep.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def check_type(where: str, value: Any, kind: str) -> None:
    """``value`` is of the annotated ``kind`` (an int is a float; a bool is neither), else a
    ``ValueError`` naming ``where``. Values are never converted: the JSON form stays as written."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {"int": isinstance(value, int) and not isinstance(value, bool), "float": number,
          "bool": isinstance(value, bool), "str": isinstance(value, str)}[kind]
    if not ok:
        raise ValueError(f"{where}: expected {'an' if kind == 'int' else 'a'} {kind}, got {value!r}")


def kind_of(annotation: Any) -> str:
    """``int`` of ``int | None`` (a string under postponed annotations, a type otherwise)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return next(k for k in ("bool", "int", "float", "str") if k in text)


@dataclass(frozen=True)
class ModelSpec:
    """One decoder of the suite: its name, where it comes from, and the dims the counts use
    (unset: the family's default, :func:`embtune.models.families.dims_of`). The fields are the
    schema's ``decoder_model`` keys; a run needs at least the name and the two dims."""

    name: str
    hidden_size: int
    num_layers: int
    source: str | None = None
    id: str | None = None
    gguf_file: str | None = None
    revision: str | None = None
    variant: str | None = None
    family: str | None = None
    intermediate_size: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    attention_bias: bool | None = None
    mlp_bias: bool | None = None
    pretrain_peak_lr: float | None = None
    pretrain_steps: int | None = None
    vocab_size: int | None = None        # not a params key: an entry built by hand may fix the table's rows
    #: the keys as the params entry wrote them, in its order (the JSON form); not part of equality
    written: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "written")

    @classmethod
    def from_dict(cls, raw: Any, where: str = "model") -> ModelSpec:
        """A run config's ``model`` (a params entry): every key a field, each of its type."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where} must be an object, got {raw!r}")
        unknown = [k for k in raw if k not in cls.keys()]
        missing = [k for k in ("name", "hidden_size", "num_layers") if k not in raw]
        if unknown or missing:
            raise ValueError(f"{where}: " + (f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"))
        kinds = {f.name: kind_of(f.type) for f in dataclasses.fields(cls)}
        for key, value in raw.items():
            if value is not None or key in ("name", "hidden_size", "num_layers"):
                check_type(f"{where}.{key}", value, kinds[key])
        return cls(**copy.deepcopy(dict(raw)), written=tuple(raw))

    @classmethod
    def of(cls, spec: ModelSpec | Mapping[str, Any]) -> ModelSpec:
        """``spec`` typed, as the counts read it: a params entry, or only the dims (a model's
        config read back, a suite row with its N): other keys are ignored, a missing name is '?'."""
        if isinstance(spec, ModelSpec):
            return spec
        known = {k: spec[k] for k in cls.keys() if k in spec}
        missing = [k for k in ("hidden_size", "num_layers") if k not in known]
        if missing:
            raise ValueError(f"models[{known.get('name', '?')}]: missing key {missing[0]!r}")
        return cls(**{"name": "?", **known}, written=tuple(known))

    def to_dict(self) -> dict[str, Any]:
        """The entry as written, then any other field that is set (built here, or given by
        ``dataclasses.replace``), in field order."""
        more = tuple(k for k in self.keys() if k not in self.written and getattr(self, k) is not None)
        return copy.deepcopy({k: getattr(self, k) for k in (*self.written, *more)})
