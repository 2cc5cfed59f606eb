"""Load, layer and validate experiment parameters.

Why: params.yaml is the single source of experiment truth. Snakemake (``common.smk``) and the
CLI both go through :func:`load_params` so a broken file fails the same way everywhere, before
any job runs, with a message that names the key and what was expected.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from embtune.models import families

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "params.schema.yaml"


class ParamsError(ValueError):
    """Invalid experiment parameters; the message names the key."""


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParamsError(f"{p}: file not found") from None
    except yaml.YAMLError as err:
        raise ParamsError(f"{p}: not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: expected a mapping at the top level, got {type(data).__name__}")
    return data


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


def validate(params: dict[str, Any], schema: Mapping[str, Any] | None = None,
             source: str = "params") -> dict[str, Any]:
    """Validate against the JSON schema, fill defaults, run cross-key checks; return params.

    Raises :class:`ParamsError` listing every problem as ``<source>: <key>: <what>``."""
    import jsonschema

    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    problems = [f"{source}: {_key_path(e.absolute_path)}: {_describe(e)}" for e in errors]
    if not problems:
        fill_defaults(params, schema, schema)
        problems = [f"{source}: {msg}" for msg in _cross_checks(params)]
    if problems:
        raise ParamsError("invalid parameters:\n  " + "\n  ".join(problems))
    return params


def _describe(err: Any) -> str:
    sub = err.schema if isinstance(err.schema, Mapping) else {}
    expected = sub.get("description")
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(sub.get("properties", {})))
        return f"{err.message} (allowed keys: {allowed})"
    if err.validator == "oneOf" and expected:
        return f"{err.instance!r} is not valid; expected {expected}"
    return err.message + (f" (expected: {expected})" if expected and err.validator != "required" else "")


def _cross_checks(params: Mapping[str, Any]) -> list[str]:
    """Constraints a JSON schema cannot express."""
    problems: list[str] = []
    names = [m["name"] for m in params["models"]]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"models: duplicate model name {dup!r}")
    for i, model in enumerate(params["models"]):
        if model["source"] in ("hub", "local", "gguf") and not model.get("id"):
            problems.append(f"models[{i}].id: required when source is {model['source']!r}")
        try:                                # family-specific dims (planning prices runs from them)
            families.dims_of(model)
        except ValueError as err:
            problems.append(str(err))
        if model["source"] == "tiny" and model["hidden_size"] % model.get("num_attention_heads", max(1, model["hidden_size"] // 32)):
            problems.append(f"models[{i}].hidden_size: must be divisible by num_attention_heads")
    tok = params["tokenizer"]
    if tok["source"] in ("hub", "local", "gguf") and not tok.get("id"):
        problems.append(f"tokenizer.id: required when source is {tok['source']!r}")
    if tok["source"] == "train" and not tok.get("train_corpus"):
        problems.append("tokenizer.train_corpus: required when source is 'train'")
    for i, model in enumerate(params["query_tuning"]["models"]):
        if not model.get("id"):
            problems.append(f"query_tuning.models[{i}].id: required")
    if params["data"]["mteb"]["source"] == "local" and not params["data"]["mteb"].get("local_dir"):
        problems.append("data.mteb.local_dir: required when data.mteb.source is 'local'")
    if params["data"]["arxiv"]["source"] == "published" and not params["data"]["arxiv"].get("published"):
        problems.append("data.arxiv.published: required when data.arxiv.source is 'published'")
    unknown_excl = set(params["evaluate"]["mteb"].get("exclude_from_average", [])) - set(params["evaluate"]["mteb"]["tasks"])
    if unknown_excl:
        problems.append(f"evaluate.mteb.exclude_from_average: {sorted(unknown_excl)} not in evaluate.mteb.tasks")
    return problems


def load_params(paths: Iterable[str | Path] = ("params.yaml",), overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read and layer YAML files (later wins), apply ``overrides``, validate, fill defaults."""
    paths = [Path(p) for p in paths]
    merged: dict[str, Any] = {}
    for p in paths:
        merged = deep_merge(merged, read_yaml(p))
    if overrides:
        merged = deep_merge(merged, overrides)
    return validate(merged, source=" + ".join(map(str, paths)) or "params")
