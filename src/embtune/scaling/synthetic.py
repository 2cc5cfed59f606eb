"""Synthetic runs tables generated from a known law, for tests, the benchmark and figure checks.

Why here and not in tests: the benchmark and the tests must agree on what a "paper-size" table
is, and a generator that knows its true parameters is what makes fitting tests honest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from embtune.models import methods as registry
from embtune.models.families import DEFAULT_FAMILY
from embtune.plan import config
from embtune.runconfig import RunConfig
from embtune.scaling.laws import modified_loss
from embtune.scaling.runs_table import build_table

PYTHIA = [("pythia-14m", 128, 6), ("pythia-31m", 256, 6), ("pythia-70m", 512, 6),
          ("pythia-160m", 768, 12), ("pythia-410m", 1024, 24), ("pythia-1b", 2048, 16),
          ("pythia-1.4b", 2048, 24), ("pythia-2.8b", 2560, 32)]
PAPER_BUDGETS = [1.5e15, 6e15, 2.4e16, 9.6e16, 3.8e17, 1.5e18]


def true_params() -> dict[str, dict[str, float]]:
    """One modified-law parameter set per registered method (raw units), chosen to give paper-like
    losses; each method declares its own (``Method.synthetic_law`` in embtune.models.methods)."""
    return {m.name: dict(m.synthetic_law) for m in registry.REGISTRY.values() if m.synthetic_law is not None}


#: :func:`true_params` of the methods registered at import (the built-in ones).
TRUE_PARAMS: dict[str, dict[str, float]] = true_params()


def method_sections(settings: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Each registered method's params section (``train.<method>``, where the schema has one): the
    schema's defaults, under the method's paper-scale grid (``Method.synthetic_settings``), under
    ``settings[<method>]``. Read from the registry and the schema, so a method declared with its
    schema section has synthetic tables with no edit here."""
    schema = config.load_schema()
    sections = schema["properties"]["train"]["properties"]
    out: dict[str, dict[str, Any]] = {}
    for m in registry.REGISTRY.values():
        sub = sections.get(m.name)
        if sub is None:
            continue
        section = {**copy.deepcopy(sub.get("default", {})), **copy.deepcopy(dict(m.synthetic_settings or {})),
                   **(settings or {}).get(m.name, {})}
        out[m.name] = config.fill_defaults(section, sub, schema)
    return out


def variants(model: dict[str, Any], method: str, train: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The method's own variants (its registry entry) of ``model`` under ``train`` (default
    :func:`method_sections`: paper 1's grid, every frozen-block fraction k/6 or k/8 and LoRA ranks
    8 to 2048); each settings dict with its id ``tag``."""
    train = method_sections() if train is None else train
    return [{**v, "tag": tag} for tag, v, skip in registry.get(method).variants(model, train, method)
            if skip is None]


def synthetic_rows(models: list[tuple[str, int, int]], budgets: list[float], *,
                   methods: tuple[str, ...] | None = None,
                   settings: Mapping[str, Mapping[str, Any]] | None = None,
                   params: dict[str, dict[str, float]] | None = None,
                   noise: float = 0.01, batch_size: int = 1024, tokens_per_pair: float = 110.0,
                   seed: int = 0) -> list[dict[str, Any]]:
    """Runs-table rows whose loss follows ``params[method]`` (modified law) × lognormal noise;
    ``methods`` defaults to every registered method with a synthetic law, ``settings`` overrides
    their params sections (``{"<method>": {...}}``, see :func:`method_sections`)."""
    rng = np.random.default_rng(seed)
    params = params or true_params()
    methods = methods if methods is not None else tuple(true_params())
    train = method_sections(settings)
    rows = []
    for name, hidden, layers in models:
        for method in methods:
            spec = {"family": DEFAULT_FAMILY, "hidden_size": hidden, "num_layers": layers}
            for v in variants(spec, method, train):
                counts = registry.planned_counts(spec, registry.method_config(v))
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
    """A paper-size table by default: 8 Pythia models × every registered method's variants × 6 budgets."""
    kwargs.setdefault("models", PYTHIA)
    kwargs.setdefault("budgets", PAPER_BUDGETS)
    return build_table(synthetic_rows(**kwargs))
