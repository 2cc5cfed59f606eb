"""Expand the parameter grids into run configs — the one place that does it (paper 2's query
runs in :mod:`embtune.plan.query_sweep`, which :func:`expand` calls).

Why one place: the Snakefile builds its targets from these lists, the training stage trains
exactly the dict it is given, the analysis joins on the same ids, and tests check the same
expansion. Each run is built as a typed config (:class:`embtune.runconfig.RunConfig`,
:class:`~embtune.runconfig.QueryRunConfig`: they own the fields and the id format). :func:`expand`
returns the whole plan typed, once (:class:`StudyPlan`; the cost module reads its ``ParamCounts``);
``training_plan``/``query_sweep.query_plan`` and their narrower forms hand on ``to_dict()``, the plain JSON
dict the rules pass to the stages, and expand again on each call.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embtune.core.layout import Processed, Results
from embtune.models import methods
from embtune.models.flops import tokens_for_budget
from embtune.models.methods import freeze_fractions, lora_alpha  # noqa: F401  (their home before the registry)
from embtune.models.model_spec import ModelSpec
from embtune.plan import query_sweep
from embtune.runconfig import SEP, Planned, QueryRunConfig, RunConfig, RunData, TrainSettings


@dataclass(frozen=True)
class Skipped:
    run_id: str
    reason: str
    status: str = "skipped"     # skipped: cannot run as configured; dropped: cut by train.gpu_hours_cap


def _method_variants(model: dict[str, Any], train: dict[str, Any]) -> list[tuple[str, dict[str, Any], str | None]]:
    """(method tag, method settings, skip reason) for every method variant of one model, as each
    method declares them (``embtune.models.methods``: freeze fractions, LoRA ranks, ...)."""
    return [v for name in train["methods"] for v in methods.get(name).variants(model, train, name)]


def peak_lr(model: dict[str, Any], method: str, train: dict[str, Any]) -> float:
    """Per-method override (paper 1, Tables 3-4; docs/fidelity.md#P1-LR-LORA-BIAS) or the model's
    pre-training peak / ``lr_divisor`` (App. D.1), clipped into ``peak_lr_range`` when one is set
    (§4.1's printed "between 1.2e-5 and 6e-5"; docs/fidelity.md#P1-LR-PEAK)."""
    override = train.get("method_lr", {}).get(method)
    if override:
        return float(override)
    rule = methods.get(method).peak_lr
    if rule is not None:            # a method's own rule (none of paper 1's four has one)
        return float(rule(model, train))
    lr = model["pretrain_peak_lr"] / train["lr_divisor"]
    bounds = train.get("peak_lr_range")
    if bounds:
        lo, hi = (float(b) for b in bounds)
        if lo > hi:
            raise ValueError(f"train.peak_lr_range: lower bound {lo} exceeds upper bound {hi}")
        lr = min(max(lr, lo), hi)
    return float(lr)


def training_runs(params: dict[str, Any], *, flops_per_second: float | None = None,
                  apply_cap: bool = True) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """All feasible run configs (the main grid, then the studies' own runs), and the infeasible
    ones with their reason (see :func:`training_plan` for the GPU-hour cap)."""
    runs, skipped, _ = training_plan(params, flops_per_second=flops_per_second, apply_cap=apply_cap)
    return runs, skipped


def variant_budgets(train: dict[str, Any], tag: str, method: str) -> list[float]:
    """The budgets of one method variant: ``train.variant_budgets`` by its tag (``lora-r32``),
    else by its method (``freeze``), else ``train.budgets``."""
    by = train.get("variant_budgets") or {}
    return list(by.get(tag, by.get(method, train["budgets"])))


def runs_variant(train: dict[str, Any], models: list[dict[str, Any]], model: str, tag: str,
                 method: str) -> bool:
    """Whether ``model`` trains this method variant: ``train.variant_models`` by its tag, else by
    its method, else every model. Why: a variant whose law is not fitted (a second LoRA rank,
    bias-only) answers its findings on a few sizes, so a small grid spends its time on the fitted
    methods' sizes. Names not in ``models`` are left out, and a list that names none of them
    restricts nothing: a preset that replaces ``models`` (CI's one hub model) cannot delete the
    mapping it inherits, and should not lose the variant for it."""
    by = train.get("variant_models") or {}
    names = {m["name"] for m in models}
    present = [n for n in by.get(tag, by.get(method)) or () if n in names]
    return not present or model in present


def check_variant_budgets(train: dict[str, Any]) -> None:
    """A ``train.variant_budgets`` or ``train.variant_models`` key must name a registered method
    or a variant tag of one (``<method>-...``). A key for a method the grid leaves out is allowed
    (a preset layered on another narrows ``methods`` but cannot delete a mapping key); a misspelt
    method is not."""
    for key in ("variant_budgets", "variant_models"):
        unknown = sorted(k for k in train.get(key) or {} if k.split("-")[0] not in methods.REGISTRY)
        if unknown:
            raise ValueError(f"train.{key}: {unknown} name no method or variant tag (methods: "
                             f"{sorted(methods.REGISTRY)}; tags look like lora-r32, freeze-1of2)")




@dataclass(frozen=True)
class StudyPlan:
    """Everything a params set plans, expanded once (:func:`expand`): the training runs before
    and after the GPU-hour cap, what is skipped or dropped and why, the studies' memberships, and
    the query-tuning runs and their sweep/grid memberships. :func:`embtune.plan.config.validate_plan`
    returns it; the workflow (common.smk) and the ``plan`` stage read it."""

    candidates: list[RunConfig]         # feasible runs, before train.gpu_hours_cap
    runs: list[RunConfig]               # the runs that train (after the cap)
    skipped: list[Skipped]              # skipped at planning time, then those the cap dropped
    members: list[dict[str, Any]]       # {run_id, study, factors} per (run, study)
    qruns: list[QueryRunConfig] = field(default_factory=list)
    qmembers: list[dict[str, Any]] = field(default_factory=list)   # {model, qrun_id, kind, group, factors}

    def training_json(self) -> dict[str, Any]:
        """What the ``plan`` stage writes for the stages after it (``--plan``): memberships and
        the skipped/dropped runs, in JSON."""
        return {"runs": [r.run_id for r in self.runs], "members": self.members,
                "skipped": [dataclasses.asdict(s) for s in self.skipped]}


def expand(params: dict[str, Any], *, flops_per_second: float | None = None) -> StudyPlan:
    """The whole plan of ``params``: :func:`expand_training` then
    :func:`embtune.plan.query_sweep.expand_query`."""
    candidates, runs, skipped, members = expand_training(params, flops_per_second=flops_per_second)
    qruns, qmembers = query_sweep.expand_query(params) if "query_tuning" in params else ([], [])
    return StudyPlan(candidates, runs, skipped, members, qruns, qmembers)


def _grid_runs(params: dict[str, Any], models: list[dict[str, Any]], train: dict[str, Any],
               study: str | None = None, factors: dict[str, Any] | None = None,
               ) -> tuple[list[RunConfig], list[Skipped]]:
    """Run configs of ``models`` x ``train``'s methods, budgets and seeds; a study's name and
    factor values end the ids (:meth:`RunConfig.make_id`; none for the main grid)."""
    processed = Processed(Path(params["paths"]["processed"]))
    results = Results(Path(params["paths"]["results"]))
    runs: list[RunConfig] = []
    skipped: list[Skipped] = []
    check_variant_budgets(train)
    for model in models:
        for tag, method_cfg, reason in _method_variants(model, train):
            if not runs_variant(train, models, model["name"], tag, method_cfg["method"]):
                continue
            for budget in variant_budgets(train, tag, method_cfg["method"]):
                for seed in train["seeds"]:
                    run_id = RunConfig.make_id(model["name"], tag, budget, seed, study, factors)
                    if reason:
                        skipped.append(Skipped(run_id, reason))
                        continue
                    chosen = methods.method_config(method_cfg)
                    counts = methods.planned_counts(model, chosen)
                    tokens = tokens_for_budget(counts, budget)
                    est_steps = tokens / train["tokens_per_pair_estimate"] / train["batch_size"]
                    if est_steps < train["min_steps"]:
                        skipped.append(Skipped(run_id, f"budget allows ~{est_steps:.1f} steps "
                                                       f"< train.min_steps={train['min_steps']}"))
                        continue
                    pairs = train.get("planned_pairs")      # the loop's max_epochs check, at plan time
                    if pairs and est_steps * train["batch_size"] > train["max_epochs"] * pairs:
                        skipped.append(Skipped(run_id, f"budget needs ~{est_steps * train['batch_size']:.3g} "
                                               f"pairs > train.max_epochs={train['max_epochs']:g} x "
                                               f"train.planned_pairs={pairs:.3g}"))
                        continue
                    runs.append(RunConfig(
                        run_id=run_id,
                        model=ModelSpec.from_dict(model, f"models[{model['name']}]"),
                        method=chosen.method,
                        settings=chosen.settings,
                        budget=float(budget),
                        seed=seed,
                        peak_lr=peak_lr(model, chosen.method, train),
                        planned=Planned(counts, tokens, est_steps),
                        train=TrainSettings(**{k: train[k] for k in TrainSettings.keys()}),
                        data=RunData(train_dir=str(processed.bge_packed()),
                                     tokenizer_dir=str(processed.tokenizer())),
                        base_model_dir=str(results.base_model(model["name"])),
                    ))
    return runs, skipped


# ---------------------------------------------------------------- paper 1's appendix studies
#: Factors a study may cross (``train.studies[].cross``); each sets one training setting.
STUDY_FACTORS = ("temperature", "inv_temperature", "weight_decay", "pooling", "peak_lr",
                 "batch_size", "context_length")
def study_row_columns() -> tuple[str, ...]:
    """Columns a study table may group by besides its factors (they come from the runs table):
    the run's coordinates and every method's hyper-parameter column (its registry entry). The
    schema's ``train.studies[].rows`` enum is these plus :data:`STUDY_FACTORS` (a contract test)."""
    return ("model", "method", "budget", "seed", *methods.hyper_columns())


def study_points(study: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the study's ``cross`` values (one empty point without ``cross``)."""
    cross = study.get("cross") or {}
    return [dict(zip(cross, values)) for values in itertools.product(*cross.values())]


def study_train(train: dict[str, Any], study: dict[str, Any], factors: dict[str, Any]) -> dict[str, Any]:
    """The training settings of one study point: ``train``, then the study's ``base``, then its
    factor values. ``inv_temperature`` is 1/tau as App. D's Table 1 lists it; ``peak_lr`` is one
    rate for every method of the study (Tables 3-4 search the rate of one method each)."""
    from embtune.core.params_yaml import deep_merge

    # a study names its own budgets and models: the main grid's per-variant ones stay out of it
    out = deep_merge({k: v for k, v in train.items() if k not in ("studies", "variant_budgets", "variant_models")},
                     study.get("base") or {})
    for key, value in factors.items():
        if key == "inv_temperature":
            out["temperature"] = 1.0 / value
        elif key == "peak_lr":
            out["method_lr"] = {method: value for method in out["methods"]}
        else:
            out[key] = value
    return out


def _run_identity(run: RunConfig) -> str:
    """Everything a training run's result depends on (its identity, ``embtune.core.run_identity``,
    without the id), as a comparable key."""
    from embtune.core.run_identity import identity

    return json.dumps({k: v for k, v in identity(run.to_dict()).items() if k != "run_id"}, sort_keys=True,
                      default=str)


def training_plan(params: dict[str, Any], *, flops_per_second: float | None = None,
                  apply_cap: bool = True) -> tuple[list[dict[str, Any]], list[Skipped], list[dict[str, Any]]]:
    """:func:`expand_training` as the JSON dicts the rules pass on: ``(runs, skipped, members)``."""
    _, runs, skipped, members = expand_training(params, flops_per_second=flops_per_second, apply_cap=apply_cap)
    return [r.to_dict() for r in runs], skipped, members


def expand_training(params: dict[str, Any], *, flops_per_second: float | None = None, apply_cap: bool = True,
                    ) -> tuple[list[RunConfig], list[RunConfig], list[Skipped], list[dict[str, Any]]]:
    """The main grid and the studies of ``train.studies`` (paper 1, App. D and F), expanded.

    Returns ``(candidates, runs, skipped, members)`` (``candidates``: before the cap). A study run whose config equals a run already planned
    (main grid first, then the studies in order) is not planned again: ``members`` has one row
    ``{run_id, study, factors}`` per (run, study) membership, so a study table can name a main-grid
    run (e.g. App. D's temperature 1/40 at the main settings). Membership stays out of the run
    configs: adding a study never changes (so never re-trains) an existing run.

    With ``train.gpu_hours_cap`` set (and ``apply_cap``), runs beyond the cap are dropped in the
    documented order (``embtune.plan.cost.trim_to_cap``, at ``flops_per_second``, default: the
    calibrated throughput) and listed as skipped with status ``dropped``."""
    train = params["train"]
    runs, skipped = _grid_runs(params, params["models"], train)
    members = [{"run_id": r.run_id, "study": "main", "factors": {}} for r in runs]
    members += [{"run_id": s.run_id, "study": "main", "factors": {}} for s in skipped]
    planned = {_run_identity(r): r.run_id for r in runs}
    models = {m["name"]: m for m in params["models"]}
    for study in train.get("studies") or []:
        missing = sorted(set(study.get("models") or []) - set(models))
        if missing:
            raise ValueError(f"train.studies {study['name']!r}: models {missing} are not in models")
        chosen = [models[name] for name in study["models"]] if study.get("models") else params["models"]
        for factors in study_points(study):
            s_runs, s_skipped = _grid_runs(params, chosen, study_train(train, study, factors),
                                           study["name"], factors)
            for run in s_runs:
                run_id = planned.setdefault(_run_identity(run), run.run_id)
                if run_id == run.run_id:
                    runs.append(run)
                members.append({"run_id": run_id, "study": study["name"], "factors": dict(factors)})
            skipped += s_skipped
            members += [{"run_id": s.run_id, "study": study["name"], "factors": dict(factors)}
                        for s in s_skipped]
    candidates, cap = runs, train.get("gpu_hours_cap")
    if apply_cap and cap is not None:
        from embtune.plan.cost import flops_per_second as calibrated
        from embtune.plan.cost import trim_to_cap

        runs, dropped = trim_to_cap(runs, float(cap), flops_per_second or calibrated())
        skipped = skipped + [Skipped(r.run_id, reason, "dropped") for r, reason in dropped]
    return candidates, runs, skipped, members


def mteb_run_ids(params: dict[str, Any], runs: list[dict[str, Any]],
                 members: list[dict[str, Any]]) -> list[str]:
    """Feasible runs that need an MTEB evaluation: every main-grid run, and the runs of studies
    whose table reports ``mteb_average`` (App. D Tables 1-2); App. F and the learning-rate
    studies report losses only, so their runs skip the evaluation."""
    scored = {s["name"] for s in params["train"].get("studies") or []
              if s.get("metric") == "mteb_average"} | {"main"}
    feasible = {r["run_id"] for r in runs}
    return sorted({m["run_id"] for m in members if m["study"] in scored and m["run_id"] in feasible})


def run_batches(run_ids: list[str], runs_per_job: int, *, key: str = "runs_per_job") -> dict[str, list[str]]:
    """Runs grouped into jobs of at most ``runs_per_job`` runs (MTEB evaluations:
    ``evaluate.mteb.runs_per_job``; training: ``train.runs_per_job``): the runs of one base model
    (alike in size, so alike in time and memory), in run-id order, cut into consecutive chunks;
    the batch id is ``<model>__b<k>`` (k from 0). Deterministic: the same runs give the same
    batches, and a run added to or removed from one model moves that model's batches only. A
    batch re-run reuses every member whose outputs are still up to date
    (:mod:`embtune.stages.evaluate_mteb`, :mod:`embtune.stages.train_batch`), so a changed run
    re-evaluates (re-trains) itself alone."""
    by_model: dict[str, list[str]] = {}
    for run_id in sorted(set(run_ids)):
        by_model.setdefault(RunConfig.parse_id(run_id).model, []).append(run_id)
    return _chunks(by_model, runs_per_job, key)


def query_run_batches(qruns: list[tuple[str, str]], runs_per_job: int, *,
                      key: str = "query_tuning.runs_per_job") -> dict[str, list[tuple[str, str]]]:
    """Query runs ``(encoder, qrun_id)`` grouped as :func:`run_batches` groups training runs:
    one encoder's runs, in id order, under ``<encoder>__b<k>`` (``tune-query-batch``)."""
    by_model: dict[str, list[tuple[str, str]]] = {}
    for model, qrun in sorted(set(qruns)):
        by_model.setdefault(model, []).append((model, qrun))
    return _chunks(by_model, runs_per_job, key)


def _chunks(by_model: dict[str, list[Any]], runs_per_job: int, key: str) -> dict[str, list[Any]]:
    if runs_per_job < 1:
        raise ValueError(f"{key} must be >= 1, got {runs_per_job}")
    return {f"{model}{SEP}b{k}": runs[i:i + runs_per_job]
            for model, runs in sorted(by_model.items())
            for k, i in enumerate(range(0, len(runs), runs_per_job))}


def max_context_length(params: dict[str, Any]) -> int:
    """The longest context any run may use (main grid or study): the training pairs are prepared
    at this length and every run truncates them further to its own (App. F trains at 512)."""
    train = params["train"]
    lengths = [int(train["context_length"])]
    for study in train.get("studies") or []:
        for factors in study_points(study):
            lengths.append(int(study_train(train, study, factors)["context_length"]))
    return max(lengths)
