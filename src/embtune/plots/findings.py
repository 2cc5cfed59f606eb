"""The report's "Findings": each claim of the two papers, what our results show, and whether they agree.

Why a module of its own: a reader judges the pipeline by whether its (demo or full) results
reproduce the papers' claims, so each claim is stated next to the number that tests it, computed
from the results files (runs table, fits.json, the recipe, the query-table folder) — never typed
in. Pure functions; :func:`findings_markdown` renders them for report.md.

Verdicts: ``yes`` (the result agrees), ``no`` (it contradicts), ``partly`` (agrees in part; the
text says which), ``n/a`` (the results cannot test the claim, e.g. one LoRA rank only; the text
says why). Paper 1 claims (loss = the fits' loss column, best over models and hyper-parameters):

* bias-only tuning is worst at every budget (§4.5 "consistently worse than other strategies");
* full fine-tuning is the best method at the largest budget (§4.4: full fine-tuning is on the
  frontier below 9.06e16 FLOP, LoRA above — the expected method depends on the budget);
* the best loss of each method falls as the budget grows (Fig. 1);
* LoRA's best rank is 32-128 (§4.2 "the rank of 32 or 128 ... is optimal");
* block freezing: updating all blocks (the smallest frozen fraction) is best for small models
  (Fig. 3; <= 160M parameters, every demo model);
* the scaling-law fits are trustworthy (no parameter at a bound, optimizer converged);
* the recipe's budget lies inside the fitted budget range (not an extrapolation);
* final loss and MTEB average are negatively rank-correlated (App. C: Spearman -0.892).

Paper 2 claims (PND by cosine, the z-test of :mod:`embtune.evaluate.stats`):

* the multilingual encoder has a lower untuned XNLI PND than the English-only control (Table 3;
  a model counts as multilingual when its name contains "multilingual");
* tuning on MSMARCO changes MSMARCO PND significantly (improves it, Table 1);
* the XNLI language pairs significantly improved / worsened per learning rate (Fig. 2a);
* an adiabatic range exists: low learning rates worsen no XNLI pair, higher ones do (§3.2). The
  adiabatic range of a model is every LR up to the largest one below which (inclusive) no run
  worsened any language pair significantly (both relations, both measures); judged on the
  multilingual models when there are any. A run that changed no pair at all (an encoder left
  untouched, e.g. stopped at epoch 0) is reported but is evidence neither way.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

from embtune.models import methods as registry
from embtune.scaling.isoflop import ok_rows

PAPER1_FULL_LORA_CROSSOVER = 9.06e16  # paper 1, §4.4: full fine-tuning optimal below, LoRA above
PAPER1_SPEARMAN = -0.892              # paper 1, App. C


@dataclass(frozen=True)
class Finding:
    paper: int          # 1 or 2
    claim: str          # the paper's statement, short
    demo: str           # what the results show, with numbers
    agrees: str         # yes | no | partly | n/a


def _g(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def best_losses(runs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Best (lowest) ``metric`` per (budget, method) over models and hyper-parameters."""
    rows = ok_rows(runs, metric)
    if rows.is_empty():
        return pl.DataFrame(schema={"budget": pl.Float64, "method": pl.String, "loss": pl.Float64})
    return (rows.group_by("budget", "method").agg(pl.col(metric).min().alias("loss"))
            .sort("budget", "method"))


def bias_worst(best: pl.DataFrame) -> Finding:
    claim = "bias-only tuning is the worst method at every budget"
    budgets = [b for b in best["budget"].unique().sort() if
               {"bias"} < set(best.filter(pl.col("budget") == b)["method"])]
    if not budgets:
        return Finding(1, claim, "no budget has bias-only and another method finished", "n/a")
    worst_at = []
    for b in budgets:
        at = best.filter(pl.col("budget") == b)
        worst_at.append(at.sort("loss", descending=True)["method"][0] == "bias")
    n = sum(worst_at)
    detail = ", ".join(f"{_g(b)}: {'worst' if w else 'not worst'}" for b, w in zip(budgets, worst_at))
    return Finding(1, claim, f"bias-only worst at {n} of {len(budgets)} budgets ({detail})",
                   "yes" if n == len(budgets) else ("no" if n == 0 else "partly"))


