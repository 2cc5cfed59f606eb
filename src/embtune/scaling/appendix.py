"""Paper 1's smaller studies (``train.studies``) as tables and Fig. 20 (stage ``appendix-tables``,
driver :mod:`embtune.stages.appendix_tables`).

Why a stage of its own: the studies' runs are trained and collected with the main grid (one runs
table, a ``study`` column), but they answer other questions and must never enter the main fits
(:func:`embtune.scaling.isoflop.ok_rows` keeps the main grid only). This stage reads the same runs
table and the plan's memberships (:func:`embtune.plan.sweep.training_plan`: a main-grid run can also be
a study's point) and writes, under ``--out`` (the folder appears whole, ``manifest.json`` last):

* ``<study>_runs.csv``: every run of the study: its factor values, model, method, budget,
  lora_rank, freeze_fraction, seed, status and the study's metric (planned runs not collected yet
  read ``status = missing``);
* ``<study>.csv`` / ``<study>.md``: the paper's table (docs/fidelity.md#P1-APPD-TEMPERATURE and
  the rows after it), the best run per (model, method, budget,
  ``rows``): App. D Table 1 lists "best scores for each of the temperature value", Table 2 the
  best run per pooling, Tables 3-4 the loss per learning rate (and LoRA rank). Best = lowest loss
  or highest MTEB average; ``n_runs``/``n_finished`` say how many runs the cell had;
* for a study with ``predict`` (App. F): ``<study>_predicted.csv`` (method, run_id, model, budget,
  split fit | predicted, N, D, S, actual, predicted, rel_err), ``<study>_fit.json`` (per method
  the law's parameters, convergence and the prediction error on the study's runs) and
  ``<study>_predicted.png`` (Fig. 20). App. F: "We fit the formula following the method from
  Appendix E, with the change of using the number of training steps as the measure of data seen
  by the model instead of forward tokens. We then use it to predict the loss for the changed
  hyperparameters values." The law is fitted per method on every finished main-grid run (no
  held-out model: App. F fits on all of the batch-1024 data) and evaluated at the study's runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from embtune.core.io import write_json, write_text
from embtune.models import methods as registry
from embtune.plan.sweep import STUDY_FACTORS
from embtune.scaling.fit import fit_law
from embtune.scaling.isoflop import ok_rows
from embtune.scaling.laws import LAWS


def run_columns() -> tuple[str, ...]:
    """The runs-table columns a study's table carries (every method's hyper column: the registry's)."""
    return ("model", "method", "budget", *registry.hyper_columns(), "seed", "status", "skip_reason",
            "N", "D", "S", "steps")


def study_frame(runs: pl.DataFrame, members: list[dict[str, Any]], study: dict[str, Any],
                metric: str) -> pl.DataFrame:
    """One row per run of ``study``: run_id, its factor values, then the runs-table columns."""
    mine = [m for m in members if m["study"] == study["name"]]
    cols = [pl.Series("run_id", [m["run_id"] for m in mine], pl.String)]
    cols += [pl.Series(k, [m["factors"].get(k) for m in mine], pl.String if k == "pooling" else pl.Float64)
             for k in (study.get("cross") or {})]
    frame = pl.DataFrame(cols)
    wanted = (*run_columns(), metric)
    have = [c for c in wanted if c in runs.columns]
    table = runs.select("run_id", *have).unique("run_id", keep="first")
    out = frame.join(table, on="run_id", how="left")
    for c in wanted:
        if c not in out.columns:
            out = out.with_columns(pl.lit(None).alias(c))
    return out.with_columns(pl.col("status").fill_null("missing"))


def best_table(frame: pl.DataFrame, study: dict[str, Any], metric: str) -> pl.DataFrame:
    """The best finished run per (model, method, budget, rows...), with how many runs each cell had."""
    rows = study.get("rows") or list(study.get("cross") or {})
    keys = list(dict.fromkeys(["model", "method", "budget", *rows]))
    sign = -1.0 if metric == "mteb_average" else 1.0        # best = highest MTEB, lowest loss
    finite = (pl.col("status") == "ok") & pl.col(metric).is_not_null() & pl.col(metric).is_finite()
    score = pl.when(finite).then(pl.col(metric).cast(pl.Float64) * sign)
    grouped = frame.with_columns(finite.alias("_ok"), score.alias("_score")).group_by(keys, maintain_order=True)
    table = grouped.agg(
        pl.len().alias("n_runs"), pl.col("_ok").sum().alias("n_finished"),
        (pl.col("_score").min() * sign).alias(metric),
        pl.col("run_id").sort_by("_score", nulls_last=True).first().alias("best_run_id"))
    table = table.with_columns(pl.when(pl.col("n_finished") > 0).then(pl.col("best_run_id")).alias("best_run_id"))
    return table.sort([k for k in keys if k not in STUDY_FACTORS] + [k for k in keys if k in STUDY_FACTORS],
                      nulls_last=True)


