"""Drawing the figure specs into files: every figure as PNG + PDF + CSV (its data), and the
paper-2 tables the figures read. Stage ``figures`` (driver :mod:`embtune.stages.figures`) calls
:func:`make_all` inside its atomically renamed figure folder, then writes the index and report.md.

Why drawing errors become skips: one broken figure must not cost the report every other figure;
the skip and its reason are listed in the index and the report instead.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from embtune.core.io import atomic_path, write_text  # noqa: E402
from embtune.plots.paper2_sweeps import FIG_GROUP  # noqa: E402
from embtune.plots.report import Spec, curve_specs, paper1_specs, paper2_specs, read_table  # noqa: E402


def query_tables(directory: Path | None) -> dict[str, pl.DataFrame]:
    """Every CSV/parquet table under the query-table dir (paper 2 figures pick theirs by columns)."""
    if directory is None or not directory.is_dir():
        return {}
    out = {}
    for path in sorted([*directory.rglob("*.csv"), *directory.rglob("*.parquet")]):
        rel = path.relative_to(directory)
        if "groups" in rel.parts and not FIG_GROUP.match(rel.name):
            continue  # per-sweep/grid tables (query_groups) repeat table1's rows, not new figures,
            # except the grids named fig<N> (paper 2 Figs 3, 11a, 12-14: plots.paper2_sweeps)
        try:
            out[str(path.relative_to(directory))] = read_table(path)
        except Exception as err:  # noqa: BLE001 - an unreadable side table must not stop the report
            print(f"figures: skipping unreadable table {path}: {err}")
    return out


def render(spec: Spec, out_dir: Path) -> Spec:
    """Draw one figure and write PNG, PDF and CSV atomically; a drawing error becomes a skip."""
    assert spec.draw is not None and spec.data is not None
    try:
        fig = spec.draw(spec.data)
    except Exception as err:  # noqa: BLE001 - recorded in the report, never silently dropped
        return Spec(spec.name, spec.caption, skipped=f"drawing failed: {type(err).__name__}: {err}")
    try:
        for ext, dpi in (("png", 130), ("pdf", None)):
            with atomic_path(out_dir / f"{spec.name}.{ext}") as tmp:
                fig.savefig(tmp, format=ext, dpi=dpi)
    finally:
        plt.close(fig)
    write_text(out_dir / f"{spec.name}.csv", spec.data.write_csv())
    return spec


def curve_tables(directory: Path | None) -> dict[str, pl.DataFrame]:
    """The curves stage's tables by kind (``train_loss``, ``query_val_loss``, ...); {} without it."""
    if directory is None or not directory.is_dir():
        return {}
    return {p.stem: pl.read_csv(p) for p in sorted(directory.glob("*.csv"))}


def make_all(runs: pl.DataFrame, fits: dict[str, Any], tables: dict[str, pl.DataFrame],
             out_dir: Path, workers: int = 1, curves: dict[str, pl.DataFrame] | None = None) -> list[Spec]:
    """Every figure of both papers into ``out_dir``; a spec without data stays a skip.

    Why ``workers``: drawing (constrained layout, PNG + PDF) is ~1 s a figure and the stage runs
    last, alone, at the end of a study; ``workers`` > 1 draws shares of the figures in parallel
    processes (the same files as the serial run: each figure is drawn from the same spec)."""
    curves = curves or {}
    specs = _specs(runs, fits, tables, curves)
    names = [s.name for s in specs if not s.skipped]
    if workers <= 1 or len(names) <= 1:
        return [s if s.skipped else render(s, out_dir) for s in specs]
    shares = [names[i::workers] for i in range(workers)]
    # spawn, not fork: polars keeps a thread pool, and forking a threaded process can deadlock.
    # Specs hold drawing closures, so each worker rebuilds them from the (picklable) inputs.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_render_share, runs, fits, tables, curves, out_dir, share) for share in shares]
        skipped = {name: why for f in futures for name, why in f.result()}
    return [s if s.skipped or skipped.get(s.name) is None
            else Spec(s.name, s.caption, skipped=skipped[s.name]) for s in specs]


def _specs(runs: pl.DataFrame, fits: dict[str, Any], tables: dict[str, pl.DataFrame],
           curves: dict[str, pl.DataFrame]) -> list[Spec]:
    return paper1_specs(runs, fits) + curve_specs(curves) + paper2_specs(tables)


def _render_share(runs: pl.DataFrame, fits: dict[str, Any], tables: dict[str, pl.DataFrame],
                  curves: dict[str, pl.DataFrame], out_dir: Path, names: list[str]) -> list[tuple[str, str | None]]:
    """(name, skip reason or None) for the figures ``names``, drawn in a worker process."""
    wanted = set(names)
    return [(s.name, render(s, out_dir).skipped) for s in _specs(runs, fits, tables, curves) if s.name in wanted]
