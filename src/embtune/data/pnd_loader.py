"""What a PND set's loader module declares, so that one generic stage and one generic rule
prepare every set of an existing kind (``embtune prepare-pnd <source>``).

Why a protocol instead of a stage per dataset: a stage per dataset meant a driver, a CLI entry,
a stage_paths entry, a Snakemake rule, a layout method, a hub-download line and two dvc.yaml
lines for each new set, all alike. A loader module (named by its sets' registry entry,
:mod:`embtune.core.pnd_sets`) now declares

- ``FILES_HELP``: what its ``--files`` are (the raw files, combined in order);
- ``OPTIONS``: its other settings as :class:`Option` s, each one key of its ``data.<source>``
  params section and one ``--<key>`` argument of the stage (``min_passages`` ->
  ``--min-passages``; a ``bool`` one is a flag, off unless given);
- ``prepare(files, settings) -> Prepared``: the evaluation set frames, keyed by set name, and
  the manifest fields; bad input raises :class:`~embtune.core.errors.DataError`.

The stage writes the frames (under the registry's file names) and the manifest atomically; the
rule turns the params section into the arguments (:func:`option_args`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from embtune.core.errors import DataError

if TYPE_CHECKING:   # the workflow imports this module to build the DAG: no polars there
    import polars as pl

PARQUET_MAGIC = b"PAR1"     # a loader tells a hub parquet file from the official JSON by it


@dataclass(frozen=True, kw_only=True)
class Option:
    """One loader setting: ``data.<source>.<key>`` in params, ``--<key with dashes>`` on the stage.
    ``many``: a list of values; a ``bool`` option is a flag (present when true)."""

    key: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    many: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")


@dataclass
class Prepared:
    """A loader's result: set name -> its frame (one row per query), and the manifest's fields."""

    frames: dict[str, pl.DataFrame]
    manifest: dict[str, Any] = field(default_factory=dict)
    summary: str = ""


def load(module: str) -> ModuleType:
    """The loader module, checked for the three names the stage calls."""
    loaded = importlib.import_module(module)
    missing = [n for n in ("FILES_HELP", "OPTIONS", "prepare") if not hasattr(loaded, n)]
    if missing:
        raise DataError(f"PND loader {module}: missing {missing}; expected FILES_HELP, OPTIONS and "
                        "prepare(files, settings) (embtune.data.pnd_loader)")
    return loaded


def option_args(section: Mapping[str, Any]) -> list[str]:
    """The stage arguments of a ``data.<source>`` params section (``files`` apart, the rule's
    input): ``true`` as the bare flag, a list as its values, a scalar as one value; ``false`` and
    null leave the loader's default. Read from the section alone, so the workflow never imports a
    loader; the schema section holds the keys to the loader's options."""
    args: list[str] = []
    for key, value in section.items():
        if key == "files" or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        else:
            args += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return args


def note_example(examples: dict[str, list[str]], reason: str, where: str, keep: int = 3) -> None:
    """Keep the first few places of each drop reason (for the error when nothing is left)."""
    seen = examples.setdefault(reason, [])
    if len(seen) < keep:
        seen.append(where)
