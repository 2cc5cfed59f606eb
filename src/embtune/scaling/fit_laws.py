"""Fitting the scaling laws per method (largest model held out, bootstrap intervals), and the
frontier lines, crossovers and optimal-N lines: everything fits.json holds. Stage
``fit-scaling`` (driver :mod:`embtune.stages.fit_scaling`) reads the runs table and writes it.

fits.json keys:
  settings         {loss_column, huber_delta, bootstrap, holdout, seed, chinchilla_coefficients,
                    objective, laws: {name: formula}, search}
  methods          methods with at least one finished run
  laws             {method: {chinchilla: FIT, modified: FIT, holdout_model, comparison}}
                   FIT = {law, params (raw, full precision), trustworthy, converged, at_bound,
                   trust_issues, objective, multistart{grid_points, n_starts, n_at_best,
                   objectives}, optimizer_success, status, message, grad_norm, iterations,
                   n_train, train_rmse_log, holdout{...}, bootstrap{ci95, median, n, starts,
                   n_not_converged, n_at_bound}, internal{...}, fixed{...}} or {skipped: reason}
  untrustworthy    [{method, law, at_bound, issues}]: every fit not to be trusted, in one place
  optimal_points   {method: [{run_id, model, budget, C, N, D, <loss>, freeze_fraction, lora_rank}]}
  optimal_n        {method: {slope, intercept, n_points, x_min, x_max, rmse_log} | {skipped}}
  frontier         {lines: {method: {slope, intercept, ..., bootstrap{slopes, intercepts}}},
                    crossovers: [{methods, budget, ln_budget, better_below, better_above}],
                    budget_range: [min, max]}
  mteb             {spearman_rho, p_value, n} | {skipped}
  dropped_nonfinite {count, runs: [{run_id, metrics}]}: finished runs left out because the loss
                   column is NaN/inf (embtune.scaling.runs_table.nonfinite_runs)
  failed_runs      {count, by_reason, runs: [{run_id, method, model, study, reason, detail}]}: runs
                   that failed for good (embtune.train.failures), every study
  lost_rows        {method: {count, runs: [{run_id, reason}]}}: the main-grid rows each method's
                   fits lost to failed runs (every method with a planned main-grid run)
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import spearmanr

from embtune.models import methods as registry
from embtune.scaling.fit import SEARCH, fit_law
from embtune.scaling.frontier import crossovers, fit_line
from embtune.scaling.isoflop import ok_rows, optimal_n_fit, optimal_points, points_records
from embtune.scaling.laws import laws as law_set


def methods_of(runs: pl.DataFrame, metric: str) -> list[str]:
    """Methods with a finished run, in the registry's order (``embtune.models.methods``)."""
    return registry.ordered(ok_rows(runs, metric)["method"].drop_nulls().to_list())


def law_rows(runs: pl.DataFrame, method: str, metric: str) -> pl.DataFrame:
    rows = ok_rows(runs, metric).filter(pl.col("method") == method)
    return rows.drop_nulls(["N", "D", "S"]).filter((pl.col("N") > 0) & (pl.col("D") > 0))


def fit_method_laws(rows: pl.DataFrame, metric: str, delta: float, n_boot: int,
                    holdout: str, seed: int, chinchilla_coefficients: str = "positive") -> dict[str, Any]:
    """Both laws for one method; the largest model is held out when asked (paper 1, App. E)."""
    if rows.is_empty():
        return {"skipped": "no finished runs with N, D and S"}
    N, D, S, y = (rows[c].to_numpy() for c in ("N", "D", "S", metric))
    hold = np.zeros(len(N), bool)
    out: dict[str, Any] = {"n_rows": int(len(N)), "holdout_model": None}
    if holdout == "largest_model":
        if rows["N"].n_unique() < 3:
            out["holdout_note"] = "fewer than 3 model sizes: fitted on all rows, no held-out test"
        else:
            hold = N == N.max()
            out["holdout_model"] = rows.filter(pl.col("N") == N.max())["model"][0]
    laws = law_set(chinchilla_coefficients)
    for name, law in laws.items():
        out[name] = fit_law(law, N, D, S, y, delta=delta, holdout=hold if hold.any() else None,
                            n_bootstrap=n_boot, seed=seed)
    errs = {k: out[k]["holdout"]["rmse_log"] for k in laws if "holdout" in out[k]}
    if len(errs) == len(laws):
        out["comparison"] = {"holdout_rmse_log": errs, "better": min(errs, key=errs.get)}
    return out


