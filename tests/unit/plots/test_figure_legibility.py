"""Figures a reader can put in a paper: IsoFLOP profiles read by a fitted parabola and its
optimum (paper 1, Fig. 6), log-axis labels that never overprint, titles never cut, and markers
of one method never hiding another's."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402

from embtune.plots import figures as F  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_isoflop_parabola_finds_the_known_optimum(seed: int) -> None:
    """Points drawn from value = 0.3·(ln N − ln N*)² + 1.2 plus small noise: the vertex lands at N*."""
    rng = np.random.default_rng(seed)
    n_star = float(rng.uniform(2e5, 8e5))
    n = np.geomspace(5e4, 4e6, 7)
    value = 0.3 * (np.log(n) - math.log(n_star)) ** 2 + 1.2 + rng.normal(0, 1e-3, n.size)
    n_opt, v_opt, _ = F.isoflop_parabola(n, value)
    assert math.log(n_opt) == pytest.approx(math.log(n_star), abs=0.02)
    assert v_opt == pytest.approx(1.2, abs=3e-3)
    # a score (higher is better) opens downwards: the same points negated give the same N*
    n_max, v_max, _ = F.isoflop_parabola(n, -value, higher_is_better=True)
    assert n_max == pytest.approx(n_opt, rel=1e-9) and v_max == pytest.approx(-v_opt)


def test_isoflop_parabola_without_an_interior_optimum_is_none() -> None:
    n = np.geomspace(1e5, 1e6, 5)
    assert F.isoflop_parabola(n, 2.0 - 0.1 * np.log(n)) is None                 # a straight line: no vertex inside
    assert F.isoflop_parabola(n, (np.log(n) - math.log(5e6)) ** 2) is None     # vertex past the range
    assert F.isoflop_parabola(n, -(np.log(n) - math.log(3e5)) ** 2) is None    # a maximum for a loss
    assert F.isoflop_parabola(n[:2], n[:2]) is None                            # two points: no parabola


def _tick_boxes(fig, ax) -> list:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels(which="both") if t.get_text() and t.get_visible()]
    inside = [t for t in labels if ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
    return sorted((t.get_window_extent(renderer) for t in inside), key=lambda b: b.x0)


@pytest.mark.parametrize(("lo", "hi"), [(5e10, 8e11), (5e10, 1.6e12), (1.5e15, 1.5e18), (2e11, 4e11), (0.9, 3.5)])
def test_log_tick_labels_never_overprint(lo: float, hi: float) -> None:
    budgets = np.geomspace(lo, hi, 6)
    df = pl.DataFrame({"method": ["full"] * 6, "budget": budgets, "value": np.linspace(2.5, 1.5, 6),
                       "kind": ["observed"] * 6})
    fig = F.frontier_figure(df, "loss", "frontier")
    boxes = _tick_boxes(fig, fig.axes[0])
    assert len(boxes) >= 2, "an axis with fewer than two labels cannot be read"
    for a, b in zip(boxes, boxes[1:]):
        assert a.x1 <= b.x0, f"tick labels overlap on [{lo:g}, {hi:g}]"


def test_isoflop_figure_draws_each_budgets_optimum_and_keeps_labels_apart() -> None:
    rows = []
    for budget, n_star in ((1e11, 1e5), (4e11, 3e5)):
        for n in np.geomspace(3e4, 1e6, 5):
            rows.append({"model": f"m{n:.0f}", "N": n, "budget": budget, "label": "r8",
                         "value": 0.2 * (math.log(n) - math.log(n_star)) ** 2 + 2.0})
    fig = F.isoflop_figure(pl.DataFrame(rows), "loss", "IsoFLOP")
    ax = fig.axes[0]
    stars = [line for line in ax.get_lines() if line.get_marker() == "*" and len(line.get_xdata())]
    assert sorted(round(math.log(float(s.get_xdata()[0])), 2) for s in stars) == \
        sorted(round(math.log(n), 2) for n in (1e5, 3e5))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t.get_window_extent(renderer) for t in ax.texts]
    overlaps = [(a, b) for i, a in enumerate(texts) for b in texts[i + 1:] if a.overlaps(b)]
    assert not overlaps, "rank labels of two budgets overprint"


def test_titles_are_wrapped_not_cut() -> None:
    note = "E at its bound 0: no loss floor within the fitted range, do not extrapolate past it"
    df = pl.DataFrame({"method": ["full"] * 4, "law": ["chinchilla"] * 4, "predicted": [1.0, 1.2, 1.4, 1.6],
                       "actual": [1.1, 1.2, 1.5, 1.5], "split": ["train", "train", "test", "test"],
                       "trust": [note] * 4})
    fig = F.predicted_vs_actual_figure(df, "Predicted vs actual loss")
    title = fig.axes[0].get_title()
    assert "[...]" not in title and title.replace("\n", " ").endswith("extrapolate past it")


def test_one_methods_markers_do_not_hide_anothers() -> None:
    df = pl.DataFrame({"method": ["full", "lora"] * 3, "budget": [1e11, 1e11, 2e11, 2e11, 4e11, 4e11],
                       "N": [1e5] * 6, "kind": ["observed"] * 6})
    fig = F.optimal_n_figure(df, "Optimal N")
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() in ("full", "lora")]
    assert {line.get_marker() for line in lines} == {"o", "s"}
    assert all(line.get_markerfacecolor() == "none" for line in lines)
    assert lines[0].get_markersize() != lines[1].get_markersize()


def test_per_run_curves_one_panel_per_model_a_line_per_run() -> None:
    from embtune.plots.report import curve_specs

    rows = [{"run": f"{m}__full__c{c}", "model": m, "status": "ok", "method": "full", "step": s, "loss": 3.0 / s}
            for m in ("tiny-d32-l2", "tiny-d64-l2") for c in ("5e10", "2e11", "8e11") for s in range(1, 6)]
    specs = {s.name: s for s in curve_specs({"train_loss": pl.DataFrame(rows)})}
    assert specs["p2_curves_query_val_loss"].skipped == "no query run has a curve"
    fig = specs["curves_train_loss"].draw(specs["curves_train_loss"].data)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["tiny-d32-l2 (3 runs)", "tiny-d64-l2 (3 runs)"]
    assert all(len(ax.get_lines()) == 3 for ax in panels)
    assert list(panels[0].get_lines()[0].get_ydata()) == [3.0 / s for s in range(1, 6)]


def test_the_report_opens_with_one_screen() -> None:
    """The first screen: run counts as integers, the recipe and its trust, the findings counted by
    verdict with those that disagree, are partial or weaker than the paper named, and the links."""
    from embtune.evaluate.stats import strength
    from embtune.plots.findings import Finding
    from embtune.plots.report import glance_markdown

    runs = pl.DataFrame({"status": ["ok"] * 1200 + ["skipped"] * 3})
    items = [Finding(1, "bias-only is worst", "worst at 3 of 3 budgets", "yes"),
             Finding(1, "loss vs MTEB", f"Spearman ρ = -0.35, {strength(-0.35)}; weaker than the "
                     "paper's -0.892", "yes"),
             Finding(2, "adiabatic range", "no rate improves MSMARCO", "no"),
             Finding(1, "rank 32 or 128", "ranks tried: [8, 32]", "n/a")]
    recipe = {"method": "full", "budget": 2e11, "model": "tiny-d96-l2", "pairs": 12345.4, "predicted_loss": 1.2345,
              "trustworthy": False, "trust": {"why_not": ["bootstrap agreement 0.55 < 0.8"]}}
    text = "\n".join(glance_markdown(items, recipe, runs))
    assert "1,200 ok, 3 skipped" in text and "e+" not in text
    assert "**full** fine-tuning of **tiny-d96-l2**, 12,345 pairs" in text
    assert "**Not trustworthy**: bootstrap agreement 0.55 < 0.8." in text
    assert "2 yes, 1 no, 1 n/a" in text
    assert "*no*: adiabatic range" in text and "*yes, weaker than the paper*: loss vs MTEB" in text
    assert strength(-0.35) == "moderate" and strength(0.1) == "weak" and strength(-0.892) == "very strong"
    assert len(text.splitlines()) <= 20
