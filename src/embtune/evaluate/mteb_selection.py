"""Paper 1, App. B: which MTEB task stands for each category (docs/fidelity.md#P1-MTEB-TASK-SELECTION).

"For each category present in the MTEB benchmark, we take the data from the models evaluated in
the original paper and select the task that has the highest correlation with the category
average." The rule needs full-MTEB scores of many models (the MTEB paper's table), which the
pipeline does not produce: ``evaluate.mteb.tasks`` lists the paper's eight results. This function
reproduces the choice whenever such a table is given.

Readings: the correlation is Pearson's over models (the text names none); the category average of
a model is the plain mean of its scores on the category's tasks (MTEB's own averaging), the
candidate task included; a model missing a task of the category is left out of that category.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from embtune.core.errors import DataError

COLUMNS = ("model", "task", "category", "score")


def task_correlations(scores: pl.DataFrame) -> pl.DataFrame:
    """Per (category, task): Pearson correlation over models of the task's score with the
    category average, and the number of models; sorted by category, then correlation (high first)."""
    missing = [c for c in COLUMNS if c not in scores.columns]
    if missing:
        raise DataError(f"MTEB score table: missing columns {missing} (expected {', '.join(COLUMNS)})")
    rows = []
    for (category,), grp in scores.partition_by(["category"], as_dict=True, maintain_order=True).items():
        wide = grp.pivot(on="task", index="model", values="score", aggregate_function="mean").drop_nulls()
        tasks = [c for c in wide.columns if c != "model"]
        if wide.height < 3 or not tasks:
            continue
        mat = wide.select(tasks).to_numpy().astype(np.float64)
        average = mat.mean(axis=1)
        for k, task in enumerate(tasks):
            x = mat[:, k]
            r = float(np.corrcoef(x, average)[0, 1]) if x.std() > 0 and average.std() > 0 else float("nan")
            rows.append({"category": category, "task": task, "correlation": r, "n_models": wide.height})
    schema = {"category": pl.String, "task": pl.String, "correlation": pl.Float64, "n_models": pl.Int64}
    return pl.DataFrame(rows, schema=schema).sort(["category", "correlation"], descending=[False, True],
                                                  nulls_last=True)


def select_tasks(scores: pl.DataFrame) -> dict[str, str]:
    """category -> the task most correlated with the category average (App. B)."""
    corr = task_correlations(scores).drop_nans("correlation")
    return {cat: grp["task"][0] for (cat,), grp in
            corr.partition_by(["category"], as_dict=True, maintain_order=True).items()}
