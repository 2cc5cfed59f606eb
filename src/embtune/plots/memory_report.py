"""The report's "GPU memory: estimated vs measured" section.

Why: each training job asks for a GPU class from its peak-memory estimate
(``embtune.models.memory``, ``embtune.plan.gpus``); a run whose measured peak exceeds its estimate
could have landed on a card too small for it, so the report puts the two side by side per method.
On a GPU the measured peak is ``torch.cuda.max_memory_allocated``; on a CPU it is the process's
peak resident set, which also holds the interpreter, libraries and data (an upper bound of the
tensors' peak, so there the ratio is only a sanity check).
"""

from __future__ import annotations

import polars as pl

COLUMNS = ("peak_memory_bytes", "estimated_peak_memory_bytes")
GIB = 2**30


def memory_markdown(runs: pl.DataFrame) -> list[str]:
    out = ["## GPU memory: estimated vs measured", ""]
    if not set(COLUMNS) <= set(runs.columns):
        return out + ["No run recorded its peak memory.", ""]
    done = runs.filter((pl.col("status") == "ok") & pl.col("peak_memory_bytes").is_not_null()
                       & pl.col("estimated_peak_memory_bytes").is_not_null())
    if done.is_empty():
        return out + ["No finished run recorded its peak memory.", ""]
    devices = ", ".join(sorted(str(d) for d in done["device"].drop_nulls().unique())) if "device" in done.columns else ""
    out += [f"Measured on {devices or 'unknown devices'} (GPU: max_memory_allocated; CPU: peak RSS).", "",
            "| method | runs | estimated peak GiB (max) | measured peak GiB (max) | measured / estimated (max) |",
            "|---|---|---|---|---|"]
    ratio = (pl.col("peak_memory_bytes") / pl.col("estimated_peak_memory_bytes")).alias("ratio")
    for method in done["method"].unique(maintain_order=True):
        g = done.filter(pl.col("method") == method).with_columns(ratio)
        out.append(f"| {method} | {g.height} | {g['estimated_peak_memory_bytes'].max() / GIB:.3g} | "
                   f"{g['peak_memory_bytes'].max() / GIB:.3g} | {g['ratio'].max():.3g} |")
    over = done.with_columns(ratio).filter(pl.col("ratio") > 1)
    if over.height and (done["device"] != "cpu").any():
        out.append("")
        out.append(f"{over.height} runs used more than their estimate: lower "
                   "`usable_fraction` (more head-room) in profiles/default/gpu_classes.yaml or report the run.")
    return out + [""]
