"""Per-sweep and per-grid tables of the query-table stage (paper 2, App. M, Tables 6-20, Figs. 12-14).

Why a table per group: the paper reads each sweep or grid as its own table (Table 6: rows batch
size, one learning rate each; Table 20: optimizer x learning rate), while ``table1.csv`` has one
row per *run*. A run can belong to several groups (the default run is Table 6's, 7's and 8's
batch-14 row): :func:`embtune.plan.query_sweep.query_plan` lists the memberships, and every group table is
laid out from them, with the factor values *as the group declared them* (``lr_scaling: linear``
at batch 14 is the default run, shown as linear in Table 6).

Files written under ``<query-table out>/groups/``, per group ``<kind>-<name>`` (kind ``sweep`` for
a one-factor sweep, ``grid`` for a named grid):

* ``<key>.csv``: the paper's layout, one row per (model, member run): factor columns, the run id,
  ``lr_effective``, then the same result columns as ``table1.csv`` (improvement % and
  significance per dataset and measure, XNLI +/- counts); ``evaluated`` false where the run has
  no PND yet; a grid with ``reference`` keys adds ``reference`` and the XNLI +/- counts against
  it (``xnli_<rel>_<c|d>_plus_vs_reference``: language pairs whose PND is significantly lower /
  higher than the reference run's, by the same pooled z-test);
* ``<key>_long.csv``: one row per (model, run, dataset, measure) with the factor columns, the
  improvement over the untuned encoder (``improvement``, ``z``, ``significant``, as
  ``pnd_long.csv``) and over the member's *tuned reference* run (``reference``,
  ``improvement_vs_reference``, ``z_vs_reference``, ``significant_vs_reference``): the default run,
  or for a grid with ``reference`` keys the defaults at the point's values of those keys. Tables
  17-18 print "improvement over the fine-tuned E5 model ... tuned using a batch size of 14,
  learning rate 5e-8" (17) / "10^-7" (18), so ``table17-18`` declares ``reference: [lr]``;
  both references are here (docs/fidelity.md#P2-TABLE17-18);
* ``<key>_pivot.csv`` for a grid varying two or more keys: rows (model, dataset, measure, first
  factor), one column per combination of the others (``k=v,k=v``), cells the improvement (%):
  Tables 6-8 side by side as one batch x scaling-rule table;
* ``<key>.md``: the paper-style table per model (``†`` = not significant);
* ``index.csv``: kind, group, members, evaluated members.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.io import write_text
from embtune.evaluate.stats import pooled_z, relative_improvement

FIRST_COLUMNS = ("model", "qrun_id", "lr_effective")
#: The per-pair XNLI frames' keys and Table 1's relation tags (as evaluate/query_table.py writes
#: them; that module imports this one, so they are not imported from it).
XNLI_KEYS = ("query_lang", "text_lang", "relation", "measure")
XNLI_RELATIONS = (("neutral", "ent_neutr"), ("contradiction", "ent_contr"))


def membership_fields(members: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, str]]:
    """Per (model, qrun_id): ``sweep`` = the first group it belongs to in planning order (what the
    LR curves and table1 read), ``groups`` = every ``kind:group`` joined by ``;``."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for m in members:
        entry = out.setdefault((m["model"], m["qrun_id"]), {"sweep": m["group"], "groups": ""})
        tag = f"{m['kind']}:{m['group']}"
        if tag not in entry["groups"].split(";"):
            entry["groups"] = f"{entry['groups']};{tag}" if entry["groups"] else tag
    return out