def full_best_at_largest(best: pl.DataFrame) -> Finding:
    claim = (f"full fine-tuning is best at the largest budget (paper: full below "
             f"{PAPER1_FULL_LORA_CROSSOVER:.3g} FLOP, LoRA above)")
    if best.is_empty():
        return Finding(1, claim, "no finished runs", "n/a")
    top = float(best["budget"].max())
    at = best.filter(pl.col("budget") == top).sort("loss")
    winner = at["method"][0]
    expected = "full" if top < PAPER1_FULL_LORA_CROSSOVER else "lora"
    losses = ", ".join(f"{m} {_g(v)}" for m, v in zip(at["method"], at["loss"]))
    return Finding(1, claim, f"best at C = {_g(top)}: **{winner}** ({losses}); the paper expects "
                   f"{expected} at this budget", "yes" if winner == expected else "no")


def loss_falls_with_budget(best: pl.DataFrame) -> Finding:
    claim = "each method's best loss falls as the budget grows (Fig. 1)"
    parts, falls = [], []
    for method in sorted(best["method"].unique()):
        seq = best.filter(pl.col("method") == method).sort("budget")["loss"].to_list()
        if len(seq) < 2:
            continue
        ok = all(b < a for a, b in pairwise(seq))
        falls.append(ok)
        parts.append(f"{method}: {' → '.join(_g(v, 3) for v in seq)}{'' if ok else ' (not monotone)'}")
    if not falls:
        return Finding(1, claim, "fewer than 2 budgets per method", "n/a")
    verdict = "yes" if all(falls) else ("no" if not any(falls) else "partly")
    return Finding(1, claim, f"{sum(falls)} of {len(falls)} methods fall at every step; " + "; ".join(parts), verdict)


def _best_hyper(runs: pl.DataFrame, method: str, metric: str) -> tuple[Counter, list]:
    """How often each value of the method's hyper column (its registry entry) wins a cell."""
    column = registry.hyper_column(method)
    rows = ok_rows(runs, metric).filter(pl.col("method") == method).drop_nulls(column)
    tried = sorted(rows[column].unique().to_list()) if rows.height else []
    if len(tried) < 2:
        return Counter(), tried
    # only (model, budget) cells where >= 2 values ran compare them (a cell with one rank is no contest)
    contested = rows.group_by("model", "budget").agg(pl.col(column).n_unique().alias("k")).filter(pl.col("k") >= 2)
    rows = rows.join(contested.select("model", "budget"), on=["model", "budget"])
    best = rows.sort(metric).group_by("model", "budget", maintain_order=True).first()
    return Counter(best[column].to_list()), tried


def lora_rank(runs: pl.DataFrame, metric: str) -> Finding:
    claim = "LoRA's best rank is 32 or 128 (ranks 8 and 2048 worse)"
    wins, tried = _best_hyper(runs, "lora", metric)
    if not wins:
        return Finding(1, claim, f"ranks tried: {tried or 'none'} — needs >= 2 ranks at one (model, budget)", "n/a")
    mode = max(sorted(wins), key=lambda r: wins[r])
    counts = ", ".join(f"r{int(r)}: {n}" for r, n in sorted(wins.items()))
    in_paper = [r for r in tried if r in (32, 128)]
    if not in_paper:
        return Finding(1, claim, f"best rank per (model, budget): {counts}; neither 32 nor 128 tried", "n/a")
    return Finding(1, claim, f"best rank per (model, budget) among {[int(r) for r in tried]}: {counts} "
                   f"(most often r{int(mode)})", "yes" if mode in (32, 128) else "no")


