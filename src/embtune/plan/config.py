"""Load, layer and validate experiment parameters.

Why: params.yaml is the single source of experiment truth. Snakemake (``common.smk``) and the
CLI both go through :func:`validate` so a broken file fails the same way everywhere, before
any job runs, with a message that names the file, the key and what was expected. The checks
between keys, which a JSON schema cannot express, are :mod:`embtune.plan.config_checks`.

Why a strict loader: PyYAML keeps the *last* of two equal keys silently (a second ``train:``
block drops the first), and Snakemake reads config files through YTE, which evaluates Python
when the file says ``__use_yte__: true``. A params file is data: both are refused here, with
the file and line.

Where Snakemake reads configs (9.x): ``snakemake.common.configfile._load_configfile`` calls
``yte.process_yaml(f, require_use_yte=True)``; the Snakefile's ``configfile:`` directive reaches it
from ``Workflow.configfile`` (the Snakefile reads params.yaml with :func:`read_yaml` *before* the
directive, so YTE never sees a refused file), while ``--configfile`` files reach it from
``ConfigSettings`` while the command line is parsed, before any Snakefile code runs: for those,
``common.smk`` can only refuse to go on. Check a preset from elsewhere with
``embtune validate-params params.yaml PRESET`` before handing it to Snakemake.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from embtune.core.params_yaml import (  # noqa: F401  (re-exported: their home before the import cycle went)
    YTE_KEY,
    ParamsError,
    StrictLoader,
    StrictYAMLError,
    deep_merge,
    read_layers,
    read_yaml,
)
from embtune.plan.config_checks import cross_checks, describe_error, grid_checks, key_path, plan_checks

#: The params schema ships inside the package (package data), so the library never reads the
#: workflow/ folder and an installed embtune validates without a checkout;
#: workflow/schemas/params.schema.yaml is a symlink to it for readers of the workflow.
SCHEMA_RESOURCE = "schemas/params.schema.yaml"



def load_schema(path: str | Path | None = None) -> dict[str, Any]:
    """The params schema: ``path``, or the one shipped in the package (:data:`SCHEMA_RESOURCE`)."""
    if path is not None:
        return read_yaml(path)
    with resources.as_file(resources.files("embtune").joinpath(SCHEMA_RESOURCE)) as shipped:
        return read_yaml(shipped)


def fill_defaults(instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """Fill ``default:`` values from the schema into ``instance`` (recursively, in place)."""
    schema = _resolve(schema, root)
    if isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            sub_r = _resolve(sub, root)
            if key not in instance and "default" in sub_r:
                instance[key] = copy.deepcopy(sub_r["default"])
            if key in instance:
                fill_defaults(instance[key], sub_r, root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), Mapping):
        for item in instance:
            fill_defaults(item, schema["items"], root)
    return instance


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not ref:
        return schema
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    merged = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return _resolve(merged, root)


_MISSING = object()


def key_owner(parts: Sequence[Any], layers: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The layer (file) whose value sits at key path ``parts`` after :func:`deep_merge`.

    Mappings merge key by key and anything else replaces wholesale, so the owner is the last
    layer that has the path down to the first non-mapping (a list owns all of its items)."""
    for name, data in reversed(layers):
        node: Any = data
        for part in parts:
            if not isinstance(node, Mapping):
                break
            node = node.get(part, _MISSING)
            if node is _MISSING:
                break
        if node is not _MISSING:
            return name
    return None


def validate(params: dict[str, Any], schema: Mapping[str, Any] | None = None,
             source: str = "params",
             layers: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> dict[str, Any]:
    """:func:`validate_plan`, returning the params only."""
    return validate_plan(params, schema, source, layers)[0]


def validate_plan(params: dict[str, Any], schema: Mapping[str, Any] | None = None,
                  source: str = "params",
                  layers: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> tuple[dict[str, Any], Any]:
    """Validate against the JSON schema, fill defaults, run cross-key checks; return params and
    their plan (an :class:`embtune.plan.sweep.StudyPlan`: the checks expand it, once, and the workflow
    reads it instead of expanding it again).

    Raises :class:`ParamsError` listing every problem as ``<file>: <key>: <what>``, where
    ``<file>`` is the layer of ``layers`` that set the key (``source`` when none did)."""
    import jsonschema

    schema = schema or load_schema()
    problems: list[tuple[tuple[Any, ...], str]] = list(_non_finite(params))
    bad_numbers = {parts for parts, _ in problems}
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    problems += [(tuple(e.absolute_path), describe_error(e)) for e in errors
                 if tuple(e.absolute_path) not in bad_numbers]
    if not problems:
        fill_defaults(params, schema, schema)
        problems = cross_checks(params) + plan_checks(params, schema)
    plan = None
    if not problems:
        plan, problems = grid_checks(params)
    if problems:
        lines = [f"{key_owner(parts, layers) or source}: {key_path(parts)}: {what}"
                 for parts, what in problems]
        raise ParamsError("invalid parameters:\n  " + "\n  ".join(lines))
    return params, plan


def _non_finite(node: Any, parts: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    """NaN / inf anywhere (YAML's ``.nan``, ``.inf``): JSON schema's number bounds let ``inf``
    through (``inf > 0``) and every budget, rate or temperature must be finite."""
    if isinstance(node, float) and not math.isfinite(node):
        yield parts, f"must be a finite number, got {node!r}"
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _non_finite(value, (*parts, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _non_finite(value, (*parts, i))


def load_params(paths: Iterable[str | Path] = ("params.yaml",), overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read (strictly) and layer YAML files (later wins), apply ``overrides``, validate, fill
    defaults. Errors name the file that set the offending key."""
    return load_plan(paths, overrides)[0]


def load_plan(paths: Iterable[str | Path] = ("params.yaml",), overrides: Mapping[str, Any] | None = None,
              ) -> tuple[dict[str, Any], Any]:
    """:func:`load_params` and the plan its validation expanded (:func:`validate_plan`)."""
    layers: list[tuple[str, dict[str, Any]]] = read_layers(paths)
    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = deep_merge(merged, data)
    if overrides:
        layers.append(("overrides", dict(overrides)))
        merged = deep_merge(merged, overrides)
    return validate_plan(merged, source=" + ".join(name for name, _ in layers) or "params", layers=layers)
