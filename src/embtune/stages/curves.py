"""``embtune curves``: every run's curves as one CSV per kind, for one overlay chart per kind.

Reads each paper-1 run's and paper-2 query run's ``curve.csv`` beside the ``metrics.json`` given,
writes ``<out>/<kind>.csv`` (:mod:`embtune.scaling.curves`): ``train_loss``, ``lr`` and the
query runs' ``query_val_loss``, ``query_val_errors``, ``query_train_loss``, and ``val_loss``
(each paper-1 run's held-out loss against its tokens, from ``metrics.json``); with ``--plots``
also the same table at the study's file in each kind's shared folder (``paths.plots``), which
``dvc plots show`` draws as one chart with a line per run (dvc.yaml, ``.dvc/plots/overlay.json``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.core.io import atomic_dir, atomic_path
from embtune.core.layout import plot_files
from embtune.scaling.curves import QUERY_KINDS, TRAIN_KINDS, collect, held_out, read_runs

STAGE = "curves"


def _plots_template(text: str) -> str:
    """``--plots``: refused at parsing, before any table is written, unless it has one ``{kind}``."""
    try:
        plot_files(text, ())
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--metrics", type=Path, nargs="*", default=[], help="paper-1 runs' metrics.json")
    ap.add_argument("--query-metrics", type=Path, nargs="*", default=[], help="query runs' metrics.json")
    ap.add_argument("--out", type=Path, required=True, help="the folder of <kind>.csv files")
    ap.add_argument("--plots", type=_plots_template, default=None, help="paths.plots: also write each kind's table to this "
                    "path with {kind} filled in (the folders dvc.yaml's plots: name)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs, query_runs = read_runs(args.metrics), read_runs(args.query_metrics)
    tables = {**collect(runs, TRAIN_KINDS, query=False), **collect(query_runs, QUERY_KINDS, query=True),
              "val_loss": held_out(runs)}
    with atomic_dir(args.out) as tmp:
        for kind, frame in tables.items():
            frame.write_csv(tmp / f"{kind}.csv")
    for kind, path in (plot_files(args.plots, tables) if args.plots else {}).items():
        with atomic_path(path) as tmp_file:
            tables[kind].write_csv(tmp_file)
    for kind, frame in tables.items():
        runs = frame["run"].n_unique() if frame.height else 0
        print(f"{STAGE}: {kind}: {frame.height} points of {runs} runs")
    return 0
