"""``embtune summary``: the study's headline numbers as one small JSON for ``dvc metrics diff``.

Why a driver apart from :mod:`embtune.plots.summary`: the library picks the headline numbers out of
the runs table, the fits, the recipes and Table 1; reading those files, writing
``metrics.json`` and the printed warnings live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from embtune.core import io
from embtune.plots.summary import fits_summary, query_summary, recipes_summary, training_summary
from embtune.scaling.artifacts import read_fits, read_recipe, read_runs_table

STAGE = "summary"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--fits", type=Path, required=True)
    ap.add_argument("--recipes", type=Path, nargs="*", default=[])
    ap.add_argument("--query-table-dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    return ap


def _table1(table_dir: Path | None) -> pl.DataFrame | None:
    """``table1.csv`` of the query-tuning tables; None when there is none (or it is empty)."""
    path = table_dir / "table1.csv" if table_dir else None
    if path is None or not path.exists() or path.stat().st_size == 0:
        return None
    return pl.read_csv(path)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    table1 = _table1(args.query_table_dir)
    summary = {
        "training": training_summary(read_runs_table(args.runs, ("run_id", "status"))),
        "fits": fits_summary(read_fits(args.fits)),
        "recipes": recipes_summary([read_recipe(p) for p in args.recipes]),
        "query_tuning": query_summary(table1) if table1 is not None else [],
    }
    io.write_json(args.out, summary)
    for name in summary["fits"]["untrustworthy_fits"]:
        print(f"WARNING: untrustworthy fit {name} (a parameter at a bound): see fits.json")
    print(f"summary -> {args.out}")
    return 0
