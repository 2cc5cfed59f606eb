"""One drawing function per figure family: a tidy DataFrame in, a matplotlib Figure out.

Why DataFrame-in: the same frame is written as the figure's CSV (``dvc plots``), so what is
plotted and what is versioned cannot drift apart. No function here reads or writes files.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import Formatter, LogFormatter, LogLocator  # noqa: E402

from embtune.models import methods as registry  # noqa: E402


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (0.9, 1, 2) rather than 9e-01 or 2×10⁰."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def compact_number(x: float, _pos: Any = None) -> str:
    """``2e11`` / ``3.5e16``: short enough that neighbouring log ticks never run into each other."""
    if x <= 0:
        return ""
    exp = math.floor(math.log10(x) + 1e-9)
    mant = x / 10**exp
    if -2 <= exp <= 3:
        return f"{x:g}"
    return f"{mant:g}e{exp}" if abs(mant - 1) > 1e-9 else f"1e{exp}"


class _SparseLogFormatter(Formatter):
    """Log-axis labels that never overprint: compact (``2e11``), at every decade, and at 2x and
    5x only while the axis spans under two decades (2x, 3x and 5x under half a decade); the
    other ticks stay unlabelled. Decided at draw time from the axis' own view interval, so it
    holds whatever the data's range."""

    def __call__(self, x: float, pos: Any = None) -> str:
        if x <= 0:
            return ""
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (x, x * 100)
        span = math.log10(hi / lo) if lo > 0 else 10.0
        mant = round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6)
        keep = {1.0} | ({2.0, 5.0} if span < 2 else set()) | ({3.0} if span < 0.5 else set())
        return compact_number(x) if mant in keep else ""


def _log_x(ax: Any) -> None:
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs="auto"))
    ax.xaxis.set_major_formatter(_SparseLogFormatter())
    ax.xaxis.set_minor_formatter(_SparseLogFormatter())
    ax.tick_params(axis="x", which="both", labelsize=8)


def _axes(title: str, xlabel: str, ylabel: str, logx: bool = True, logy: bool = True,
          size: tuple[float, float] = (6.4, 4.6)) -> tuple[Figure, Any]:
    fig, ax = plt.subplots(figsize=size, constrained_layout=True)
    _style(ax, title, xlabel, ylabel, logx, logy)
    return fig, ax


def _style(ax: Any, title: str, xlabel: str, ylabel: str, logx: bool, logy: bool) -> None:
    ax.set_title(textwrap.fill(title, 60), fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
        _log_x(ax)
    if logy:
        ax.set_yscale("log")
        # plain numbers (0.8, 1, 2) instead of 2×10⁰: losses span less than a decade or two
        ax.yaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
        ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))
    ax.grid(True, which="both", alpha=0.25)


def _budget_colors(budgets: list[float]) -> dict[float, Any]:
    cmap = plt.get_cmap("viridis")
    n = max(len(budgets) - 1, 1)
    return {b: cmap(i / n) for i, b in enumerate(sorted(budgets))}


def _grid(n: int, title: str, size: float = 3.2) -> tuple[Figure, list[Any]]:
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols + 0.6, size * rows * 0.85 + 0.6),
                             constrained_layout=True, squeeze=False)
    fig.suptitle(title, fontsize=11)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


MARKERS = ("o", "s", "^", "D", "v", "P")


def frontier_figure(df: pl.DataFrame, ylabel: str, title: str) -> Figure:
    """Fig. 1 / 11. Columns: method, budget, value, kind (observed | fit | frontier)."""
    fig, ax = _axes(title, "compute budget C [FLOP]", ylabel)
    for method in df.filter(pl.col("kind") == "observed")["method"].unique(maintain_order=True):
        color = registry.color(method)
        obs = df.filter((pl.col("method") == method) & (pl.col("kind") == "observed"))
        ax.plot(obs["budget"], obs["value"], "x", color=color, ms=8, mew=2, label=f"{method}")
        fit = df.filter((pl.col("method") == method) & (pl.col("kind") == "fit"))
        if fit.height:
            ax.plot(fit["budget"], fit["value"], ":", color=color, lw=1.5)
    front = df.filter(pl.col("kind") == "frontier")
    if front.height:
        ax.plot(front["budget"], front["value"], "-", color="black", lw=2, label="compute-optimal frontier")
    ax.legend(fontsize=8)
    return fig


def isoflop_parabola(n: Any, value: Any, higher_is_better: bool = False) -> tuple[float, float, Any] | None:
    """Paper 1's reading of an IsoFLOP profile (Fig. 6: "we fit a parabola to each IsoFLOP
    profile"): value = a·(ln N)² + b·ln N + c by least squares. Returns (N at the vertex, value
    there, the polynomial) when the parabola opens the right way (a minimum for a loss, a maximum
    for a score) with its vertex inside the measured N range; None otherwise (no interior optimum)."""
    import numpy as np

    x, y = np.log(np.asarray(n, dtype=float)), np.asarray(value, dtype=float)
    if len(np.unique(x)) < 3:
        return None
    a, b, c = np.polyfit(x, y, 2)
    if (a <= 0 and not higher_is_better) or (a >= 0 and higher_is_better):
        return None
    vertex = -b / (2 * a)
    if not x.min() <= vertex <= x.max():
        return None
    poly = np.poly1d((a, b, c))
    return float(np.exp(vertex)), float(poly(vertex)), poly