def freeze_fraction(runs: pl.DataFrame, metric: str) -> Finding:
    claim = "block freezing: for small models the fewest frozen blocks is best (Fig. 3)"
    wins, tried = _best_hyper(runs, "freeze", metric)
    if not wins:
        return Finding(1, claim, f"frozen fractions tried: {tried or 'none'} — needs >= 2 at one (model, budget)", "n/a")
    counts = ", ".join(f"{f:g}: {n}" for f, n in sorted(wins.items()))
    share = wins[min(tried)] / sum(wins.values())
    verdict = "yes" if share == 1 else ("no" if share == 0 else "partly")
    return Finding(1, claim, f"best frozen fraction per (model, budget): {counts}; the smallest "
                   f"({min(tried):g}) wins {share:.0%}", verdict)


def fits_trustworthy(fits: dict[str, Any]) -> Finding:
    claim = "the scaling-law fits are trustworthy (no parameter at a bound, converged)"
    fitted = [(m, name, f) for m, laws in fits.get("laws", {}).items() if isinstance(laws, dict)
              for name, f in laws.items() if isinstance(f, dict) and "params" in f]
    if not fitted:
        return Finding(1, claim, "no law was fitted", "n/a")
    bad = [(m, name, f) for m, name, f in fitted if not f.get("trustworthy", True)]
    good = [f"{m}/{name}" for m, name, f in fitted if f.get("trustworthy", True)]
    # names and the parameters at/near a bound only: each fit's full reason is in the fits section
    detail = ", ".join(f"{m}/{name} ({', '.join(f.get('at_bound', []) + f.get('near_bound', [])) or 'see fits'})"
                       for m, name, f in bad)
    verdict = "yes" if not bad else ("no" if len(bad) == len(fitted) else "partly")
    return Finding(1, claim, f"{len(good)} of {len(fitted)} fits trustworthy"
                   + (f": {', '.join(good)}" if good else "")
                   + (f"; not: {detail} — why, once per fit: 'Scaling-law fits' below" if bad else ""), verdict)


def recipe_in_range(recipe: dict[str, Any] | None) -> Finding:
    claim = "the recipe's budget lies inside the fitted budget range"
    if not recipe or "fitted_budget_range" not in recipe:
        why = (recipe or {}).get("skipped", "no recipe")
        return Finding(1, claim, f"no recipe ({why})", "n/a")
    lo, hi = recipe["fitted_budget_range"]
    out = bool(recipe.get("extrapolated", not lo <= recipe["budget"] <= hi))
    return Finding(1, claim, f"recipe budget {_g(recipe['budget'])} vs fitted range [{_g(lo)}, {_g(hi)}]: "
                   f"{'extrapolated' if out else 'inside'}; method {recipe.get('method')}, model "
                   f"{recipe.get('model')}", "no" if out else "yes")


def loss_vs_mteb(fits: dict[str, Any]) -> Finding:
    claim = f"final loss and MTEB average are negatively rank-correlated (Spearman {PAPER1_SPEARMAN})"
    m = fits.get("mteb", {})
    if "spearman_rho" not in m:
        return Finding(1, claim, f"not computed ({m.get('skipped', 'no MTEB scores')})", "n/a")
    rho, p = m["spearman_rho"], m["p_value"]
    sig = rho < 0 and p < 0.05
    verdict = "yes" if sig else ("partly" if rho < 0 else "no")
    return Finding(1, claim, f"Spearman ρ = {rho:.3g} (p = {p:.2g}, n = {m['n']})", verdict)


def paper1_findings(runs: pl.DataFrame, fits: dict[str, Any], recipe: dict[str, Any] | None) -> list[Finding]:
    metric = fits.get("settings", {}).get("loss_column", "final_train_loss")
    best = best_losses(runs, metric)
    return [bias_worst(best), full_best_at_largest(best), loss_falls_with_budget(best),
            lora_rank(runs, metric), freeze_fraction(runs, metric), fits_trustworthy(fits),
            recipe_in_range(recipe), loss_vs_mteb(fits)]


