"""Findings on synthetic result tables: every verdict below is worked out by hand from the rows."""

from __future__ import annotations

import polars as pl
import pytest

from embtune.plots import findings as F
from embtune.plots import findings_paper2 as P2


def _runs(rows):
    cols = ("method", "budget", "model", "final_train_loss", "lora_rank", "freeze_fraction")
    return pl.DataFrame([dict(zip(cols, r)) | {"status": "ok"} for r in rows],
                        schema={"method": pl.String, "budget": pl.Float64, "model": pl.String,
                                "final_train_loss": pl.Float64, "lora_rank": pl.Int64,
                                "freeze_fraction": pl.Float64, "status": pl.String})


# Two budgets, two models. Best per (budget, method), by hand:
#   1e11: full 2.0, bias 3.0, lora 2.5 (r32), freeze 2.2 (0.25)  -> bias worst, full best
#   4e11: full 1.5, bias 1.4, lora 1.2 (r8),  freeze 1.8 (0.5)   -> bias NOT worst (freeze is), lora best
RUNS = _runs([
    ("full", 1e11, "s", 2.0, None, None), ("full", 1e11, "m", 2.1, None, None),
    ("full", 4e11, "s", 1.6, None, None), ("full", 4e11, "m", 1.5, None, None),
    ("bias", 1e11, "s", 3.0, None, None), ("bias", 4e11, "s", 1.4, None, None),
    ("lora", 1e11, "s", 2.5, 32, None), ("lora", 1e11, "s", 2.6, 8, None),
    ("lora", 4e11, "s", 1.3, 32, None), ("lora", 4e11, "s", 1.2, 8, None),
    ("lora", 4e11, "m", 1.25, 8, None), ("lora", 4e11, "m", 1.9, 32, None),
    ("freeze", 1e11, "s", 2.2, None, 0.25), ("freeze", 1e11, "s", 2.4, None, 0.5),
    ("freeze", 4e11, "s", 1.9, None, 0.25), ("freeze", 4e11, "s", 1.8, None, 0.5),
])
BEST = F.best_losses(RUNS, "final_train_loss")


def test_best_losses_by_hand():
    got = {(b, m): v for b, m, v in BEST.iter_rows()}
    assert got[(1e11, "lora")] == 2.5 and got[(4e11, "lora")] == 1.2
    assert got[(4e11, "full")] == 1.5 and got[(1e11, "freeze")] == 2.2


def test_bias_worst_partly():
    f = F.bias_worst(BEST)
    assert f.agrees == "partly" and "1 of 2 budgets" in f.demo
    only_first = BEST.filter(pl.col("budget") == 1e11)
    assert F.bias_worst(only_first).agrees == "yes"
    assert F.bias_worst(BEST.filter(pl.col("method") != "bias")).agrees == "n/a"


def _lines(full_slope, lora_slope):
    return {"frontier": {"lines": {"full": {"slope": full_slope, "intercept": 8.0},
                                   "lora": {"slope": lora_slope, "intercept": 9.0}},
                         "crossovers": [{"methods": ["full", "lora"], "budget": 4.9e8, "in_fitted_range": False}]}}


def test_full_then_lora_below_the_papers_threshold_tests_the_orientation_only():
    # budgets 1e11-4e11 never reach 9.06e16: no verdict from which method wins at 4e11 (lora
    # 1.2 < full 1.5 there); the lines' orientation decides: LoRA steeper (-0.25 < -0.2) = the paper's
    f = F.full_then_lora(BEST, _lines(-0.2, -0.25))
    assert f.agrees == "yes" and "do not reach 9.06e+16" in f.demo and "as the paper" in f.demo
    assert "outside the fitted range" in f.demo
    assert F.full_then_lora(BEST, _lines(-0.25, -0.2)).agrees == "no"
    assert F.full_then_lora(BEST, {"frontier": {"lines": {"full": {"slope": -0.2}}}}).agrees == "n/a"
    assert F.full_then_lora(BEST.filter(~pl.col("method").is_in(["full", "lora"])), {}).agrees == "n/a"


