"""Paper 2's figures drawn from the per-grid tables and the three-model heatmaps.

* Figs 3, 11a, 12, 13, 14 — ``p2_fig<N>_<factor>_<model>``: a query-tuning grid named ``fig<N>``
  in ``query_tuning.grids`` (params.yaml: ``fig03`` = ``emb_odw`` x LR, ``fig11a`` = both towers
  x LR, ``fig12`` / ``fig13`` = margins for E5 / L12, ``fig14`` = SGD x LR) is drawn as Fig. 2 is:
  (a) XNLI language pairs significantly improved / worsened, (b) PND improvement on MSMARCO and
  arxiv, open markers not significant, against the grid's factor (``lr`` when it varies, else
  its first factor). Read from ``groups/grid-fig<N>.csv`` (:mod:`embtune.evaluate.query_groups`).
* Figs 7-8 — ``p2_fig07_xnli_models_<measure>`` (entailment vs neutral) and ``p2_fig08_...``
  (entailment vs contradiction): the default tuned run of every model side by side, one panel per
  model on one colour scale (App. J: "the third row (emb, frozen embedding block) … in
  comparison with E5 and E5e"), from ``xnli_heatmap.parquet``.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from embtune.plots.paper2 import RELATION_TITLE, _by_folder, _draw_panel, _has, _heatmap, _panels, _safe, _spec

FIG_GROUP = re.compile(r"^grid-(fig\d+[a-z]?)\.csv$")
RESULT = re.compile(r"^(.+)_([cd])_pct$")
XNLI = re.compile(r"^xnli_(ent_neutr|ent_contr)_([cd])_(plus|minus)$")
MEASURE = {"c": "cos", "d": "dist"}
TAG_RELATION = {"ent_neutr": "neutral", "ent_contr": "contradiction"}
NOT_FACTORS = {"model", "qrun_id", "lr_effective", "evaluated"}
DEFAULT_RUN = "default"


def factor_of(frame: pl.DataFrame) -> str | None:
    """The x axis of a figure grid: ``lr`` if the grid varies it, else its first factor column."""
    factors = [c for c in frame.columns
               if c not in NOT_FACTORS and not RESULT.match(c) and not c.endswith("_sig")
               and not XNLI.match(c)]
    return "lr" if "lr" in factors else (factors[0] if factors else None)


def evaluated_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """A grid table's rows whose run was evaluated (query_groups keeps a failed member as a row of
    nulls, ``evaluated`` false)."""
    return frame.filter(pl.col("evaluated").cast(pl.Boolean)) if "evaluated" in frame.columns else frame


def factor_data(frame: pl.DataFrame, x: str) -> pl.DataFrame:
    """The tidy frame (panel, series, x, value, significant) of one model's grid table: (a) XNLI
    pairs improved / worsened per relation and measure, (b) PND improvement per dataset and measure."""
    frame = evaluated_rows(frame)
    parts = []
    for col in frame.columns:
        m = XNLI.match(col)
        if m:
            kind = "improved" if m.group(3) == "plus" else "worsened"
            name = f"{TAG_RELATION[m.group(1)]} {MEASURE[m.group(2)]} {kind}"
            parts.append(frame.select(pl.lit("a").alias("panel"), pl.lit(name).alias("series"),
                                      pl.col(x).cast(pl.Float64).alias("x"),
                                      pl.col(col).cast(pl.Float64).alias("value"),
                                      pl.lit(True).alias("significant")))
        m = RESULT.match(col)
        if m and f"{m.group(1)}_{m.group(2)}_sig" in frame.columns:
            name = f"{m.group(1)} ({MEASURE[m.group(2)]})"
            parts.append(frame.select(pl.lit("b").alias("panel"), pl.lit(name).alias("series"),
                                      pl.col(x).cast(pl.Float64).alias("x"),
                                      pl.col(col).cast(pl.Float64).alias("value"),
                                      pl.col(f"{m.group(1)}_{m.group(2)}_sig").cast(pl.Boolean)
                                      .alias("significant")))
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts).drop_nulls("value").sort("panel", "series", "x")


def factor_figure(df: pl.DataFrame, x: str, title: str) -> Figure:
    """Fig. 2's layout against ``x`` (log axis for a learning rate)."""
    fig, (ax_a, ax_b) = _panels(2, (6.0, 4.4), title + " (open markers: not significant)")
    for ax, panel, label, ylab in ((ax_a, "a", "(a) XNLI", "language pairs (of 225)"),
                                   (ax_b, "b", "(b) MSMARCO and arxiv", "PND improvement [%]")):
        _draw_panel(ax, df.filter(pl.col("panel") == panel), "x")
        if x == "lr":
            ax.set_xscale("log")
        ax.set_xlabel("learning rate" if x == "lr" else x)
        ax.set_ylabel(ylab)
        ax.set_title(label, fontsize=9)
        ax.grid(True, which="both", alpha=0.25)
        if ax.lines:
            ax.legend(fontsize=6)
    ax_b.axhline(0, color="black", lw=0.8)
    return fig