# ---------------------------------------------------------------- paper 2
def _table(tables: dict[str, pl.DataFrame], name: str) -> pl.DataFrame | None:
    t = tables.get(name)
    return t if t is not None and t.height else None


def multilingual_vs_english(tables: dict[str, pl.DataFrame], measure: str = "cos") -> Finding:
    claim = "the multilingual encoder's untuned XNLI PND is below the English-only control's (Table 3)"
    base = _table(tables, "xnli_base.parquet")
    if base is None:
        return Finding(2, claim, "no xnli_base table", "n/a")
    pooled = (base.filter(pl.col("measure") == measure).group_by("model")
              .agg((pl.col("errors").sum() / pl.col("total").sum()).alias("pnd")).sort("pnd"))
    multi = {m: p for m, p in pooled.iter_rows() if "multilingual" in m}
    english = {m: p for m, p in pooled.iter_rows() if "multilingual" not in m}
    text = ", ".join(f"{m} {_g(p)}" for m, p in pooled.iter_rows())
    if not multi or not english:
        return Finding(2, claim, f"XNLI PND ({measure}, all language pairs, both relations): {text}; "
                       "needs a multilingual and an English-only model", "n/a")
    ok = max(multi.values()) < min(english.values())
    return Finding(2, claim, f"XNLI PND ({measure}, pooled over all 225 language pairs and both "
                   f"relations): {text}", "yes" if ok else "no")


def _lr_of_runs(tables: dict[str, pl.DataFrame]) -> pl.DataFrame | None:
    t1 = _table(tables, "table1.csv")
    if t1 is None or not {"model", "qrun_id", "sweep"} <= set(t1.columns):
        return None
    lr = pl.col("lr_effective") if "lr_effective" in t1.columns else pl.col("lr")
    return (t1.filter(pl.col("sweep").is_in(["lr", "default"]))
            .select("model", "qrun_id", lr.cast(pl.Float64).alias("lr")))


def msmarco_change(tables: dict[str, pl.DataFrame], measure: str = "cos") -> Finding:
    claim = "tuning on MSMARCO improves MSMARCO PND significantly (Table 1)"
    long, lrs = _table(tables, "pnd_long.csv"), _lr_of_runs(tables)
    if long is None or lrs is None:
        return Finding(2, claim, "no pnd_long / table1 tables", "n/a")
    rows = (long.filter((pl.col("dataset") == "msmarco") & (pl.col("measure") == measure))
            .join(lrs, on=["model", "qrun_id"]).sort("model", "lr"))
    if rows.is_empty():
        return Finding(2, claim, "no MSMARCO rows for the LR-sweep runs", "n/a")
    parts = [f"{r['model']} lr {_g(r['lr'], 2)}: {r['improvement']:+.1f} % (z = {r['z']:.2f}"
             f"{', significant' if r['significant'] else ''})" for r in rows.iter_rows(named=True)]
    better = rows.filter(pl.col("significant") & (pl.col("errors_tuned") < pl.col("errors_base"))).height
    worse = rows.filter(pl.col("significant") & (pl.col("errors_tuned") > pl.col("errors_base"))).height
    verdict = "yes" if better and not worse else ("partly" if better else "no")
    return Finding(2, claim, f"{better} of {rows.height} runs significantly better, {worse} worse: "
                   + "; ".join(parts), verdict)


def xnli_counts(tables: dict[str, pl.DataFrame], measure: str = "cos") -> tuple[Finding, pl.DataFrame | None]:
    claim = "XNLI language pairs significantly improved / worsened per learning rate (Fig. 2a)"
    counts = _table(tables, "lr_xnli_counts.parquet")
    if counts is None:
        return Finding(2, claim, "no lr_xnli_counts table", "n/a"), None
    per = (counts.filter(pl.col("measure") == measure).group_by("model", "lr")
           .agg(pl.col("improved").sum(), pl.col("worsened").sum(), pl.col("n_pairs").sum())
           .sort("model", "lr"))
    parts = [f"{r['model']} lr {_g(r['lr'], 2)}: +{r['improved']} / −{r['worsened']} of {r['n_pairs']}"
             for r in per.iter_rows(named=True)]
    any_sig = bool((per["improved"] + per["worsened"]).sum())
    return Finding(2, claim, f"({measure}, both relations) " + "; ".join(parts),
                   "yes" if any_sig else "no"), per


