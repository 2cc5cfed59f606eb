"""Paper 2's tables beyond Table 1, written by ``query-table`` next to ``table1.*``.

Why a module of its own: each table is a pure function of the evaluation files (``pnd.json``,
``xnli_counts.parquet``, ``layer_changes.csv``) of the base encoder and the planned query runs,
and the figures stage draws Figures 1-2, 4-6 from these tables, so every plotted number is in a
file with its integer counts.

* **Table 3** (App. G): errors and PND of the *untuned* encoders per dataset and measure.
  Triplet sets: ``errors`` = count, ``n_total`` = comparisons ("N tot"), ``pnd`` = errors /
  N tot (the "count of errors" reading; the query-averaged PND is ``pnd_per_query``). XNLI:
  "we sum up the error count over all language-language pairs and divide the sum by the number
  ... of such pairs ... shown as percent of Ntotal", so ``errors`` is the mean per language pair
  and ``n_total`` one pair's comparisons (1670 x 1670); docs/fidelity.md#P2-TABLE3.
* **Figure 6 / App. H** (arxiv difficulty levels): ``arxiv_levels_base.csv`` (untuned PND per
  flavour, level, measure) and ``arxiv_levels.csv`` (each run's improvement, z, significance).
* **Figure 2(a)**: ``lr_xnli_counts.parquet``, language pairs significantly improved / worsened
  per run of the learning-rate sweep (the runs ``lr_curves.parquet`` holds for Figure 2(b)).
* **Figures 4-5**: ``xnli_base.parquet``, the untuned encoders' PND per language pair.
* **Tables 14-15** (App. M.3): ``table14.csv`` / ``table15.csv``, the two most-changed layers per
  model and learning rate, aggregated over the runs of that rate
  (:func:`embtune.evaluate.layer_changes.aggregate_top_layers`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.io import read_json, write_parquet, write_text
from embtune.core.layout import BASE_RUN, LAYER_CHANGES, METRICS_JSON, PND_JSON, XNLI_COUNTS, QueryRuns
from embtune.evaluate.layer_changes import aggregate_top_layers
from embtune.evaluate.query_table import RELATIONS, _read_xnli, _run_config, dataset_rows, plus_minus, xnli_rows

TABLE3_NAMES = {n: pnd_sets.get(n).short for n in pnd_sets.names()}     # embtune.core.pnd_sets
REL_TAG = {"neutral": "e-n", "contradiction": "e-c"}
T3_SCHEMA = {"model": pl.String, "dataset": pl.String, "relation": pl.String, "measure": pl.String,
             "n_total": pl.Int64, "errors": pl.Float64, "pnd": pl.Float64,
             "pnd_per_query": pl.Float64, "n_language_pairs": pl.Int64}
LEVEL_BASE_SCHEMA = {"model": pl.String, "flavour": pl.String, "level": pl.Int64,
                     "measure": pl.String, "errors": pl.Int64, "total": pl.Int64,
                     "pnd": pl.Float64}
LEVEL_SCHEMA = {"model": pl.String, "qrun_id": pl.String, "flavour": pl.String, "level": pl.Int64,
                "measure": pl.String, "errors_base": pl.Int64, "errors_tuned": pl.Int64,
                "total": pl.Int64, "pnd_base": pl.Float64, "pnd_tuned": pl.Float64,
                "improvement": pl.Float64, "z": pl.Float64, "significant": pl.Boolean}
LR_XNLI_SCHEMA = {"model": pl.String, "qrun_id": pl.String, "lr": pl.Float64, "relation": pl.String,
                  "measure": pl.String, "improved": pl.Int64, "worsened": pl.Int64,
                  "n_pairs": pl.Int64}
XNLI_BASE_SCHEMA = {"model": pl.String, "relation": pl.String, "measure": pl.String,
                    "query_lang": pl.String, "text_lang": pl.String, "errors": pl.Int64,
                    "total": pl.Int64, "pnd": pl.Float64}
LAYER_SCHEMA = {"model": pl.String, "lr": pl.Float64, "position": pl.Int64, "layer": pl.String,
                "n_top": pl.Int64, "n_runs": pl.Int64, "mean_rank": pl.Float64}
TABLE_LAYERS = {"table14": "rank_max_weight", "table15": "rank_relative"}


# ---------------------------------------------------------------- Table 3
def _is_triplet_entry(entry: Any) -> bool:
    return isinstance(entry, dict) and any(isinstance(v, dict) and "errors" in v for v in entry.values())


def table3_rows(model: str, base_pnd: dict[str, Any], base_xnli: pl.DataFrame,
                xnli_path: str = "xnli_counts.parquet") -> list[dict[str, Any]]:
    """Table 3 rows of one untuned encoder: every triplet dataset in its pnd.json (the harder
    arxiv levels go to the level table instead) and XNLI from its per-pair counts."""
    rows = []
    for ds, entry in base_pnd.items():
        is_level = pnd_sets.base_set(ds) != ds.split("!", 1)[0]       # arxiv-first-L7 (App. H)
        if is_level or ds in pnd_sets.names() and pnd_sets.get(ds).kind == "xnli" or not _is_triplet_entry(entry):
            continue
        for measure, c in entry.items():
            if isinstance(c, dict) and "errors" in c:
                rows.append({"model": model, "dataset": ds, "relation": None, "measure": measure,
                             "n_total": int(c["total"]), "errors": float(c["errors"]),
                             "pnd": c["errors"] / c["total"] if c["total"] else None,
                             "pnd_per_query": c.get("per_query_rate"), "n_language_pairs": None})
    groups = base_xnli.partition_by(["relation", "measure"], as_dict=True)
    order = sorted(groups, key=lambda k: (k[1], RELATIONS.index(k[0]) if k[0] in RELATIONS else 9, k[0]))
    for relation, measure in order:
        grp = groups[(relation, measure)]
        totals = grp["total"].unique()
        if totals.len() != 1:
            raise DataError(f"{xnli_path}: {model} {relation}/{measure}: language pairs have "
                            f"different totals {sorted(totals.to_list())[:3]}; expected one "
                            f"n_entailment x n_{relation} for every pair (App. G)")
        n_pairs, errors = grp.height, int(grp["errors"].sum())
        rows.append({"model": model, "dataset": "xnli", "relation": relation, "measure": measure,
                     "n_total": int(totals[0]), "errors": errors / n_pairs,
                     "pnd": errors / int(grp["total"].sum()), "pnd_per_query": None,
                     "n_language_pairs": n_pairs})
    return rows


def table3_markdown(t3: pl.DataFrame) -> str:
    """Table 3's layout: per dataset an "N tot" row and a "PND (measure)" row per relation and
    measure; one column per model with PND in percent and the error count in parentheses
    (XNLI: the mean over language pairs)."""
    models = t3["model"].unique(maintain_order=True).to_list()
    out = ["# Table 3: errors of the untuned encoders", "",
           "PND = errors / N tot. XNLI: errors averaged over the language pairs, N tot = one "
           "pair's comparisons (App. G).", "", "| data | evaluation | " + " | ".join(models) + " |",
           "|---|---|" + "---|" * len(models)]
    for ds in t3["dataset"].unique(maintain_order=True).to_list():
        sub = t3.filter(pl.col("dataset") == ds)
        name = TABLE3_NAMES.get(ds, ds)
        totals = [sub.filter(pl.col("model") == m)["n_total"].to_list()[:1] for m in models]
        out.append(f"| {name} | N tot | " + " | ".join(f"{t[0]:,}" if t else "" for t in totals) + " |")
        for rel, measure in sub.select("relation", "measure").unique(maintain_order=True).rows():
            label = f"PND {REL_TAG.get(rel, rel)} ({measure})" if rel else f"PND ({measure})"
            cells = []
            for m in models:
                r = sub.filter((pl.col("model") == m) & (pl.col("measure") == measure)
                               & (pl.col("relation").eq_missing(rel)))
                cells.append("" if not r.height else _pct_count(r.row(0, named=True)))
            out.append(f"|  | {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _pct_count(r: dict[str, Any]) -> str:
    errors = r["errors"]
    count = f"{errors:,.0f}" if float(errors).is_integer() else f"{errors:,.1f}"
    return f"{100 * r['pnd']:.2f}% ({count})"


# ---------------------------------------------------------------- arxiv levels (Fig. 6)
def level_ids(pnd: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """dataset id -> (flavour, level) from pnd.json's ``arxiv_levels`` (empty for older files)."""
    return {ds: (flavour, int(level)) for flavour, m in pnd.get("arxiv_levels", {}).items()
            for level, ds in m.items() if ds in pnd}


