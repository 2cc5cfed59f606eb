"""Stage ``figures``: every figure as PNG + PDF + CSV (its data), an index, and report.md.

    embtune figures --runs runs.parquet --fits fits.json [--query-table-dir DIR]
                    [--recipe recipe.json] [--planned-cost planned_cost.csv]
                    [--query-models-json JSON] --out FIGDIR --report report.md

report.md opens with the Findings (:mod:`embtune.plots.findings`): each claim of both papers
next to the number from these results that tests it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from embtune.io import atomic_dir, atomic_path, check_replaceable, read_json, write_json, write_text  # noqa: E402
from embtune.plots.findings import findings_markdown, paper1_findings, paper2_findings  # noqa: E402
from embtune.plots.report import (  # noqa: E402
    Spec,
    cost_markdown,
    encoder_notes,
    paper1_specs,
    paper2_specs,
    query_table_sections,
    read_table,
    report_markdown,
)


def query_tables(directory: Path | None) -> dict[str, pl.DataFrame]:
    """Every CSV/parquet table under the query-table dir (paper 2 figures pick theirs by columns)."""
    if directory is None or not directory.is_dir():
        return {}
    out = {}
    for path in sorted([*directory.rglob("*.csv"), *directory.rglob("*.parquet")]):
        if "groups" in path.relative_to(directory).parts:
            continue  # per-sweep/grid tables (query_groups) repeat table1's rows, not new figures
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


def make_all(runs: pl.DataFrame, fits: dict[str, Any], tables: dict[str, pl.DataFrame],
             out_dir: Path) -> list[Spec]:
    specs = paper1_specs(runs, fits) + paper2_specs(tables)
    return [s if s.skipped else render(s, out_dir) for s in specs]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="embtune figures", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--fits", type=Path, required=True)
    ap.add_argument("--query-table-dir", type=Path, default=None)
    ap.add_argument("--recipe", type=Path, default=None)
    ap.add_argument("--planned-cost", type=Path, default=None,
                    help="embtune plan's planned_cost.csv: the report compares it with the measured time")
    ap.add_argument("--query-models-json", default=None,
                    help="query_tuning.models as JSON: the report says what each paper-2 encoder is")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--report", type=Path, required=True)
    args = ap.parse_args(argv)
    runs, fits = pl.read_parquet(args.runs), read_json(args.fits)
    recipe = read_json(args.recipe) if args.recipe and args.recipe.exists() else None
    check_replaceable(args.out, own_dirs=())
    tables = query_tables(args.query_table_dir)
    with atomic_dir(args.out) as tmp:     # the figure folder appears whole; index.json last
        specs = make_all(runs, fits, tables, tmp)
        write_json(tmp / "index.json", [{"name": s.name, "caption": s.caption, "skipped": s.skipped,
                                         "files": [] if s.skipped else [f"{s.name}.{e}" for e in ("png", "pdf", "csv")]}
                                        for s in specs])
    cost = pl.read_csv(args.planned_cost) if args.planned_cost and args.planned_cost.exists() else None
    qmodels = json.loads(args.query_models_json) if args.query_models_json else None
    found = findings_markdown(paper1_findings(runs, fits, recipe) + paper2_findings(tables),
                              encoder_notes(qmodels))
    write_text(args.report, report_markdown(specs, fits, recipe, runs, args.out, args.report, found)
               + query_table_sections(args.query_table_dir)
               + "\n".join(cost_markdown(runs, cost)) + "\n")
    made = [s for s in specs if not s.skipped]
    print(f"figures: {len(made)} written to {args.out}, {len(specs) - len(made)} skipped; report {args.report}")
    for s in specs:
        if s.skipped:
            print(f"  skipped {s.name}: {s.skipped}")
    return 0