def adiabatic_range(tables: dict[str, pl.DataFrame], measure: str = "cos") -> Finding:
    """Counted on the same measure and relations as :func:`xnli_counts`, so the two rows of the
    report give the same numbers for the same run."""
    claim = "an adiabatic LR range exists: low LRs worsen no XNLI pair, higher LRs do (§3.2)"
    counts = _table(tables, "lr_xnli_counts.parquet")
    if counts is None:
        return Finding(2, claim, "no lr_xnli_counts table", "n/a")
    counts = counts.filter(pl.col("measure") == measure)
    multi = [m for m in counts["model"].unique() if "multilingual" in m]
    if multi:  # the claim is about preserving multilingual skills: English-only controls aside
        counts = counts.filter(pl.col("model").is_in(multi))
    per = (counts.group_by("model", "lr").agg(pl.col("improved").sum(), pl.col("worsened").sum())
           .sort("model", "lr"))
    parts, verdicts = [], []
    for model in per["model"].unique(maintain_order=True):
        sub = per.filter(pl.col("model") == model)
        # a run that moved no language pair (e.g. stopped at epoch 0: the untouched encoder) is
        # no evidence either way: it is listed but neither extends nor ends the range
        still = [lr for _, lr, i, w in sub.iter_rows() if not i and not w]
        moved = [(lr, i, w) for _, lr, i, w in sub.iter_rows() if i or w]
        safe = None
        for lr, _, w in moved:
            if w:
                break
            safe = lr
        above = [(lr, w) for lr, _, w in moved if w and (safe is None or lr > safe)]
        note = f" (no pair changed at LR {', '.join(_g(x, 2) for x in still)})" if still else ""
        if not moved:
            parts.append(f"{model}: no LR changed any pair significantly{note}")
            verdicts.append("n/a")
        elif safe is None:
            parts.append(f"{model}: none — the lowest effective LR {_g(above[0][0], 2)} already "
                         f"worsens {above[0][1]} pairs{note}")
            verdicts.append("no")
        elif above:
            parts.append(f"{model}: LR ≤ {_g(safe, 2)} (first worsening at {_g(above[0][0], 2)}: "
                         f"{above[0][1]} pairs){note}")
            verdicts.append("yes")
        else:
            parts.append(f"{model}: every effective LR (≤ {_g(safe, 2)}); upper end not reached{note}")
            verdicts.append("partly")
    verdict = next((v for v in ("yes", "partly", "no") if v in verdicts), "n/a")
    return Finding(2, claim, f"({measure}, both relations) " + "; ".join(parts), verdict)


def paper2_findings(tables: dict[str, pl.DataFrame]) -> list[Finding]:
    return [multilingual_vs_english(tables), msmarco_change(tables), xnli_counts(tables)[0],
            adiabatic_range(tables)]


def findings_markdown(items: list[Finding], notes: list[str] | None = None) -> list[str]:
    """The report section: one table per paper (claim, what the results show, agreement)."""
    out = ["## Findings: do the results agree with the papers?", "",
           ("Computed from this run's results files (runs table, fits.json, recipe, query tables); "
            "`n/a` = these results cannot test the claim (the reason is given)."), ""]
    out += notes or []
    for paper, title in ((1, "Paper 1 (scaling laws for embedding fine-tuning)"),
                         (2, "Paper 2 (query-encoder tuning, adiabatic learning rates)")):
        rows = [f for f in items if f.paper == paper]
        if not rows:
            continue
        out += [f"### {title}", "", "| claim | these results | agrees |", "|---|---|---|"]
        out += [f"| {f.claim} | {f.demo.replace('|', '/')} | **{f.agrees}** |" for f in rows]
        out.append("")
    return out