def table_markdown(title: str, table: pl.DataFrame, metric: str) -> str:
    head = [c for c in table.columns if c not in ("best_run_id",)]
    out = [f"# {title}", "", f"Best `{metric}` per setting (lowest loss / highest MTEB average) over "
           "the study's other factors; `n_finished`/`n_runs` finished runs in the cell.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.iter_rows(named=True):
        out.append("| " + " | ".join(_cell(r[c]) for c in head) + " |")
    return "\n".join(out) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _law_rows(frame: pl.DataFrame, loss: str, data: str) -> pl.DataFrame:
    """Rows a law can use: finished, positive finite loss, N, D (or steps) and S present."""
    keep = frame.filter((pl.col("status") == "ok") & pl.col(loss).is_not_null() & pl.col(loss).is_finite())
    keep = keep.drop_nulls(["N", data, "S"])
    return keep.filter((pl.col(loss) > 0) & (pl.col("N") > 0) & (pl.col(data) > 0))


def predicted_vs_actual(runs: pl.DataFrame, study_runs: pl.DataFrame, *, law_name: str = "modified",
                        data: str = "steps", loss: str = "final_train_loss",
                        delta: float = 1e-3) -> tuple[pl.DataFrame, dict[str, Any]]:
    """App. F / Fig. 20: per method, fit ``law_name`` on the finished main-grid runs with D =
    training ``steps`` (or ``tokens``) and predict the study's runs. Returns the points (split
    ``fit`` for the main grid, ``predicted`` for the study) and a per-method summary."""
    law, dcol = LAWS[law_name], "steps" if data == "steps" else "D"
    main = _law_rows(ok_rows(runs, loss), loss, dcol)
    test = _law_rows(study_runs, loss, dcol)
    frames, summary = [], {}
    for method in registry.ordered(test["method"].drop_nulls().to_list()):
        fit_rows, test_rows = main.filter(pl.col("method") == method), test.filter(pl.col("method") == method)
        fit = (fit_law(law, *(fit_rows[c].to_numpy() for c in ("N", dcol, "S", loss)), delta=delta)
               if fit_rows.height else {"skipped": "no finished main-grid run of this method"})
        for split, rows in (("fit", fit_rows), ("predicted", test_rows)):
            pred = (law.loss(fit["params"], *(rows[c].to_numpy() for c in ("N", dcol, "S")))
                    if "params" in fit and rows.height else np.full(rows.height, np.nan))
            frames.append(rows.select("run_id", "model", "budget", "N", "S").with_columns(
                pl.lit(method).alias("method"), pl.lit(split).alias("split"),
                pl.Series("D", rows[dcol].to_numpy(), pl.Float64),
                pl.Series("actual", rows[loss].to_numpy(), pl.Float64),
                pl.Series("predicted", pred, pl.Float64).fill_nan(None)))
        summary[method] = _summary(fit, frames[-1])
    cols = ["method", "split", "run_id", "model", "budget", "N", "D", "S", "actual", "predicted"]
    points = pl.concat([f.select(cols) for f in frames]) if frames else pl.DataFrame(
        schema={c: pl.String if c in ("method", "split", "run_id", "model") else pl.Float64 for c in cols})
    points = points.with_columns((pl.col("predicted") / pl.col("actual") - 1.0).alias("rel_err"))
    return points, {"law": law_name, "data": data, "loss_column": loss, "huber_delta": delta,
                    "methods": summary}


def _summary(fit: dict[str, Any], predicted: pl.DataFrame) -> dict[str, Any]:
    """The fit (parameters at full precision, convergence) and its error on the study's runs."""
    keep = ("skipped", "params", "converged", "at_bounds", "n_train", "train_rmse_log", "grad_norm")
    out: dict[str, Any] = {"fit": {k: fit[k] for k in keep if k in fit}}
    ok = predicted.drop_nulls(["predicted"])
    if ok.height:
        r = np.log(ok["actual"].to_numpy()) - np.log(ok["predicted"].to_numpy())
        rel = np.abs(ok["predicted"].to_numpy() / ok["actual"].to_numpy() - 1.0)
        out["predicted"] = {"n": ok.height, "rmse_log": float(np.sqrt(np.mean(r ** 2))),
                            "mean_abs_rel_err": float(rel.mean()), "max_abs_rel_err": float(rel.max())}
    else:
        out["predicted"] = {"n": 0}
    return out


def finite_json(obj: Any) -> Any:
    """NaN/inf -> None, recursively: they are not JSON, and a missing number must read as missing."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


#: Draws Fig. 20 (predicted vs actual points, title) into a PNG path; the driver passes the plotting
#: code in, so the scaling layer never imports plots/ (tests/contracts/test_import_layers.py).
FigureWriter = Callable[[pl.DataFrame, str, Path], None]


def write_study(out: Path, runs: pl.DataFrame, members: list[dict[str, Any]], study: dict[str, Any],
                loss: str, delta: float, save_figure: FigureWriter | None = None) -> dict[str, Any]:
    """Every file of one study into ``out``; returns its manifest entry (no figure without
    ``save_figure``)."""
    metric = study.get("metric", "final_train_loss")
    metric = loss if metric == "final_train_loss" else metric
    name = study["name"]
    frame = study_frame(runs, members, study, metric)
    frame.write_csv(out / f"{name}_runs.csv")
    table = best_table(frame, study, metric)
    table.write_csv(out / f"{name}.csv")
    write_text(out / f"{name}.md", table_markdown(f"{name}: {study.get('description', '')}".rstrip(": "),
                                                  table, metric))
    entry: dict[str, Any] = {"runs": frame.height, "finished": int((frame["status"] == "ok").sum()),
                             "metric": metric}
    if study.get("predict"):
        spec = study["predict"]
        points, summary = predicted_vs_actual(runs, frame, law_name=spec.get("law", "modified"),
                                              data=spec.get("data", "steps"), loss=loss, delta=delta)
        points.write_csv(out / f"{name}_predicted.csv")
        write_json(out / f"{name}_fit.json", finite_json(summary))
        if save_figure is not None:
            save_figure(points, f"{name}: predicted ({summary['law']} law fitted on the main grid, "
                                     f"D = {summary['data']}) vs actual loss", out / f"{name}_predicted.png")
        entry["predict"] = {m: s["predicted"] for m, s in summary["methods"].items()}
    return entry