def test_full_then_lora_at_budgets_that_bracket_the_papers_threshold():
    # by hand: 1e16 (< 9.06e16): full 2.0 < lora 2.1, on the paper's side; 1e17: full 1.5 < lora 1.6,
    # not (the paper expects lora); 1e18: lora 1.1 < full 1.3, on the paper's side -> 2 of 3
    best = pl.DataFrame({"budget": [1e16, 1e16, 1e17, 1e17, 1e18, 1e18],
                         "method": ["full", "lora"] * 3, "loss": [2.0, 2.1, 1.5, 1.6, 1.3, 1.1]})
    f = F.full_then_lora(best, {})
    assert f.agrees == "partly" and "2 of 3" in f.demo and "1e+17: full" in f.demo
    flipped = best.with_columns(pl.when(pl.col("budget") == 1e17).then(2.0 - pl.col("loss") + 1.0)
                                .otherwise(pl.col("loss")).alias("loss"))   # 1e17: full 1.5, lora 1.4
    assert F.full_then_lora(flipped, {}).agrees == "yes"


def test_loss_falls_with_budget():
    # full 2.0 -> 1.5, bias 3.0 -> 1.4, lora 2.5 -> 1.2, freeze 2.2 -> 1.8: all fall
    assert F.loss_falls_with_budget(BEST).agrees == "yes"
    worse = BEST.with_columns(pl.when((pl.col("method") == "bias") & (pl.col("budget") == 4e11))
                              .then(3.5).otherwise(pl.col("loss")).alias("loss"))
    f = F.loss_falls_with_budget(worse)
    assert f.agrees == "partly" and "3 of 4" in f.demo


def test_lora_rank():
    # best rank per (model, budget): (s,1e11) r32; (s,4e11) r8; (m,4e11) r8 -> r32 wins 1 of 3.
    # Ranks {8, 32} test only "32 beats 8", never that 32-128 is the optimum
    f = F.lora_rank(RUNS, "final_train_loss")
    assert f.agrees == "partly" and "r8: 2" in f.demo and "r32: 1" in f.demo and "33%" in f.demo
    assert "test only that 32 beats 8" in f.demo
    one_rank = RUNS.filter(~((pl.col("method") == "lora") & (pl.col("lora_rank") == 8)))
    assert F.lora_rank(one_rank, "final_train_loss").agrees == "n/a"
    # both sides of 32-128 tried: the whole claim is tested. Per cell by hand: (s,1e11) r128 1.0;
    # (s,4e11) r32 0.9 -> 32-128 wins 2 of 2
    wide = _runs([("lora", 1e11, "s", 1.5, 8, None), ("lora", 1e11, "s", 1.0, 128, None),
                  ("lora", 1e11, "s", 1.2, 2048, None), ("lora", 4e11, "s", 0.9, 32, None),
                  ("lora", 4e11, "s", 0.95, 2048, None)])
    w = F.lora_rank(wide, "final_train_loss")
    assert w.agrees == "yes" and "100%" in w.demo and "test only" not in w.demo
    inside = _runs([("lora", 1e11, "s", 1.5, 32, None), ("lora", 1e11, "s", 1.0, 128, None)])
    assert F.lora_rank(inside, "final_train_loss").agrees == "n/a"


def test_hyper_findings_count_only_cells_where_two_values_ran():
    # a (model, budget) cell with one rank (or fraction) is no contest: (m, 1e11) r8 alone and
    # (m, 1e11) 0.5 alone are added; the counts by hand stay r8: 2, r32: 1 and 0.25: 1, 0.5: 1
    extra = _runs([("lora", 1e11, "m", 0.1, 8, None), ("freeze", 1e11, "m", 0.1, None, 0.5)])
    runs = pl.concat([RUNS, extra])
    assert "r8: 2, r32: 1" in F.lora_rank(runs, "final_train_loss").demo
    assert "0.25: 1, 0.5: 1" in F.freeze_fraction(runs, "final_train_loss").demo
    alone = _runs([("lora", 1e11, "s", 2.0, 8, None), ("lora", 4e11, "s", 1.0, 32, None)])
    assert F.lora_rank(alone, "final_train_loss").agrees == "n/a"


def test_freeze_fraction():
    # (s,1e11): 0.25 best; (s,4e11): 0.5 best -> smallest fraction wins 50 %
    f = F.freeze_fraction(RUNS, "final_train_loss")
    assert f.agrees == "partly" and "50%" in f.demo


