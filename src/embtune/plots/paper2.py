"""Paper 2's figures: which ones the query-tuning tables support, their data, and how they look.

Every figure is built from a table ``query-table`` writes (so its numbers and integer counts are
in a file), is drawn from one tidy frame (written next to it as CSV) and is made for every model
and run the tables hold — nothing is capped; a figure the data cannot support is a recorded skip.

* Fig. 1 (and 7-10): ``p2_fig01_xnli_improvement_<model>_<run>`` — per-language-pair PND
  improvement (%) of one run, panels relation x measure, from ``xnli_heatmap.parquet``.
* Fig. 2 (and 3, 11-14 for other sweeps): ``p2_fig02_lr_<model>`` — (a) XNLI language pairs
  significantly improved / worsened vs the learning rate (``lr_xnli_counts.parquet``), (b) PND
  improvement on MSMARCO / arxiv vs the learning rate, open markers not significant
  (``lr_curves.parquet``).
* Figs 4-5: ``p2_fig04_xnli_pnd_<measure>`` (entailment vs neutral) and ``p2_fig05_...``
  (entailment vs contradiction) — the untuned encoders' PND per language pair, one panel per
  model (``xnli_base.parquet``).
* Fig. 6: ``p2_fig06_arxiv_levels_<model>_<run>`` — (a) the untuned PND per arxiv difficulty
  level, (b) the run's improvement per level, open markers not significant
  (``arxiv_levels_base.csv``, ``arxiv_levels.csv``).

* Figs 3, 7-8, 11a, 12-14: :mod:`embtune.plots.paper2_sweeps`.

Tables in sub-folders of the query-table folder (e.g. per-grid tables) get the folder in the
figure name, so two grids never overwrite each other's figures.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import PurePosixPath
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from embtune.plots.spec import Spec  # noqa: E402

RELATION_TITLE = {"neutral": "entailment vs neutral", "contradiction": "entailment vs contradiction"}


# ---------------------------------------------------------------- drawing
def _panels(n: int, size: tuple[float, float], title: str, cols: int | None = None) -> tuple[Figure, list[Any]]:
    cols = cols or n
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows),
                             constrained_layout=True, squeeze=False)
    fig.suptitle(textwrap.fill(title, 110), fontsize=10)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _grid(df: pl.DataFrame, value: str) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(query languages, text languages, values, significant) as 2-D arrays (NaN = no cell)."""
    qs = sorted(df["query_lang"].unique().to_list())
    ts = sorted(df["text_lang"].unique().to_list())
    grid = np.full((len(qs), len(ts)), np.nan)
    sig = np.ones_like(grid, bool)
    qi, ti = {q: i for i, q in enumerate(qs)}, {t: j for j, t in enumerate(ts)}
    for r in df.iter_rows(named=True):
        grid[qi[r["query_lang"]], ti[r["text_lang"]]] = r[value]
        if "significant" in r:
            sig[qi[r["query_lang"]], ti[r["text_lang"]]] = bool(r["significant"])
    return qs, ts, grid, sig


def _heatmap(ax: Any, df: pl.DataFrame, value: str, title: str, *, diverging: bool,
             scale: float = 1.0, fmt: str = "{:.0f}", lim: float | None = None) -> Any:
    """One 15x15 panel: query language on Y, text language on X (Fig. 1); numbers in the cells,
    grey italic where not significant."""
    qs, ts, grid, sig = _grid(df, value)
    grid = grid * scale
    finite = np.isfinite(grid)
    if diverging:
        lim = lim or (float(np.nanmax(np.abs(grid))) if finite.any() else 1.0) or 1.0
        im = ax.imshow(grid, cmap="RdBu", norm=TwoSlopeNorm(0.0, -lim, lim))
    else:
        im = ax.imshow(grid, cmap="viridis_r", vmin=0.0, vmax=lim)
        lim = lim or (float(np.nanmax(grid)) if finite.any() else 1.0)
    for i, j in zip(*np.nonzero(finite)):
        dark = abs(grid[i, j]) > 0.6 * lim if diverging else grid[i, j] < 0.4 * lim
        ax.text(j, i, fmt.format(grid[i, j] + 0.0), ha="center", va="center", fontsize=5.5,
                color=("white" if dark else "black") if sig[i, j] else "0.5",
                style="normal" if sig[i, j] else "italic")
    ax.set_xticks(range(len(ts)), ts, fontsize=7)
    ax.set_yticks(range(len(qs)), qs, fontsize=7)
    ax.set_xlabel("text language", fontsize=8)
    ax.set_ylabel("query language", fontsize=8)
    ax.set_title(title, fontsize=9)
    return im


