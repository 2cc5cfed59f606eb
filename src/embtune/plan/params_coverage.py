"""Which (key, value kind) pairs of params.yaml a preset exercises: the CI coverage check.

Why: a path of the study that only the paper-scale params.yaml selects (a narrow-domain sweep, the
held-out model, both towers tuned) is first run on a cluster, after days of GPU time, unless CI
runs it at micro scale. This module turns "does CI exercise everything params.yaml uses?" into a
set difference that a test can assert (tests/contracts/test_params_coverage.py).

Definitions (pure functions on already-loaded, validated, default-filled params):

* **key path**: dotted mapping keys, list indices collapsed to ``[]``
  (``query_tuning.grids[].cross.lr_scaling[]``). Keys of free-form mappings (a grid's ``cross``,
  ``base``, ``points``; a study's ``base``) are part of the path, so a grid that crosses
  ``lr_scaling`` is a different path from one that crosses ``lr``.
* **value kind** of a leaf:
  ``=<value>`` for a choice (a schema ``enum``/``const`` value, a boolean, a freeze-spec name;
  values that take one code path with different numbers are one family, :data:`FAMILIES`;
  values of ``sweeps.<k>``, grid ``cross``/``choices``/``points``/``base`` and study ``base`` entries
  are judged by the schema of the ``defaults`` / ``train`` key they set),
  ``null``, ``number``, ``str`` (free text: names, paths, ids);
  for a list ``[]`` (empty) or ``[..]`` (non-empty) and then its items under ``<path>[]``;
  for an empty mapping ``{}``.

A query run's setting counts by the run config it makes, wherever it is written (a sweep, a grid,
the defaults; :func:`run_pairs`), so CI can pack params.yaml's one-factor values into a few grid
points. A params file *uses* a pair when some leaf of it has that kind; a preset *exercises* it when its
effective params (params.yaml layered with the preset exactly as :func:`embtune.plan.config.load_params`
and the workflow do, defaults filled) use it. :func:`missing` is what params.yaml uses and no
preset exercises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from embtune.plan.config import _resolve, load_schema
from embtune.train.freeze_specs import FREEZE_SPECS

Pair = tuple[str, str]

#: Strings that are choices although the schema types them as free strings.
EXTRA_CHOICES: dict[str, tuple[str, ...]] = {"query_tuning.defaults.freeze": FREEZE_SPECS}


def _freeze_family(spec: str) -> str:
    """Table 1's rows by the code path they take (embtune.train.freeze_specs): the three partial
    block-0 specs differ only in a tuple of sub-module names, the ``emb_b0-K`` ranges only in K."""
    if spec in ("emb_b0a", "emb_b0ai", "emb_b0aio"):
        return "emb_b0<part>"
    return "emb_b0-K" if re.fullmatch(r"emb_b0-\d+", spec) else spec


def _scheduler_family(name: str) -> str:
    """E0.95 and E0.98 are one exponential schedule with two decay factors (Table 19)."""
    return "E<gamma>" if re.fullmatch(r"E[0-9.]+", name) else name


#: Values that are one code path with different numbers count as one kind (a family): the
#: freeze-spec families and the exponential scheduler.
FAMILIES: dict[str, Callable[[str], str]] = {
    "query_tuning.defaults.freeze": _freeze_family,
    "query_tuning.defaults.scheduler": _scheduler_family,
}

#: Where a path takes its schema from when the schema leaves it open (free-form mappings whose keys
#: are those of another section): (path prefix, schema path the next key is looked up under).
_ALIASES: tuple[tuple[str, str], ...] = (
    ("query_tuning.sweeps.", "query_tuning.defaults."),
    ("query_tuning.grids[].base.", "query_tuning.defaults."),
    ("query_tuning.grids[].cross.", "query_tuning.defaults."),
    ("query_tuning.grids[].random.choices.", "query_tuning.defaults."),
    ("query_tuning.grids[].points[].", "query_tuning.defaults."),
    ("train.studies[].base.", "train."),
    ("train.studies[].cross.", "train."),
)


def _schema_path(path: str) -> str:
    """The path whose schema judges ``path``'s values: an aliased free-form key is looked up in
    the section it sets; a swept value (``sweeps.lr[]``, ``cross.lr[]``) is judged as the
    ``defaults`` scalar it replaces."""
    for prefix, target in _ALIASES:
        if path.startswith(prefix) and len(path) > len(prefix):
            key, dot, tail = path[len(prefix):].partition(".")
            if target == "query_tuning.defaults." or prefix == "train.studies[].cross.":
                key = key.removesuffix("[]")
            return f"{target}{key}{dot}{tail}"
    return path


def _split(path: str) -> list[str]:
    """``a.b[].c`` -> ``[a, b, [], c]``."""
    parts: list[str] = []
    for segment in path.split("."):
        name = segment.replace("[]", "")
        if name:
            parts.append(name)
        parts.extend(["[]"] * segment.count("[]"))
    return parts


def schema_at(path: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The (resolved) schema of ``path``, following properties / additionalProperties / items;
    None where the schema says nothing."""
    node: Mapping[str, Any] | None = _resolve(schema, schema)
    for part in _split(_schema_path(path)):
        if node is None:
            return None
        node = _resolve(node, schema)
        if part == "[]":
            items = node.get("items")
            node = items if isinstance(items, Mapping) else _branch(node, "items", schema)
        else:
            props = node.get("properties", {})
            if part in props:
                node = props[part]
            elif isinstance(node.get("additionalProperties"), Mapping):
                node = node["additionalProperties"]
            else:
                node = None
        node = _resolve(node, schema) if node is not None else None
    return node