def isoflop_figure(df: pl.DataFrame, ylabel: str, title: str, higher_is_better: bool = False) -> Figure:
    """Figs 2, 4, 7-10. Columns: model, N, budget, value, label (best hyper-parameter or '').
    Each budget's points, its fitted parabola in ln N (dashed) and the parabola's optimum (a star),
    as paper 1 reads its IsoFLOP profiles."""
    import numpy as np

    fig, ax = _axes(title, "non-embedding parameters N", ylabel)
    colors = _budget_colors(df["budget"].unique().to_list())
    for i, budget in enumerate(sorted(df["budget"].unique().to_list())):
        sub = df.filter(pl.col("budget") == budget).sort("N")
        color = colors[budget]
        ax.plot(sub["N"], sub["value"], "o", color=color, label=f"C = {compact_number(budget)}")
        fit = isoflop_parabola(sub["N"], sub["value"], higher_is_better)
        if fit is not None:
            n_opt, v_opt, poly = fit
            xs = np.linspace(math.log(sub["N"].min()), math.log(sub["N"].max()), 60)
            ax.plot(np.exp(xs), poly(xs), "--", color=color, lw=1.2)
            ax.plot([n_opt], [v_opt], "*", color=color, ms=13, mec="black", mew=0.8, zorder=5)
        else:
            ax.plot(sub["N"], sub["value"], "-", color=color, lw=0.8, alpha=0.6)
        # labels alternate above and below their points, so two budgets' labels never overprint
        dy = 6 if i % 2 == 0 else -11
        for n, v, lab in zip(sub["N"], sub["value"], sub["label"]):
            if lab:
                ax.annotate(lab, (n, v), textcoords="offset points", xytext=(0, dy), ha="center",
                            fontsize=7, color=color)
    ax.plot([], [], "*", color="grey", ms=11, mec="black", mew=0.8, label="parabola optimum")
    ax.legend(fontsize=8, title="budget [FLOP]", title_fontsize=8)
    return fig


def hyper_effect_figure(df: pl.DataFrame, xlabel: str, ylabel: str, title: str, logx: bool) -> Figure:
    """Figs 3 and 5: one panel per model. Columns: model, N, budget, hyper, value."""
    models = df.sort("N")["model"].unique(maintain_order=True).to_list()
    fig, axes = _grid(len(models), title)
    colors = _budget_colors(df["budget"].unique().to_list())
    for ax, model in zip(axes, models):
        sub = df.filter(pl.col("model") == model)
        for budget in sorted(sub["budget"].unique().to_list()):
            b = sub.filter(pl.col("budget") == budget).sort("hyper")
            ax.plot(b["hyper"], b["value"], "o-", color=colors[budget], ms=4, label=f"{budget:.2g}")
        _style(ax, model, xlabel, ylabel, logx, True)
    axes[0].legend(fontsize=7, title="C [FLOP]", title_fontsize=7)
    return fig


def optimal_n_figure(df: pl.DataFrame, title: str) -> Figure:
    """Figs 6, 12, 13. Columns: method, budget, N, kind (observed | fit)."""
    fig, ax = _axes(title, "compute budget C [FLOP]", "optimal non-embedding parameters N*")
    # open markers of distinct shapes, sized down method by method: where two methods pick the same
    # N* at a budget, both stay visible (a filled marker hid the one drawn before it)
    for i, method in enumerate(df["method"].unique(maintain_order=True)):
        color = registry.color(method)
        obs = df.filter((pl.col("method") == method) & (pl.col("kind") == "observed"))
        ax.plot(obs["budget"], obs["N"], MARKERS[i % len(MARKERS)], color=color, mfc="none", mew=1.6,
                ms=11 - 2 * (i % 3), label=method)
        fit = df.filter((pl.col("method") == method) & (pl.col("kind") == "fit"))
        if fit.height:
            ax.plot(fit["budget"], fit["N"], "--", color=color, lw=1.2)
    ax.legend(fontsize=8)
    return fig


