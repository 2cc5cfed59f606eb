"""Synthetic runs tables generated from a known law, for tests, the benchmark and figure checks.

Why here and not in tests: the benchmark and the tests must agree on what a "paper-size" table
is, and a generator that knows its true parameters is what makes fitting tests honest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from embtune.models import methods as registry
from embtune.models.families import DEFAULT_FAMILY
from embtune.runconfig import RunConfig
from embtune.scaling.laws import modified_loss
from embtune.scaling.runs_table import build_table

PYTHIA = [("pythia-14m", 128, 6), ("pythia-31m", 256, 6), ("pythia-70m", 512, 6),
          ("pythia-160m", 768, 12), ("pythia-410m", 1024, 24), ("pythia-1b", 2048, 16),
          ("pythia-1.4b", 2048, 24), ("pythia-2.8b", 2560, 32)]
PAPER_BUDGETS = [1.5e15, 6e15, 2.4e16, 9.6e16, 3.8e17, 1.5e18]
LORA_RANKS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]

# One modified-law parameter set per method (raw units), chosen to give paper-like losses; each
# method declares its own (``Method.synthetic_law`` in embtune.models.methods).
TRUE_PARAMS: dict[str, dict[str, float]] = {m.name: dict(m.synthetic_law) for m in registry.REGISTRY.values()
                                            if m.synthetic_law is not None}


def variants(model: dict[str, Any], method: str, ranks: list[int]) -> list[dict[str, Any]]:
    """The method's own variants (its registry entry) of ``model``: paper 1's whole grid, every
    frozen-block fraction k/6 or k/8 (``auto``) and the given LoRA ranks; each settings dict with
    its id ``tag``."""
    # the params' train.freeze and train.lora sections (params sections, not a list of methods)
    train: dict[str, Any] = {"freeze": {"fractions": "auto"}}
    train["lora"] = {"ranks": ranks, "alpha": 8, "embed_in": False, "dropout": 0.0}
    return [{**settings, "tag": tag} for tag, settings, skip in registry.get(method).variants(model, train, method)
            if skip is None]


def synthetic_rows(models: list[tuple[str, int, int]], budgets: list[float], *,
                   methods: tuple[str, ...] | None = None,
                   ranks: list[int] | None = None, params: dict[str, dict[str, float]] | None = None,
                   noise: float = 0.01, batch_size: int = 1024, tokens_per_pair: float = 110.0,
                   seed: int = 0) -> list[dict[str, Any]]:
    """Runs-table rows whose loss follows ``params[method]`` (modified law) × lognormal noise;
    ``methods`` defaults to every registered method with a synthetic law."""
    rng = np.random.default_rng(seed)
    params = params or TRUE_PARAMS
    methods = methods if methods is not None else tuple(TRUE_PARAMS)
    rows = []
    for name, hidden, layers in models:
        for method in methods:
            spec = {"family": DEFAULT_FAMILY, "hidden_size": hidden, "num_layers": layers}
            for v in variants(spec, method, ranks or LORA_RANKS):
                counts = registry.planned_counts(spec, v)
                for c in budgets:
                    d = c / counts.per_token
                    s = counts.trainable_fraction
                    loss = float(modified_loss(params[method], counts.n_total, d, s)) * float(np.exp(rng.normal(0, noise)))
                    steps = d / tokens_per_pair / batch_size
                    rows.append({
                        "run_id": RunConfig.make_id(name, v["tag"], c, 0), "method": method,
                        "model": name, "hidden_size": hidden, "num_layers": layers,
                        "N": float(counts.n_total), "N_F": float(counts.n_forward),
                        "N_B": float(counts.n_backward), "N_U": float(counts.n_update), "S": s,
                        "D": d, "C": c, "budget": c, **{col: v.get(col) for col in registry.hyper_columns()},
                        "peak_lr": 1e-4, "batch_size": batch_size,
                        "steps": steps, "tokens_per_pair": tokens_per_pair, "seed": 0,
                        "final_train_loss": loss, "val_loss": loss * 1.05,
                        "mteb_average": float(0.7 - 0.2 * np.log(loss) + rng.normal(0, 0.01)),
                        "mteb_STS15": float(0.8 - 0.2 * np.log(loss) + rng.normal(0, 0.02)),
                        "status": "ok", "skip_reason": None,
                    })
    return rows


def synthetic_runs(**kwargs: Any) -> pl.DataFrame:
    """A paper-size table by default: 8 Pythia models × 4 methods' variants × 6 budgets."""
    kwargs.setdefault("models", PYTHIA)
    kwargs.setdefault("budgets", PAPER_BUDGETS)
    return build_table(synthetic_rows(**kwargs))