def test_fits_recipe_and_mteb():
    fits = {"laws": {"full": {"ours": {"params": {}, "trustworthy": True},
                              "chinchilla": {"params": {}, "trustworthy": False, "at_bound": ["alpha"]}},
                     "bias": {"skipped": "too few runs"}},
            "mteb": {"spearman_rho": -0.45, "p_value": 0.01, "n": 30}}
    f = F.fits_trustworthy(fits)
    assert f.agrees == "partly" and "1 of 2" in f.demo and "alpha" in f.demo
    assert "full/ours" in f.demo and "not: full/chinchilla (alpha)" in f.demo
    assert F.loss_vs_mteb(fits).agrees == "yes"
    assert F.loss_vs_mteb({"mteb": {"spearman_rho": 0.16, "p_value": 0.29, "n": 45}}).agrees == "no"
    assert F.loss_vs_mteb({"mteb": {"spearman_rho": -0.2, "p_value": 0.2, "n": 45}}).agrees == "partly"
    assert F.recipe_in_range({"budget": 3e17, "fitted_budget_range": [1e11, 4e11],
                              "extrapolated": True}).agrees == "no"
    assert F.recipe_in_range({"budget": 2e11, "fitted_budget_range": [1e11, 4e11],
                              "extrapolated": False}).agrees == "yes"
    assert F.recipe_in_range(None).agrees == "n/a"
    ok = {"trust": {"trustworthy": True, "why_not": [], "bootstrap_agreement": 0.93,
                    "holdout": {"holdout_model": "big", "rmse_log": 0.021}}}
    r = F.recipe_trusted(ok)
    assert r.agrees == "yes" and "93%" in r.demo and "0.021" in r.demo
    bad = {"trust": {**ok["trust"], "trustworthy": False, "bootstrap_agreement": 0.6,
                     "why_not": ["(method, model) in 60% of resamples < 80%"]}}
    assert F.recipe_trusted(bad).agrees == "no" and "60% of resamples < 80%" in F.recipe_trusted(bad).demo
    assert F.recipe_trusted({"budget": 1.0, "skipped": "no line"}).agrees == "n/a"


def test_fits_finding_names_the_floor_and_the_laws_not_fitted():
    fits = {"laws": {"full": {"chinchilla": {"params": {}, "trustworthy": True,
                                             "findings": ["E at its bound 0: no loss floor ..."]},
                              "modified": {"skipped": "more free parameters than the data carry: 10 < 2 x 6"}}}}
    f = F.fits_trustworthy(fits)
    assert f.agrees == "yes" and "1 of 1" in f.demo
    assert "no loss floor within the fitted range (E at 0): full/chinchilla" in f.demo
    assert "not fitted: full/modified" in f.demo


def _tables():
    # Untuned XNLI PND (cos): e5 (multilingual) 30/400 = 0.075; minilm (English-only) 120/400 = 0.30
    base = pl.DataFrame({"model": ["multilingual-e5"] * 2 + ["minilm"] * 2,
                         "relation": ["neutral", "contradiction"] * 2, "measure": ["cos"] * 4,
                         "query_lang": ["en"] * 4, "text_lang": ["de"] * 4,
                         "errors": [10, 20, 50, 70], "total": [200] * 4})
    t1 = pl.DataFrame({"model": ["multilingual-e5"] * 3, "qrun_id": ["default", "lr-1e-06", "lr-1e-05"],
                       "sweep": ["default", "lr", "lr"], "lr": [5e-8, 1e-6, 1e-5], "lr_effective": [5e-8, 1e-6, 1e-5]})
    long = pl.DataFrame({"model": ["multilingual-e5"] * 3, "qrun_id": ["default", "lr-1e-06", "lr-1e-05"],
                         "dataset": ["msmarco"] * 3, "measure": ["cos"] * 3,
                         "errors_base": [100, 100, 100], "errors_tuned": [99, 80, 120], "total": [1000] * 3,
                         "improvement": [1.0, 20.0, -20.0], "z": [-0.07, -1.2, 1.3], "significant": [False, True, True]})
    counts = pl.DataFrame({"model": ["multilingual-e5"] * 6, "qrun_id": ["default"] * 2 + ["lr-1e-06"] * 2 + ["lr-1e-05"] * 2,
                           "lr": [5e-8, 5e-8, 1e-6, 1e-6, 1e-5, 1e-5], "relation": ["neutral", "contradiction"] * 3,
                           "measure": ["cos"] * 6, "improved": [0, 0, 3, 1, 0, 0], "worsened": [0, 0, 0, 0, 7, 2],
                           "n_pairs": [225] * 6})
    return {"xnli_base.parquet": base, "table1.csv": t1, "pnd_long.csv": long, "lr_xnli_counts.parquet": counts}


