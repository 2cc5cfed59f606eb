"""Paper 2's claims in the report's "Findings" (:mod:`embtune.plots.findings` has the verdicts,
the section's table and paper 1's claims).

Why apart: paper 2's claims read the query tables (PND counts and z-tests per language pair and
learning rate), paper 1's the runs table and the fits; the two share only the :class:`Finding`
record and its table.

Paper 2 claims (PND by cosine, the z-test of :mod:`embtune.evaluate.stats`):

* the multilingual encoder has a lower untuned XNLI PND than the English-only control (Table 3;
  a model counts as multilingual when its name contains "multilingual");
* tuning on MSMARCO changes MSMARCO PND significantly (improves it, Table 1);
* the XNLI language pairs significantly improved / worsened per learning rate (Fig. 2a);
* an adiabatic range exists: low learning rates worsen no XNLI pair, higher ones do (§3.2). The
  adiabatic range of a model is every LR up to the largest one below which (inclusive) no run
  worsened any language pair significantly (both relations, both measures); judged on the
  multilingual models when there are any. A run whose encoder stayed untouched (no PND count
  changed) is reported but is evidence neither way;
* freezing every ``output.dense.weight`` as well (``emb_odw``, the grid named ``fig03``) extends
  the adiabatic range to higher rates (§3.3, Fig. 3): at a rate where the LR sweep worsens XNLI
  pairs, the ``emb_odw`` run worsens none (compared at the rates both ran; an untouched run is no
  evidence).
"""

from __future__ import annotations

import polars as pl

from embtune.plots.findings import Finding, fmt_g
from embtune.plots.paper2_sweeps import evaluated_rows


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
    text = ", ".join(f"{m} {fmt_g(p)}" for m, p in pooled.iter_rows())
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
    parts = [f"{r['model']} lr {fmt_g(r['lr'], 2)}: {r['improvement']:+.1f} % (z = {r['z']:.2f}"
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
    parts = [f"{r['model']} lr {fmt_g(r['lr'], 2)}: +{r['improved']} / −{r['worsened']} of {r['n_pairs']}"
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
    long, lrs = _table(tables, "pnd_long.csv"), _lr_of_runs(tables)
    changed = (long.filter(pl.col("errors_tuned") != pl.col("errors_base")).join(lrs, on=["model", "qrun_id"])
               if long is not None and lrs is not None else pl.DataFrame({"model": [], "lr": []}))
    touched, parts, verdicts = set(zip(changed["model"], changed["lr"])), [], []
    for model in per["model"].unique(maintain_order=True):
        sub = per.filter(pl.col("model") == model)
        # an untouched encoder (no PND count of any set changed, e.g. stopped at epoch 0) is no
        # evidence either way: listed, but it neither extends nor ends the range
        still = [lr for _, lr, i, w in sub.iter_rows() if not i and not w and (model, lr) not in touched]
        moved = [(lr, i, w) for _, lr, i, w in sub.iter_rows() if i or w or (model, lr) in touched]
        safe = None
        for lr, _, w in moved:
            if w:
                break
            safe = lr
        above = [(lr, w) for lr, _, w in moved if w and (safe is None or lr > safe)]
        note = f" (no pair changed at LR {', '.join(fmt_g(x, 2) for x in still)})" if still else ""
        if not moved:
            parts.append(f"{model}: no LR changed any pair significantly{note}")
            verdicts.append("n/a")
        elif safe is None:
            parts.append(f"{model}: none — the lowest effective LR {fmt_g(above[0][0], 2)} already "
                         f"worsens {above[0][1]} pairs{note}")
            verdicts.append("no")
        elif above:
            parts.append(f"{model}: LR ≤ {fmt_g(safe, 2)} (first worsening at {fmt_g(above[0][0], 2)}: "
                         f"{above[0][1]} pairs){note}")
            verdicts.append("yes")
        else:
            parts.append(f"{model}: every effective LR (≤ {fmt_g(safe, 2)}); upper end not reached{note}")
            verdicts.append("partly")
    verdict = next((v for v in ("yes", "partly", "no") if v in verdicts), "n/a")
    return Finding(2, claim, f"({measure}, both relations) " + "; ".join(parts), verdict)


FIG3_GRID = "groups/grid-fig03.csv"   # query_tuning.grids "fig03" (plots.paper2_sweeps draws it as Fig. 3)


def odw_extends_range(tables: dict[str, pl.DataFrame], measure: str = "cos") -> Finding:
    """§3.3: "the adiabatic regime indeed extends" with every output.dense.weight frozen. Compared
    rate by rate with the LR sweep (embedding block frozen), on :func:`xnli_counts`'s measure and
    relations: "yes" when at some rate the sweep worsens pairs and ``emb_odw`` worsens none (and
    moved: an untouched encoder worsens nothing by doing nothing), "no" when it worsens pairs at
    every such rate."""
    claim = ("freezing every output.dense.weight too (emb_odw) extends the adiabatic range to "
             "higher LRs (§3.3, Fig. 3)")
    grid, counts = _table(tables, FIG3_GRID), _table(tables, "lr_xnli_counts.parquet")
    if grid is None or counts is None:
        return Finding(2, claim, "needs the fig03 grid (query_tuning.grids) and the LR sweep", "n/a")
    c = measure[0]
    lr = "lr_effective" if "lr_effective" in grid.columns else "lr"
    odw = evaluated_rows(grid).select("model", pl.col(lr).cast(pl.Float64).round_sig_figs(6).alias("lr"),
                      (pl.col(f"xnli_ent_neutr_{c}_minus") + pl.col(f"xnli_ent_contr_{c}_minus")).alias("odw"),
                      ((pl.col(f"xnli_ent_neutr_{c}_plus") + pl.col(f"xnli_ent_contr_{c}_plus") > 0)
                       | (pl.col(f"msmarco_{c}_pct").fill_null(0) != 0)).alias("moved"))
    sweep = (counts.filter(pl.col("measure") == measure)
             .with_columns(pl.col("lr").round_sig_figs(6)).group_by("model", "lr")
             .agg(pl.col("worsened").sum().alias("emb")))
    both = odw.join(sweep, on=["model", "lr"]).sort("model", "lr")
    parts = [f"{m} lr {fmt_g(x, 2)}: {e} worse with the embeddings frozen, {o} with emb_odw"
             f"{'' if moved else ' (untouched)'}" for m, x, o, moved, e in both.iter_rows()]
    tested = both.filter((pl.col("emb") > 0) & pl.col("moved"))
    text = f"({measure}, both relations) " + ("; ".join(parts) or "the grid and the LR sweep share no rate")
    if tested.is_empty():
        return Finding(2, claim, text + ": no shared rate where the LR sweep worsens a pair", "n/a")
    spared = tested.filter(pl.col("odw") == 0).height
    return Finding(2, claim, text, "yes" if spared else "no")


def paper2_findings(tables: dict[str, pl.DataFrame]) -> list[Finding]:
    return [multilingual_vs_english(tables), msmarco_change(tables), xnli_counts(tables)[0],
            adiabatic_range(tables), odw_extends_range(tables)]