def scatter_figure(df: pl.DataFrame, xlabel: str, ylabel: str, title: str, *, logx: bool = True,
                   logy: bool = True, lines: bool = False, note: str = "") -> Figure:
    """Figs 14, 15, 17, 18, 19. Columns: x, y, group (legend entry), optional panel."""
    panels = df["panel"].unique(maintain_order=True).to_list() if "panel" in df.columns else [None]
    if len(panels) > 1:
        fig, axes = _grid(len(panels), title)
    else:
        fig, ax = _axes(title, xlabel, ylabel, logx, logy)
        axes = [ax]
    for ax, panel in zip(axes, panels):
        sub = df if panel is None else df.filter(pl.col("panel") == panel)
        groups = sub["group"].unique(maintain_order=True).to_list()
        cmap = plt.get_cmap("viridis" if len(groups) > 10 else "tab10")
        for i, g in enumerate(groups):
            gs = sub.filter(pl.col("group") == g).sort("x")
            color = cmap(i / max(len(groups) - 1, 1)) if len(groups) > 10 else cmap(i % 10)
            ax.plot(gs["x"], gs["y"], "o-" if lines else "o", color=color, ms=4, alpha=0.8, label=str(g))
        if len(panels) > 1:
            _style(ax, str(panel), xlabel, ylabel, logx, logy)
        if len(groups) <= 12:
            ax.legend(fontsize=7)
    if note:
        axes[0].text(0.02, 0.02, note, transform=axes[0].transAxes, fontsize=8, va="bottom")
    return fig


def predicted_vs_actual_figure(df: pl.DataFrame, title: str) -> Figure:
    """Fig. 16: one panel per (method, law). Columns: method, law, predicted, actual, split and
    optional trust ('' or why the fit is untrustworthy: its panel is titled and marked in red)."""
    keys = df.select("method", "law").unique(maintain_order=True).rows()
    fig, axes = _grid(len(keys), title)
    for ax, (method, law) in zip(axes, keys):
        sub = df.filter((pl.col("method") == method) & (pl.col("law") == law))
        for split, color in (("train", "tab:red"), ("test", "tab:blue")):
            s = sub.filter(pl.col("split") == split)
            if s.height:
                ax.plot(s["predicted"], s["actual"], "o", color=color, ms=3, alpha=0.7, label=split)
        lo = float(min(sub["predicted"].min(), sub["actual"].min()))
        hi = float(max(sub["predicted"].max(), sub["actual"].max()))
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        _style(ax, f"{method}: {law}", "predicted loss", "actual loss", True, True)
        note = sub["trust"][0] if "trust" in sub.columns else ""
        if note:
            ax.set_title(textwrap.fill(f"{method}: {law}. {note}", 44), fontsize=8, color="tab:red")
            ax.text(0.5, 0.5, "UNTRUSTWORTHY FIT", transform=ax.transAxes, ha="center", va="center",
                    fontsize=12, color="tab:red", alpha=0.35, rotation=30)
        ax.legend(fontsize=7)
    return fig


def curves_figure(df: pl.DataFrame, x: str, y: str, title: str) -> Figure:
    """Per-run curves, one panel per model. Columns: run, model, ``x``, ``y``; a paper-1 run's id
    carries its budget (``__c2e11``), which colours its line, so a panel reads small to large."""
    models = sorted(df["model"].unique().to_list())
    fig, axes = _grid(len(models), title)
    for ax, model in zip(axes, models):
        sub = df.filter(pl.col("model") == model)
        runs = sorted(sub["run"].unique().to_list())
        cmap = plt.get_cmap("viridis")
        for i, run in enumerate(runs):
            r = sub.filter(pl.col("run") == run).sort(x)
            ax.plot(r[x], r[y], "-", lw=1, alpha=0.85, color=cmap(i / max(len(runs) - 1, 1)))
        _style(ax, f"{model} ({len(runs)} runs)", x, y, False, False)
    return fig


def transfer_figure(df: pl.DataFrame, title: str) -> Figure:
    """Paper 1 Fig. 20: predicted vs actual loss, one panel per method; red = the main-grid runs
    the law was fitted on, green = the study's runs it predicts (batch 2048, context 512).
    Columns: method, split (fit | predicted), predicted, actual."""
    methods = df["method"].unique(maintain_order=True).to_list()
    fig, axes = _grid(len(methods), textwrap.fill(title, 30 * min(len(methods), 3) + 10))
    for ax, method in zip(axes, methods):
        sub = df.filter((pl.col("method") == method) & pl.col("predicted").is_not_null())
        for split, color in (("fit", "tab:red"), ("predicted", "tab:green")):
            s = sub.filter(pl.col("split") == split)
            if s.height:
                ax.plot(s["predicted"], s["actual"], "o", color=color, ms=3, alpha=0.7, label=split)
        if sub.height:
            lo = float(min(sub["predicted"].min(), sub["actual"].min()))
            hi = float(max(sub["predicted"].max(), sub["actual"].max()))
            ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no prediction (fit skipped)", transform=ax.transAxes, ha="center")
        _style(ax, method, "predicted loss", "actual loss", False, False)   # less than a decade: linear
    return fig


__all__ = ["curves_figure", "frontier_figure", "isoflop_figure", "isoflop_parabola", "hyper_effect_figure", "optimal_n_figure",
           "scatter_figure", "predicted_vs_actual_figure", "transfer_figure"]  # paper 2: embtune.plots.paper2
