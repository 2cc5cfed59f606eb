"""Stage ``figures``: every figure as PNG + PDF + CSV (its data), an index, and report.md.

    embtune figures --runs runs.parquet --fits fits.json [--query-table-dir DIR]
                    [--recipe recipe.json] [--planned-cost planned_cost.csv]
                    [--query-models-json JSON] --out FIGDIR --report report.md

report.md opens with the Findings (:mod:`embtune.plots.findings`): each claim of both papers
next to the number from these results that tests it.

Why a driver apart from :mod:`embtune.plots.render` and :mod:`embtune.plots.report`: those draw
the figures and write the report's text; the arguments, reading the inputs, the figure folder
(appears whole, ``index.json`` last) and report.md live here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from embtune.core.io import atomic_dir, check_replaceable, write_json, write_text
from embtune.plots.findings import findings_markdown, paper1_findings
from embtune.plots.findings_paper2 import paper2_findings
from embtune.plots.memory_report import memory_markdown
from embtune.plots.render import curve_tables, make_all, query_tables
from embtune.plots.report import cost_markdown, encoder_notes, glance_markdown, query_table_sections, report_markdown
from embtune.scaling.artifacts import read_fits, read_recipe, read_runs_table

STAGE = "figures"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--fits", type=Path, required=True)
    ap.add_argument("--query-table-dir", type=Path, default=None)
    ap.add_argument("--recipe", type=Path, default=None)
    ap.add_argument("--planned-cost", type=Path, default=None,
                    help="embtune plan's planned_cost.csv: the report compares it with the measured time")
    ap.add_argument("--curves-dir", type=Path, default=None,
                    help="the curves stage's folder: the report's per-run loss curves")
    ap.add_argument("--query-models-json", default=None,
                    help="query_tuning.models as JSON: the report says what each paper-2 encoder is")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=1, help="processes drawing the figures (same files)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs = read_runs_table(args.runs)
    fits = read_fits(args.fits)
    recipe = read_recipe(args.recipe) if args.recipe and args.recipe.exists() else None
    check_replaceable(args.out, own_dirs=())
    tables = query_tables(args.query_table_dir)
    with atomic_dir(args.out) as tmp:     # the figure folder appears whole; index.json last
        specs = make_all(runs, fits, tables, tmp, workers=max(1, args.workers), curves=curve_tables(args.curves_dir))
        write_json(tmp / "index.json", [{"name": s.name, "caption": s.caption, "skipped": s.skipped,
                                         "files": [] if s.skipped else [f"{s.name}.{e}" for e in ("png", "pdf", "csv")]}
                                        for s in specs])
    cost = pl.read_csv(args.planned_cost) if args.planned_cost and args.planned_cost.exists() else None
    qmodels = json.loads(args.query_models_json) if args.query_models_json else None
    items = paper1_findings(runs, fits, recipe) + paper2_findings(tables)
    found = findings_markdown(items, encoder_notes(qmodels))
    glance = glance_markdown(items, recipe, runs)
    write_text(args.report, report_markdown(specs, fits, recipe, runs, args.out, args.report, found, glance)
               + query_table_sections(args.query_table_dir)
               + "\n".join(cost_markdown(runs, cost)) + "\n" + "\n".join(memory_markdown(runs)) + "\n")
    made = [s for s in specs if not s.skipped]
    print(f"{STAGE}: {len(made)} written to {args.out}, {len(specs) - len(made)} skipped; report {args.report}")
    for s in specs:
        if s.skipped:
            print(f"  skipped {s.name}: {s.skipped}")
    return 0
