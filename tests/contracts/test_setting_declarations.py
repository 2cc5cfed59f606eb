"""Each setting a run carries is declared once, as a field of its typed config (type, default,
help, source): ``train.*`` in :class:`embtune.models.run_spec.TrainSettings`, ``query_tuning.defaults.*``
in :class:`embtune.runconfig.QueryRunConfig`; the params schema and params.yaml agree with it.

Why a check and not a generated schema: the schema is the validator the workflow and ``embtune
plan`` read, and it stays a readable YAML file; this test makes a drifted copy fail. For every
declared field: the schema's property has the same JSON type (``$ref`` resolved), the same
enum for a string with choices, the same default (no default: the key is ``required``) and the
field's help as its description; params.yaml sets the key; the source names a paper section or
a docs/fidelity.md row that exists (or says why the setting is not the paper's).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from embtune.models.run_spec import TrainSettings
from embtune.plan.config import load_schema
from embtune.runconfig import QueryRunConfig

REPO = Path(__file__).resolve().parents[2]
JSON_TYPE = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}


def _resolve(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` with a ``$ref`` into ``$defs`` merged in (the property's own keys win)."""
    ref = prop.get("$ref")
    if not ref:
        return prop
    target = schema["$defs"][ref.removeprefix("#/$defs/")]
    return {**_resolve(schema, target), **{k: v for k, v in prop.items() if k != "$ref"}}


def _json_type(prop: dict[str, Any]) -> str | None:
    if "enum" in prop:
        kinds = {type(v).__name__ for v in prop["enum"]}
        return JSON_TYPE.get(kinds.pop()) if len(kinds) == 1 else None
    return prop.get("type")


def _at(tree: dict[str, Any], section: str, schema: bool) -> dict[str, Any]:
    """The schema node (``schema``) or the params mapping of a dotted ``section``."""
    for key in section.split("."):
        tree = tree["properties"][key] if schema else tree.get(key, {})
    return tree


def mismatches(cls: Any, schema: dict[str, Any], section: str, params: dict[str, Any],
               anchors: set[str]) -> list[str]:
    """Every way the schema's ``section``, params.yaml's ``section`` and the declared fields of
    ``cls`` (those with a help text) disagree, one line each (empty: they agree)."""
    out: list[str] = []
    node = _at(schema, section, True)
    props, required = node["properties"], set(node.get("required", ()))
    for f in dataclasses.fields(cls):
        if "help" not in f.metadata:
            continue
        where = f"{section}.{f.name}"
        if f.name not in props:
            out.append(f"{where}: not in the schema")
            continue
        prop = _resolve(schema, props[f.name])
        if _json_type(prop) != JSON_TYPE[str(f.type)]:
            out.append(f"{where}: schema type {_json_type(prop)!r}, declared {str(f.type)!r}")
        choices = f.metadata.get("choices", ())
        if "enum" in prop and list(prop["enum"]) != list(choices):
            out.append(f"{where}: schema enum {prop['enum']}, declared choices {list(choices)}")
        if f.default is dataclasses.MISSING:
            if f.name not in required or "default" in prop:
                out.append(f"{where}: declared without a default, so the schema must require it")
        elif "default" not in prop or prop["default"] != f.default or type(prop["default"]) is not type(f.default):
            out.append(f"{where}: schema default {prop.get('default')!r}, declared {f.default!r}")
        if prop.get("description") != f.metadata.get("help"):
            out.append(f"{where}: schema description differs from the declared help")
        if f.name not in _at(params, section, False):
            out.append(f"{where}: not set in params.yaml")
        source = f.metadata.get("source", "")
        cited = set(re.findall(r"docs/fidelity\.md#([A-Z0-9-]+)", source))
        if not source or cited - anchors:
            out.append(f"{where}: source {source!r} cites no paper section or a missing ledger row")
    return out


def _anchors() -> set[str]:
    return set(re.findall(r'<a id="([A-Z0-9-]+)"></a>', (REPO / "docs" / "fidelity.md").read_text()))


def _params() -> dict[str, Any]:
    return yaml.safe_load((REPO / "params.yaml").read_text())


@pytest.mark.parametrize(("cls", "section"), [(TrainSettings, "train"), (QueryRunConfig, "query_tuning.defaults")])
def test_every_setting_agrees_with_its_declaration(cls: Any, section: str) -> None:
    assert mismatches(cls, load_schema(), section, _params(), _anchors()) == []


def test_the_query_defaults_are_exactly_the_declared_settings() -> None:
    """A query run config carries every default (the train section also holds the grid's keys)."""
    declared = [f.name for f in dataclasses.fields(QueryRunConfig) if "help" in f.metadata]
    assert declared == list(_at(load_schema(), "query_tuning.defaults", True)["properties"])


def test_the_check_finds_a_drifted_schema_and_a_missing_params_key() -> None:
    """A checker that passes on anything proves nothing: change one thing of each kind."""
    schema, params = copy.deepcopy(load_schema()), _params()
    train = schema["properties"]["train"]
    train["properties"]["weight_decay"]["default"] = 0.01
    train["properties"]["pooling"]["enum"] = ["mean", "last", "cls"]
    train["properties"]["min_steps"]["description"] = "Something else."
    train["properties"]["log_every_steps"]["type"] = "number"
    train["required"] = [k for k in train["required"] if k != "temperature"]
    del params["train"]["compile"]
    found = mismatches(TrainSettings, schema, "train", params, _anchors() - {"P1-BATCH"})
    assert [line.split(":")[0] for line in found] == [
        "train.batch_size", "train.temperature", "train.weight_decay", "train.pooling", "train.compile",
        "train.min_steps", "train.log_every_steps"]
    assert "schema default 0.01, declared 0.1" in found[2]
    assert "schema type 'number', declared 'int'" in found[6]


def test_declared_choices_are_the_ones_the_code_acts_on() -> None:
    """A string setting's choices are also the forms its code branches on: the loss's logit
    scales, the compile backends and the poolings the model export maps."""
    from embtune.models.st_export import POOLING_MODES
    from embtune.train.kernels import COMPILE_BACKENDS
    from embtune.train.losses import LOGIT_SCALE_FORMS

    choices = {f.name: tuple(f.metadata["choices"]) for f in dataclasses.fields(TrainSettings) if f.metadata["choices"]}
    assert choices == {"logit_scale": tuple(LOGIT_SCALE_FORMS), "pooling": tuple(POOLING_MODES),
                       "compile": tuple(COMPILE_BACKENDS)}