def _branch(node: Mapping[str, Any], key: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``key`` of the first oneOf/anyOf branch that has it (e.g. a list-or-null value's items)."""
    for alt in (*node.get("oneOf", ()), *node.get("anyOf", ())):
        alt = _resolve(alt, root)
        if isinstance(alt.get(key), Mapping):
            return alt[key]
    return None


def _choices(sub: Mapping[str, Any] | None, root: Mapping[str, Any]) -> set[Any]:
    if sub is None:
        return set()
    out: set[Any] = set(sub.get("enum", ()))
    if "const" in sub:
        out.add(sub["const"])
    for alt in (*sub.get("oneOf", ()), *sub.get("anyOf", ())):
        out |= _choices(_resolve(alt, root), root)
    return out


def value_kind(path: str, value: Any, schema: Mapping[str, Any]) -> str:
    """The kind of one scalar leaf (module docstring)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"={str(value).lower()}"
    choices = _choices(schema_at(path, schema), schema)
    key = _schema_path(path).removesuffix("[]")
    if isinstance(value, str) and (value in choices or value in EXTRA_CHOICES.get(key, ())):
        family = FAMILIES.get(key)
        return f"={family(value) if family else value}"
    if isinstance(value, (int, float)):
        return "number"
    return "str"


def pairs(params: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> set[Pair]:
    """Every (key path, value kind) that ``params`` uses."""
    schema = schema or load_schema()
    return set(_walk(params, "", schema))


def run_pairs(params: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> set[Pair]:
    """:func:`pairs` with each query-run setting's value judged by the run config it makes.

    A value in a sweep, a grid's ``cross``/``random``/``points``/``base`` and ``defaults`` reaches
    tune-query as the same key of one run config (embtune.plan.query_sweep.query_plan), so its kind counts
    under ``query_tuning.defaults.<key>`` wherever it was written; the place keeps a ``set``
    kind (the key is used there) and lists keep ``[..]`` / ``[]``. So CI may pack several of
    params.yaml's one-factor values into one grid point, but must still sweep every key params.yaml
    sweeps and use every grid form (cross, points, base keys) it uses."""
    schema = schema or load_schema()
    out: set[Pair] = set()
    for path, kind in pairs(params, schema):
        target = _schema_path(path)
        if kind in ("[..]", "[]", "{}") or not target.startswith("query_tuning.defaults.") \
                or path.startswith("query_tuning.defaults."):
            out.add((path, kind))
            continue
        out.add((target.removesuffix("[]"), kind))
        out.add((path.removesuffix("[]"), "set"))
    return out


def _walk(node: Any, path: str, schema: Mapping[str, Any]) -> Iterator[Pair]:
    if isinstance(node, Mapping):
        if not node:
            yield path, "{}"
        for key, sub in node.items():
            yield from _walk(sub, f"{path}.{key}" if path else str(key), schema)
    elif isinstance(node, list):
        yield path, "[..]" if node else "[]"
        for item in node:
            yield from _walk(item, f"{path}[]", schema)
    else:
        yield path, value_kind(path, node, schema)


def missing(reference: Mapping[str, Any], exercised: Iterable[Mapping[str, Any]],
            schema: Mapping[str, Any] | None = None) -> set[Pair]:
    """The pairs ``reference`` (params.yaml) uses that none of ``exercised`` (effective CI params) uses."""
    schema = schema or load_schema()
    covered: set[Pair] = set()
    for params in exercised:
        covered |= run_pairs(params, schema)
    return run_pairs(reference, schema) - covered


def format_pairs(items: Iterable[Pair]) -> str:
    return "\n".join(f"  {path}: {kind}" for path, kind in sorted(items))


#: Per-run settings: a study's ``base`` / ``cross`` can give one training run its own ``train.*``
#: value, a sweep, grid ``base``/``cross``/``points`` one query run its own ``defaults.*`` value,
#: so one CI pipeline can run every alternative the schema allows for them.
PER_RUN_SECTIONS = ("train.", "query_tuning.defaults.")


def schema_kinds(params: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> set[Pair]:
    """:func:`pairs` keyed by the schema path that judges each value (``sweeps.optimizer[]``,
    ``grids[].points[].optimizer`` and ``defaults.optimizer`` are all
    ``query_tuning.defaults.optimizer``; ``train.studies[].base.pooling`` is ``train.pooling``)."""
    schema = schema or load_schema()
    out: set[Pair] = set()
    for path, kind in pairs(params, schema):
        target = _schema_path(path)
        if target.startswith("query_tuning.defaults."):
            target = target.removesuffix("[]")
        out.add((target, kind))
    return out


def alternatives(params: Mapping[str, Any], schema: Mapping[str, Any] | None = None,
                 sections: Iterable[str] = PER_RUN_SECTIONS) -> set[Pair]:
    """Every choice the schema allows for a per-run key that ``params`` (params.yaml) sets:
    ``(schema path, "=value")`` for each enum / const value (by family) and both booleans."""
    schema = schema or load_schema()
    sections = tuple(sections)
    out: set[Pair] = set()
    for path, _ in pairs(params, schema):
        target = _schema_path(path)
        if not target.startswith(sections) or ".studies" in target:
            continue
        sub = schema_at(target, schema)
        if sub is None:
            continue
        values: set[Any] = set(_choices(sub, schema))
        if sub.get("type") == "boolean":
            values |= {True, False}
        key = target.removesuffix("[]") if target.startswith("query_tuning.") else target
        for value in values:
            if isinstance(value, bool):
                out.add((key, f"={str(value).lower()}"))
            elif isinstance(value, str):
                family = FAMILIES.get(key)
                out.add((key, f"={family(value) if family else value}"))
    return out


def missing_alternatives(reference: Mapping[str, Any], exercised: Iterable[Mapping[str, Any]],
                         schema: Mapping[str, Any] | None = None) -> set[Pair]:
    """Per-run choices the schema allows on keys ``reference`` sets that no ``exercised`` params use."""
    schema = schema or load_schema()
    covered: set[Pair] = set()
    for params in exercised:
        covered |= schema_kinds(params, schema)
    return alternatives(reference, schema) - covered
