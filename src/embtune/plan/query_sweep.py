"""Expand ``query_tuning`` (paper 2, App. M) into query-tower run configs and their sweep/grid
memberships.

Why apart from :mod:`embtune.plan.sweep`: paper 2's query runs share nothing with paper 1's training
grid but the run-config types; their own concepts (one-factor sweeps, grids with crossed,
listed and drawn points, tuned reference runs, identity of differently spelled configs) make a
module of their own. :func:`embtune.plan.sweep.expand` calls :func:`expand_query` for the whole plan.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from embtune.core.optim import scaled_lr
from embtune.runconfig import QueryRunConfig

QUERY_SWEEP_KEYS = ("lr", "freeze", "batch_size", "margin", "weight_decay", "train_data",
                    "scheduler", "optimizer", "patience", "tune_doc_tower")


def epoch_batches_for(cfg: dict[str, Any], defaults: dict[str, Any]) -> int:
    """Batches per epoch of a run whose batch size may differ from the defaults' (paper 2, M.1).

    ``epoch_size: samples`` keeps the defaults' samples per epoch (1000 x 14 = 14000: Tables 6-8,
    10, 12); ``batches`` keeps ``batches_per_epoch`` (Tables 9, 11), so validation comes less often
    in samples seen when the batch grows."""
    mode = cfg.get("epoch_size", "samples")
    if mode == "batches":
        return int(cfg["batches_per_epoch"])
    if mode == "samples":
        samples = defaults["batches_per_epoch"] * defaults["batch_size"]
        return max(1, round(samples / cfg["batch_size"]))
    raise ValueError(f"query_tuning.defaults.epoch_size: {mode!r} (expected samples or batches)")


def query_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Query-tuning run configs per model: the default regime, the one-factor sweeps and the
    grids (:func:`query_plan`)."""
    return query_plan(params)[0]