def improvement_heatmaps_figure(df: pl.DataFrame, title: str) -> Figure:
    """Fig. 1 / 7-10: one run's PND improvement (%) per language pair, a panel per (relation,
    measure) sharing one colour scale. Columns: relation, measure, query_lang, text_lang,
    improvement, significant."""
    keys = df.select("relation", "measure").unique(maintain_order=True).rows()
    fig, axes = _panels(len(keys), (5.6, 4.9), title + " — improvement [%], grey italic: not significant",
                        cols=min(len(keys), 2))
    finite = df["improvement"].drop_nans().drop_nulls()
    lim = float(finite.abs().max()) if finite.len() else 1.0
    for ax, (rel, measure) in zip(axes, keys):
        sub = df.filter((pl.col("relation") == rel) & (pl.col("measure") == measure))
        im = _heatmap(ax, sub, "improvement", f"{RELATION_TITLE.get(rel, rel)}, {measure}",
                      diverging=True, lim=lim or 1.0)
    fig.colorbar(im, ax=axes, label="PND improvement [%]", shrink=0.8)
    return fig


def pnd_heatmaps_figure(df: pl.DataFrame, title: str) -> Figure:
    """Figs 4-5: the untuned encoders' PND (%) per language pair, a panel per model on one scale.
    Columns: model, query_lang, text_lang, pnd."""
    models = df["model"].unique(maintain_order=True).to_list()
    fig, axes = _panels(len(models), (5.4, 4.9), title + " — PND [%]", cols=min(len(models), 3))
    top = 100 * float(df["pnd"].max()) if df.height else 1.0
    for ax, model in zip(axes, models):
        im = _heatmap(ax, df.filter(pl.col("model") == model), "pnd", model, diverging=False,
                      scale=100.0, fmt="{:.0f}", lim=top or 1.0)
    fig.colorbar(im, ax=axes, label="PND [%]", shrink=0.8)
    return fig


def _series(ax: Any, sub: pl.DataFrame, x: str, label: str, color: Any, marker: str = "o",
            line: str = "-") -> None:
    """A line with filled markers where significant and open markers where not."""
    sub = sub.sort(x)
    ax.plot(sub[x], sub["value"], line, color=color, lw=1, label=label)
    sig = sub["significant"].cast(pl.Boolean).fill_null(False)
    ax.plot(sub.filter(sig)[x], sub.filter(sig)["value"], marker, color=color, ms=5, ls="none")
    ax.plot(sub.filter(~sig)[x], sub.filter(~sig)["value"], marker, mfc="none", color=color, ms=5,
            ls="none")


def _draw_panel(ax: Any, sub: pl.DataFrame, x: str) -> None:
    """Each series one line; "<key> improved" / "<key> worsened" share <key>'s colour."""
    cmap = plt.get_cmap("tab10")
    names = sub["series"].unique(maintain_order=True).to_list()
    key = lambda n: n.removesuffix(" improved").removesuffix(" worsened")  # noqa: E731
    keys = list(dict.fromkeys(key(n) for n in names))
    for name in names:
        worse = name.endswith(" worsened")
        marker = "v" if worse else "^" if name.endswith(" improved") else "o"
        _series(ax, sub.filter(pl.col("series") == name), x, name,
                cmap(keys.index(key(name)) % 10), marker, "--" if worse else "-")


def lr_figure(df: pl.DataFrame, title: str) -> Figure:
    """Fig. 2: (a) XNLI language pairs significantly improved (solid, ▲) / worsened (dashed, ▼)
    per relation and measure; (b) PND improvement on the English datasets, open markers not
    significant. Both against the learning rate (log). Columns: panel (a|b), series, lr, value,
    significant."""
    fig, (ax_a, ax_b) = _panels(2, (6.0, 4.4), title + " (open markers: not significant)")
    _draw_panel(ax_a, df.filter(pl.col("panel") == "a"), "lr")
    _draw_panel(ax_b, df.filter(pl.col("panel") == "b"), "lr")
    for ax, label, ylab in ((ax_a, "(a) XNLI", "language pairs (of 225)"),
                            (ax_b, "(b) MSMARCO and arxiv", "PND improvement [%]")):
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_ylabel(ylab)
        ax.set_title(label, fontsize=9)
        ax.grid(True, which="both", alpha=0.25)
        if ax.lines:
            ax.legend(fontsize=6)
    ax_b.axhline(0, color="black", lw=0.8)
    return fig


