"""Paper 2's Table 3, arxiv levels (Fig. 6), Fig. 2(a) counts, Figs 4-5 data and Tables 14-15,
from synthetic evaluation files, checked against counts done by hand in the test."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from embtune.core.errors import DataError
from embtune.core.io import read_json, write_json
from embtune.evaluate import paper2_tables as p2
from embtune.evaluate import query_table
from embtune.evaluate.layer_changes import aggregate_top_layers
from embtune.stages import query_table as query_table_stage

LANGS = ("en", "de")


def _z(n0: int, n1: int, n: int) -> float:
    """The pooled two-proportion z of App. I, written out."""
    pooled = (n0 + n1) / (2 * n)
    return (n1 / n - n0 / n) / math.sqrt(pooled * (1 - pooled) * 2 / n)


def _counts(errors: int, total: int, per_query: float | None = None) -> dict:
    return {"errors": errors, "total": total, "rate": errors / total,
            "per_query_rate": errors / total if per_query is None else per_query}


def _xnli(errors: dict[tuple[str, str, str, str], int], total: int = 400) -> pl.DataFrame:
    return pl.DataFrame([{"query_lang": q, "text_lang": t, "relation": rel, "measure": m,
                          "errors": errors.get((q, t, rel, m), 40), "total": total}
                         for q in LANGS for t in LANGS for rel in ("neutral", "contradiction")
                         for m in ("cos", "dist")])


def _base_pnd() -> dict:
    return {"msmarco": {"cos": _counts(30, 1000, per_query=0.025), "dist": _counts(40, 1000)},
            "arxiv-first": {"cos": _counts(16, 1000), "dist": _counts(20, 1000)},
            "arxiv-first-L1": {"cos": _counts(300, 1000), "dist": _counts(310, 1000)},
            "arxiv-first-L2": {"cos": _counts(250, 1000), "dist": _counts(260, 1000)},
            "arxiv_levels": {"first": {"21": "arxiv-first", "1": "arxiv-first-L1",
                                       "2": "arxiv-first-L2"}},
            "xnli": {"cos": {}}, "encoder_calls": {"texts_requested": 5}, "model": {"spec": {}}}


# ------------------------------------------------------------------ Table 3
def test_table3_counts_and_xnli_average_by_hand():
    xnli = _xnli({("en", "en", "neutral", "cos"): 10, ("en", "de", "neutral", "cos"): 20,
                  ("de", "en", "neutral", "cos"): 30, ("de", "de", "neutral", "cos"): 41})
    frame = pl.DataFrame(p2.table3_rows("e5", _base_pnd(), xnli), schema=p2.T3_SCHEMA)
    assert sorted(frame["dataset"].unique().to_list()) == ["arxiv-first", "msmarco", "xnli"]  # no L1/L2
    mm = frame.filter((pl.col("dataset") == "msmarco") & (pl.col("measure") == "cos")).row(0, named=True)
    assert (mm["n_total"], mm["errors"], mm["pnd"], mm["pnd_per_query"]) == (1000, 30.0, 0.03, 0.025)
    en = frame.filter((pl.col("dataset") == "xnli") & (pl.col("relation") == "neutral")
                      & (pl.col("measure") == "cos")).row(0, named=True)
    # App. G: sum over the 4 language pairs / 4, as a share of one pair's 400 comparisons
    assert en["errors"] == pytest.approx((10 + 20 + 30 + 41) / 4)
    assert en["pnd"] == pytest.approx((10 + 20 + 30 + 41) / (4 * 400))
    assert (en["n_total"], en["n_language_pairs"]) == (400, 4)
    ec = frame.filter((pl.col("relation") == "contradiction") & (pl.col("measure") == "dist")).row(0, named=True)
    assert ec["errors"] == 40.0 and ec["pnd"] == pytest.approx(0.1)
    md = p2.table3_markdown(pl.concat([frame, frame.with_columns(pl.lit("l12").alias("model"))]))
    assert "| data | evaluation | e5 | l12 |" in md
    assert "| MM | N tot | 1,000 | 1,000 |" in md and "|  | PND (cos) | 3.00% (30) | 3.00% (30) |" in md
    assert "|  | PND e-n (cos) | 6.31% (25.2) | 6.31% (25.2) |" in md   # 101 / 1600


def test_table3_refuses_unequal_xnli_totals():
    xnli = _xnli({}).with_columns(pl.when(pl.col("query_lang") == "de").then(399)
                                  .otherwise(pl.col("total")).alias("total"))
    with pytest.raises(DataError, match="base/xnli_counts.parquet: e5 .*different totals"):
        p2.table3_rows("e5", _base_pnd(), xnli, "base/xnli_counts.parquet")


# ------------------------------------------------------------------ arxiv levels (Fig. 6)
def test_level_rows_by_hand():
    base = _base_pnd()
    tuned = {**base, "arxiv-first-L1": {"cos": _counts(240, 1000), "dist": _counts(305, 1000)},
             "arxiv-first": {"cos": _counts(15, 1000), "dist": _counts(20, 1000)}}
    del tuned["arxiv-first-L2"]       # not scored for this run: no row
    tuned["arxiv_levels"] = {"first": {"21": "arxiv-first", "1": "arxiv-first-L1"}}
    b = pl.DataFrame(p2.level_base_rows("e5", base), schema=p2.LEVEL_BASE_SCHEMA)
    assert b.filter(pl.col("measure") == "cos").sort("level")["pnd"].to_list() == [0.3, 0.25, 0.016]
    assert b.sort("level")["level"].unique().to_list() == [1, 2, 21]
    r = pl.DataFrame(p2.level_run_rows("e5", "default", base, tuned, 1.96), schema=p2.LEVEL_SCHEMA)
    assert sorted(set(r["level"].to_list())) == [1, 21]
    l1 = r.filter((pl.col("level") == 1) & (pl.col("measure") == "cos")).row(0, named=True)
    assert l1["improvement"] == pytest.approx(100 * (300 - 240) / 300)
    assert l1["z"] == pytest.approx(_z(300, 240, 1000)) and l1["significant"] is (abs(_z(300, 240, 1000)) > 1.96)
    assert l1["significant"] is True
    d1 = r.filter((pl.col("level") == 1) & (pl.col("measure") == "dist")).row(0, named=True)
    assert d1["significant"] is False and d1["improvement"] == pytest.approx(100 * 5 / 310)
    md = p2.levels_markdown(b, r)
    assert "## e5, arxiv-first" in md and "| 1 | 30.00 | 31.00 | 20.00 | 1.61† |" in md


# ------------------------------------------------------------------ Fig. 2(a), Tables 14-15
def test_lr_xnli_counts_by_hand():
    base = _xnli({}, total=10000).with_columns(pl.lit(1000).alias("errors"))
    tuned = _xnli({("en", "de", "neutral", "cos"): 800, ("de", "en", "neutral", "cos"): 1200,
                   ("de", "de", "neutral", "cos"): 990}, total=10000).with_columns(
        pl.when(pl.col("errors") == 40).then(1000).otherwise(pl.col("errors")).alias("errors"))
    heat = query_table.xnli_rows("e5", "lr-1e-07", base, tuned, 1.96)
    rows = {(r["relation"], r["measure"]): r for r in p2.lr_xnli_rows("e5", "lr-1e-07", 1e-7, heat)}
    # 800 vs 1000 of 10000: z ~ -4.9; 1200: +4.5; 990: -0.2 (not significant)
    assert (rows[("neutral", "cos")]["improved"], rows[("neutral", "cos")]["worsened"]) == (1, 1)
    assert (rows[("contradiction", "dist")]["improved"], rows[("contradiction", "dist")]["worsened"]) == (0, 0)
    assert rows[("neutral", "cos")]["n_pairs"] == 4 and rows[("neutral", "cos")]["lr"] == 1e-7


def _layers(ranks: dict[str, int | None], col: str = "rank_max_weight") -> pl.DataFrame:
    return pl.DataFrame({"layer": list(ranks), col: list(ranks.values())},
                        schema={"layer": pl.String, col: pl.Int64})


def test_aggregate_top_layers_by_hand():
    runs = [_layers({"3.output.dense.weight": 1, "2.output.dense.weight": 2, "1.x": 3}),
            _layers({"3.output.dense.weight": 2, "1.x": 1, "2.output.dense.weight": 3}),
            _layers({"2.output.dense.weight": 1, "3.output.dense.weight": 2, "1.x": None})]
    got = aggregate_top_layers(runs, "rank_max_weight", k=2)
    # in the top 2: 3.o.d.w 3 times (ranks 1, 2, 2), 2.o.d.w twice (2, 3, 1), 1.x once (3, 1)
    assert got.rows() == [(1, "3.output.dense.weight", 3, 3, pytest.approx(5 / 3)),
                          (2, "2.output.dense.weight", 2, 3, pytest.approx(2.0))]
    one = aggregate_top_layers(runs[1:2], "rank_max_weight", k=2)
    assert one["layer"].to_list() == ["1.x", "3.output.dense.weight"]      # one run: its own top 2
    tie = aggregate_top_layers([_layers({"b": 1, "a": 2}), _layers({"a": 1, "b": 2})], "rank_max_weight")
    assert tie["layer"].to_list() == ["a", "b"]          # same count and mean rank: by name
    assert aggregate_top_layers([_layers({"a": None})], "rank_max_weight").height == 0


# ------------------------------------------------------------------ end to end
def _tree(root: Path) -> None:
    m = root / "query_runs" / "e5"
    write_json(m / "base" / "pnd.json", _base_pnd())
    _xnli({}).write_parquet(m / "base" / "xnli_counts.parquet")
    for qrun, lr, top in (("default", 5e-8, "3.output.dense.weight"), ("lr-1e-07", 1e-7, "1.x"),
                          ("margin-0.2", 5e-8, "9.y")):
        tuned = {**_base_pnd(), "arxiv-first-L1": {"cos": _counts(200, 1000), "dist": _counts(300, 1000)}}
        write_json(m / qrun / "pnd.json", tuned)
        _xnli({("en", "de", "neutral", "cos"): 10}).write_parquet(m / qrun / "xnli_counts.parquet")
        write_json(m / qrun / "metrics.json", {"status": "ok"})
        sweep = qrun.split("-")[0]
        write_json(m / qrun / "manifest.json", {"run_config": {"sweep": sweep, "lr": lr, "lr_effective": lr}})
        pl.DataFrame({"name": ["a", "b"], "layer": [top, "0.z"], "rank_max_weight": [1, 2],
                      "rank_relative": [2, 1]}).write_csv(m / qrun / "layer_changes.csv")


def test_query_table_writes_the_paper2_tables(tmp_path):
    _tree(tmp_path)
    out = tmp_path / "out"
    assert query_table_stage.main(["--query-runs-dir", str(tmp_path / "query_runs"), "--out", str(out)]) == 0
    for name in ("table3.csv", "table3.md", "arxiv_levels_base.csv", "arxiv_levels.csv",
                 "arxiv_levels.md", "lr_xnli_counts.parquet", "xnli_base.parquet", "table14.csv",
                 "table15.csv", "tables14_15.md"):
        assert (out / name).stat().st_size > 0, name
    t14 = pl.read_csv(out / "table14.csv")
    # margin-0.2 is not in the LR sweep: its layer never shows; one run per rate
    assert t14.filter(pl.col("lr") == 5e-8)["layer"].to_list() == ["3.output.dense.weight", "0.z"]
    assert t14.filter(pl.col("lr") == 1e-7)["layer"].to_list() == ["1.x", "0.z"]
    assert pl.read_csv(out / "table15.csv").filter(pl.col("lr") == 1e-7)["layer"].to_list() == ["0.z", "1.x"]
    counts = pl.read_parquet(out / "lr_xnli_counts.parquet")
    assert sorted(counts["qrun_id"].unique().to_list()) == ["default", "lr-1e-07"]
    en = counts.filter((pl.col("relation") == "neutral") & (pl.col("measure") == "cos"))
    assert en["improved"].to_list() == [1, 1] and en["worsened"].to_list() == [0, 0]  # 40 -> 10 of 400
    levels = pl.read_csv(out / "arxiv_levels.csv")
    assert levels.height == 3 * 3 * 2            # 3 runs x levels {1, 2, 21} x 2 measures
    assert levels.filter((pl.col("level") == 1) & (pl.col("measure") == "cos"))["improvement"].to_list() \
        == pytest.approx([100 / 3] * 3)
    xb = pl.read_parquet(out / "xnli_base.parquet")
    assert xb.height == 16 and xb["pnd"].to_list() == pytest.approx([0.1] * 16)
    assert read_json(out / "manifest.json")["no_layer_changes"] == []