def query_members(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Which sweep or grid each query run belongs to (:func:`query_plan`)."""
    return query_plan(params)[1]


def _query_identity(cfg: dict[str, Any]) -> str:
    """What tune-query actually trains with: ``lr_effective`` and the resolved
    ``batches_per_epoch`` rather than how they were asked for (so Table 6's batch 14 under linear
    scaling *is* the default run, as the paper's tables show; docs/fidelity.md#P2-BATCH-SWEEP), and no
    schedule clock without a schedule. Numbers are compared at 12 significant digits (5e-8 x 28/14 is 1e-7)."""
    out = {k: v for k, v in cfg.items() if k not in ("lr", "lr_scaling", "epoch_size")}
    if out.get("scheduler") == "none":
        out.pop("scheduler_unit", None)
    norm = {k: float(f"{v:.12g}") if isinstance(v, (int, float)) and not isinstance(v, bool) else v
            for k, v in out.items()}
    return json.dumps(norm, sort_keys=True)


def grid_points(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """The factor settings of one grid: ``points`` x ``cross`` (every combination) x ``random``
    draws, each a dict of the keys the grid varies (its ``base`` is applied by the caller)."""
    points = grid.get("points") or [{}]
    cross = grid.get("cross") or {}
    combos = [dict(zip(cross, values)) for values in itertools.product(*cross.values())]
    draws = random_draws(grid["random"]) if grid.get("random") else [{}]
    return [{**p, **c, **d} for p in points for c in combos for d in draws]


def random_draws(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """``n`` distinct combinations of ``choices``, uniformly without replacement (paper 2,
    Tables 17-18: batch size, scheduler and weight decay "randomly varied").

    Why a hash rank and not ``random.sample``: each combination's rank is SHA-256 of (seed,
    combination), which no library or Python version can change, so the draws (and the run ids
    made from them) are the same on every invocation and machine; adding a choice value keeps
    every old combination's rank. Returned in the order of the Cartesian product (readable)."""
    choices = spec["choices"]
    keys = sorted(choices)
    combos = [dict(zip(keys, values)) for values in itertools.product(*(choices[k] for k in keys))]
    n = int(spec["n"])
    if n > len(combos):
        raise ValueError(f"random: n={n} draws asked from only {len(combos)} combinations")
    seed = int(spec.get("seed", 0))

    def rank(i: int) -> bytes:
        return hashlib.sha256(json.dumps([seed, combos[i]], sort_keys=True).encode()).digest()

    return [combos[i] for i in sorted(sorted(range(len(combos)), key=rank)[:n])]


def _query_variants(qt: dict[str, Any], model: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(kind, group, factors, change of the defaults) in planning order: the default regime, the
    one-factor sweeps (``QUERY_SWEEP_KEYS`` order), then the grids as declared. A sweep whose list
    leaves out the default value still has the default run as its reference row (the paper's
    tables print it: Table 16's 10 idle epochs, Table 13 next to "without weight decay").
    ``sweep_models`` (default: all) limits the sweeps to some models, as a grid's ``models`` does."""
    out: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [("default", "default", {}, {})]
    swept = qt.get("sweep_models")
    sweeps = (qt.get("sweeps") or {}) if not swept or model in swept else {}
    for key in QUERY_SWEEP_KEYS:
        values = list(sweeps.get(key) or [])
        if values and qt["defaults"][key] not in values:
            values.insert(0, qt["defaults"][key])
        out += [("sweep", key, {key: value}, {key: value}) for value in values]
    for grid in qt.get("grids") or []:
        if grid.get("models") and model not in grid["models"]:
            continue
        base = grid.get("base") or {}
        out += [("grid", grid["name"], factors, {**base, **factors}) for factors in grid_points(grid)]
    return out


def reference_change(grid: dict[str, Any], factors: dict[str, Any]) -> dict[str, Any] | None:
    """The change of the defaults that makes a grid point's *tuned reference* run, or None for
    the default run. Tables 17 and 18 print "improvement over the fine-tuned E5 model ... tuned
    using a batch size of 14, learning rate 5e-8" (17) and "... learning rate 1e-7" (18): a grid
    with ``reference: [lr]`` compares each point with the defaults at the point's own ``lr``
    (docs/fidelity.md#P2-TABLE17-18)."""
    keys = grid.get("reference") or []
    if not keys:
        return None
    missing = [k for k in keys if k not in factors and k not in (grid.get("base") or {})]
    if missing:
        raise ValueError(f"grid {grid['name']!r}: reference key {missing[0]!r} is neither varied nor "
                         "in the grid's base (expected keys of cross, points, random or base)")
    point = {**(grid.get("base") or {}), **factors}
    return {k: point[k] for k in keys}


def query_plan(params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`expand_query` as the JSON dicts the rules pass on: ``(runs, members)``."""
    runs, members = expand_query(params)
    return [r.to_dict() for r in runs], members


def expand_query(params: dict[str, Any]) -> tuple[list[QueryRunConfig], list[dict[str, Any]]]:
    """Expand ``query_tuning`` into run configs and memberships, per model (paper 2, App. M).

    The id names what differs from the defaults (``default`` for the default regime). Identical
    configs (:func:`_query_identity`) are trained once, under the id of the first spelling in
    planning order (:func:`_query_variants`), so appending a grid never renames an existing run;
    ``members`` has one row ``{model, qrun_id, kind, group, factors}`` per (run, sweep or grid),
    which the query-table stage uses to lay out each table. Memberships stay out of the run
    configs, so adding a grid never re-trains a run. The batches per epoch follow the batch size
    (:func:`epoch_batches_for`)."""
    qt = params["query_tuning"]
    defaults = dict(qt["defaults"])
    runs: list[QueryRunConfig] = []
    members: list[dict[str, Any]] = []
    grids = {g["name"]: g for g in qt.get("grids") or []}
    for model in qt["models"]:
        planned: dict[str, str] = {}

        def plan(kind: str, group: str, change: dict[str, Any], model: dict[str, Any] = model,
                 planned: dict[str, str] = planned) -> str:
            cfg = {**defaults, **change}
            diff = {k: v for k, v in cfg.items() if v != defaults[k]}
            cfg["batches_per_epoch"] = epoch_batches_for(cfg, defaults)
            cfg["lr_effective"] = scaled_lr(cfg["lr"], cfg["batch_size"], cfg["lr_scaling"],
                                            defaults["batch_size"])
            key = _query_identity(cfg)
            qrun = planned.get(key)
            if qrun is None:
                try:
                    qrun = planned[key] = QueryRunConfig.make_id(diff)
                except ValueError as err:
                    raise ValueError(f"query_tuning {kind} {group!r}: {err}") from None
                runs.append(QueryRunConfig(qrun_id=qrun, model=dict(model), **cfg))
            return qrun

        for kind, group, factors, change in _query_variants(qt, model["name"]):
            member = {"model": model["name"], "qrun_id": plan(kind, group, change), "kind": kind,
                      "group": group, "factors": dict(factors)}
            ref = reference_change(grids[group], factors) if kind == "grid" else None
            if ref is not None:   # planned (trained) like any run; the group tables compare with it
                member["reference"] = plan(kind, group, ref)
            members.append(member)
    return runs, members