def levels_figure(df: pl.DataFrame, title: str) -> Figure:
    """Fig. 6: (a) untuned PND (%) per arxiv difficulty level (1 = hardest), (b) a run's
    improvement (%) per level, open markers not significant; (b) is left out when the frame has
    no run. Columns: panel (a|b), series, level, value, significant."""
    has_b = df.filter(pl.col("panel") == "b").height > 0
    fig, axes = _panels(2 if has_b else 1, (6.0, 4.4), title + " (open markers: not significant)")
    for ax, panel, ylab in zip(axes, ("a", "b"), ("PND of the untuned encoder [%]", "PND improvement [%]")):
        _draw_panel(ax, df.filter(pl.col("panel") == panel), "level")
        ax.set_xlabel("difficulty level (1 = hardest, last = random negative)")
        ax.set_ylabel(ylab)
        ax.set_title(f"({panel})", fontsize=9)
        ax.grid(True, alpha=0.25)
        ax.legend(fontsize=7)
    if has_b:
        axes[1].axhline(0, color="black", lw=0.8)
    return fig


# ---------------------------------------------------------------- tidy frames
def lr_data(curves: pl.DataFrame, counts: pl.DataFrame | None) -> pl.DataFrame:
    """Fig. 2's tidy frame for one model: (a) from lr_xnli_counts, (b) from lr_curves."""
    parts = [curves.filter(pl.col("lr").is_not_null()).select(
        pl.lit("b").alias("panel"), pl.format("{} ({})", "dataset", "measure").alias("series"),
        pl.col("lr").cast(pl.Float64), pl.col("improvement").cast(pl.Float64).alias("value"),
        pl.col("significant").cast(pl.Boolean))]
    if counts is not None and counts.height:
        for kind in ("improved", "worsened"):   # counts of significant pairs: always filled
            parts.insert(0, counts.select(
                pl.lit("a").alias("panel"), pl.format("{} {} " + kind, "relation", "measure").alias("series"),
                pl.col("lr").cast(pl.Float64), pl.col(kind).cast(pl.Float64).alias("value"),
                pl.lit(True).alias("significant")))
    return pl.concat(parts).sort("panel", "series", "lr")


def levels_data(base: pl.DataFrame, run: pl.DataFrame | None) -> pl.DataFrame:
    """Fig. 6's tidy frame: (a) the model's untuned PND in percent, (b) one run's improvement."""
    parts = [base.select(pl.lit("a").alias("panel"), pl.format("arxiv-{} ({})", "flavour", "measure").alias("series"),
                         pl.col("level").cast(pl.Int64), (100 * pl.col("pnd")).alias("value"),
                         pl.lit(True).alias("significant"))]
    if run is not None and run.height:
        parts.append(run.select(pl.lit("b").alias("panel"),
                                pl.format("arxiv-{} ({})", "flavour", "measure").alias("series"),
                                pl.col("level").cast(pl.Int64), pl.col("improvement").cast(pl.Float64).alias("value"),
                                pl.col("significant").cast(pl.Boolean)))
    return pl.concat(parts).sort("panel", "series", "level")


# ---------------------------------------------------------------- specs
def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in str(text))


def _by_folder(tables: dict[str, pl.DataFrame]) -> dict[str, dict[str, pl.DataFrame]]:
    """folder -> file name -> table (folder "" = the query-table folder itself)."""
    out: dict[str, dict[str, pl.DataFrame]] = {}
    for rel, frame in tables.items():
        path = PurePosixPath(rel)
        out.setdefault(str(path.parent) if str(path.parent) != "." else "", {})[path.name] = frame
    return out


def _has(frame: pl.DataFrame | None, cols: set[str]) -> bool:
    return frame is not None and cols <= set(frame.columns)


def specs(tables: dict[str, pl.DataFrame]) -> list[Any]:
    """Every paper-2 figure the query tables support (see the module docstring)."""
    out: list[Any] = []
    for folder, files in sorted(_by_folder(tables).items()):
        pre = f"p2_{_safe(folder)}_" if folder else "p2_"
        where = f" [{folder}]" if folder else ""
        out += _fig01(files.get("xnli_heatmap.parquet"), pre, where)
        out += _fig02(files.get("lr_curves.parquet"), files.get("lr_xnli_counts.parquet"), pre, where)
        out += _fig04_05(files.get("xnli_base.parquet"), pre, where)
        out += _fig06(files.get("arxiv_levels_base.csv"), files.get("arxiv_levels.csv"), pre, where)
    return out   # Figs 3, 7-8, 11a, 12-14: embtune.plots.paper2_sweeps.specs