def mteb_correlation(runs: pl.DataFrame, metric: str) -> dict[str, Any]:
    """Spearman rank correlation of loss and MTEB average over all finished runs (Fig. 14)."""
    if "mteb_average" not in runs.columns:
        return {"skipped": "no MTEB scores in the runs table"}
    rows = ok_rows(runs, metric).drop_nulls(["mteb_average"])
    if rows.height < 3:
        return {"skipped": f"{rows.height} runs with both a loss and an MTEB average (< 3)"}
    rho, p = spearmanr(rows[metric].to_numpy(), rows["mteb_average"].to_numpy())
    return {"spearman_rho": float(rho), "p_value": float(p), "n": int(rows.height)}


def untrustworthy_fits(laws: dict[str, Any]) -> list[dict[str, Any]]:
    """Every fitted law that is not to be trusted (at a bound, or the optimizer failed)."""
    return [{"method": method, "law": name, "at_bound": fit.get("at_bound", []),
             "issues": fit.get("trust_issues", [])}
            for method, fitted in laws.items() for name, fit in fitted.items()
            if isinstance(fit, dict) and "trustworthy" in fit and not fit["trustworthy"]]


def _fit_laws_per_method(runs: pl.DataFrame, methods: list[str], metric: str, delta: float,
                         n_boot: int, holdout: str, seed: int, workers: int,
                         chinchilla_coefficients: str) -> list[dict[str, Any]]:
    """Law fits of every method; methods are independent, so ``workers`` > 1 fits them in
    parallel processes (results identical to the serial run: each fit has its own seed)."""
    jobs = [(law_rows(runs, m, metric), metric, delta, n_boot, holdout, seed, chinchilla_coefficients)
            for m in methods]
    if workers <= 1 or len(jobs) <= 1:
        return [fit_method_laws(*job) for job in jobs]
    # spawn, not fork: polars keeps a thread pool, and forking a threaded process can deadlock
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fit_method_laws, *zip(*jobs)))


def fit_all(runs: pl.DataFrame, *, metric: str = "final_train_loss", delta: float = 1e-3,
            n_boot: int = 1000, holdout: str = "largest_model", seed: int = 0,
            workers: int = 1, chinchilla_coefficients: str = "positive") -> dict[str, Any]:
    """Everything fits.json holds (pure; see the module docstring for the keys)."""
    methods = methods_of(runs, metric)
    out: dict[str, Any] = {
        "settings": {"loss_column": metric, "huber_delta": delta, "bootstrap": n_boot,
                     "holdout": holdout, "seed": seed, "chinchilla_coefficients": chinchilla_coefficients,
                     "objective": "mean Huber_delta(ln L - ln L_hat) / delta over the training rows",
                     "laws": {k: v.formula for k, v in law_set(chinchilla_coefficients).items()},
                     "search": SEARCH},
        "methods": methods, "laws": {}, "optimal_points": {}, "optimal_n": {},
        "frontier": {"lines": {}},
    }
    laws = _fit_laws_per_method(runs, methods, metric, delta, n_boot, holdout, seed, workers,
                                chinchilla_coefficients)
    for method, fitted in zip(methods, laws):
        out["laws"][method] = fitted
        pts = optimal_points(runs, method, metric)
        out["optimal_points"][method] = points_records(pts, metric)
        out["optimal_n"][method] = optimal_n_fit(pts)
        out["frontier"]["lines"][method] = fit_line(pts["budget"].to_numpy(), pts[metric].to_numpy(),
                                                    n_boot, seed)
    out["untrustworthy"] = untrustworthy_fits(out["laws"])
    out["frontier"]["crossovers"] = crossovers(out["frontier"]["lines"])
    budgets = ok_rows(runs, metric)["budget"].drop_nulls()
    out["frontier"]["budget_range"] = [float(budgets.min()), float(budgets.max())] if len(budgets) else None
    out["mteb"] = mteb_correlation(runs, metric)
    return out


def finite_json(obj: Any) -> Any:
    """NaN/inf -> None, recursively: they are not JSON, and a missing number must read as missing."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj
