"""Where a study stands (stage ``status``, driver :mod:`embtune.stages.status`): per
study × model × method how many jobs are done, failed (with reasons), running, pending, skipped
or dropped, the GPU-hours measured so far against the plan's estimate, and an ETA.

It reads only files: the plan (:func:`embtune.plan.sweep.expand_training`, :func:`embtune.plan.query_sweep.query_runs`)
of the params stack, the results tree (:mod:`embtune.core.layout`) and, when given, the job states
SLURM reports (:func:`parse_squeue` / :func:`parse_sacct`; the driver runs the commands, never
required). States of one job:

- ``done``: ``metrics.json`` (training, query tuning) or ``pnd.json`` (PND evaluation) with
  status ok; ``failed``: status failed (:mod:`embtune.train.failures`, the reason counted);
  ``skipped``: skipped at planning time or at run time; ``dropped``: cut by ``train.gpu_hours_cap``.
- ``running``: no result yet, and SLURM says running, or the run's checkpoint
  (``checkpoints/<run>/state.json``) changed within ``running_window_s``;
- ``pending``: planned, nothing yet (or SLURM says pending; a stale checkpoint is counted in
  ``resumable``).

GPU-hours measured = Σ ``wall_seconds`` × ``world_size`` of the training runs' metrics (done and
failed: a failed run's time was spent too) + the query runs' tuning time; the estimate is
:func:`embtune.plan.cost.run_cost` of every planned training run (the plan's cost table; query tuning
has no estimate). ETA: the estimate left (pending and running training runs), scaled by measured ÷
estimated of the finished runs, at the rate GPU-hours were measured per wall-clock hour so far:
over the jobs whose outputs record when they ended (a manifest's ``created_utc``, an MTEB record's
``finished_utc``; start = end − the GPU time they recorded), first start to last end. Never file
mtimes: a copy, ``dvc pull`` or ``snakemake --touch`` moves them.

MTEB evaluations (one per run the workflow evaluates, :func:`mteb_jobs`) and, given the store,
the hub snapshots of stage-in (:func:`stage_in_jobs`) are counted as jobs too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from embtune.core.io import read_json
from embtune.core.layout import BASE_RUN, MANIFEST_JSON, METRICS_JSON, MTEB_JSON, PND_JSON, Results, Store
from embtune.plan.cost import run_cost
from embtune.plan.query_sweep import query_runs
from embtune.plan.sweep import expand_training, mteb_run_ids, run_batches
from embtune.runconfig import RunConfig
from embtune.train.checkpoint import STATE_FILE
from embtune.train.failures import failure_of

STATES = ("done", "failed", "running", "pending", "skipped", "dropped")
RUNNING_WINDOW_S = 3600.0
PAPER2, STAGE_IN = "paper2", "stage-in"
TUNE, PND, MTEB = "tune-query", "evaluate-pnd", "evaluate-mteb"
# SLURM job states -> ours (squeue %T / sacct State); anything else says nothing
SLURM_RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING"}
SLURM_PENDING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED"}


def slurm_comment(rule: str, *wildcards: str) -> str:
    """The ``--comment`` the Snakemake SLURM executor gives a job: ``rule_<rule>_wildcards_<values
    joined by _>`` (snakemake-executor-plugin-slurm, ``get_job_wildcards``)."""
    return f"rule_{rule}_wildcards_{'_'.join(wildcards).replace('/', '_')}"


def parse_squeue(text: str) -> dict[str, str]:
    """``squeue -h -o '%k|%T'`` lines -> {comment: state}; a running job wins over a pending one."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        comment, _, state = line.strip().rpartition("|")
        if comment and state and out.get(comment) not in SLURM_RUNNING:
            out[comment] = state.strip().upper()
    return out


def parse_sacct(text: str) -> dict[str, str]:
    """``sacct -n -P -X -o JobIDRaw,Comment,State`` lines -> {comment: state of its latest job}
    (``CANCELLED by 0`` reads as ``CANCELLED``)."""
    latest: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 3 or not parts[1]:
            continue
        try:
            job = int(parts[0].split("_")[0].split(".")[0])
        except ValueError:
            continue
        if parts[1] not in latest or job >= latest[parts[1]][0]:
            latest[parts[1]] = (job, parts[2].split()[0].upper() if parts[2].split() else "")
    return {k: v for k, (_, v) in latest.items()}


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return read_json(path) if path.is_file() else None
    except Exception:          # a half-written or broken file says "no result", not a crash
        return None


def job_state(result: Mapping[str, Any] | None, slurm: str | None = None,
              checkpoint_age_s: float | None = None,
              running_window_s: float = RUNNING_WINDOW_S) -> tuple[str, str | None]:
    """(state, failure reason) of one planned job from its result file (metrics.json/pnd.json),
    what SLURM says about it and how old its checkpoint is."""
    if result is not None:
        status = result.get("status", "ok")
        if status == "ok":
            return "done", None
        if status == "failed":
            return "failed", (failure_of(dict(result)) or {}).get("reason", "unknown")
        if status == "skipped":
            return "skipped", None
    if slurm in SLURM_RUNNING:
        return "running", None
    if slurm in SLURM_PENDING:
        return "pending", None
    if checkpoint_age_s is not None and checkpoint_age_s <= running_window_s:
        return "running", None
    return "pending", None


def recorded_end(record: Mapping[str, Any] | None, key: str = "created_utc") -> float | None:
    """When a job finished, as its own output recorded it (a manifest's ``created_utc``, an MTEB
    record's ``finished_utc``; POSIX seconds), or None. Never a file's mtime: a copy, a ``dvc
    pull`` or ``snakemake --touch`` moves those, and the ETA would follow them."""
    try:
        return datetime.fromisoformat(str(record[key])).timestamp() if record and record.get(key) else None
    except (TypeError, ValueError):
        return None


def _wall_hours(metrics: Mapping[str, Any] | None) -> float:
    """GPU-hours one result measured: wall_seconds × world_size (training) or wall_time_s (query)."""
    if not metrics:
        return 0.0
    wall = metrics.get("wall_seconds", metrics.get("wall_time_s"))
    try:
        hours = float(wall) * float(metrics.get("world_size") or 1) / 3600.0
    except (TypeError, ValueError):
        return 0.0
    return hours if math.isfinite(hours) else 0.0


def collect_jobs(params: Mapping[str, Any], results: Results, *, fps: float | None = None,
                 slurm: Mapping[str, str] | None = None, now: float | None = None,
                 running_window_s: float = RUNNING_WINDOW_S, store: Store | None = None) -> list[dict[str, Any]]:
    """One record per planned job: training runs (main grid and studies, plan-time skips and
    cap drops), their MTEB evaluations, query-tuning runs and PND evaluations (base and tuned)
    of paper 2, and (given the ``store``) the hub snapshots stage-in fetches."""
    slurm, now = slurm or {}, time.time() if now is None else now
    _, runs, skipped, members = expand_training(dict(params), flops_per_second=fps)
    per_job = int(params["train"].get("runs_per_job", 1))
    batch_of = {rid: batch for batch, members in run_batches([r.run_id for r in runs], per_job).items()
                for rid in members} if per_job > 1 else {}
    jobs: list[dict[str, Any]] = []
    for run in runs:
        rid = run.run_id
        metrics_path = results.runs.file(rid, METRICS_JSON)
        done = Path(f"{results.checkpoint(rid)}.done") / "run" / METRICS_JSON   # finished in a running batch
        metrics = _read(metrics_path) or _read(done)
        metrics_path = metrics_path if metrics_path.is_file() or not done.is_file() else done
        state_file = results.checkpoint(rid) / STATE_FILE
        age = now - state_file.stat().st_mtime if state_file.is_file() else None
        job = slurm.get(slurm_comment("train_contrastive", rid)) or (
            slurm.get(slurm_comment("train_batch", batch_of[rid])) if rid in batch_of else None)
        state, reason = job_state(metrics, job, age, running_window_s)
        cols = RunConfig.parse_id(rid).columns()
        jobs.append({"kind": "train", "id": rid, "study": cols["study"], "model": run.model.name,
                     "method": run.method, "state": state, "reason": reason,
                     "resumable": state == "pending" and age is not None,
                     "gpu_hours": _wall_hours(metrics), "est_gpu_hours": run_cost(run, fps)["gpu_hours"] if fps else None,
                     "finished_at": recorded_end(_read(metrics_path.parent / MANIFEST_JSON)) if metrics else None})
    for s in skipped:
        try:
            cols = RunConfig.parse_id(s.run_id).columns()
        except ValueError:
            cols = {"study": "main", "model": None, "method": None}
        jobs.append({"kind": "train", "id": s.run_id, "study": cols["study"], "model": cols["model"],
                     "method": cols["method"], "state": "dropped" if s.status == "dropped" else "skipped",
                     "reason": None, "resumable": False, "gpu_hours": 0.0, "est_gpu_hours": None,
                     "finished_at": None})
    qruns = query_runs(dict(params))
    qmodels = sorted({q["model"]["name"] for q in qruns} | {m["name"] for m in params["query_tuning"]["models"]})
    for qmodel, qrun in [(m, BASE_RUN) for m in qmodels] + [(q["model"]["name"], q["qrun_id"]) for q in qruns]:
        if qrun != BASE_RUN:
            path = results.query_runs.file(qmodel, qrun, METRICS_JSON)
            metrics = _read(path)
            state, reason = job_state(metrics, slurm.get(slurm_comment("tune_query", qmodel, qrun)))
            jobs.append({"kind": "query", "id": f"{qmodel}/{qrun}", "study": PAPER2, "model": qmodel,
                         "method": TUNE, "state": state, "reason": reason, "resumable": False,
                         "gpu_hours": _wall_hours(metrics), "est_gpu_hours": None,
                         "finished_at": recorded_end(_read(path.parent / MANIFEST_JSON)) if metrics else None})
        rule = ("evaluate_pnd_base", qmodel) if qrun == BASE_RUN else ("evaluate_pnd_query", qmodel, qrun)
        pnd = _read(results.query_runs.file(qmodel, qrun, PND_JSON))
        state, reason = job_state(pnd, slurm.get(slurm_comment(*rule)))
        jobs.append({"kind": "pnd", "id": f"{qmodel}/{qrun}", "study": PAPER2, "model": qmodel,
                     "method": PND, "state": state, "reason": reason, "resumable": False,
                     "gpu_hours": 0.0, "est_gpu_hours": None, "finished_at": None})
    jobs += mteb_jobs(params, results, runs, members, slurm)
    return jobs + (stage_in_jobs(params, store) if store is not None else [])


def mteb_jobs(params: Mapping[str, Any], results: Results, runs: list[RunConfig], members: list[dict[str, Any]],
              slurm: Mapping[str, str]) -> list[dict[str, Any]]:
    """One record per MTEB evaluation the workflow plans (embtune.plan.sweep.mteb_run_ids), its SLURM
    job the run's batch (rule evaluate_mteb_batch). The mteb.json of a run that training skipped
    or that failed for good passes its status on without a failure of its own: skipped here (the
    training job counts the failure); a ``failure`` record (an evaluation killed for good,
    embtune.stages.mark_failed) is this job's own failure."""
    ids = mteb_run_ids(dict(params), [r.to_dict() for r in runs], members)
    batch_of = {rid: b for b, rids in run_batches(ids, int(params["evaluate"]["mteb"].get("runs_per_job", 8)),
                                                  key="evaluate.mteb.runs_per_job").items() for rid in rids}
    by_id = {r.run_id: r for r in runs}
    jobs = []
    for rid in ids:
        record = _read(results.runs.file(rid, MTEB_JSON))
        if record is not None and record.get("status") == "failed" and "failure" not in record:
            record = {**record, "status": "skipped"}
        state, reason = job_state(record, slurm.get(slurm_comment("evaluate_mteb_batch", batch_of[rid])))
        seconds = (record or {}).get("seconds")
        jobs.append({"kind": "mteb", "id": rid, "study": RunConfig.parse_id(rid).columns()["study"],
                     "model": by_id[rid].model.name, "method": MTEB, "state": state, "reason": reason,
                     "resumable": False, "gpu_hours": float(seconds) / 3600.0 if isinstance(seconds, (int, float)) else 0.0,
                     "est_gpu_hours": None, "finished_at": recorded_end(record, "finished_utc")})
    return jobs


def stage_in_jobs(params: Mapping[str, Any], store: Store) -> list[dict[str, Any]]:
    """One record per hub snapshot the params stage in (models, encoders, a hub tokenizer): done
    when its folder holds the stage-in record (the commit marker, embtune.data.store)."""
    from embtune.data.store import STAGE_RECORD, hub_id

    specs = [*params["models"], *params["query_tuning"]["models"], params.get("tokenizer") or {}]
    snaps = sorted({(hub_id(s), str(s.get("revision") or "main")) for s in specs if s.get("source") == "hub"})
    return [{"kind": "stage-in", "id": f"{repo}@{rev}", "study": STAGE_IN, "model": repo, "method": STAGE_IN,
             "state": "done" if (store.snapshot(repo, rev) / STAGE_RECORD).is_file() else "pending",
             "reason": None, "resumable": False, "gpu_hours": 0.0, "est_gpu_hours": None, "finished_at": None}
            for repo, rev in snaps]


def summarize(jobs: list[dict[str, Any]], now: float | None = None) -> dict[str, Any]:
    """Counts per (study, model, method) and in total, failures by reason, GPU-hours and the ETA."""
    now = time.time() if now is None else now
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for j in jobs:
        key = (str(j["study"]), str(j["model"]), str(j["method"]))
        g = groups.setdefault(key, {"study": key[0], "model": key[1], "method": key[2],
                                    **{s: 0 for s in STATES}, "resumable": 0, "failed_reasons": {},
                                    "gpu_hours": 0.0})
        g[j["state"]] += 1
        g["resumable"] += int(bool(j["resumable"]))
        g["gpu_hours"] += j["gpu_hours"]
        if j["state"] == "failed":
            g["failed_reasons"][j["reason"]] = g["failed_reasons"].get(j["reason"], 0) + 1
    totals = {s: sum(g[s] for g in groups.values()) for s in STATES}
    failed = [{"kind": j["kind"], "id": j["id"], "reason": j["reason"]} for j in jobs if j["state"] == "failed"]
    return {"groups": sorted(groups.values(), key=lambda g: (g["study"] != "main", g["study"], g["model"], g["method"])),
            "totals": totals, "failed": failed, "gpu_hours": gpu_hours(jobs, now)}


