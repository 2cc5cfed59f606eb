"""Paper 2's figure producers on small synthetic tables: paper 2 Figs 3, 11a, 12-14 from grids named
``fig<N>``, Figs 7-8 (three models side by side), paper 1 App. B's task selection, and the Pythia
variant key. The full pipeline draws them too (tests/e2e/test_pipeline_demo.py, presets/test.yaml)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from embtune.plots.render import render
from embtune.plots.report import paper2_specs as specs  # paper2 + paper2_sweeps


def _grid_table(factor: str, values: list[float]) -> pl.DataFrame:
    n = len(values)
    return pl.DataFrame({
        "model": ["m"] * n, factor: values, "qrun_id": [f"r{i}" for i in range(n)],
        "lr_effective": [5e-8] * n, "evaluated": [True] * (n - 1) + [False],
        "msmarco_c_pct": [1.0 + i for i in range(n)], "msmarco_c_sig": [True] * n,
        "msmarco_d_pct": [2.0] * n, "msmarco_d_sig": [False] * n,
        "xnli_ent_neutr_c_plus": [10 * i for i in range(n)], "xnli_ent_neutr_c_minus": [0] * n,
    })


def test_fig_grids_become_figures_with_their_factor(tmp_path) -> None:
    tables = {"groups/grid-fig03.csv": _grid_table("lr", [1e-8, 5e-8, 1e-7]),
              "groups/grid-fig12.csv": _grid_table("margin", [0.05, 0.1, 0.2]),
              "groups/grid-table20.csv": _grid_table("lr", [1e-8, 2e-8])}   # not a figure grid
    got = {s.name: s for s in specs(tables)}
    assert set(got) == {"p2_fig03_lr_m", "p2_fig12_margin_m"}
    data = got["p2_fig12_margin_m"].data
    # the last run is not evaluated: 2 runs x (1 XNLI improved + 1 worsened + 2 PND series)
    assert data.height == 8
    b = data.filter((pl.col("panel") == "b") & (pl.col("series") == "msmarco (cos)")).sort("x")
    assert b["x"].to_list() == [0.05, 0.1] and b["value"].to_list() == [1.0, 2.0]
    a = data.filter(pl.col("series") == "neutral cos improved").sort("x")
    assert a["value"].to_list() == [0.0, 10.0]
    for spec in got.values():
        render(spec, tmp_path)
        assert (tmp_path / f"{spec.name}.png").stat().st_size > 1000


def test_fig07_08_put_every_model_side_by_side(tmp_path) -> None:
    rows = []
    for model in ("e5", "l12", "e5e"):
        for qrun in ("default", "lr-1e-07"):
            for rel in ("neutral", "contradiction"):
                for q in ("en", "de"):
                    for t in ("en", "de"):
                        rows.append({"model": model, "qrun_id": qrun, "relation": rel, "measure": "cos",
                                     "query_lang": q, "text_lang": t, "improvement": 1.5,
                                     "significant": q == t})
    got = {s.name: s for s in specs({"xnli_heatmap.parquet": pl.DataFrame(rows)})}
    assert {"p2_fig07_xnli_models_cos", "p2_fig08_xnli_models_cos"} <= set(got)
    data = got["p2_fig07_xnli_models_cos"].data
    assert data["model"].unique(maintain_order=True).to_list() == ["e5", "l12", "e5e"]
    assert data.height == 3 * 4                       # the default run only, 2 x 2 pairs each
    render(got["p2_fig08_xnli_models_cos"], tmp_path)
    assert (tmp_path / "p2_fig08_xnli_models_cos.png").is_file()


def test_query_tables_read_only_the_figure_grids(tmp_path) -> None:
    from embtune.plots.render import query_tables

    (tmp_path / "groups").mkdir()
    for name in ("grid-fig11a.csv", "grid-fig11a_long.csv", "grid-table20.csv", "sweep-margin.csv"):
        _grid_table("lr", [1e-8, 2e-8]).write_csv(tmp_path / "groups" / name)
    assert set(query_tables(tmp_path)) == {"groups/grid-fig11a.csv"}


def test_app_b_selects_the_task_most_correlated_with_its_category() -> None:
    """Hand-made scores of 5 models: in 'sts', task B tracks the category average exactly (the
    average of A, B, C is B when A + C = 2B), A is noise; 'clf' has one task."""
    from embtune.evaluate.mteb_selection import select_tasks, task_correlations

    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    c = 2 * b - a
    rows = [{"model": f"m{i}", "task": t, "category": "sts", "score": float(v[i])}
            for t, v in (("A", a), ("B", b), ("C", c)) for i in range(5)]
    rows += [{"model": f"m{i}", "task": "E", "category": "clf", "score": float(i)} for i in range(5)]
    table = pl.DataFrame(rows)
    assert select_tasks(table) == {"clf": "E", "sts": "B"}
    corr = task_correlations(table).filter(pl.col("category") == "sts")
    avg = (a + b + c) / 3
    assert corr.filter(pl.col("task") == "A")["correlation"][0] == pytest.approx(np.corrcoef(a, avg)[0, 1])
    assert corr["task"].to_list()[0] == "B" and corr["correlation"][0] == pytest.approx(1.0)


def test_pythia_variant_picks_the_deduplicated_twin_only_when_asked() -> None:
    from embtune.models.build import hub_id

    spec = {"name": "p", "source": "hub", "id": "EleutherAI/pythia-70m"}
    assert hub_id(spec) == "EleutherAI/pythia-70m"
    assert hub_id({**spec, "variant": "deduped"}) == "EleutherAI/pythia-70m-deduped"
    assert hub_id({**spec, "id": "EleutherAI/pythia-70m-deduped", "variant": "deduped"}) == \
        "EleutherAI/pythia-70m-deduped"
    assert hub_id({**spec, "source": "local", "id": "/x", "variant": "deduped"}) == "/x"