def models_heatmaps_figure(df: pl.DataFrame, title: str) -> Figure:
    """Figs 7-8: one panel per model (columns model, query_lang, text_lang, improvement,
    significant), one diverging colour scale."""
    models = df["model"].unique(maintain_order=True).to_list()
    fig, axes = _panels(len(models), (5.4, 4.9), title + " — improvement [%], grey italic: not significant",
                        cols=min(len(models), 3))
    finite = df["improvement"].drop_nans().drop_nulls()
    lim = float(finite.abs().max()) if finite.len() else 1.0
    im = None
    for ax, model in zip(axes, models):
        im = _heatmap(ax, df.filter(pl.col("model") == model), "improvement", model, diverging=True,
                      lim=lim or 1.0)
    if im is not None:
        fig.colorbar(im, ax=axes, label="PND improvement [%]", shrink=0.8)
    return fig


def group_specs(files: dict[str, pl.DataFrame]) -> list[Any]:
    """Figs 3, 11a, 12-14 from the ``groups/grid-fig<N>.csv`` tables present (one per model)."""
    out = []
    for name, frame in sorted(files.items()):
        m = FIG_GROUP.match(name)
        if not m or "model" not in frame.columns:
            continue
        fig, x = m.group(1), factor_of(frame)
        if x is None:
            continue
        for (model,), sub in frame.partition_by(["model"], as_dict=True, maintain_order=True).items():
            title = f"Paper 2 Fig. {fig[3:].lstrip('0')}: improvement vs {x}, {model} (grid {fig})"
            out.append(_spec(f"p2_{fig}_{_safe(x)}_{_safe(model)}", title, factor_data(sub, x),
                             lambda d, t=title, x=x: factor_figure(d, x, t)))
    return out


def models_specs(heat: pl.DataFrame | None, where: str = "") -> list[Any]:
    """Figs 7-8 from ``xnli_heatmap.parquet``: each model's default run, per relation and measure."""
    cols = {"model", "qrun_id", "relation", "measure", "query_lang", "text_lang", "improvement", "significant"}
    if not _has(heat, cols):
        return []
    assert heat is not None
    default = heat.filter(pl.col("qrun_id") == DEFAULT_RUN)
    out = []
    for (rel, measure), sub in sorted(default.partition_by(["relation", "measure"], as_dict=True).items()):
        fig = {"neutral": "fig07", "contradiction": "fig08"}.get(rel, f"fig07_{_safe(rel)}")
        title = (f"Paper 2 Figs 7-8: XNLI improvement of each model's default tuned run, "
                 f"{RELATION_TITLE.get(rel, rel)}, {measure}{where}")
        out.append(_spec(f"p2_{fig}_xnli_models_{_safe(measure)}", title,
                         sub.select("model", "query_lang", "text_lang", "improvement", "significant"),
                         lambda d, t=title: models_heatmaps_figure(d, t)))
    return out


def specs(tables: dict[str, pl.DataFrame]) -> list[Any]:
    """Figs 7-8 (every model's default run side by side) from the top folder's XNLI heat map,
    and Figs 3, 11a, 12-14 from ``groups/grid-fig<N>.csv``. Apart from
    :func:`embtune.plots.paper2.specs` because this module draws with that one's helpers."""
    out: list[Any] = []
    for folder, files in sorted(_by_folder(tables).items()):
        if not folder:
            out += models_specs(files.get("xnli_heatmap.parquet"))
        if folder == "groups":
            out += group_specs(files)
    return out