def gpu_hours(jobs: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """Measured vs planned GPU-hours, and the ETA at the measured rate (None where unknown)."""
    train = [j for j in jobs if j["kind"] == "train"]
    measured = sum(j["gpu_hours"] for j in jobs)
    planned = [j["est_gpu_hours"] for j in train if j["est_gpu_hours"] is not None]
    finished = [j for j in train if j["state"] in ("done", "failed") and j["est_gpu_hours"]]
    est_done = sum(j["est_gpu_hours"] for j in finished)
    ratio = sum(j["gpu_hours"] for j in finished) / est_done if est_done > 0 else None
    left_est = sum(j["est_gpu_hours"] or 0.0 for j in train if j["state"] in ("pending", "running"))
    left = left_est * ratio if ratio is not None else None
    ends = [j for j in jobs if j["finished_at"] is not None]
    start = min((j["finished_at"] - j["gpu_hours"] * 3600.0 for j in ends), default=None)
    elapsed_h = (max(j["finished_at"] for j in ends) - start) / 3600.0 if ends and start is not None else 0.0
    # the rate of the jobs whose start and end are recorded (end - their GPU time), over their window
    rate = sum(j["gpu_hours"] for j in ends) / elapsed_h if elapsed_h > 0 else None
    return {"measured": measured, "planned": sum(planned) if planned else None,
            "planned_finished": est_done, "measured_over_planned": ratio,
            "left_planned": left_est, "left_at_measured_ratio": left,
            "rate_gpu_hours_per_hour": rate,
            "eta_hours": (left / rate if left is not None and rate else (0.0 if left_est == 0 else None))}


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "—" if x is None else format(x, fmt)


MAX_ROWS = 36


def _settled(g: dict[str, Any]) -> str | None:
    """``done`` for a group with nothing left (no failure), ``untouched`` for one not started."""
    if g["failed"] or g["running"]:
        return None
    if not g["pending"]:
        return "done"
    return "untouched" if not g["done"] else None


def render(summary: dict[str, Any], width: int = 100, every_group: bool = False) -> str:
    """One screen of text: the table of groups, the totals, failures by reason, GPU-hours, ETA.
    Beyond :data:`MAX_ROWS` groups (and unless ``every_group``), groups that are all done or not
    started yet are folded into one line each (``--json`` always has every group)."""
    head = f"{'study':<18} {'model':<22} {'method':<13} {'done':>5} {'fail':>5} {'run':>4} {'pend':>5} {'skip':>5} {'drop':>5}"
    lines = [head, "-" * len(head)]
    shown, folded = summary["groups"], {"done": [], "untouched": []}
    if len(shown) > MAX_ROWS and not every_group:
        shown = []
        for g in summary["groups"]:
            kind = _settled(g)
            (folded[kind] if kind else shown).append(g)
    for g in shown:
        why = ", ".join(f"{r} {n}" for r, n in sorted(g["failed_reasons"].items()))
        lines.append(f"{g['study'][:18]:<18} {g['model'][:22]:<22} {g['method'][:13]:<13} {g['done']:>5} "
                     f"{g['failed']:>5} {g['running']:>4} {g['pending']:>5} {g['skipped']:>5} {g['dropped']:>5}"
                     + (f"  ({why})" if why else ""))
    for kind, groups in folded.items():
        if groups:
            lines.append(f"({len(groups)} groups {'all done' if kind == 'done' else 'not started'}: "
                         f"{sum(g['done'] for g in groups)} done, {sum(g['pending'] for g in groups)} pending, "
                         f"{sum(g['skipped'] + g['dropped'] for g in groups)} skipped/dropped; --all lists them)")
    t = summary["totals"]
    lines += ["-" * len(head), "total: " + ", ".join(f"{s} {t[s]}" for s in STATES)]
    reasons: dict[str, int] = {}
    for f in summary["failed"]:
        reasons[f["reason"]] = reasons.get(f["reason"], 0) + 1
    if reasons:
        shown = ", ".join(f["id"] for f in summary["failed"][:4])
        lines.append("failed: " + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items()))
                     + f" — {shown}" + (" ..." if len(summary["failed"]) > 4 else ""))
    h = summary["gpu_hours"]
    lines.append(f"GPU-hours: measured {_num(h['measured'])} of planned {_num(h['planned'])} "
                 f"(finished runs: {_num(h['measured_over_planned'])} x their estimate); "
                 f"left {_num(h['left_at_measured_ratio'])} (plan {_num(h['left_planned'])}); "
                 f"ETA {_num(h['eta_hours'])} h at {_num(h['rate_gpu_hours_per_hour'])} GPU-h/h")
    return "\n".join(line[:width + 40] for line in lines) + "\n"
