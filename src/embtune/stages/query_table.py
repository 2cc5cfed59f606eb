"""Stage ``query-table``: Table-1-style rows and heatmaps for query tuning (paper 2).

Why a driver apart from :mod:`embtune.evaluate.query_table`: the library reads the query runs and
builds the tables (its docstring lists inputs, definitions and files); the arguments, the plan's
memberships, the output folder (appears whole, ``manifest.json`` last) and the summary line live
here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, provenance, write_json
from embtune.evaluate.query_groups import write_groups
from embtune.evaluate.query_table import collect, write_outputs
from embtune.plan.query_sweep import query_members

STAGE = "query-table"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--query-runs-dir", required=True, help="{results}/query_runs")
    ap.add_argument("--out", required=True, help="{results}/analysis/query_tuning")
    ap.add_argument("--z-critical", type=float, default=1.96)
    ap.add_argument("--runs", nargs="*", default=None, help="only these <model>/<qrun_id> (default: all)")
    ap.add_argument("--plan-json", default=None,
                    help='{"query_tuning": ...} (validated params): memberships for the group tables')
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not Path(args.query_runs_dir).is_dir():
        raise DataError(f"--query-runs-dir {args.query_runs_dir}: directory not found; expected "
                        "<model>/base/pnd.json and <model>/<qrun_id>/ folders from evaluate-pnd")
    members = query_members(json.loads(args.plan_json)) if args.plan_json else None
    only = set(args.runs) if args.runs is not None else None
    got, missing = collect(Path(args.query_runs_dir), args.z_critical, only, members)
    table = pl.DataFrame(got["table"], infer_schema_length=None) if got["table"] else pl.DataFrame()
    from embtune.evaluate.paper2_tables import collect_extras, write_extras

    extras = collect_extras(Path(args.query_runs_dir), args.z_critical, only)
    with atomic_path(args.out) as out:  # the folder appears complete or not at all
        write_outputs(out, table, got)
        write_extras(out, extras)   # Table 3, arxiv levels, Fig. 2(a), Figs 4-5, Tables 14-15
        if members is not None:
            write_groups(out / "groups", table, got["long"], members, args.z_critical, got["heat"])
        write_json(out / "manifest.json", provenance(stage=STAGE, args=vars(args),
                                                     n_rows=table.height, missing_evaluations=missing,
                                                     skipped_runs=got["skipped"], failed_runs=got["failed"],
                                                     no_layer_changes=extras["no_layer_changes"]))
    print(f"{STAGE}: {table.height} runs, {len(missing)} without evaluation -> {args.out}")
    for r in got["failed"]:
        print(f"{STAGE}: left out (failed): {r['model']}/{r['qrun_id']}: {r['detail']}")
    return 0
