"""Cross-key checks of params.yaml: the constraints its JSON schema cannot express.

Why a module apart from :mod:`embtune.plan.config`: loading, layering and schema validation are
there; here are the checks between keys (model and tokenizer ids, data sources, the id forms,
the training and query grids, studies and their feasibility), each returning
``(key path, what)`` problems that :func:`embtune.plan.config.validate` reports with the file that
set the key.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from embtune.models import families
from embtune.models import methods as registry

#: Forms of ``id`` per model source (the schema's ``path`` pattern already bans metacharacters).
HUB_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
PACKAGE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class ParamsWarning(UserWarning):
    """A parameter that is valid but probably not what was meant (names the key)."""


def key_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


# What YAML 1.1 (PyYAML) reads as a *string* although it looks like a number: an exponent
# without a dot in the mantissa or without a sign (``1e11``, ``1.0e11``).
_NUMBER_LIKE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))[eE]([+-]?\d+)$")


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


def describe_error(err: Any) -> str:
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


def cross_checks(params: Mapping[str, Any]) -> Problems:
    """Constraints a JSON schema cannot express, as ``(key path, what)``."""
    return (_model_checks(params["models"]) + _tokenizer_checks(params["tokenizer"])
            + _query_model_checks(params["query_tuning"]) + _data_checks(params) + _tracking_checks(params))


def _tracking_checks(params: Mapping[str, Any]) -> Problems:
    """The tracker's package must import here, not fail in the 500th job."""
    from embtune.train.tracking import tracker_problem

    problem = tracker_problem(params.get("tracking", {}).get("log_with", "dvclive"))
    return [(("tracking", "log_with"), problem)] if problem else []


def _duplicates(parts: tuple[Any, ...], models: Sequence[Mapping[str, Any]]) -> Problems:
    names = [m["name"] for m in models]
    return [(parts, f"duplicate model name {dup!r}") for dup in sorted({n for n in names if names.count(n) > 1})]


def _model_checks(models: Sequence[Mapping[str, Any]]) -> Problems:
    problems = _duplicates(("models",), models)
    for i, model in enumerate(models):
        if model["source"] in ("hub", "local", "gguf") and not model.get("id"):
            problems.append((("models", i, "id"), f"required when source is {model['source']!r}"))
        problems += _revision(("models", i, "revision"), model)
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
    problems += _revision(("tokenizer", "revision"), tok)
    if tok["source"] == "train" and not tok.get("train_corpus"):
        problems.append((("tokenizer", "train_corpus"), "required when source is 'train'"))
    return problems + _id_form(("tokenizer", "id"), tok)


def _query_model_checks(qt: Mapping[str, Any]) -> Problems:
    from embtune.train.freeze_specs import FreezeSpecError, check_spec

    problems = _duplicates(("query_tuning", "models"), qt["models"])
    for i, model in enumerate(qt["models"]):
        if not model.get("id"):
            problems.append((("query_tuning", "models", i, "id"), "required"))
        problems += _revision(("query_tuning", "models", i, "revision"), model)
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


def _revision(parts: tuple[Any, ...], spec: Mapping[str, Any]) -> Problems:
    """A hub artifact is staged at a pinned revision (compute nodes cannot resolve one)."""
    if spec.get("source") == "hub" and not spec.get("revision"):
        return [(parts, "required when source is 'hub' (a branch, tag, 40-hex commit or refs/pr/N, e.g. step143000 for Pythia)")]
    return []


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
    if source == "package":
        from embtune.models.packages import PACKAGES, registry_name

        if registry_name(ident) not in PACKAGES:
            return [(parts, f"{ident!r} is not a known weight package (expected one of "
                            f"{', '.join(sorted(PACKAGES))}: embtune.models.packages)")]
    return []


def grid_checks(params: Mapping[str, Any]) -> tuple[Any, list[tuple[tuple[Any, ...], str]]]:
    """Grid-level checks: each method's own (``Method.check``: explicit freeze fractions must be
    whole blocks), the grid non-empty, the query grids' ids valid, every study with a feasible
    run. Returns the plan (a :class:`embtune.plan.sweep.StudyPlan`, expanded here once; None if it
    could not be) and the problems."""
    from embtune.plan.query_sweep import expand_query
    from embtune.plan.sweep import StudyPlan, expand_training

    train = params["train"]
    problems: list[tuple[tuple[Any, ...], str]] = []
    for method in registry.REGISTRY.values():          # each method's own settings (freeze: whole blocks)
        if method.check and method.name in train["methods"]:
            errors, warns = method.check(train, params["models"])
            problems += errors
            for parts, what in warns:
                warnings.warn(ParamsWarning(f"{key_path(parts)}: {what}"), stacklevel=3)
    if problems:
        return None, problems
    try:
        qruns, qmembers = expand_query(params)  # type: ignore[arg-type]
    except ValueError as err:
        return None, [(("query_tuning", "grids"), str(err))]
    plan = StudyPlan(*expand_training(params), qruns, qmembers)  # type: ignore[arg-type]
    if not plan.runs:
        why = "; ".join(sorted({s.reason for s in plan.skipped})[:3])
        problems.append((("train",), f"the grid has no feasible run: all {len(plan.skipped)} "
                                     f"configurations are skipped ({why})"))
    if not problems:
        problems = _study_feasibility(params, plan)
    return plan, problems


# ---------------------------------------------------------------- studies and grids
def _sub_validate(value: Any, sub: Mapping[str, Any], schema: Mapping[str, Any],
                  parts: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """``value`` against one schema entry (its ``$ref``s resolved in the full schema)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator({"$defs": schema.get("$defs", {}), **sub})
    return [((*parts, *e.absolute_path), describe_error(e)) for e in validator.iter_errors(value)]


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


def plan_checks(params: Mapping[str, Any], schema: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """``query_tuning.grids`` and ``train.studies``: names, models and settings."""
    return _query_grid_checks(params, schema) + _study_checks(params, schema)


def _query_grid_checks(params: Mapping[str, Any], schema: Mapping[str, Any]) -> Problems:
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
    return problems       # the ids the grids make are checked when the plan is expanded (grid_checks)


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
    set_keys = set().union(*(k for _, k in varied), grid.get("base", {}))
    problems += [((*parts, "reference", j), f"{key!r} is neither varied by the grid nor in its base "
                  f"(expected one of {', '.join(sorted(set_keys)) or 'no keys: the grid sets none'})")
                 for j, key in enumerate(grid.get("reference", [])) if key not in set_keys]
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
    from embtune.plan.sweep import STUDY_FACTORS, study_points, study_train

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


def _study_feasibility(params: Mapping[str, Any], plan: Any) -> list[tuple[tuple[Any, ...], str]]:
    """A study whose every configuration is skipped would leave an empty table: say so now."""
    members = plan.members
    feasible = {r.run_id for r in plan.runs}
    reasons = {s.run_id: s.reason for s in plan.skipped}
    problems: list[tuple[tuple[Any, ...], str]] = []
    for i, study in enumerate(params["train"].get("studies", [])):
        ids = [m["run_id"] for m in members if m["study"] == study["name"]]
        if ids and not feasible.intersection(ids):
            why = "; ".join(sorted({reasons.get(r, "") for r in ids})[:3])
            problems.append((("train", "studies", i), f"study {study['name']!r} has no feasible run: "
                                                       f"all {len(ids)} configurations are skipped ({why})"))
    return problems
