"""Paper 2's Table-1-style rows, XNLI heatmap data and LR-sweep curves (stage ``query-table``,
driver :mod:`embtune.stages.query_table`).

Why tables and not figures: the plots stage draws Figures 1-3 from the long tables written here,
so every number in a figure is also in a file with its exact integer counts.

Inputs, per model under ``--query-runs-dir``: ``base/pnd.json`` + ``base/xnli_counts.parquet``
(the untuned encoder) and for each tuned run ``<qrun_id>/pnd.json``, ``xnli_counts.parquet``,
``metrics.json`` and ``manifest.json`` (its ``run_config``). Runs without ``pnd.json`` yet are
listed in the manifest as missing, not silently dropped.

Definitions (paper 2, §2 and App. I, via :mod:`embtune.evaluate.stats`):

* improvement I = s (M~ - M) / M with s = -1 for PND, reported in percent. M is the *averaged*
  PND (``per_query_rate``, mean over queries, §2) where pnd.json has it, else errors/total;
* significance: pooled two-proportion z-test on the integer errors of the base vs the tuned
  encoder over the same ``total`` comparisons, |z| > z_critical (1.96);
* XNLI ``+/-``: number of (query language, text language) pairs whose PND improved / worsened
  significantly, per relation (entailment vs neutral, entailment vs contradiction) and measure;
* Table 2's other measures (MRR, MAP, P@1, each query's positives and negatives ranked by cosine
  ``c`` or distance ``d``): I = (M~ - M) / M in percent (s = +1: higher is better);
* App. K: a run tuned on ``arxiv-<domain>`` is compared on arxiv without that domain's rows, for
  the base and the tuned encoder alike (pnd.json entries ``<dataset>!<domain>``, see
  :mod:`embtune.evaluate.pnd_eval`); the ``eval_set`` column of ``pnd_long.csv`` names the entry.

Outputs (``--out DIR``): ``table1.csv`` / ``table1.md`` (one row per model and run),
``table2.csv`` (one row per model, run and dataset: PND, MRR, MAP, P@1 improvement % by cosine and
distance) / ``table2.md`` (the default-regime runs, as paper 2's Table 2),
``pnd_long.csv`` (per model, run, dataset, measure: counts, improvement, z), ``xnli_heatmap.parquet``
(model, qrun_id, relation, measure, query_lang, text_lang, errors_base, errors_tuned, total,
improvement, z, significant), ``lr_curves.parquet`` (model, qrun_id, lr, dataset, measure,
improvement, significant), the tables of :mod:`embtune.evaluate.paper2_tables` (Table 3, arxiv
levels, Fig. 2(a) counts, Figs 4-5 data, Tables 14-15), ``groups/`` (one table per sweep and
grid, :mod:`embtune.evaluate.query_groups`, written when ``--plan-json`` gives the plan),
``manifest.json`` last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.io import read_json, read_parquet, write_parquet, write_text
from embtune.core.layout import BASE_RUN, MANIFEST_JSON, METRICS_JSON, PND_JSON, XNLI_COUNTS, QueryRuns
from embtune.data.meaning import check_count_rows, check_counts
from embtune.evaluate.pnd_eval import ARXIV_DATASETS, excluded_key, narrow_domain
from embtune.evaluate.query_groups import membership_fields
from embtune.evaluate.stats import pooled_z, relative_improvement
from embtune.runconfig import QueryRunConfig

DATASETS = pnd_sets.in_table("table1")           # Table 1's columns (the registry: embtune.core.pnd_sets)
TABLE2_DATASETS = pnd_sets.in_table("table2")    # Table 2's rows (App. A, C, D)
RANKING = ("mrr", "map", "p_at_1")
TABLE2_METRICS = {"pnd": "PND", "mrr": "MRR", "map": "MAP", "p_at_1": "P@1"}
MEASURES = ("cos", "dist")
RELATIONS = ("neutral", "contradiction")
XNLI_KEYS = ["query_lang", "text_lang", "relation", "measure"]
CONFIG_COLUMNS = ("sweep", "lr", "lr_effective", "freeze", "batch_size", "margin", "weight_decay",
                  "scheduler", "scheduler_unit", "optimizer", "patience", "train_data", "lr_scaling",
                  "distance", "tune_doc_tower", "groups")


def _pnd_value(entry: dict[str, Any]) -> float:
    """The averaged PND (paper 2, §2) when present, else the pooled rate."""
    value = entry.get("per_query_rate")
    return float(value) if value is not None else entry["errors"] / entry["total"]


def compare_counts(n0: int, n1: int, total: int, z_critical: float) -> tuple[float, bool]:
    """(z, significant) for base errors ``n0`` vs tuned errors ``n1`` out of ``total``."""
    z = pooled_z(int(n0), int(n1), int(total)) if total > 0 else math.nan
    return z, bool(abs(z) > z_critical) if not math.isnan(z) else False


def eval_key(dataset: str, config: dict[str, Any]) -> str:
    """The pnd.json entry a run is compared on: App. K scores a run tuned on ``arxiv-<domain>``
    on arxiv without that domain (Table 5: "the samples with category of the model ... are
    excluded"); every other run and dataset on the full set."""
    domain = narrow_domain(config.get("train_data"))
    return excluded_key(dataset, domain) if domain and dataset in ARXIV_DATASETS else dataset


def _entries(model: str, qrun_id: str, ds: str, key: str, base: dict[str, Any],
             tuned: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The base and tuned entries of ``key``; None when neither evaluation has the dataset."""
    if key in base and key in tuned:
        return base[key], tuned[key]
    if key == ds or not any(k in d for k in (ds, key) for d in (base, tuned)):
        return None
    where = " and ".join(n for n, d in (("base", base), (qrun_id, tuned)) if key not in d)
    raise DataError(f"{model}/{where}/pnd.json: no '{key}' entry, but run {qrun_id} was tuned on "
                    f"{pnd_sets.arxiv_set(key.split('!', 1)[1])}, so {ds} must be compared without that domain "
                    f"for both encoders (App. K): evaluate both with evaluate-pnd --exclude-domains "
                    f"{key.split('!', 1)[1]} (the workflow does)")


def dataset_rows(model: str, qrun_id: str, base: dict[str, Any], tuned: dict[str, Any],
                 z_critical: float, config: dict[str, Any] | None = None,
                 datasets: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Long rows for the triplet ``datasets`` (default: Table 1's and Table 2's) present in both
    pnd.json files (``config``: the run config, whose ``train_data`` picks the App. K entry). An
    evaluated set that no table reports (not in :mod:`embtune.core.pnd_sets`) is a data error, not
    dropped."""
    for where, pnd in (("base", base), (qrun_id, tuned)):
        unknown = sorted({pnd_sets.base_set(k) for k in pnd if k not in pnd_sets.PND_META_KEYS} - set(pnd_sets.names()))
        if unknown:
            raise DataError(f"{model}/{where}/pnd.json: evaluation set {unknown[0]!r} is in no query table "
                            f"(expected one of {', '.join(pnd_sets.names())}; a new set is registered in "
                            f"embtune.core.pnd_sets)")
    rows = []
    for ds in (*DATASETS, *TABLE2_DATASETS) if datasets is None else datasets:
        key = eval_key(ds, config or {})
        pair = _entries(model, qrun_id, ds, key, base, tuned)
        for measure in MEASURES if pair else ():
            b, t = pair[0].get(measure), pair[1].get(measure)
            if not b or not t:
                continue
            if b["total"] != t["total"]:
                raise ValueError(f"{model}/{qrun_id}/{key}/{measure}: totals differ "
                                 f"({b['total']} vs {t['total']}): not the same evaluation set")
            z, sig = compare_counts(b["errors"], t["errors"], b["total"], z_critical)
            rows.append({"model": model, "qrun_id": qrun_id, "dataset": ds, "eval_set": key,
                         "measure": measure,
                         "errors_base": int(b["errors"]), "errors_tuned": int(t["errors"]),
                         "total": int(b["total"]), "pnd_base": _pnd_value(b), "pnd_tuned": _pnd_value(t),
                         "improvement": 100 * relative_improvement(_pnd_value(b), _pnd_value(t)),
                         "z": z, "significant": sig, **_ranking_columns(b, t)})
    return rows


def _ranking_columns(b: dict[str, Any], t: dict[str, Any]) -> dict[str, float | None]:
    """MRR/MAP/P@1 of both encoders and Eq. 1 with s = +1 (higher is better), in percent."""
    out: dict[str, float | None] = {}
    for m in RANKING:
        mb, mt = b.get(m), t.get(m)
        out[f"{m}_base"], out[f"{m}_tuned"] = mb, mt
        out[f"{m}_improvement"] = (None if mb is None or mt is None else
                                   100 * relative_improvement(mb, mt, lower_is_better=False))
    return out


def table2_rows(ds_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 2: one row per (model, run, dataset) with ``<metric>_<c|d>_pct`` for PND, MRR, MAP
    and P@1, and the PND significance ``pnd_<c|d>_sig`` (the paper's grey cells;
    docs/fidelity.md#P2-TABLE2)."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in ds_rows:
        row = out.setdefault((r["model"], r["qrun_id"], r["dataset"]), {
            "model": r["model"], "qrun_id": r["qrun_id"], "dataset": r["dataset"],
            "eval_set": r["eval_set"]})
        m = r["measure"][0]
        row[f"pnd_{m}_pct"], row[f"pnd_{m}_sig"] = r["improvement"], r["significant"]
        for metric in RANKING:
            row[f"{metric}_{m}_pct"] = r.get(f"{metric}_improvement")
    return list(out.values())


def xnli_rows(model: str, qrun_id: str, base: pl.DataFrame, tuned: pl.DataFrame,
              z_critical: float) -> pl.DataFrame:
    """Per language pair, relation and measure: improvement (%), z and significance."""
    keep = XNLI_KEYS + ["errors", "total"]
    joined = base.select(keep).join(tuned.select(keep), on=XNLI_KEYS, suffix="_tuned", how="inner")
    if (joined["total"] != joined["total_tuned"]).any():
        raise ValueError(f"{model}/{qrun_id}: XNLI totals differ between base and tuned")
    stats = [compare_counts(n0, n1, n, z_critical)
             for n0, n1, n in zip(joined["errors"], joined["errors_tuned"], joined["total"])]
    improvement = [100 * relative_improvement(n0 / n, n1 / n) if n else math.nan
                   for n0, n1, n in zip(joined["errors"], joined["errors_tuned"], joined["total"])]
    return joined.select(
        pl.lit(model).alias("model"), pl.lit(qrun_id).alias("qrun_id"), "relation", "measure",
        "query_lang", "text_lang", pl.col("errors").cast(pl.Int64).alias("errors_base"),
        pl.col("errors_tuned").cast(pl.Int64), pl.col("total").cast(pl.Int64),
    ).with_columns(pl.Series("improvement", improvement, pl.Float64),
                   pl.Series("z", [s[0] for s in stats], pl.Float64),
                   pl.Series("significant", [s[1] for s in stats], pl.Boolean))


def plus_minus(heat: pl.DataFrame, relation: str, measure: str) -> tuple[int, int]:
    """(#pairs significantly improved, #significantly worsened) — Table 1's ``c+/-``, ``d+/-``."""
    sel = heat.filter((pl.col("relation") == relation) & (pl.col("measure") == measure)
                      & pl.col("significant"))
    return int((sel["errors_tuned"] < sel["errors_base"]).sum()), int((sel["errors_tuned"] > sel["errors_base"]).sum())


def table1_row(model: str, qrun_id: str, config: dict[str, Any], ds_rows: list[dict[str, Any]],
               heat: pl.DataFrame) -> dict[str, Any]:
    """One Table-1 row: improvement % and significance per dataset/measure, XNLI +/- counts."""
    row: dict[str, Any] = {"model": model, "qrun_id": qrun_id,
                           **{k: config.get(k) for k in CONFIG_COLUMNS}}
    by_key = {(r["dataset"], r["measure"]): r for r in ds_rows}
    for ds in DATASETS:
        for m in MEASURES:
            r = by_key.get((ds, m))
            row[f"{ds}_{m[0]}_pct"] = r["improvement"] if r else None
            row[f"{ds}_{m[0]}_sig"] = r["significant"] if r else None
    for rel, tag in zip(RELATIONS, ("ent_neutr", "ent_contr")):
        for m in MEASURES:
            plus, minus = plus_minus(heat, rel, m) if heat.height else (None, None)
            row[f"xnli_{tag}_{m[0]}_plus"], row[f"xnli_{tag}_{m[0]}_minus"] = plus, minus
    return row


def lr_curve_rows(model: str, qrun_id: str, config: dict[str, Any],
                  ds_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Points of Figure 2(b): only runs that differ from the default in the learning rate."""
    if config.get("sweep") not in ("lr", "default"):
        return []
    lr = config.get("lr_effective", config.get("lr"))
    return [{"model": model, "qrun_id": qrun_id, "lr": lr, "dataset": r["dataset"],
             "measure": r["measure"], "improvement": r["improvement"], "significant": r["significant"]}
            for r in ds_rows if r["dataset"] in DATASETS]


def markdown(table: pl.DataFrame) -> str:
    """Paper-style markdown per model; non-significant improvements carry a dagger (grey in the paper)."""
    out = ["# Query-tower tuning: PND improvement (%) vs the untuned encoder", "",
           "`†` = not significant (pooled two-proportion z-test, |z| <= z_critical). "
           "XNLI columns: language pairs significantly improved/worsened. Runs tuned on "
           "arxiv-<domain> are compared on arxiv without that domain (App. K).", ""]
    head = ["qrun", "lr"] + [f"{ds} {m[0]}%" for ds in DATASETS for m in MEASURES] + [
        f"xnli {t} {m[0]}+/-" for t in ("ent-neutr", "ent-contr") for m in MEASURES]
    for model in table["model"].unique(maintain_order=True):
        out += [f"## {model}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in table.filter(pl.col("model") == model).iter_rows(named=True):
            cells = [r["qrun_id"], f"{r['lr_effective']:.3g}" if r["lr_effective"] is not None else ""]
            for ds in DATASETS:
                for m in MEASURES:
                    v, s = r[f"{ds}_{m[0]}_pct"], r[f"{ds}_{m[0]}_sig"]
                    cells.append("" if v is None else f"{v + 0.0:.2f}" + ("" if s else "†"))  # no -0.00
            for tag in ("ent_neutr", "ent_contr"):
                for m in MEASURES:
                    p, n = r[f"xnli_{tag}_{m[0]}_plus"], r[f"xnli_{tag}_{m[0]}_minus"]
                    cells.append("" if p is None else f"{p}/{n}")
            out.append("| " + " | ".join(map(str, cells)) + " |")
        out.append("")
    return "\n".join(out)


def table2_markdown(rows: pl.DataFrame) -> str:
    """Paper 2's Table 2 layout per model and run: datasets down, PND/MRR/MAP/P@1 x c%/d% across.
    Only the default-regime runs (Table 2 is E5 at the defaults) when there are any."""
    out = ["# Query-tower tuning: improvement (%) on the Table 2 datasets", "",
           "I = s (M~ - M) / M (Eq. 1): s = -1 for PND, +1 for MRR, MAP, P@1; c = cosine, "
           "d = distance. `†` = PND change not significant (pooled z-test). table2.csv has every run.", ""]
    if not rows.height:
        return "\n".join(out + ["no evaluated query runs", ""])
    default = rows.filter(pl.col("qrun_id") == "default")
    order = {ds: i for i, ds in enumerate((*TABLE2_DATASETS, *DATASETS))}
    rows = (default if default.height else rows).with_columns(
        pl.col("dataset").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_o"))
    rows = rows.sort("model", "qrun_id", "_o", maintain_order=True)
    head = ["dataset"] + [f"{name} {m}%" for name in TABLE2_METRICS.values() for m in "cd"]
    for (model, qrun), sub in rows.group_by("model", "qrun_id", maintain_order=True):
        out += [f"## {model} / {qrun}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in sub.iter_rows(named=True):
            cells = [r["dataset"] if r["eval_set"] == r["dataset"] else r["eval_set"]]
            for metric in TABLE2_METRICS:
                for m in "cd":
                    v = r.get(f"{metric}_{m}_pct")
                    mark = "" if metric != "pnd" or r.get(f"pnd_{m}_sig") in (True, None) else "†"
                    cells.append("" if v is None or math.isnan(v) else f"{v + 0.0:.2f}{mark}")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- I/O
def _read_xnli(path: Path) -> pl.DataFrame:
    if not path.exists():
        return pl.DataFrame(schema={k: pl.String for k in XNLI_KEYS} | {"errors": pl.Int64, "total": pl.Int64})
    frame = read_parquet(path, "the xnli_counts.parquet evaluate-pnd writes")
    check_count_rows(path, frame)
    return frame


def _read_pnd(path: Path) -> Any:
    pnd = read_json(path)
    check_counts(path, pnd)
    return pnd


def _run_config(run_dir: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    """The run config from the tune-query manifest; without one, what the id and metrics say
    (:meth:`embtune.runconfig.QueryRunConfig.parse_id`: ``default``, ``lr-1e-07``,
    ``train_data-arxiv-math``). Run configs do not carry their ``sweep`` (memberships come
    from the plan, ``--plan-json``): without the plan it is the one key the id changes (none for
    a directory name that is not a query run id), as for a run without a manifest."""
    try:
        diff = QueryRunConfig.parse_id(run_dir.name)     # what differs from the defaults
        sweep = "default" if not diff else next(iter(diff)) if len(diff) == 1 else None
    except ValueError:
        diff, sweep = {}, None                           # not a query run id: no sweep to read
    manifest = run_dir / MANIFEST_JSON
    if manifest.exists() and read_json(manifest).get("run_config"):
        return {"sweep": sweep, **read_json(manifest)["run_config"]}
    lr = metrics.get("lr_effective")
    if lr is None and sweep == "lr":
        lr = diff["lr"]
    config = {"sweep": sweep, "lr_effective": lr}
    if sweep == "train_data":  # ``train_data-arxiv-math``: App. K needs the tuning domain
        config["train_data"] = diff["train_data"]
    return config


def collect(query_runs_dir: Path, z_critical: float, only: set[str] | None = None,
            members: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read every model/run (or only the ``model/qrun_id`` names in ``only``: the workflow passes
    the planned runs so a leftover run from an earlier sweep never enters the table); returns the
    rows (and skipped runs) and the runs lacking evaluations. ``members`` (the plan's
    memberships) set each run's ``sweep`` and ``groups``, which run configs do not carry."""
    fields = membership_fields(members or [])
    table, ds_long, heats, curves, missing, skipped = [], [], [], [], [], []
    failed: list[dict[str, Any]] = []
    runs = QueryRuns(query_runs_dir)
    for model in runs.evaluated_models():
        base_pnd = _read_pnd(runs.file(model, BASE_RUN, PND_JSON))
        base_xnli = _read_xnli(runs.file(model, BASE_RUN, XNLI_COUNTS))
        for qrun in runs.run_ids(model):
            run_dir = runs.dir(model, qrun)
            if only is not None and f"{model}/{qrun}" not in only:
                continue
            if not (run_dir / PND_JSON).exists():
                missing.append(f"{model}/{qrun}")
                continue
            metrics = read_json(run_dir / METRICS_JSON) if (run_dir / METRICS_JSON).exists() else {}
            if metrics.get("status", "ok") != "ok":
                skipped.append(f"{model}/{run_dir.name}")
                if metrics.get("status") == "failed":      # embtune.train.failures: with its reason
                    rec = metrics.get("failure") or {}
                    failed.append({"model": model, "qrun_id": run_dir.name, "reason": rec.get("reason"),
                                   "detail": rec.get("detail") or metrics.get("skip_reason")})
                continue
            config = {**_run_config(run_dir, metrics), **fields.get((model, run_dir.name), {})}
            rows = dataset_rows(model, run_dir.name, base_pnd, _read_pnd(run_dir / PND_JSON),
                                z_critical, config)
            heat = xnli_rows(model, run_dir.name, base_xnli, _read_xnli(run_dir / XNLI_COUNTS), z_critical)
            table.append(table1_row(model, run_dir.name, config, rows, heat))
            ds_long += rows
            heats.append(heat)
            curves += lr_curve_rows(model, run_dir.name, config, rows)
    return {"table": table, "long": ds_long, "heat": heats, "curves": curves, "skipped": skipped,
            "failed": failed}, missing


def _frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


HEAT_SCHEMA = {"model": pl.String, "qrun_id": pl.String, "relation": pl.String, "measure": pl.String,
               "query_lang": pl.String, "text_lang": pl.String, "errors_base": pl.Int64,
               "errors_tuned": pl.Int64, "total": pl.Int64, "improvement": pl.Float64,
               "z": pl.Float64, "significant": pl.Boolean}
FAILED_SCHEMA = {"model": pl.String, "qrun_id": pl.String, "reason": pl.String, "detail": pl.String}
CURVE_SCHEMA = {"model": pl.String, "qrun_id": pl.String, "lr": pl.Float64, "dataset": pl.String,
                "measure": pl.String, "improvement": pl.Float64, "significant": pl.Boolean}


def write_outputs(out: Path, table: pl.DataFrame, got: dict[str, Any]) -> None:
    """Every table file (not the manifest) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    table.write_csv(out / "table1.csv")
    write_text(out / "table1.md", markdown(table) if table.height else "# no evaluated query runs\n")
    pl.DataFrame(got["long"], infer_schema_length=None).write_csv(out / "pnd_long.csv")
    table2 = pl.DataFrame(table2_rows(got["long"]), infer_schema_length=None)
    table2.write_csv(out / "table2.csv")
    write_text(out / "table2.md", table2_markdown(table2))
    heat = pl.concat(got["heat"]) if got["heat"] else pl.DataFrame(schema=HEAT_SCHEMA)
    write_parquet(out / "xnli_heatmap.parquet", heat.cast(HEAT_SCHEMA))  # type: ignore[arg-type]
    write_parquet(out / "lr_curves.parquet", _frame(got["curves"], CURVE_SCHEMA))
    _frame(got.get("failed", []), FAILED_SCHEMA).write_csv(out / "failed_runs.csv")   # left out, why
