"""The report's scaling-law and recipe sections: for each fit, once, whether it can be trusted
and why, what it can and cannot conclude, and the recipe's choice with its interval.

Why a module of its own: a fit's trust is read in three places (the findings row, the list of
untrustworthy fits and the fits table); written out in each, the three drift and the report
repeats itself. So the table says yes/no, the findings row names the fits, and the reasons are
here, once per fit. Numbers
are shown to 3 significant figures (what a handful of tiny runs can support); fits.json and the
recipe JSON keep full precision.
"""

from __future__ import annotations

import math
from typing import Any

from embtune.scaling.laws import LAWS

SIG = 3    # significant figures of every number the report prints


def sig(x: Any, digits: int = SIG) -> str:
    """``x`` to ``digits`` significant figures; '—' for a missing number."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{digits}g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _conclusion(fit: dict[str, Any], held: str | None) -> str:
    """What a fitted law lets a reader conclude, with the numbers behind it."""
    ho = (fit.get("holdout") or {}).get("rmse_log")
    test = (f"predicts the held-out {held} with RMSE(log) {sig(ho)} (typical error ~{sig(100 * math.expm1(ho), 2)} %)"
            if ho is not None and held else "has no held-out model to test it")
    findings = "".join(f" Finding: {f}." for f in fit.get("findings") or [])
    ident = fit.get("identified") or {}
    loose = [k for k, v in ident.items() if not v]
    named = f" Identified (95% interval off its bounds): {', '.join(k for k, v in ident.items() if v) or 'none'}" \
        + (f"; not: {', '.join(loose)}." if loose else ".") if ident else ""
    profile = fit.get("profile_ci95") or {}
    if profile:
        named += " 95% profile intervals: " + ", ".join(f"{k} [{sig(lo)}, {sig(hi)}]" for k, (lo, hi) in profile.items()) + "."
    if fit.get("trustworthy", True):
        ms = fit.get("multistart") or {}
        starts = f", {ms['n_at_best']} of {ms['n_starts']} starts at the best optimum" if ms else ""
        return (f"**trustworthy**: converged{starts}, no parameter but the floor E at a bound or with a 95% "
                f"interval that reaches one; it {test}.{named}{findings}")
    issues = fit.get("trust_issues") or ["see fits.json"]
    return (f"**not trustworthy**: {'; '.join(issues)}. Its parameters must not be read (the data do "
            f"not identify them); it {test}, but only the observed losses stand.{named}{findings}")


def fit_trust_lines(fits: dict[str, Any]) -> list[str]:
    """One line per fitted law: trustworthy or not, why, and what follows."""
    out = []
    for method, laws in fits.get("laws", {}).items():
        if "skipped" in laws:
            out.append(f"- **{method}**: not fitted ({laws['skipped']}).")
            continue
        for name in LAWS:
            fit = laws.get(name) or {}
            if "skipped" in fit:
                out.append(f"- **{method} / {name}**: not fitted ({fit['skipped']}).")
            elif "params" in fit:
                out.append(f"- **{method} / {name}** ({fit.get('n_train', '?')} fitted runs): "
                           + _conclusion(fit, laws.get("holdout_model")))
    return out


def _fit_row(method: str, name: str, f: dict[str, Any]) -> str:
    ps = ", ".join(f"{k}={sig(v)}" for k, v in f["params"].items())
    trust = "yes" if f.get("trustworthy", True) else "**no**"
    ms = f.get("multistart", {})
    starts = f"{ms['n_at_best']}/{ms['n_starts']}" if ms else "—"
    return (f"| {method} | {name} | {ps} | {trust} | {starts} | {sig(f.get('train_rmse_log'))} | "
            f"{sig(f.get('holdout', {}).get('rmse_log'))} |")


def fits_markdown(fits: dict[str, Any]) -> list[str]:
    """The fits section: laws, one trust line per fit, the parameter table, frontier lines."""
    st = fits["settings"]
    out = ["## Scaling-law fits", "",
           f"Loss column `{st['loss_column']}`, Huber δ = {st['huber_delta']} on ln L residuals, "
           f"bootstrap = {st['bootstrap']}, held out: {st['holdout']}. Parameters to {SIG} significant "
           "figures (full precision in fits.json).", ""]
    out += [f"- {name}: `{formula}`" for name, formula in st.get("laws", {}).items()] + [""]
    out += ["What each fit can and cannot conclude (an optimum at or near a bound is a failed fit, "
            "not a result):", ""] + fit_trust_lines(fits) + [""]
    out += ["| method | law | parameters | trustworthy | starts at best | train RMSE(log) | "
            "held-out RMSE(log) |", "|---|---|---|---|---|---|---|"]
    for method, laws in fits.get("laws", {}).items():
        if "skipped" in laws:
            continue
        for name in LAWS:
            f = laws.get(name, {})
            if "params" in f:
                out.append(_fit_row(method, name, f))
        if "comparison" in laws:
            out.append(f"| {method} | **better on held-out ({laws['holdout_model']})** | "
                       f"{laws['comparison']['better']} | | | | |")
    out += ["", "## Frontier lines: ln(loss) = slope·ln(C) + intercept", "",
            "| method | slope | intercept | points | C range |", "|---|---|---|---|---|"]
    for method, line in fits.get("frontier", {}).get("lines", {}).items():
        if "slope" in line:
            out.append(f"| {method} | {sig(line['slope'])} | {sig(line['intercept'])} | {line['n_points']} | "
                       f"{sig(line['x_min'])}–{sig(line['x_max'])} |")
        else:
            out.append(f"| {method} | skipped: {line.get('skipped')} | | | |")
    out += ["", "Crossovers (from the unrounded lines):", ""]
    for c in fits.get("frontier", {}).get("crossovers", []):
        out.append(f"- {c['methods'][0]} / {c['methods'][1]}: C = {sig(c.get('budget'))} "
                   f"({c.get('better_below', '?')} better below, {c.get('better_above', '?')} above)"
                   + ("" if c.get("in_fitted_range", True) else " — outside the fitted budget range"))
    mteb = fits.get("mteb", {})
    out += ["", "Loss vs MTEB average: " + (f"Spearman ρ = {sig(mteb['spearman_rho'])} (p = {sig(mteb['p_value'], 2)}, "
                                             f"n = {mteb['n']})" if "spearman_rho" in mteb else f"skipped ({mteb.get('skipped')})"), ""]
    return out


def recipe_markdown(recipe: dict[str, Any]) -> list[str]:
    """Algorithm 1's answer in words: the choice, its predicted loss with the interval, whether it
    rests on trustworthy fits and on an interpolated budget (the JSON file has every field)."""
    out = ["## Recipe (Algorithm 1)", ""]
    if "method" not in recipe:
        return out + [f"No recipe at C = {sig(recipe.get('budget'))}: {recipe.get('skipped', 'no fit')}.", ""]
    ci = recipe.get("predicted_loss_ci95")
    interval = f" (95% bootstrap interval {sig(ci[0])}–{sig(ci[1])})" if ci else " (no interval: too few optimal points)"
    hyper = ", ".join(f"{k} {sig(v)}" for k, v in (recipe.get("hyperparameters") or {}).items())
    others = ", ".join(f"{m} {sig(v)}" for m, v in sorted((recipe.get("predicted_loss_by_method") or {}).items(),
                                                          key=lambda kv: kv[1]))
    lo, hi = recipe.get("fitted_budget_range") or [None, None]
    trust = recipe.get("fit_trust") or {}
    out += [f"At C = {sig(recipe['budget'])} FLOP: **{recipe['method']}** fine-tuning of **{recipe.get('model')}** "
            f"(N = {sig(recipe.get('model_N'))}; the optimal-N line gives {sig(recipe.get('optimal_N'))})"
            + (f", {hyper}" if hyper else "") + f": {sig(recipe.get('tokens'))} tokens ≈ {sig(recipe.get('pairs'))} "
            f"pairs ≈ {sig(recipe.get('steps'))} steps of {recipe.get('batch_size')}.", "",
            f"- Predicted loss {sig(recipe.get('predicted_loss'))}{interval}; every method's frontier at "
            f"this budget: {others}.",
            f"- Budget {'outside' if recipe.get('extrapolated') else 'inside'} the fitted range "
            f"[{sig(lo)}, {sig(hi)}]{': extrapolated' if recipe.get('extrapolated') else ''}.",
            f"- Methods it chose from: {', '.join(recipe.get('methods_considered') or [])} "
            f"(`analyze.recipe_methods: {recipe.get('method_set', 'paper')}`).",
            f"- Same (method, model) in {_share(recipe)} of the frontier's bootstrap resamples "
            f"(>= 80% wanted); held-out test: {_held(recipe)}.",
            "- Recipe " + ("**trustworthy** by paper 1's tests (fitted range, bootstrap agreement, held-out model)."
                           if recipe.get("trustworthy") else "**not trustworthy**: "
                           + "; ".join((recipe.get("trust") or {}).get("why_not") or ["see the JSON"]) + "."),
            f"- The {recipe['method']} laws ({', '.join(trust.get('checked') or []) or 'none'}): "
            + ("no parameter at a bound but the floor." if trust.get("trustworthy", True) else
               "a fit is untrustworthy (see the fits above): read its parameters as not identified."),
            "- Laws' predicted loss of this plan: " + (", ".join(
                f"{k} {sig(v['loss'])}" for k, v in (recipe.get("predicted_loss_by_law") or {}).items()) or "—") + ".", ""]
    return out


def _share(recipe: dict[str, Any]) -> str:
    frac = (recipe.get("bootstrap_agreement") or {}).get("fraction")
    return "—" if frac is None else f"{100 * frac:.0f}%"


def _held(recipe: dict[str, Any]) -> str:
    held = (recipe.get("trust") or {}).get("holdout") or {}
    if held.get("rmse_log") is None:
        return held.get("why", "none")
    return f"{held.get('law')} on {held.get('holdout_model')}, RMSE(log) {sig(held['rmse_log'])} (<= {held.get('max')} wanted)"
