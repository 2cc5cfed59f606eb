"""Failed runs as results: the failure record the ``train`` stage writes for a run that
cannot finish (diverged, data too small; out of memory or time limit on the last attempt), and
how the runs table, the fits' lost rows and the report read it."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
import torch
from helpers_train import make_shards, one_thread, run_json

from embtune.stages import train as train_stage
from embtune.train import failures

_one_thread = pytest.fixture(autouse=True)(one_thread)


def _args(run, tmp_path, *extra: str) -> list[str]:
    return ["--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
            "--checkpoint-dir", str(tmp_path / "ck"), *extra]


def _metrics(tmp_path) -> dict:
    return json.loads((tmp_path / "out" / "metrics.json").read_text())


# --------------------------------------------------------------------------- the rules
def test_divergence_watch_non_finite_and_explosion() -> None:
    bound = math.log(8) + failures.EXPLODE_SLACK_NATS          # ln B + slack, by hand
    assert failures.explosion_bound(8) == pytest.approx(bound)
    watch = failures.DivergenceWatch(8, steps=3)
    assert watch.check(2.0) is None
    assert watch.check(bound + 1) is None and watch.check(bound + 1) is None
    assert watch.check(1.0) is None                          # the run of high losses is broken
    assert [watch.check(bound + 0.5) for _ in range(3)][-1].startswith("loss above")
    assert failures.DivergenceWatch(8).check(float("nan")) == "loss is nan"
    assert failures.DivergenceWatch(8).check(float("inf")) == "loss is inf"


@pytest.mark.parametrize("reason,attempt,retries,final", [
    ("diverged", 1, 2, True), ("data_too_small", 1, 2, True),
    ("oom", 1, 2, False), ("oom", 2, 2, False), ("oom", 3, 2, True),
    ("time_limit", 1, 0, True), ("time_limit", 2, 2, False)])
def test_transient_failures_are_final_on_the_last_attempt_only(reason, attempt, retries, final) -> None:
    assert failures.is_final(reason, attempt, retries) is final


def test_oom_is_recognised() -> None:
    assert failures.is_oom(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert failures.is_oom(MemoryError())
    assert not failures.is_oom(RuntimeError("shape mismatch"))


# --------------------------------------------------------------------------- the train stage
def test_diverged_run_writes_a_failure_record_and_exits_0(tmp_path, fixture_dirs) -> None:
    base, data = fixture_dirs
    run = run_json(base, data, "bias", budget=3e8, peak_lr=1e8)     # the forced divergence
    assert train_stage.main(_args(run, tmp_path, "--attempt", "1", "--retries", "2")) == 0
    m = _metrics(tmp_path)
    assert m["status"] == "failed" and m["run_id"] == run["run_id"] and m["method"] == "bias"
    rec = m["failure"]
    assert rec["reason"] == "diverged" and rec["attempt"] == 1 and rec["retries"] == 2
    assert "loss is nan" in rec["detail"]
    part = rec["partial"]
    assert part["steps"] >= 1 and math.isfinite(part["last_finite_loss"]) and part["flops"] > 0
    assert m["skip_reason"].startswith("diverged: ")
    assert (tmp_path / "out" / "trained" / "README.txt").read_text().startswith("failed: diverged (attempt 1)")
    curve = (tmp_path / "out" / "curve.csv").read_text().splitlines()
    assert len(curve) == part["steps"] + 1          # header + the steps done (not the one that diverged)
    assert (tmp_path / "out" / "manifest.json").exists() and not (tmp_path / "ck").exists()


@pytest.mark.slow
def test_time_limit_is_a_failure_on_the_last_attempt_only(tmp_path, fixture_dirs, monkeypatch) -> None:
    base, data = fixture_dirs
    monkeypatch.setenv("SLURM_JOB_ID", "42")          # a time limit is SLURM's
    run = run_json(base, data, "full", budget=1.0e9)
    args = _args(run, tmp_path, "--stop-after-steps", "2", "--retries", "1")
    assert train_stage.main(args + ["--attempt", "1"]) == train_stage.EXIT_PREEMPTED
    assert not (tmp_path / "out").exists()
    assert train_stage.main(args + ["--attempt", "2"]) == 0        # resumes at 2, stops at 4
    rec = _metrics(tmp_path)["failure"]
    assert rec["reason"] == "time_limit" and rec["attempt"] == 2 and rec["partial"]["steps"] == 4
    assert (tmp_path / "ck").exists()                              # kept: a rerun resumes it
    # without --retries (a direct call) a signal stays a pre-emption, as before; and outside SLURM
    # a signal is someone stopping the run (Snakemake's Ctrl-C), never a time limit
    assert train_stage.main(_args(run, tmp_path / "x", "--stop-after-steps", "1")) == train_stage.EXIT_PREEMPTED
    monkeypatch.delenv("SLURM_JOB_ID")
    assert train_stage.main(_args(run, tmp_path / "y", "--stop-after-steps", "1", "--retries", "0")) == \
        train_stage.EXIT_PREEMPTED


def test_data_smaller_than_a_batch_is_a_failure(tmp_path, fixture_dirs) -> None:
    base, _ = fixture_dirs
    small = make_shards(tmp_path / "small", 5, 4, 190, 12)          # 5 pairs < batch_size 8
    run = run_json(base, small, "full", budget=1.0e9)
    assert train_stage.main(_args(run, tmp_path, "--attempt", "1", "--retries", "2")) == 0
    rec = _metrics(tmp_path)["failure"]
    assert rec["reason"] == "data_too_small" and "5 pairs is less than one batch of 8" in rec["detail"]


@pytest.mark.parametrize("attempt", [1, 3])
def test_out_of_memory_is_final_on_the_last_attempt(tmp_path, fixture_dirs, monkeypatch, attempt) -> None:
    base, data = fixture_dirs

    def oom(*_a, **_k):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(train_stage, "train_run", oom)
    args = _args(run_json(base, data, "full"), tmp_path, "--attempt", str(attempt), "--retries", "2")
    if attempt < 3:
        with pytest.raises(torch.cuda.OutOfMemoryError):    # Snakemake retries it with more memory
            train_stage.main(args)
        return
    assert train_stage.main(args) == 0
    rec = _metrics(tmp_path)["failure"]
    assert rec["reason"] == "oom" and rec["attempt"] == 3 and "20.00 GiB" in rec["detail"]
    chunk = run_json(base, data, "full")["train"]["gradcache_chunk"]
    assert rec["detail"].endswith(f"(attempt 3: GradCache chunk {chunk} on cpu)"), rec["detail"]
    assert rec["partial"]["steps"] == 0


# --------------------------------------------------------------------------- readers
def _table() -> pl.DataFrame:
    from embtune.scaling.runs_table import build_table, run_row

    ok = {"status": "ok", "final_train_loss": 2.0, "flops": 1e9, "tokens": 10, "steps": 5}
    rows = [run_row("tiny__full__c1e+09__s0", ok, {}, None),
            run_row("tiny__bias__c1e+09__s0", failures.failure_metrics(
                {"run_id": "tiny__bias__c1e+09__s0"}, "diverged", 1, 2, "loss is nan at step 3"), {}, None),
            run_row("tiny__bias__c3e+09__s0", failures.failure_metrics({}, "oom", 3, 2, "CUDA out of memory"), {}, None)]
    return build_table(rows)


def test_runs_table_lists_failed_runs_and_the_lost_rows() -> None:
    from embtune.scaling.failed import failed_runs, lost_rows

    table = _table()
    assert table.filter(pl.col("status") == "failed").height == 2
    failed = failed_runs(table)
    assert failed["count"] == 2 and failed["by_reason"] == {"diverged": 1, "oom": 1}
    assert [r["run_id"] for r in failed["runs"]] == ["tiny__bias__c1e+09__s0", "tiny__bias__c3e+09__s0"]
    lost = lost_rows(table)
    assert lost["full"] == {"count": 0, "runs": []}
    assert lost["bias"]["count"] == 2 and {r["reason"] for r in lost["bias"]["runs"]} == {"diverged", "oom"}


def test_report_names_the_failed_runs_and_reasons() -> None:
    from embtune.plots.failed import failed_markdown
    from embtune.scaling.failed import lost_rows

    table = _table()
    text = "\n".join(failed_markdown(table, {"lost_rows": lost_rows(table)}))
    assert "## Failed runs" in text and "2 run(s) failed for good" in text
    assert "| tiny__bias__c1e+09__s0 | diverged | loss is nan at step 3 |" in text
    assert "| tiny__bias__c3e+09__s0 | oom | CUDA out of memory |" in text
    assert "Rows the fits lost: bias 2." in text
    assert failed_markdown(table.filter(pl.col("status") == "ok"), {}) == []


def test_the_report_lists_each_failed_run_once_and_groups_skips_by_reason() -> None:
    """Failed runs appear in their own section only; skipped runs are grouped by their reason
    without the per-run detail in parentheses (pairs, steps, FLOP differ from run to run)."""
    from embtune.plots.failed import failed_markdown
    from embtune.plots.report import skipped_markdown
    from embtune.scaling.runs_table import build_table, skipped_row

    epochs = "budget 2e+11 needs more than train.max_epochs=1.0 epochs"
    table = pl.concat([_table(), build_table([
        skipped_row("a__full__c2e+11__s0", f"{epochs} (17369 pairs; 542 steps spend only 1.21e+11 FLOP)"),
        skipped_row("b__full__c2e+11__s0", f"{epochs} (17369 pairs; 542 steps spend only 8.04e+10 FLOP)"),
        skipped_row("c__full__c1e+09__s0", "cut by the cap", "dropped")])], how="diagonal_relaxed")
    skipped = skipped_markdown(table)
    assert skipped == ["Skipped runs by reason:", "", f"- 2 × {epochs}", "- 1 × cut by the cap (dropped)", ""]
    text = "\n".join(skipped + failed_markdown(table, {}))
    assert text.count("loss is nan at step 3") == 1 and text.count("CUDA out of memory") == 1
