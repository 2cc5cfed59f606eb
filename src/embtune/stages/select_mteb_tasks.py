"""Stage ``select-mteb-tasks``: paper 1 App. B's choice of one MTEB task per category, from a table
of full-MTEB scores of many models (docs/fidelity.md#P1-MTEB-TASK-SELECTION).

Why a driver apart from :mod:`embtune.evaluate.mteb_selection`: the library computes the
correlations and the choice from a frame; reading the score files, the output folder (appears
whole, ``manifest.json`` last) and the summary line live here.

Input: one or more CSV or parquet files in long form, columns ``model, task, category, score``
(one row per model and task: the MTEB paper's table). Output folder:

* ``correlations.csv``: per (category, task) the Pearson correlation over models of the task's
  score with the category average, and the number of models (best first per category);
* ``selection.json``: per category the chosen task, its correlation and number of models;
* ``params.yaml``: ``evaluate.mteb.tasks`` set to the chosen tasks (sorted by category), a
  params layer the study can take: ``snakemake --configfile <out>/params.yaml`` (after any
  preset) evaluates on the selected tasks instead of the eight App. B lists.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import yaml

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, provenance, write_json, write_text
from embtune.evaluate.mteb_selection import COLUMNS, task_correlations

STAGE = "select-mteb-tasks"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--scores", nargs="+", required=True,
                    help="CSV or parquet files: model, task, category, score (full-MTEB scores of many models)")
    ap.add_argument("--out", required=True, help="output folder (correlations.csv, selection.json, params.yaml)")
    return ap


def read_scores(paths: Sequence[str]) -> pl.DataFrame:
    """The score files as one frame; a missing file or column, or a non-numeric score, is a
    :class:`DataError` naming the file."""
    frames = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise DataError(f"{path}: MTEB score table not found (expected CSV or parquet with columns "
                            f"{', '.join(COLUMNS)})")
        frame = pl.read_parquet(p) if p.suffix == ".parquet" else pl.read_csv(p, infer_schema_length=None)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise DataError(f"{path}: missing columns {missing} (expected {', '.join(COLUMNS)})")
        try:
            frames.append(frame.select(*(pl.col(c).cast(pl.String) for c in COLUMNS[:3]),
                                       pl.col("score").cast(pl.Float64, strict=True)))
        except pl.exceptions.InvalidOperationError as err:
            raise DataError(f"{path}: column score must be numeric ({err})") from None
    return pl.concat(frames)


def selection(corr: pl.DataFrame) -> dict[str, dict[str, object]]:
    """category -> {task, correlation, n_models}: the first (most correlated) task of each category."""
    ranked = corr.drop_nans("correlation").drop_nulls("correlation")
    return {cat: {"task": grp["task"][0], "correlation": grp["correlation"][0], "n_models": int(grp["n_models"][0])}
            for (cat,), grp in ranked.partition_by(["category"], as_dict=True, maintain_order=True).items()}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    corr = task_correlations(read_scores(args.scores))
    chosen = selection(corr)
    if not chosen:
        raise DataError(f"{', '.join(args.scores)}: no category has a task scored by at least 3 models "
                        "with varying scores: nothing to select")
    tasks = [chosen[c]["task"] for c in sorted(chosen)]
    with atomic_path(args.out) as out:   # the folder appears complete or not at all
        out.mkdir(parents=True, exist_ok=True)
        corr.write_csv(out / "correlations.csv")
        write_json(out / "selection.json", chosen)
        write_text(out / "params.yaml", "# paper 1 App. B's task per category, chosen by embtune select-mteb-tasks\n"
                   + yaml.safe_dump({"evaluate": {"mteb": {"tasks": tasks}}}, sort_keys=False))
        write_json(out / "manifest.json", provenance(stage=STAGE, args=vars(args), categories=len(chosen)))
    print(f"{STAGE}: {len(chosen)} categories -> {', '.join(tasks)} -> {args.out}")
    return 0
