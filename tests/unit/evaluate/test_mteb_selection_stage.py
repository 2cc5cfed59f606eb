"""``embtune select-mteb-tasks`` (paper 1 App. B as a stage; docs/fidelity.md#P1-MTEB-TASK-SELECTION):
its files on a hand-made score table, checked against scipy's Pearson correlation written out here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from scipy.stats import pearsonr

from embtune.core.errors import DataError
from embtune.stages import select_mteb_tasks as stage


def _table(path: Path) -> dict[str, np.ndarray]:
    """5 models; 'sts': B is the category average (A + C = 2B), A and C are not; 'clf': two tasks,
    F rising with the average, G falling. The parquet half and the CSV half are read together."""
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    f = np.array([10.0, 12.0, 11.0, 15.0, 18.0])
    g = np.array([5.0, 4.0, 4.5, 3.0, 1.0])
    scores = {"A": a, "B": b, "C": 2 * b - a, "F": f, "G": g}
    cat = {"A": "sts", "B": "sts", "C": "sts", "F": "clf", "G": "clf"}
    rows = [{"model": f"m{i}", "task": t, "category": cat[t], "score": float(v[i])}
            for t, v in scores.items() for i in range(5)]
    pl.DataFrame(rows[:15]).write_parquet(path / "part1.parquet")
    pl.DataFrame(rows[15:]).write_csv(path / "part2.csv")
    return scores


def test_writes_the_choice_its_correlations_and_a_params_layer(tmp_path: Path) -> None:
    s = _table(tmp_path)
    out = tmp_path / "sel"
    assert stage.main(["--scores", str(tmp_path / "part1.parquet"), str(tmp_path / "part2.csv"),
                       "--out", str(out)]) == 0
    sts_avg, clf_avg = (s["A"] + s["B"] + s["C"]) / 3, (s["F"] + s["G"]) / 2
    corr = {(r["category"], r["task"]): r["correlation"] for r in pl.read_csv(out / "correlations.csv").iter_rows(named=True)}
    for task, avg, category in (("A", sts_avg, "sts"), ("C", sts_avg, "sts"), ("F", clf_avg, "clf"), ("G", clf_avg, "clf")):
        assert corr[(category, task)] == pytest.approx(pearsonr(s[task], avg).statistic)
    assert corr[("sts", "B")] == pytest.approx(1.0)
    chosen = json.loads((out / "selection.json").read_text())
    assert {c: v["task"] for c, v in chosen.items()} == {"clf": "F", "sts": "B"}
    assert chosen["clf"]["n_models"] == 5
    layer = yaml.safe_load((out / "params.yaml").read_text())
    assert layer == {"evaluate": {"mteb": {"tasks": ["F", "B"]}}}       # categories sorted: clf, sts


def test_bad_score_tables_are_named(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("model,task,score\nm,t,1\n")
    with pytest.raises(DataError, match=r"bad.csv: missing columns \['category'\]"):
        stage.main(["--scores", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "o")])
    with pytest.raises(DataError, match="nope.csv: MTEB score table not found"):
        stage.main(["--scores", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")])
    (tmp_path / "two.csv").write_text("model,task,category,score\nm1,t,c,1\nm2,t,c,2\n")
    with pytest.raises(DataError, match="nothing to select"):
        stage.main(["--scores", str(tmp_path / "two.csv"), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()