def level_base_rows(model: str, base_pnd: dict[str, Any]) -> list[dict[str, Any]]:
    """Figure 6(a): the untuned encoder's PND per flavour, level and measure."""
    return [{"model": model, "flavour": f, "level": lv, "measure": m, "errors": int(c["errors"]),
             "total": int(c["total"]), "pnd": c["errors"] / c["total"] if c["total"] else None}
            for ds, (f, lv) in sorted(level_ids(base_pnd).items(), key=lambda kv: kv[1])
            for m, c in base_pnd[ds].items() if isinstance(c, dict) and "errors" in c]


def level_run_rows(model: str, qrun_id: str, base_pnd: dict[str, Any], tuned_pnd: dict[str, Any],
                   z_critical: float) -> list[dict[str, Any]]:
    """Figure 6(b): a run's improvement per level, from the levels both files scored."""
    ids = {ds: fl for ds, fl in level_ids(base_pnd).items() if ds in level_ids(tuned_pnd)}
    rows = dataset_rows(model, qrun_id, base_pnd, tuned_pnd, z_critical,
                        datasets=sorted(ids, key=ids.get))
    keep = [k for k in LEVEL_SCHEMA if k not in ("flavour", "level")]
    return [{**{k: r[k] for k in keep}, "flavour": ids[r["dataset"]][0], "level": ids[r["dataset"]][1]}
            for r in rows]


