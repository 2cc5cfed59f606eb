"""Load, layer and validate experiment parameters.

Why: params.yaml is the single source of experiment truth. Snakemake (``common.smk``) and the
CLI both go through :func:`validate` so a broken file fails the same way everywhere, before
any job runs, with a message that names the file, the key and what was expected.

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
import itertools
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from embtune.models import families

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "params.schema.yaml"

#: YTE's switch (``yte.process_yaml(require_use_yte=True)``, used by Snakemake's config loader):
#: with it, ``?expr`` values are evaluated as Python.
YTE_KEY = "__use_yte__"

#: Forms of ``id`` per model source (the schema's ``path`` pattern already bans metacharacters).
HUB_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
PACKAGE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

# What YAML 1.1 (PyYAML) reads as a *string* although it looks like a number: an exponent
# without a dot in the mantissa or without a sign (``1e11``, ``1.0e11``).
_NUMBER_LIKE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))[eE]([+-]?\d+)$")


class ParamsError(ValueError):
    """Invalid experiment parameters; the message names the file and the key."""


class ParamsWarning(UserWarning):
    """A parameter that is valid but probably not what was meant (names the key)."""


class StrictYAMLError(yaml.YAMLError):
    """A construct the strict loader refuses; ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and YTE's ``__use_yte__`` switch.

    The check runs on the key nodes before PyYAML builds the dict (where the first of two equal
    keys would be lost); merge keys (``<<``) may still be overridden, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key == YTE_KEY:
                raise StrictYAMLError(f"{YTE_KEY}: executable YAML templates (YTE) are refused in "
                                      f"params files; write plain values", line)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: let PyYAML report it
                continue
            if first is not None:
                raise StrictYAMLError(f"duplicate key {key!r} (first defined at line {first}); "
                                      f"YAML would silently keep only the last one", line)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read one params file with :class:`StrictLoader`; errors name the file (and line)."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=StrictLoader)  # noqa: S506 (StrictLoader is a SafeLoader)
    except FileNotFoundError:
        raise ParamsError(f"{p}: file not found") from None
    except StrictYAMLError as err:
        raise ParamsError(f"{p}:{err.line}: {err.message}") from None
    except yaml.YAMLError as err:
        raise ParamsError(f"{p}: not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def read_layers(paths: Iterable[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """``(file name, contents)`` per file, strictly read, in layering order."""
    return [(str(p), read_yaml(p)) for p in paths]


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Layer ``override`` on ``base`` the way Snakemake layers ``--configfile``: mappings merge
    key by key, everything else (lists included) is replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_schema(path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    return read_yaml(path)


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


def _key_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


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
    """Validate against the JSON schema, fill defaults, run cross-key checks; return params.

    Raises :class:`ParamsError` listing every problem as ``<file>: <key>: <what>``, where
    ``<file>`` is the layer of ``layers`` that set the key (``source`` when none did)."""
    import jsonschema

    schema = schema or load_schema()
    problems: list[tuple[tuple[Any, ...], str]] = list(_non_finite(params))
    bad_numbers = {parts for parts, _ in problems}
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    problems += [(tuple(e.absolute_path), _describe(e)) for e in errors
                 if tuple(e.absolute_path) not in bad_numbers]
    if not problems:
        fill_defaults(params, schema, schema)
        problems = _cross_checks(params) + _plan_checks(params, schema)
    if not problems:
        problems = _grid_checks(params)
    if problems:
        lines = [f"{key_owner(parts, layers) or source}: {_key_path(parts)}: {what}"
                 for parts, what in problems]
        raise ParamsError("invalid parameters:\n  " + "\n  ".join(lines))
    return params


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


def number_hint(value: Any) -> str:
    """For ``'1e11'`` (a string to YAML 1.1): how to write it so YAML reads a number."""
    m = _NUMBER_LIKE.match(value) if isinstance(value, str) else None
    if not m:
        return ""
    mant, exp = m.groups()
    mant = mant if "." in mant else f"{mant}.0"
    exp = exp if exp[0] in "+-" else f"+{exp}"
    return (f"; YAML 1.1 reads {value!r} as a string (it needs a dot and a signed exponent): "
            f"write {mant}e{exp}")


def _describe(err: Any) -> str:
    sub = err.schema if isinstance(err.schema, Mapping) else {}
    expected = sub.get("description")
    hint = number_hint(err.instance)
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(sub.get("properties", {})))
        return f"{err.message} (allowed keys: {allowed})"
    if err.validator == "oneOf" and expected:
        return f"{err.instance!r} is not valid; expected {expected}{hint}"
    return (err.message + (f" (expected: {expected})" if expected and err.validator != "required" else "")
            + hint)


Problems = list[tuple[tuple[Any, ...], str]]


def _cross_checks(params: Mapping[str, Any]) -> Problems:
    """Constraints a JSON schema cannot express, as ``(key path, what)``."""
    return (_model_checks(params["models"]) + _tokenizer_checks(params["tokenizer"])
            + _query_model_checks(params["query_tuning"]) + _data_checks(params))


def _duplicates(parts: tuple[Any, ...], models: Sequence[Mapping[str, Any]]) -> Problems:
    names = [m["name"] for m in models]
    return [(parts, f"duplicate model name {dup!r}") for dup in sorted({n for n in names if names.count(n) > 1})]


def _model_checks(models: Sequence[Mapping[str, Any]]) -> Problems:
    problems = _duplicates(("models",), models)
    for i, model in enumerate(models):
        if model["source"] in ("hub", "local", "gguf") and not model.get("id"):
            problems.append((("models", i, "id"), f"required when source is {model['source']!r}"))
        try:                                # family-specific dims (planning prices runs from them)
            families.dims_of(model)
        except ValueError as err:
            problems.append((("models", i), str(err)))
        if model["source"] == "tiny" and model["hidden_size"] % model.get("num_attention_heads", max(1, model["hidden_size"] // 32)):
            problems.append((("models", i, "hidden_size"), "must be divisible by num_attention_heads"))
        problems += _id_form(("models", i, "id"), model)
    return problems


def _tokenizer_checks(tok: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    if tok["source"] in ("hub", "local", "gguf") and not tok.get("id"):
        problems.append((("tokenizer", "id"), f"required when source is {tok['source']!r}"))
    if tok["source"] == "train" and not tok.get("train_corpus"):
        problems.append((("tokenizer", "train_corpus"), "required when source is 'train'"))
    return problems + _id_form(("tokenizer", "id"), tok)


def _query_model_checks(qt: Mapping[str, Any]) -> Problems:
    from embtune.train.freeze_specs import FreezeSpecError, check_spec

    problems = _duplicates(("query_tuning", "models"), qt["models"])
    for i, model in enumerate(qt["models"]):
        if not model.get("id"):
            problems.append((("query_tuning", "models", i, "id"), "required"))
        problems += _id_form(("query_tuning", "models", i, "id"), model)
    specs = [(("query_tuning", "defaults", "freeze"), qt["defaults"]["freeze"])]
    specs += [(("query_tuning", "sweeps", "freeze", i), s) for i, s in enumerate(qt["sweeps"].get("freeze", []))]
    for parts, spec in specs:
        try:
            check_spec(spec)
        except FreezeSpecError as err:
            problems.append((parts, str(err)))
    return problems


def _data_checks(params: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    if params["data"]["mteb"]["source"] == "local" and not params["data"]["mteb"].get("local_dir"):
        problems.append((("data", "mteb", "local_dir"), "required when data.mteb.source is 'local'"))
    if params["data"]["arxiv"]["source"] == "published" and not params["data"]["arxiv"].get("published"):
        problems.append((("data", "arxiv", "published"), "required when data.arxiv.source is 'published'"))
    unknown_excl = set(params["evaluate"]["mteb"].get("exclude_from_average", [])) - set(params["evaluate"]["mteb"]["tasks"])
    if unknown_excl:
        problems.append((("evaluate", "mteb", "exclude_from_average"),
                         f"{sorted(unknown_excl)} not in evaluate.mteb.tasks"))
    return problems


def _id_form(parts: tuple[Any, ...], spec: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """A hub id is ``[org/]name`` (a model's *name* is the path component, never its id);
    a package id is an importable module name."""
    ident, source = spec.get("id"), spec.get("source")
    if not ident:
        return []
    if source == "hub" and not HUB_ID.match(ident):
        return [(parts, f"{ident!r} is not a hub id ([org/]name: letters, digits, _ . -, no '..')")]
    if source == "package" and not PACKAGE_ID.match(ident):
        return [(parts, f"{ident!r} is not an importable package name")]
    return []


def _grid_checks(params: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """Grid-level checks: explicit freeze fractions must be whole blocks, the grid non-empty."""
    from embtune.sweep import training_runs

    train = params["train"]
    problems: list[tuple[tuple[Any, ...], str]] = []
    fractions = train["freeze"]["fractions"]
    if "freeze" in train["methods"] and fractions != "auto":
        layers = sorted({m["num_layers"] for m in params["models"]})
        for i, frac in enumerate(fractions):
            fits = [n for n in layers if _whole(frac * n)]
            parts = ("train", "freeze", "fractions", i)
            if not fits:
                problems.append((parts, f"{frac!r} is not k/L for any model's block count L "
                                        f"{layers}: every freeze run of it would be skipped"))
            elif len(fits) < len(layers):
                warnings.warn(ParamsWarning(
                    f"{_key_path(parts)}: {frac!r} is k/L only for L in {fits}; the models with "
                    f"{sorted(set(layers) - set(fits))} blocks skip it (see skipped.csv)"), stacklevel=3)
    if not problems:
        runs, skipped = training_runs(params)  # type: ignore[arg-type]
        if not runs:
            why = "; ".join(sorted({s.reason for s in skipped})[:3])
            problems.append((("train",), f"the grid has no feasible run: all {len(skipped)} "
                                         f"configurations are skipped ({why})"))
    if not problems:
        problems = _study_feasibility(params)
    return problems


# ---------------------------------------------------------------- studies and grids
def _sub_validate(value: Any, sub: Mapping[str, Any], schema: Mapping[str, Any],
                  parts: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """``value`` against one schema entry (its ``$ref``s resolved in the full schema)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator({"$defs": schema.get("$defs", {}), **sub})
    return [((*parts, *e.absolute_path), _describe(e)) for e in validator.iter_errors(value)]


def _setting_problems(settings: Mapping[str, Any], allowed: Mapping[str, Any], schema: Mapping[str, Any],
                      parts: tuple[Any, ...], listed: bool) -> list[tuple[tuple[Any, ...], str]]:
    """Keys of a grid's ``base``/``cross``/``choices``/point must be settings of ``allowed``
    (the schema entries they override) and their values (each list item when ``listed``) valid
    there: the grid is checked by the same schema as the defaults it changes."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    for key, value in settings.items():
        if key not in allowed:
            problems.append(((*parts, key), f"unknown setting (allowed: {', '.join(sorted(allowed))})"))
            continue
        for j, item in enumerate(value) if listed else [(None, value)]:
            where = (*parts, key) if j is None else (*parts, key, j)
            problems += _sub_validate(item, allowed[key], schema, where)
    return problems


def _plan_checks(params: Mapping[str, Any], schema: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """``query_tuning.grids`` and ``train.studies``: names, models and settings."""
    return _query_grid_checks(params, schema) + _study_checks(params, schema)


def _query_grid_checks(params: Mapping[str, Any], schema: Mapping[str, Any]) -> Problems:
    from embtune.sweep import query_plan

    qt = params["query_tuning"]
    allowed = schema["properties"]["query_tuning"]["properties"]["defaults"]["properties"]
    models = {m["name"] for m in qt["models"]}
    names = [g["name"] for g in qt.get("grids", [])]
    problems: Problems = [(("query_tuning", "sweep_models", j), f"{name!r} is not in query_tuning.models")
                          for j, name in enumerate(qt.get("sweep_models") or []) if name not in models]
    problems += [(("query_tuning", "grids"), f"duplicate grid name {dup!r}")
                 for dup in sorted({n for n in names if names.count(n) > 1})]
    for i, grid in enumerate(qt.get("grids", [])):
        problems += _one_grid_checks(grid, ("query_tuning", "grids", i), models, allowed, schema)
    if not problems:
        try:
            query_plan(params)  # type: ignore[arg-type]
        except ValueError as err:
            problems.append((("query_tuning", "grids"), str(err)))
    return problems


def _one_grid_checks(grid: Mapping[str, Any], parts: tuple[Any, ...], models: set[str],
                     allowed: Mapping[str, Any], schema: Mapping[str, Any]) -> Problems:
    """One query grid: known models and settings, no factor varied twice, enough random draws,
    valid freeze specs."""
    from embtune.train.freeze_specs import FreezeSpecError, check_spec

    problems: Problems = [((*parts, "models", j), f"{name!r} is not in query_tuning.models")
                          for j, name in enumerate(grid.get("models", [])) if name not in models]
    choices = (grid.get("random") or {}).get("choices", {})
    problems += _setting_problems(grid.get("base", {}), allowed, schema, (*parts, "base"), False)
    problems += _setting_problems(grid.get("cross", {}), allowed, schema, (*parts, "cross"), True)
    problems += _setting_problems(choices, allowed, schema, (*parts, "random", "choices"), True)
    for j, point in enumerate(grid.get("points", [])):
        problems += _setting_problems(point, allowed, schema, (*parts, "points", j), False)
    varied = [("cross", set(grid.get("cross", {}))), ("random.choices", set(choices)),
              ("points", {k for p in grid.get("points", []) for k in p})]
    for (a, ka), (b, kb) in itertools.combinations(varied, 2):
        if ka & kb:
            problems.append((parts, f"{sorted(ka & kb)} varied by both {a} and {b}"))
    size = math.prod(len(v) for v in choices.values()) if choices else 0
    if choices and grid["random"]["n"] > size:
        problems.append(((*parts, "random", "n"), f"{grid['random']['n']} draws asked from "
                                                  f"only {size} combinations of choices"))
    specs = [grid.get("base", {}).get("freeze")] + list(grid.get("cross", {}).get("freeze", []))
    specs += list(choices.get("freeze", [])) + [p.get("freeze") for p in grid.get("points", [])]
    for spec in filter(None, specs):
        try:
            check_spec(spec)
        except FreezeSpecError as err:
            problems.append((parts, str(err)))
    return problems


def _study_checks(params: Mapping[str, Any], schema: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    from embtune.sweep import STUDY_FACTORS, study_points, study_train

    train = params["train"]
    train_schema = schema["properties"]["train"]
    allowed = {k: v for k, v in train_schema["properties"].items() if k != "studies"}
    models = {m["name"] for m in params["models"]}
    problems: list[tuple[tuple[Any, ...], str]] = []
    names = [s["name"] for s in train.get("studies", [])]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append((("train", "studies"), f"duplicate study name {dup!r}"))
    for i, study in enumerate(train.get("studies", [])):
        parts = ("train", "studies", i)
        for j, name in enumerate(study.get("models", [])):
            if name not in models:
                problems.append(((*parts, "models", j), f"{name!r} is not in models"))
        base_problems = _setting_problems(study.get("base", {}), allowed, schema, (*parts, "base"), False)
        problems += base_problems
        for row in study.get("rows", []):
            if row in STUDY_FACTORS and row not in study.get("cross", {}):
                problems.append(((*parts, "rows"), f"{row!r} is not one of the study's cross factors"))
        if not base_problems:  # the settings each point trains with, against the train schema
            point_schema = {**train_schema, "properties": allowed}
            for factors in study_points(study):  # type: ignore[arg-type]
                settings = study_train(train, study, factors)  # type: ignore[arg-type]
                found = _sub_validate(settings, point_schema, schema, (*parts, "base"))
                if found:
                    problems += found
                    break
    return problems


def _study_feasibility(params: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """A study whose every configuration is skipped would leave an empty table: say so now."""
    from embtune.sweep import training_plan

    runs, skipped, members = training_plan(params)  # type: ignore[arg-type]
    feasible = {r["run_id"] for r in runs}
    reasons = {s.run_id: s.reason for s in skipped}
    problems: list[tuple[tuple[Any, ...], str]] = []
    for i, study in enumerate(params["train"].get("studies", [])):
        ids = [m["run_id"] for m in members if m["study"] == study["name"]]
        if ids and not feasible.intersection(ids):
            why = "; ".join(sorted({reasons.get(r, "") for r in ids})[:3])
            problems.append((("train", "studies", i), f"study {study['name']!r} has no feasible run: "
                                                       f"all {len(ids)} configurations are skipped ({why})"))
    return problems


def _whole(x: float) -> bool:
    return abs(x - round(x)) <= 1e-9 * max(1.0, abs(x))


def load_params(paths: Iterable[str | Path] = ("params.yaml",), overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read (strictly) and layer YAML files (later wins), apply ``overrides``, validate, fill
    defaults. Errors name the file that set the offending key."""
    layers: list[tuple[str, dict[str, Any]]] = read_layers(paths)
    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = deep_merge(merged, data)
    if overrides:
        layers.append(("overrides", dict(overrides)))
        merged = deep_merge(merged, overrides)
    return validate(merged, source=" + ".join(name for name, _ in layers) or "params", layers=layers)
