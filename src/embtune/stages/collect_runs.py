"""Stage ``collect-runs``: gather run metrics into results/runs.parquet.

Why a driver apart from :mod:`embtune.scaling.runs_table`: the library turns run files into rows
and a typed table; the arguments, the parquet and its manifest, and the warning about runs that
recorded NaN/inf metrics live here.

Beside the table: ``runs.csv`` and ``run_metrics/<run_id>.json``, each run's final values, which
dvc.yaml declares as metrics: `dvc metrics show` has a row per run (DVC reads JSON, not parquet).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import DataError
from embtune.core.io import atomic_dir, provenance, write_json, write_parquet, write_text
from embtune.scaling.failed import failed_runs
from embtune.scaling.runs_table import build_table, collect, final_metrics, nonfinite_runs, read_skipped_csv

STAGE = "collect-runs"
RUN_METRICS_DIR = "run_metrics"   # beside --out: one JSON of final values per run


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--runs-dir", type=Path, default=None, help="collect every run directory here")
    ap.add_argument("--metrics", type=Path, nargs="*", default=[],
                    help="collect exactly these runs/<run_id>/metrics.json (wins over --runs-dir)")
    ap.add_argument("--skipped-csv", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    return ap


def _warn_nonfinite(nonfinite: dict) -> None:
    if nonfinite["count"]:
        shown = "; ".join(f"{r['run_id']} ({'/'.join(r['metrics'])}): {r['reason']}" for r in nonfinite["runs"][:5])
        print(f"{STAGE}: warning: {nonfinite['count']} finished run(s) recorded NaN/inf metrics or a loss "
              f"InfoNCE cannot take, read as missing (the fits leave them out): {shown}"
              + (" ..." if nonfinite["count"] > 5 else ""), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.skipped_csv and not args.skipped_csv.is_file():
        raise DataError(f"--skipped-csv {args.skipped_csv}: file not found (expected plan's skipped.csv)")
    skipped = read_skipped_csv(args.skipped_csv) if args.skipped_csv else []
    if not args.runs_dir and not args.metrics:
        ap.error("give --runs-dir or --metrics")
    table = build_table(collect(args.runs_dir, skipped, args.metrics))
    write_parquet(args.out, table)
    # the same table as CSV for a spreadsheet or a reader without polars (nested columns left out)
    flat = table.select([c for c, t in table.schema.items() if not t.is_nested()])
    write_text(args.out.with_suffix(".csv"), flat.write_csv())
    with atomic_dir(args.out.parent / RUN_METRICS_DIR) as tmp:
        for run_id, values in final_metrics(table).items():
            (tmp / f"{run_id}.json").write_text(json.dumps(values, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    counts = table.group_by("status").len().sort("status").to_dicts()
    nonfinite = nonfinite_runs(table)
    failed = failed_runs(table)
    write_json(args.out.with_name(args.out.stem + ".manifest.json"),
               provenance(rows=table.height, status_counts=counts, runs_dir=str(args.runs_dir),
                          n_metrics_files=len(args.metrics), nonfinite_runs=nonfinite, failed_runs=failed))
    print(f"{STAGE}: {table.height} rows -> {args.out} ({counts})")
    for r in failed["runs"]:
        print(f"{STAGE}: missing (failed): {r['run_id']}: {r['detail']}", file=sys.stderr)
    _warn_nonfinite(nonfinite)
    return 0