def levels_markdown(base: pl.DataFrame, runs: pl.DataFrame, run: str = "default") -> str:
    """Per model and flavour: untuned PND (%) and the ``run``'s improvement (%) per level; every
    run is in arxiv_levels.csv."""
    out = ["# arxiv difficulty levels (paper 2, App. H, Fig. 6)", "",
           f"Level 1 = hardest negative, the last = random. PND of the untuned encoder and the "
           f"improvement of run `{run}` (`†` = not significant); all runs: arxiv_levels.csv.", ""]
    for (model, flavour), sub in base.group_by("model", "flavour", maintain_order=True):
        measures = sub["measure"].unique(maintain_order=True).to_list()
        out += [f"## {model}, arxiv-{flavour}", "",
                "| level | " + " | ".join(f"PND {m} %" for m in measures) + " | "
                + " | ".join(f"{run} {m[0]}%" for m in measures) + " |",
                "|---|" + "---|" * (2 * len(measures))]
        for level in sorted(sub["level"].unique().to_list()):
            cells = [str(level)]
            for m in measures:
                r = sub.filter((pl.col("level") == level) & (pl.col("measure") == m))
                cells.append(f"{100 * r['pnd'][0]:.2f}" if r.height else "")
            for m in measures:
                r = runs.filter((pl.col("model") == model) & (pl.col("qrun_id") == run)
                                & (pl.col("flavour") == flavour) & (pl.col("level") == level)
                                & (pl.col("measure") == m))
                cells.append("" if not r.height else f"{r['improvement'][0] + 0.0:.2f}"
                             + ("" if r["significant"][0] else "†"))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- Fig. 2(a), Figs 4-5
def lr_of(config: dict[str, Any]) -> float | None:
    """The learning rate of a run in the LR sweep (Figure 2's runs), else None."""
    if config.get("sweep") not in ("lr", "default"):
        return None
    return config.get("lr_effective", config.get("lr"))


def lr_xnli_rows(model: str, qrun_id: str, lr: float, heat: pl.DataFrame) -> list[dict[str, Any]]:
    """Figure 2(a): language pairs significantly improved / worsened per relation and measure."""
    rows = []
    for (relation, measure), grp in heat.group_by("relation", "measure", maintain_order=True):
        improved, worsened = plus_minus(heat, relation, measure)
        rows.append({"model": model, "qrun_id": qrun_id, "lr": lr, "relation": relation,
                     "measure": measure, "improved": improved, "worsened": worsened,
                     "n_pairs": grp.height})
    return rows


def xnli_base_rows(model: str, base_xnli: pl.DataFrame) -> pl.DataFrame:
    """Figures 4-5: the untuned encoder's PND per (query language, text language) pair."""
    return base_xnli.select(
        pl.lit(model).alias("model"), "relation", "measure", "query_lang", "text_lang",
        pl.col("errors").cast(pl.Int64), pl.col("total").cast(pl.Int64),
        (pl.col("errors") / pl.col("total")).alias("pnd"))


# ---------------------------------------------------------------- Tables 14-15
def layer_tables(layer_frames: dict[tuple[str, float], list[pl.DataFrame]],
                 k: int = 2) -> dict[str, pl.DataFrame]:
    """table14 / table15 from the layer_changes.csv frames of each (model, learning rate)."""
    out = {}
    for name, column in TABLE_LAYERS.items():
        parts = [aggregate_top_layers(frames, column, k).select(
            pl.lit(model).alias("model"), pl.lit(lr, dtype=pl.Float64).alias("lr"), pl.all())
            for (model, lr), frames in sorted(layer_frames.items())]
        out[name] = pl.concat(parts) if parts else pl.DataFrame(schema=LAYER_SCHEMA)
    return out


