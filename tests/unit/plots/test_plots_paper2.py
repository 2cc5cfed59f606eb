"""Paper 2 figures (Figs 1, 2, 4-5, 6): one per model and run the tables hold, with the paper's
panels, and open markers exactly where a point is not significant."""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
import pytest

from embtune.plots.report import paper2_specs

LANGS = ("ar", "de", "en")


def _heat(runs: dict[str, tuple[str, ...]]) -> pl.DataFrame:
    return pl.DataFrame([{"model": model, "qrun_id": q, "relation": rel, "measure": m,
                          "query_lang": a, "text_lang": b, "errors_base": 10, "errors_tuned": 9,
                          "total": 100, "improvement": 10.0 if a == b else -5.0, "z": 0.0,
                          "significant": a == b}
                         for model, qruns in runs.items() for q in qruns
                         for rel in ("neutral", "contradiction") for m in ("cos", "dist")
                         for a in LANGS for b in LANGS])


def _tables() -> dict[str, pl.DataFrame]:
    lrs = (1e-8, 5e-8, 1e-7)
    curves = pl.DataFrame([{"model": "e5", "qrun_id": f"lr-{lr:g}", "lr": lr, "dataset": ds,
                            "measure": "cos", "improvement": 1.0, "significant": lr != 1e-7}
                           for lr in lrs for ds in ("msmarco", "arxiv-first", "arxiv-title")])
    counts = pl.DataFrame([{"model": "e5", "qrun_id": f"lr-{lr:g}", "lr": lr, "relation": rel,
                            "measure": "cos", "improved": 200, "worsened": 3, "n_pairs": 225}
                           for lr in lrs for rel in ("neutral", "contradiction")])
    base = pl.DataFrame([{"model": model, "relation": rel, "measure": m, "query_lang": a,
                          "text_lang": b, "errors": 10, "total": 100, "pnd": 0.1}
                         for model in ("e5", "l12") for rel in ("neutral", "contradiction")
                         for m in ("cos", "dist") for a in LANGS for b in LANGS])
    lv_base = pl.DataFrame([{"model": "e5", "flavour": f, "level": lv, "measure": "cos",
                             "errors": 100 - lv, "total": 1000, "pnd": (100 - lv) / 1000}
                            for f in ("first", "title") for lv in (1, 2, 21)]
                           + [{"model": "l12", "flavour": "first", "level": 21, "measure": "cos",
                               "errors": 5, "total": 1000, "pnd": 0.005}])
    lv_runs = pl.DataFrame([{"model": "e5", "qrun_id": q, "flavour": f, "level": lv, "measure": "cos",
                             "improvement": 2.0, "significant": lv != 2}
                            for q in ("default", "lr-1e-07") for f in ("first", "title") for lv in (1, 2, 21)])
    return {"xnli_heatmap.parquet": _heat({"e5": ("default", "lr-1e-07"), "l12": ("default",)}),
            "lr_curves.parquet": curves, "lr_xnli_counts.parquet": counts,
            "xnli_base.parquet": base, "arxiv_levels_base.csv": lv_base, "arxiv_levels.csv": lv_runs,
            "grid_a/lr_curves.parquet": curves}


def _open_markers(ax) -> int:
    return sum(len(line.get_xdata()) for line in ax.lines
               if line.get_marker() not in ("None", None, "") and line.get_markerfacecolor() == "none")


def _filled_markers(ax) -> int:
    return sum(len(line.get_xdata()) for line in ax.lines
               if line.get_marker() not in ("None", None, "") and line.get_markerfacecolor() != "none")


@pytest.fixture(scope="module")
def specs():
    return {s.name: s for s in paper2_specs(_tables())}   # paper2 + paper2_sweeps (Figs 7-8)


def test_one_figure_per_model_and_run_nothing_capped(specs):
    assert sorted(specs) == sorted([
        "p2_fig01_xnli_improvement_e5_default", "p2_fig01_xnli_improvement_e5_lr-1e-07",
        "p2_fig01_xnli_improvement_l12_default", "p2_fig02_lr_e5", "p2_grid_a_fig02_lr_e5",
        "p2_fig04_xnli_pnd_cos", "p2_fig04_xnli_pnd_dist", "p2_fig05_xnli_pnd_cos",
        "p2_fig05_xnli_pnd_dist", "p2_fig06_arxiv_levels_e5_default",
        "p2_fig06_arxiv_levels_e5_lr-1e-07", "p2_fig06_arxiv_levels_l12",
        # Figs 7-8: each model's default run side by side, per relation and measure
        "p2_fig07_xnli_models_cos", "p2_fig07_xnli_models_dist", "p2_fig08_xnli_models_cos",
        "p2_fig08_xnli_models_dist"])
    assert "one arxiv difficulty level" in specs["p2_fig06_arxiv_levels_l12"].skipped
    assert all(s.skipped is None for n, s in specs.items() if n != "p2_fig06_arxiv_levels_l12")


def test_fig01_panels_relation_by_measure(specs):
    spec = specs["p2_fig01_xnli_improvement_e5_lr-1e-07"]
    fig = spec.draw(spec.data)
    heat_axes = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in heat_axes] == [
        "entailment vs neutral, cos", "entailment vs neutral, dist",
        "entailment vs contradiction, cos", "entailment vs contradiction, dist"]
    texts = heat_axes[0].texts
    assert len(texts) == 9 and sum(t.get_style() == "italic" for t in texts) == 6  # off-diagonal: not significant
    plt.close(fig)


def test_fig02_counts_and_open_markers(specs):
    spec = specs["p2_fig02_lr_e5"]
    fig = spec.draw(spec.data)
    ax_a, ax_b = fig.axes
    assert ax_a.get_title() == "(a) XNLI" and ax_b.get_title() == "(b) MSMARCO and arxiv"
    assert ax_a.get_xscale() == ax_b.get_xscale() == "log"
    # (a): improved + worsened for 2 relations at 3 rates, every count filled
    assert _filled_markers(ax_a) == 2 * 2 * 3 and _open_markers(ax_a) == 0
    # (b): 3 datasets x 3 rates; the 1e-7 points are not significant -> 3 open
    assert _open_markers(ax_b) == 3 and _filled_markers(ax_b) == 6
    a = spec.data.filter(pl.col("panel") == "a")
    assert sorted(a["value"].unique().to_list()) == [3.0, 200.0]
    plt.close(fig)


def test_fig04_05_one_panel_per_model(specs):
    spec = specs["p2_fig05_xnli_pnd_cos"]
    assert "contradiction" in spec.caption
    fig = spec.draw(spec.data)
    assert [ax.get_title() for ax in fig.axes if ax.get_images()] == ["e5", "l12"]
    assert spec.data.height == 2 * 9
    plt.close(fig)


def test_fig06_levels_panels(specs):
    spec = specs["p2_fig06_arxiv_levels_e5_default"]
    fig = spec.draw(spec.data)
    ax_a, ax_b = fig.axes
    assert (ax_a.get_title(), ax_b.get_title()) == ("(a)", "(b)")
    assert _open_markers(ax_a) == 0 and _filled_markers(ax_a) == 2 * 3
    assert _open_markers(ax_b) == 2 and _filled_markers(ax_b) == 4    # level 2, both flavours
    a = spec.data.filter((pl.col("panel") == "a") & (pl.col("series") == "arxiv-first (cos)")).sort("level")
    assert a["value"].to_list() == pytest.approx([9.9, 9.8, 7.9])     # percent
    plt.close(fig)
