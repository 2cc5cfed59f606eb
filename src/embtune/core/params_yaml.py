"""Params files as data: strict YAML reading and Snakemake-style layering.

Why a module apart from :mod:`embtune.plan.config` (which re-exports these names): the sweep layers a
study's settings (:func:`deep_merge`) and the cost module reads the throughput file
(:func:`read_yaml`); with these in ``config``, ``config -> config_checks -> sweep -> config``
was an import cycle. This module imports nothing of embtune's.

Why a strict loader: PyYAML keeps the *last* of two equal keys silently (a second ``train:``
block drops the first), and Snakemake reads config files through YTE, which evaluates Python
when the file says ``__use_yte__: true``. A params file is data: both are refused here, with
the file and line (more in :mod:`embtune.plan.config`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

#: YTE's switch (``yte.process_yaml(require_use_yte=True)``, used by Snakemake's config loader):
#: with it, ``?expr`` values are evaluated as Python.
YTE_KEY = "__use_yte__"


class ParamsError(ValueError):
    """Invalid experiment parameters; the message names the file and the key."""


class StrictYAMLError(yaml.YAMLError):
    """A construct the strict loader refuses; ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader that refuses duplicate keys and YTE's ``__use_yte__`` switch.

    The check runs on the key nodes before PyYAML builds the dict (where the first of two equal
    keys would be lost); merge keys (``<<``) may still be overridden, as YAML intends. libyaml's
    parser (``CSafeLoader``) where PyYAML was built with it: every workflow parse reads params.yaml,
    the presets and the schema, ~0.5 CPU s in pure Python."""

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
    except yaml.YAMLError as err:   # one line: where the parser stopped, and why
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        why = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ParamsError(f"{p}{where}: not valid YAML ({why}"
                          + (f" at column {mark.column + 1}" if mark is not None else "") + ")") from None
    except (UnicodeDecodeError, RecursionError) as err:
        raise ParamsError(f"{p}: not readable as YAML text ({type(err).__name__}); expected a UTF-8 YAML file") from None
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
