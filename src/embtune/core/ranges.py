"""What each number a stage takes may be: one table for command-line arguments and run configs.

Why one table keyed by name: the same quantity (a batch size, a budget, a fraction, a seed)
reaches the stages through many arguments and JSON keys, and a negative step count, a NaN
budget, ``warmup_fraction`` 2.0 or ``max_epochs`` -1 would otherwise run to the end and report
"ok" on nonsense. :func:`check_namespace` checks every parsed argument of a stage before any work
(:mod:`embtune.cli`); :func:`check_value` checks one run-config key (:mod:`embtune.runconfig`).
Every float must be finite, every integer non-negative, unless the table says more.
"""

from __future__ import annotations

import math
from typing import Any

from embtune.core.errors import DataError

POSITIVE, NONNEG, FRACTION, OPEN_FRACTION, ANY_FINITE = "positive", "nonneg", "fraction", "open_fraction", "finite"

_EXPECT = {POSITIVE: "a finite number > 0", NONNEG: "a finite number >= 0", FRACTION: "a number in [0, 1]",
           OPEN_FRACTION: "a number in (0, 1]", ANY_FINITE: "a finite number"}

#: name (argparse ``dest`` or run-config key) -> its range; names not listed get the defaults.
RANGES: dict[str, str] = {
    # sizes and counts that must be at least one
    "batch_size": POSITIVE, "doc_batch_size": POSITIVE, "context_length": POSITIVE, "seq_len": POSITIVE,
    "vocab_size": POSITIVE, "max_seq_length": POSITIVE, "max_length": POSITIVE, "threads": POSITIVE,
    "workers": POSITIVE, "parts": POSITIVE, "shard_rows": POSITIVE, "n_negatives": POSITIVE,
    "attempt": POSITIVE, "max_pairs": POSITIVE, "max_premises": POSITIVE, "max_category_size": POSITIVE,
    "min_passages": POSITIVE, "stop_after_steps": POSITIVE, "levels": POSITIVE, "arxiv_levels": POSITIVE,
    "arxiv_random_level": POSITIVE, "work": POSITIVE, "batches_per_epoch": POSITIVE, "patience": POSITIVE,
    "max_epochs": POSITIVE, "final_loss_window": POSITIVE, "train_size": POSITIVE, "eval_size": POSITIVE,
    # physical quantities
    "budget": POSITIVE, "flops_per_second": POSITIVE, "tokens_per_pair": POSITIVE, "huber_delta": POSITIVE,
    "z_critical": POSITIVE, "running_window": POSITIVE, "temperature": POSITIVE, "peak_lr": POSITIVE,
    "lr": POSITIVE, "lr_effective": POSITIVE, "tokens": NONNEG, "steps": NONNEG, "n_total": NONNEG,
    "n_forward": NONNEG, "n_backward": NONNEG, "n_update": NONNEG, "margin": NONNEG, "weight_decay": NONNEG,
    # fractions
    "warmup_fraction": FRACTION, "final_lr_fraction": FRACTION, "narrow_val_fraction": FRACTION,
    "final_loss_fraction": OPEN_FRACTION,
}


def _ok(value: float, kind: str) -> bool:
    if not math.isfinite(value):
        return False
    return {POSITIVE: value > 0, NONNEG: value >= 0, FRACTION: 0 <= value <= 1,
            OPEN_FRACTION: 0 < value <= 1, ANY_FINITE: True}[kind]


def problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` for ``name``, or None (non-numbers are not this table's business)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    kind = RANGES.get(name, NONNEG if isinstance(value, int) else ANY_FINITE)
    if _ok(float(value), kind):
        return None
    if name in _NAMED:
        return f"expected {_NAMED[name]}"
    return f"expected {_EXPECT[kind]}"


_NAMED = {"budget": "a finite FLOP budget > 0"}


def check_value(where: str, name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``where`` when ``value`` is out of ``name``'s range."""
    why = problem(name, value)
    if why:
        raise ValueError(f"{where} is {value!r}; {why}")


def check_namespace(ns: Any) -> None:
    """Every numeric argument of a parsed command line (lists element by element), before any
    work: a ``DataError`` naming the flag and what it must be."""
    if ns is None:
        return
    for dest, value in sorted(vars(ns).items()):
        for item in value if isinstance(value, (list, tuple)) else [value]:
            why = problem(dest, item)
            if why:
                raise DataError(f"--{dest.replace('_', '-')} is {item!r}; {why}")