def _spec(name: str, caption: str, data: pl.DataFrame | None, draw: Any,
          skipped: str | None = None) -> Any:
    if skipped or data is None or data.is_empty():
        return Spec(name, caption, skipped=skipped or "no data points")
    return Spec(name, caption, data, draw)


HEAT_COLS = {"model", "qrun_id", "relation", "measure", "query_lang", "text_lang", "improvement",
             "significant"}


def _fig01(heat: pl.DataFrame | None, pre: str, where: str) -> list[Any]:
    if not _has(heat, HEAT_COLS):
        return []
    assert heat is not None
    out = []
    for (model, qrun), sub in heat.partition_by(["model", "qrun_id"], as_dict=True, maintain_order=True).items():
        title = f"Paper 2 Fig. 1: XNLI improvement by language pair, {model}, run {qrun}{where}"
        data = sub.select("relation", "measure", "query_lang", "text_lang", "improvement", "significant")
        out.append(_spec(f"{pre}fig01_xnli_improvement_{_safe(model)}_{_safe(qrun)}", title, data,
                         lambda d, t=title: improvement_heatmaps_figure(d, t)))
    return out


def _fig02(curves: pl.DataFrame | None, counts: pl.DataFrame | None, pre: str, where: str) -> list[Any]:
    if not _has(curves, {"model", "lr", "dataset", "measure", "improvement", "significant"}):
        return []
    assert curves is not None
    counts = counts if _has(counts, {"model", "lr", "relation", "measure", "improved", "worsened"}) else None
    out = []
    for (model,), sub in curves.partition_by(["model"], as_dict=True, maintain_order=True).items():
        c = counts.filter(pl.col("model") == model) if counts is not None else None
        title = f"Paper 2 Fig. 2: improvement vs learning rate, {model}{where}"
        out.append(_spec(f"{pre}fig02_lr_{_safe(model)}", title + " — (a) XNLI language pairs, "
                         "(b) MSMARCO and arxiv", lr_data(sub, c), lambda d, t=title: lr_figure(d, t)))
    return out


def _fig04_05(base: pl.DataFrame | None, pre: str, where: str) -> list[Any]:
    if not _has(base, {"model", "relation", "measure", "query_lang", "text_lang", "pnd"}):
        return []
    assert base is not None
    out = []
    for (rel, measure), sub in sorted(base.partition_by(["relation", "measure"], as_dict=True).items(),
                                      key=lambda kv: (kv[0][0] != "neutral", kv[0][1])):
        fig = "fig04" if rel == "neutral" else "fig05" if rel == "contradiction" else f"fig04_{_safe(rel)}"
        title = f"Paper 2 Figs 4-5: PND of the untuned encoders on XNLI, {RELATION_TITLE.get(rel, rel)}, {measure}{where}"
        out.append(_spec(f"{pre}{fig}_xnli_pnd_{_safe(measure)}", title,
                         sub.select("model", "query_lang", "text_lang", "pnd"),
                         lambda d, t=title: pnd_heatmaps_figure(d, t)))
    return out


def _fig06(base: pl.DataFrame | None, runs: pl.DataFrame | None, pre: str, where: str) -> list[Any]:
    if not _has(base, {"model", "flavour", "level", "measure", "pnd"}):
        return []
    assert base is not None
    out = []
    runs_ok = runs if _has(runs, {"model", "qrun_id", "flavour", "level", "measure", "improvement",
                                  "significant"}) else None
    for (model,), b in base.partition_by(["model"], as_dict=True, maintain_order=True).items():
        if b["level"].n_unique() < 2:
            out.append(_spec(f"{pre}fig06_arxiv_levels_{_safe(model)}", "Paper 2 Fig. 6", None, None,
                             skipped="one arxiv difficulty level scored (data.arxiv.levels, "
                                     "evaluate.pnd.arxiv_levels)"))
            continue
        mine = runs_ok.filter(pl.col("model") == model) if runs_ok is not None else None
        qruns = mine["qrun_id"].unique(maintain_order=True).to_list() if mine is not None else []
        for qrun in qruns or [None]:
            run = mine.filter(pl.col("qrun_id") == qrun) if qrun is not None and mine is not None else None
            tag = f"_{_safe(qrun)}" if qrun else ""
            title = (f"Paper 2 Fig. 6: arxiv difficulty levels, {model}"
                     + (f", run {qrun}" if qrun else ", untuned") + where)
            out.append(_spec(f"{pre}fig06_arxiv_levels_{_safe(model)}{tag}", title,
                             levels_data(b, run), lambda d, t=title: levels_figure(d, t)))
    return out
