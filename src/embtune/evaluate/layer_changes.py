"""Which layers did query tuning change most (paper 2, App. M.3, Tables 14-15)?

Why: §3.3 picked ``output.dense.weight`` as the layer to freeze because it is the most changed
layer near the end of the adiabatic LR range. We compute, per parameter tensor of the query tower
vs the original encoder:

* ``w_max_orig`` W_o and ``w_max_tuned`` W_t: the maximal (signed) weight of the tensor;
* ``changed``: whether any element differs at all;
* ``max_abs_change``: max |W_tuned - W_orig| over the tensor's elements;
* ``relative_change`` (Table 15): (W_t - W_o) / (W_t + W_o) on the maxima. When W_t + W_o == 0
  (both maxima zero, or equal and opposite) the ratio is undefined: it is NaN and ranks last.

Ranks (1 = most changed; unchanged tensors get no rank, null):

* ``rank_max_weight``: Table 14 — among changed tensors, by W_t, descending;
* ``rank_abs_change``: by ``max_abs_change``, descending;
* ``rank_relative``: Table 15 — by ``relative_change``, descending (NaN last).

``layer`` is the name with everything up to ``encoder.layer.`` removed, as Tables 14-15 print it
(``3.output.dense.weight``; docs/fidelity.md#P2-LAYER-CHANGES); outside the blocks the wrapper prefix is dropped
(``embeddings.LayerNorm.weight``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import polars as pl
import torch

_PREFIX = re.compile(r"^.*?(?:encoder\.layer\.|(?=(?:embeddings|pooler)\.))")


def short_layer_name(name: str) -> str:
    """``0.model.encoder.layer.3.output.dense.weight`` -> ``3.output.dense.weight``;
    ``0.model.embeddings.LayerNorm.weight`` -> ``embeddings.LayerNorm.weight``."""
    return _PREFIX.sub("", name)


def relative_change(w_tuned: float, w_orig: float) -> float:
    """(W_t - W_o) / (W_t + W_o); NaN when the denominator is exactly zero (undefined)."""
    den = w_tuned + w_orig
    return (w_tuned - w_orig) / den if den != 0 else math.nan


def tensor_change(orig: torch.Tensor, tuned: torch.Tensor) -> dict[str, float | bool]:
    """Change statistics of one tensor, in its own dtype: maxima are exact, and for the small
    changes that matter here the difference of two nearby floats is exact too (Sterbenz), so
    there is no need to pay for a float64 copy of the word-embedding matrix."""
    o, t = orig.detach(), tuned.detach()
    if o.shape != t.shape:
        raise ValueError(f"shape mismatch {tuple(o.shape)} vs {tuple(t.shape)}")
    wo, wt = float(o.max()), float(t.max())
    changed = not torch.equal(o, t)
    max_abs = float((t - o).abs().max()) if changed else 0.0
    return {"w_max_orig": wo, "w_max_tuned": wt, "changed": changed,
            "max_abs_change": max_abs, "relative_change": relative_change(wt, wo)}


def _rank(frame: pl.DataFrame, column: str, out: str) -> pl.DataFrame:
    """Dense 1-based descending rank over changed rows; NaN ranks after every number."""
    key = pl.when(pl.col(column).is_nan()).then(-math.inf).otherwise(pl.col(column))
    ranked = frame.filter("changed").with_columns(key.alias("_k")).sort(["_k", "name"], descending=[True, False])
    ranked = ranked.with_row_index(out, offset=1).select("name", pl.col(out).cast(pl.Int64))
    return frame.join(ranked, on="name", how="left")


def layer_changes(original: Mapping[str, torch.Tensor], tuned: Mapping[str, torch.Tensor]) -> pl.DataFrame:
    """One row per tensor present in both state dicts, with the statistics and ranks above."""
    missing = sorted(set(original) ^ set(tuned))
    if missing:
        raise KeyError(f"state dicts differ in parameter names: {missing[:5]}")
    rows = [{"name": n, "layer": short_layer_name(n), **tensor_change(original[n], tuned[n])}
            for n in original if original[n].is_floating_point()]
    frame = pl.DataFrame(rows, schema={"name": pl.String, "layer": pl.String, "w_max_orig": pl.Float64,
                                       "w_max_tuned": pl.Float64, "changed": pl.Boolean,
                                       "max_abs_change": pl.Float64, "relative_change": pl.Float64})
    for column, out in (("w_max_tuned", "rank_max_weight"), ("max_abs_change", "rank_abs_change"),
                        ("relative_change", "rank_relative")):
        frame = _rank(frame, column, out)
    return frame.sort("name")


def top_layers(frame: pl.DataFrame, rank_column: str, k: int = 2) -> list[str]:
    """The ``k`` most-changed short layer names by one rank column (Tables 14-15 list two)."""
    return frame.filter(pl.col(rank_column).is_not_null()).sort(rank_column).head(k)["layer"].to_list()


def aggregate_top_layers(frames: Sequence[pl.DataFrame], rank_column: str, k: int = 2) -> pl.DataFrame:
    """Tables 14-15 over several runs of one learning rate: the ``k`` layers most often among a
    run's top ``k`` by ``rank_column``.

    Why counts: the paper lists two layers per learning rate from one run each; with several runs
    per rate (seeds, repeats) a layer's claim is how many of them put it in their top ``k``
    (``n_top`` of ``n_runs``), ties broken by the mean rank over the runs that changed it
    (``mean_rank``, lower first), then by name. With one run this is exactly its top ``k``.
    Columns: position (1..k), layer, n_top, n_runs, mean_rank."""
    schema = {"position": pl.Int64, "layer": pl.String, "n_top": pl.Int64, "n_runs": pl.Int64,
              "mean_rank": pl.Float64}
    ranked = [f.filter(pl.col(rank_column).is_not_null()).select("layer", pl.col(rank_column).alias("rank"))
              for f in frames]
    ranked = [f for f in ranked if f.height]
    if not ranked:
        return pl.DataFrame(schema=schema)
    long = pl.concat([f.with_columns(pl.lit(i).alias("run")) for i, f in enumerate(ranked)])
    agg = (long.group_by("layer")
           .agg((pl.col("rank") <= k).sum().cast(pl.Int64).alias("n_top"),
                pl.col("rank").cast(pl.Float64).mean().alias("mean_rank"))
           .filter(pl.col("n_top") > 0)
           .sort(["n_top", "mean_rank", "layer"], descending=[True, False, False]).head(k))
    return agg.with_row_index("position", offset=1).select(
        pl.col("position").cast(pl.Int64), "layer", "n_top",
        pl.lit(len(frames), dtype=pl.Int64).alias("n_runs"), "mean_rank")