def test_paper2_findings_by_hand():
    t = _tables()
    f = P2.multilingual_vs_english(t)
    assert f.agrees == "yes" and "multilingual-e5 0.075," in f.demo and "minilm 0.3" in f.demo
    m = P2.msmarco_change(t)   # lr 1e-6: 100 -> 80 significant better; lr 1e-5 significant worse
    assert m.agrees == "partly" and "1 of 3 runs significantly better, 1 worse" in m.demo
    x, per = P2.xnli_counts(t)
    assert x.agrees == "yes"
    assert per.filter(pl.col("lr") == 1e-6).row(0, named=True)["improved"] == 4
    assert per.filter(pl.col("lr") == 1e-5).row(0, named=True)["worsened"] == 9
    a = P2.adiabatic_range(t)  # 5e-8 and 1e-6 worsen nothing, 1e-5 worsens 9 pairs
    assert a.agrees == "yes" and "LR ≤ 1e-06" in a.demo and "1e-05" in a.demo
    # an English-only control that worsens XNLI at its only LR does not decide the verdict
    control = pl.DataFrame({"model": ["minilm"], "qrun_id": ["default"], "lr": [1e-5], "relation": ["neutral"],
                            "measure": ["cos"], "improved": [0], "worsened": [30], "n_pairs": [225]})
    t["lr_xnli_counts.parquet"] = pl.concat([t["lr_xnli_counts.parquet"], control])
    a2 = P2.adiabatic_range(t)
    assert a2.agrees == "yes" and "minilm" not in a2.demo
    # the same measure as the XNLI-counts row: Euclidean-distance rows (here worsening at 1e-6)
    # neither end the range nor add to the 9 worsened cos pairs
    dist = t["lr_xnli_counts.parquet"].filter(pl.col("model") == "multilingual-e5").with_columns(
        pl.lit("dist").alias("measure"), pl.col("worsened") * 0 + 5)
    t["lr_xnli_counts.parquet"] = pl.concat([t["lr_xnli_counts.parquet"], dist])
    a3 = P2.adiabatic_range(t)
    assert a3.agrees == "yes" and "(first worsening at 1e-05: 9 pairs)" in a3.demo and a3.demo.startswith("(cos,")
    assert P2.adiabatic_range(t, measure="dist").agrees == "no"


def test_paper2_edge_cases():
    t = _tables()
    t["lr_xnli_counts.parquet"] = t["lr_xnli_counts.parquet"].with_columns(pl.lit(0).alias("worsened"))
    assert P2.adiabatic_range(t).agrees == "partly"       # never worsens: upper end not reached
    t["lr_xnli_counts.parquet"] = t["lr_xnli_counts.parquet"].with_columns(pl.lit(1).alias("worsened"))
    assert P2.adiabatic_range(t).agrees == "no"
    # runs that changed nothing (an untouched encoder) are no evidence: all-zero XNLI counts and
    # MSMARCO counts unchanged -> n/a
    t["lr_xnli_counts.parquet"] = t["lr_xnli_counts.parquet"].with_columns(
        pl.lit(0).alias("worsened"), pl.lit(0).alias("improved"))
    moved_msmarco = t["pnd_long.csv"]
    t["pnd_long.csv"] = moved_msmarco.with_columns(pl.col("errors_base").alias("errors_tuned"))
    assert P2.adiabatic_range(t).agrees == "n/a"
    # the same XNLI counts, but the runs moved MSMARCO (100 -> 99, 80, 120): the encoders changed
    # and no XNLI pair got worse at any rate -> evidence: range found, upper end not reached
    t["pnd_long.csv"] = moved_msmarco
    moved = P2.adiabatic_range(t)
    assert moved.agrees == "partly" and "every effective LR (≤ 1e-05)" in moved.demo
    t["pnd_long.csv"] = moved_msmarco.with_columns(pl.when(pl.col("qrun_id") == "default").then(pl.col("errors_base"))
                                                   .otherwise(pl.col("errors_tuned")).alias("errors_tuned"))
    # 5e-8 untouched, 1e-6 worsens 2 pairs: no adiabatic LR (the untouched one does not count)
    t["lr_xnli_counts.parquet"] = t["lr_xnli_counts.parquet"].with_columns(
        pl.when(pl.col("lr") == 1e-6).then(1).otherwise(0).alias("worsened"))
    a = P2.adiabatic_range(t)
    assert a.agrees == "no" and "lowest effective LR 1e-06" in a.demo and "5e-08" in a.demo
    swapped = _tables()
    swapped["xnli_base.parquet"] = swapped["xnli_base.parquet"].with_columns(
        pl.col("errors").reverse())                       # e5 now 70+50, minilm 20+10
    assert P2.multilingual_vs_english(swapped).agrees == "no"
    assert P2.msmarco_change({}).agrees == "n/a"


