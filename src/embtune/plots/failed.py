"""The report's "Failed runs" section: runs that failed for good, read from the runs
table (:func:`embtune.scaling.failed.failed_runs`), and the rows each method's fits lost."""

from __future__ import annotations

from typing import Any

import polars as pl

from embtune.scaling.failed import failed_runs


def failed_markdown(runs: pl.DataFrame, fits: dict[str, Any]) -> list[str]:
    """"Failed runs": every run that failed for good, with its reason (embtune.train.failures),
    and how many rows each method's fits lost to them."""
    failed = failed_runs(runs)
    if not failed["count"]:
        return []
    lines = ["## Failed runs", "",
             f"{failed['count']} run(s) failed for good and are missing from every table and fit: "
             + ", ".join(f"{n} {r}" for r, n in failed["by_reason"].items()) + ".", "",
             "| run | reason | detail |", "|---|---|---|"]
    for r in failed["runs"]:
        detail = str(r["detail"] or "").split(": ", 1)[-1].replace("|", "/")
        lines.append(f"| {r['run_id']} | {r['reason']} | {detail[:160]} |")
    lost = {m: v["count"] for m, v in (fits.get("lost_rows") or {}).items() if v.get("count")}
    if lost:
        lines += ["", "Rows the fits lost: " + ", ".join(f"{m} {n}" for m, n in lost.items()) + "."]
    return lines + [""]