def groups_of(members: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Members per (kind, group), in planning order; the default regime is not a group."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for m in members:
        if m["kind"] != "default":
            out.setdefault((m["kind"], m["group"]), []).append(m)
    return out


def factor_keys(members: list[dict[str, Any]]) -> list[str]:
    """The keys a group varies, in the order first seen."""
    keys: list[str] = []
    for m in members:
        keys += [k for k in m["factors"] if k not in keys]
    return keys


def _series(name: str, values: list[Any]) -> pl.Series:
    """A factor column: integers stay integers, any float makes it Float64, else strings."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pl.Series(name, values, pl.Int64)
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pl.Series(name, [None if v is None else float(v) for v in values], pl.Float64)
    return pl.Series(name, [None if v is None else str(v) for v in values], pl.String)


def factor_frame(members: list[dict[str, Any]], keys: list[str]) -> pl.DataFrame:
    """One row per member: model, qrun_id, position, and the factor values."""
    cols = [pl.Series("model", [m["model"] for m in members], pl.String),
            pl.Series("qrun_id", [m["qrun_id"] for m in members], pl.String),
            pl.Series("position", list(range(len(members))), pl.Int64)]
    cols += [_series(k, [m["factors"].get(k) for m in members]) for k in keys]
    return pl.DataFrame(cols)


def group_table(table: pl.DataFrame, members: list[dict[str, Any]]) -> pl.DataFrame:
    """The paper's layout for one group: factors, run id, lr_effective, then the result columns
    of ``table1`` (the run's own config columns are dropped: the factors say what the group set)."""
    keys = factor_keys(members)
    frame = factor_frame(members, keys)
    if table.is_empty():
        return frame.drop("position").with_columns(pl.lit(False).alias("evaluated"))
    results = [c for c in table.columns if c.endswith(("_pct", "_sig", "_plus", "_minus"))]
    right = table.select("model", "qrun_id", "lr_effective", *results).with_columns(
        pl.lit(True).alias("evaluated"))
    joined = frame.join(right, on=["model", "qrun_id"], how="left").sort("position")
    return joined.with_columns(pl.col("evaluated").fill_null(False)).select(
        "model", *keys, "qrun_id", "lr_effective", "evaluated", *results)


def _vs_reference(run: dict[str, Any], ref: dict[str, Any] | None, z_critical: float) -> dict[str, Any]:
    """The run's PND against its tuned reference run's, on the same evaluation set."""
    if ref is None or ref["total"] != run["total"]:
        return {"improvement_vs_reference": None, "z_vs_reference": None, "significant_vs_reference": None}
    z = pooled_z(int(ref["errors_tuned"]), int(run["errors_tuned"]), int(run["total"]))
    return {"improvement_vs_reference": 100 * relative_improvement(ref["pnd_tuned"], run["pnd_tuned"]),
            "z_vs_reference": z,
            "significant_vs_reference": bool(abs(z) > z_critical) if not math.isnan(z) else False}


def reference_of(member: dict[str, Any], default_ids: dict[str, str]) -> str:
    """The qrun_id a member is compared with: its grid's reference run, else the default run."""
    return member.get("reference") or default_ids.get(member["model"], "default")


def group_long(long_rows: list[dict[str, Any]], members: list[dict[str, Any]], default_ids: dict[str, str],
               z_critical: float) -> pl.DataFrame:
    """Long rows (dataset x measure) of the group's runs with factor columns and both references."""
    keys = factor_keys(members)
    by_run: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in long_rows:
        by_run.setdefault((r["model"], r["qrun_id"]), []).append(r)
    rows: list[dict[str, Any]] = []
    for m in members:
        ref_id = reference_of(m, default_ids)
        ref = {(r["dataset"], r["measure"]): r for r in by_run.get((m["model"], ref_id), [])}
        for r in by_run.get((m["model"], m["qrun_id"]), []):
            rows.append({**r, **{f"factor:{k}": m["factors"].get(k) for k in keys}, "reference": ref_id,
                         **_vs_reference(r, ref.get((r["dataset"], r["measure"])), z_critical)})
    if not rows:
        return pl.DataFrame()
    cols = [_series(k, [r[f"factor:{k}"] for r in rows]) for k in keys]
    rest = [c for c in rows[0] if not c.startswith("factor:")]
    body = pl.DataFrame({c: [r.get(c) for r in rows] for c in rest}, strict=False)
    body = body.with_columns(pl.col(c) + 0.0 for c in ("improvement", "improvement_vs_reference")
                             if c in body.columns and body.schema[c].is_float())   # no -0.0
    frame = pl.concat([pl.DataFrame(cols), body], how="horizontal")
    return frame.select("model", *keys, *[c for c in body.columns if c != "model"])


def group_pivot(long: pl.DataFrame, keys: list[str]) -> pl.DataFrame | None:
    """Rows (model, dataset, measure, first key), one column per combination of the other keys."""
    if len(keys) < 2 or long.is_empty():
        return None
    labels = [",".join(f"{k}={_cell(row[k])}" for k in keys[1:]) for row in long.iter_rows(named=True)]
    frame = long.with_columns(pl.Series("_column", labels, pl.String))
    return frame.pivot(on="_column", index=["model", "dataset", "measure", keys[0]],
                       values="improvement", aggregate_function="first", maintain_order=True)


def group_markdown(title: str, frame: pl.DataFrame, keys: list[str]) -> str:
    """Paper-style table per model: factor columns, then improvement % († = not significant)."""
    pcts = [c for c in frame.columns if c.endswith("_pct")]
    xnli = [c[: -len("_plus")] for c in frame.columns if c.endswith("_plus")]
    head = [*keys, "qrun", *[c[: -len("_pct")] + "%" for c in pcts], *[f"{c} +/-" for c in xnli]]
    out = [f"# {title}", "", "`†` = not significant (pooled two-proportion z-test).", ""]
    for model in frame["model"].unique(maintain_order=True):
        out += [f"## {model}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in frame.filter(pl.col("model") == model).iter_rows(named=True):
            cells = [_cell(r[k]) for k in keys] + [r["qrun_id"]]
            for c in pcts:
                v, sig = r[c], r.get(c[: -len("_pct")] + "_sig")
                cells.append("" if v is None else f"{v + 0.0:.2f}" + ("" if sig else "†"))
            cells += ["" if r[f"{c}_plus"] is None else f"{r[f'{c}_plus']}/{r[f'{c}_minus']}" for c in xnli]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _cell(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else ("" if value is None else str(value))


def xnli_vs_reference(members: list[dict[str, Any]], heats: dict[tuple[str, str], pl.DataFrame],
                      default_ids: dict[str, str], z_critical: float) -> pl.DataFrame:
    """``reference`` and the XNLI +/- counts of each member against its reference run, in the
    group table's row order: per language pair, relation and measure, the pooled z-test of the
    reference's tuned errors against the run's (Tables 17-18's c+/- "over the fine-tuned E5")."""
    cols: dict[str, list[Any]] = {"reference": []}
    for m in members:
        ref_id = reference_of(m, default_ids)
        cols["reference"].append(ref_id)
        run, ref = heats.get((m["model"], m["qrun_id"])), heats.get((m["model"], ref_id))
        both = None if run is None or ref is None else ref.select(
            *XNLI_KEYS, pl.col("errors_tuned").alias("errors_ref"), pl.col("total").alias("total_ref")).join(
            run.select(*XNLI_KEYS, "errors_tuned", "total"), on=XNLI_KEYS, how="inner")
        for rel, tag in XNLI_RELATIONS:
            for measure in ("cos", "dist"):
                plus = minus = None
                if both is not None and both.height:
                    sel = both.filter((pl.col("relation") == rel) & (pl.col("measure") == measure))
                    sig = [n == n_ref and n > 0 and abs(pooled_z(int(a), int(b), int(n))) > z_critical
                           for a, b, n, n_ref in sel.select("errors_ref", "errors_tuned", "total",
                                                            "total_ref").iter_rows()]
                    diff = (sel["errors_tuned"] - sel["errors_ref"]).to_list()
                    plus = sum(1 for s, d in zip(sig, diff) if s and d < 0)
                    minus = sum(1 for s, d in zip(sig, diff) if s and d > 0)
                for side, value in (("plus", plus), ("minus", minus)):
                    cols.setdefault(f"xnli_{tag}_{measure[0]}_{side}_vs_reference", []).append(value)
    return pl.DataFrame({k: pl.Series(k, v, pl.String if k == "reference" else pl.Int64)
                         for k, v in cols.items()})


def write_groups(out: Path, table: pl.DataFrame, long_rows: list[dict[str, Any]],
                 members: list[dict[str, Any]], z_critical: float,
                 heats: Iterable[pl.DataFrame] = ()) -> list[dict[str, Any]]:
    """Every group's files into ``out`` (see the module docstring); returns the index rows.
    ``heats``: the per-run XNLI frames of :func:`embtune.evaluate.query_table.xnli_rows`."""
    out.mkdir(parents=True, exist_ok=True)
    default_ids = {m["model"]: m["qrun_id"] for m in members if m["kind"] == "default"}
    by_run = {(h["model"][0], h["qrun_id"][0]): h for h in heats if h.height}
    index = []
    for (kind, group), group_members in groups_of(members).items():
        key, keys = f"{kind}-{group}", factor_keys(group_members)
        frame = group_table(table, group_members)
        if any("reference" in m for m in group_members):
            frame = pl.concat([frame, xnli_vs_reference(group_members, by_run, default_ids,
                                                        z_critical)], how="horizontal")
        frame.write_csv(out / f"{key}.csv")
        long = group_long(long_rows, group_members, default_ids, z_critical)
        long.write_csv(out / f"{key}_long.csv")
        pivot = group_pivot(long, keys) if kind == "grid" else None
        if pivot is not None:
            pivot.write_csv(out / f"{key}_pivot.csv")
        write_text(out / f"{key}.md", group_markdown(f"{kind} {group}: PND improvement (%) vs the untuned "
                                                     f"encoder", frame, keys))
        index.append({"kind": kind, "group": group, "factors": ",".join(keys),
                      "members": len(group_members),
                      "evaluated": int(frame["evaluated"].sum()) if "evaluated" in frame.columns else 0})
    pl.DataFrame(index, schema={"kind": pl.String, "group": pl.String, "factors": pl.String,
                                "members": pl.Int64, "evaluated": pl.Int64}).write_csv(out / "index.csv")
    return index