def _fig03(lrs, worse, moved):
    """A grid-fig03 table as query_groups writes it: per rate, XNLI pairs worse / better (cos and
    dist, both relations) and MSMARCO's change."""
    rows = {"model": ["multilingual-e5"] * len(lrs), "lr": lrs, "lr_effective": lrs,
            "msmarco_c_pct": [5.0 if m else 0.0 for m in moved], "msmarco_d_pct": [0.0] * len(lrs)}
    for rel in ("neutr", "contr"):
        for c in ("c", "d"):
            rows[f"xnli_ent_{rel}_{c}_minus"] = list(worse)
            rows[f"xnli_ent_{rel}_{c}_plus"] = [0] * len(lrs)
    return pl.DataFrame(rows)


def test_odw_extends_range_by_hand():
    """The sweep (_tables) worsens 0 pairs at 1e-6 and 7 + 2 at 1e-5 (cos)."""
    t = _tables()
    assert P2.odw_extends_range(t).agrees == "n/a"                          # no fig03 grid
    t[P2.FIG3_GRID] = _fig03([1e-6, 1e-5], [0, 0], [True, True])
    f = P2.odw_extends_range(t)     # at 1e-5: 9 pairs worse with the embeddings frozen, 0 with emb_odw
    assert f.agrees == "yes" and "lr 1e-05: 9 worse with the embeddings frozen, 0 with emb_odw" in f.demo
    t[P2.FIG3_GRID] = _fig03([1e-6, 1e-5], [0, 3], [True, True])
    assert P2.odw_extends_range(t).agrees == "no"
    t[P2.FIG3_GRID] = _fig03([1e-6, 1e-5], [0, 0], [True, False])         # untouched at 1e-5: no evidence
    u = P2.odw_extends_range(t)
    assert u.agrees == "n/a" and "(untouched)" in u.demo
    failed = _fig03([1e-6, 1e-5], [0, 0], [True, True]).with_columns(pl.Series("evaluated", [True, False]))
    t[P2.FIG3_GRID] = failed.with_columns(pl.when(pl.col("evaluated")).then(pl.col("^xnli_.*$")))
    assert P2.odw_extends_range(t).agrees == "n/a"                          # the 1e-5 run failed: not a 0
    t[P2.FIG3_GRID] = _fig03([3e-6], [0], [True])                           # no rate in common
    assert P2.odw_extends_range(t).agrees == "n/a"


def test_markdown_has_both_papers():
    items = F.paper1_findings(RUNS, {"settings": {"loss_column": "final_train_loss"}}, None) \
        + P2.paper2_findings(_tables())
    md = "\n".join(F.findings_markdown(items, ["note"]))
    assert "### Paper 1" in md and "### Paper 2" in md and "note" in md
    assert md.count("| **") == len(items)


@pytest.mark.parametrize("name", ["full_then_lora", "bias_worst", "loss_falls_with_budget"])
def test_empty_results_are_na(name):
    empty = F.best_losses(RUNS.clear(), "final_train_loss")
    args = (empty, {}) if name == "full_then_lora" else (empty,)
    assert getattr(F, name)(*args).agrees == "n/a"
