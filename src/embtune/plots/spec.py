"""One figure to draw: its name, caption, data and drawing function, or why it is skipped.

Why a module of its own: both paper's figure lists (:mod:`embtune.plots.report`,
:mod:`embtune.plots.paper2`) build these, and the report module reads paper 2's list; with the
class in ``report`` the two modules imported each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl
from matplotlib.figure import Figure


@dataclass(frozen=True)
class Spec:
    name: str
    caption: str
    data: pl.DataFrame | None = None
    draw: Callable[[pl.DataFrame], Figure] | None = None
    skipped: str | None = None