def layers_markdown(tables: dict[str, pl.DataFrame]) -> str:
    """Tables 14-15 as the paper prints them: rate, then the two layers (n_top/n_runs when
    several runs share a rate)."""
    captions = {"table14": "Table 14: largest maximal weight among the changed layers",
                "table15": "Table 15: largest (W_t - W_o) / (W_t + W_o) of the maximal weights"}
    out = ["# Most-changed layers of the query tower (paper 2, App. M.3)", "",
           "Layer names without the `encoder.layer.` prefix. `n/m`: in the top 2 of n of the m "
           "runs at that rate.", ""]
    for name, frame in tables.items():
        out += [f"## {captions[name]}", "", "| model | rate | layer | runs |", "|---|---|---|---|"]
        for r in frame.iter_rows(named=True):
            rate = f"{r['lr']:g}" if r["position"] == 1 else ""
            out.append(f"| {r['model'] if r['position'] == 1 else ''} | {rate} | {r['layer']} | "
                       f"{r['n_top']}/{r['n_runs']} |")
        out.append("")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- collect and write
def _runs(model_dir: Path, only: set[str] | None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Evaluated, finished runs of one model (the same selection as Table 1)."""
    runs = QueryRuns(model_dir.parent)
    for qrun in runs.run_ids(model_dir.name):
        run_dir = runs.dir(model_dir.name, qrun)
        if only is not None and f"{model_dir.name}/{qrun}" not in only:
            continue
        if not (run_dir / PND_JSON).exists():
            continue
        metrics = read_json(run_dir / METRICS_JSON) if (run_dir / METRICS_JSON).exists() else {}
        if metrics.get("status", "ok") == "ok":
            yield run_dir, _run_config(run_dir, metrics)


def collect_extras(query_runs_dir: Path, z_critical: float,
                   only: set[str] | None = None) -> dict[str, Any]:
    """Every table of this module from the query-runs tree; runs without layer_changes.csv are
    listed under ``no_layer_changes``."""
    t3, lv_base, lv_runs, lr_xnli, xbase = [], [], [], [], []
    layers: dict[tuple[str, float], list[pl.DataFrame]] = {}
    no_layers: list[str] = []
    runs = QueryRuns(query_runs_dir)
    for model in runs.evaluated_models():
        model_dir = runs.model_dir(model)
        base_pnd = read_json(runs.file(model, BASE_RUN, PND_JSON))
        base_xnli = _read_xnli(runs.file(model, BASE_RUN, XNLI_COUNTS))
        t3 += table3_rows(model, base_pnd, base_xnli, str(runs.file(model, BASE_RUN, XNLI_COUNTS)))
        lv_base += level_base_rows(model, base_pnd)
        xbase.append(xnli_base_rows(model, base_xnli))
        for run_dir, config in _runs(model_dir, only):
            tuned = read_json(run_dir / PND_JSON)
            lv_runs += level_run_rows(model, run_dir.name, base_pnd, tuned, z_critical)
            lr = lr_of(config)
            if lr is None:
                continue
            heat = xnli_rows(model, run_dir.name, base_xnli, _read_xnli(run_dir / XNLI_COUNTS),
                             z_critical)
            lr_xnli += lr_xnli_rows(model, run_dir.name, float(lr), heat)
            if (run_dir / LAYER_CHANGES).exists():
                layers.setdefault((model, float(lr)), []).append(pl.read_csv(run_dir / LAYER_CHANGES))
            else:
                no_layers.append(f"{model}/{run_dir.name}")
    frame = lambda rows, schema: pl.DataFrame(rows, schema=schema)  # noqa: E731
    return {"table3": frame(t3, T3_SCHEMA), "levels_base": frame(lv_base, LEVEL_BASE_SCHEMA),
            "levels": frame(lv_runs, LEVEL_SCHEMA), "lr_xnli": frame(lr_xnli, LR_XNLI_SCHEMA),
            "xnli_base": pl.concat(xbase).cast(XNLI_BASE_SCHEMA) if xbase else pl.DataFrame(schema=XNLI_BASE_SCHEMA),  # type: ignore[arg-type]
            "layers": layer_tables(layers), "no_layer_changes": no_layers}


def write_extras(out: Path, got: dict[str, Any]) -> None:
    """The files listed in the module docstring, into ``out`` (the query-table folder)."""
    got["table3"].write_csv(out / "table3.csv")
    write_text(out / "table3.md", table3_markdown(got["table3"]) if got["table3"].height
               else "# Table 3: no base evaluations\n")
    got["levels_base"].write_csv(out / "arxiv_levels_base.csv")
    got["levels"].write_csv(out / "arxiv_levels.csv")
    write_text(out / "arxiv_levels.md", levels_markdown(got["levels_base"], got["levels"]))
    write_parquet(out / "lr_xnli_counts.parquet", got["lr_xnli"])
    write_parquet(out / "xnli_base.parquet", got["xnli_base"])
    for name, frame in got["layers"].items():
        frame.write_csv(out / f"{name}.csv")
    write_text(out / "tables14_15.md", layers_markdown(got["layers"]))
