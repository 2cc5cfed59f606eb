"""Significance and relative improvement for PND comparisons (paper 2, section 2 and Appendix I).

Appendix I names a "two-proportion Z-test, pooled for H0: p1 = p2" but prints
Z = (p1 - p0) / sqrt(½ P (1 - P) N), with ½ and N where 2 and 1/N belong: as printed,
|Z| <= 2 sqrt(2 P / ((1 - P) N)) (as |p1 - p0| <= 2 P), below 0.002 for XNLI's N = 2,788,900
whenever P <= ½, so nothing could be significant, yet its tables are full of significant
language pairs. We use the test it
names, specialised to equal totals N (the original and the tuned encoder are evaluated on the
same comparisons); docs/fidelity.md#P2-ZTEST:

    p0 = n0 / N,  p1 = n1 / N,  P = (n0 + n1) / (2 N),
    Z  = (p1 - p0) / sqrt(P (1 - P) (1/N + 1/N)) = (p1 - p0) / sqrt(2 P (1 - P) / N).

The difference is significant when |Z| > z_critical (1.96, two-sided 5 %).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def pooled_z(n0: int, n1: int, total: int) -> float:
    """Pooled two-proportion Z of n1 vs n0 errors out of the same ``total`` comparisons.

    0.0 when both proportions are 0 or 1 (no variance: no evidence of a difference)."""
    if total <= 0:
        raise ValueError(f"pooled_z: total must be positive, got {total}")
    if not (0 <= n0 <= total and 0 <= n1 <= total):
        raise ValueError(f"pooled_z: counts {n0}, {n1} must lie in [0, {total}]")
    pooled = (n0 + n1) / (2 * total)
    variance = 2 * pooled * (1 - pooled) / total
    if variance == 0.0:
        return 0.0
    return (n1 / total - n0 / total) / math.sqrt(variance)


def is_significant(n0: int, n1: int, total: int, z_critical: float = 1.96) -> bool:
    return abs(pooled_z(n0, n1, total)) > z_critical


def relative_improvement(original: float, tuned: float, lower_is_better: bool = True) -> float:
    """Equation 1: I = s (M~ - M) / M, with s = -1 for PND (fewer errors = positive I)."""
    if original == 0:
        return float("nan")
    sign = -1.0 if lower_is_better else 1.0
    return sign * (tuned - original) / original


def significance_counts(pairs: Iterable[tuple[int, int, int]],
                        z_critical: float = 1.96) -> tuple[int, int]:
    """The "c+/-" columns: (#significantly improved, #significantly worsened) language pairs.

    Each item is (errors_original, errors_tuned, total); improved = fewer errors."""
    improved = worsened = 0
    for n0, n1, total in pairs:
        if is_significant(n0, n1, total, z_critical):
            if n1 < n0:
                improved += 1
            else:
                worsened += 1
    return improved, worsened


def min_detectable_difference(total: int, pooled: float, z_critical: float = 1.96,
                              z_power: float = 0.8416) -> float:
    """Smallest |p1 - p0| the pooled test above detects with the given power (default 0.8).

    Normal approximation with the pooled variance 2 P (1 - P) / N under both hypotheses:
    |p1 - p0| = (z_critical + z_power) sqrt(2 P (1 - P) / N). It sizes the demo's XNLI data
    (workflow/scripts/build_demo_xnli.py): N = n_entail x n_relation comparisons per language pair."""
    if total <= 0:
        raise ValueError(f"min_detectable_difference: total must be positive, got {total}")
    if not 0.0 <= pooled <= 1.0:
        raise ValueError(f"min_detectable_difference: pooled rate {pooled} not in [0, 1]")
    return (z_critical + z_power) * math.sqrt(2 * pooled * (1 - pooled) / total)


def strength(rho: float) -> str:
    """Words for a correlation's |ρ| (the usual cut-offs 0.3, 0.5, 0.7), so that a weak agreement
    with a paper's claim does not read as the paper's strong one."""
    r = abs(rho)
    return "weak" if r < 0.3 else "moderate" if r < 0.5 else "strong" if r < 0.7 else "very strong"
