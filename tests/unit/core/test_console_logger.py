"""The console `make demo` shows (snakemake --logger embtune): one progress line per finished job
with an ETA, where the logs are, and a failed job's log tail; never a line over 300 characters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from snakemake_logger_plugin_embtune import MAX_WIDTH, ProgressState, clock, eta, log_folder

SNAKEFILE = r'''
rule all:
    input: expand("out/{i}.txt", i=range(5)), "out/bad.txt"
rule make:
    output: "out/{i}.txt"
    wildcard_constraints: i=r"\d+"
    log: "results/logs/make/{i}.log"
    shell: "echo working on {wildcards.i} > {log}; touch {output}"
rule bad:
    output: "out/bad.txt"
    log: "results/logs/bad/bad.log"
    shell: "echo the first line > {log}; printf 'x%.0s' $(seq 1 1000) >> {log}; echo >> {log}; echo the reason it failed >> {log}; exit 1"
'''


def test_clock_and_eta_by_hand() -> None:
    assert clock(42.4) == "42s"
    assert clock(14 * 60 + 5) == "14m05s"
    assert clock(3600 + 2 * 60 + 59) == "1h02m"
    # 4 jobs in 100 s -> 25 s a job; 12 left -> 300 s
    assert eta(100.0, 4, 16) == "5m00s"
    assert eta(100.0, 0, 16) is None and eta(100.0, 16, 16) is None


def test_progress_line_counts_running_rules() -> None:
    state = ProgressState(now=0.0)
    state.total = 10
    for jobid, rule in enumerate(["train_batch", "train_batch", "evaluate_mteb"]):
        state.started(jobid, rule)
    state.done = 2
    state.finished(2)
    line = state.line(now=50.0)
    # 2 of 10 in 50 s: 25 s a job, 8 left -> 200 s
    assert line == "[2/10 jobs, 20%] 50s elapsed, ETA 3m20s | running: train_batch×2"


def test_log_folder_is_the_logs_component() -> None:
    assert log_folder(["results/demo/logs/train/run-a.log"]) == "results/demo/logs"
    assert log_folder(["elsewhere/x.log"]) == "elsewhere"
    assert log_folder([]) is None


@pytest.mark.slow
def test_a_workflow_through_the_console(tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    out = subprocess.run([snakemake, "--cores", "1", "--keep-going", "--logger", "embtune"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = (out.stdout + out.stderr).splitlines()
    assert out.returncode != 0  # the failed job fails the run
    assert "7 jobs to run" in lines
    assert any(line.startswith("job logs: results/logs/, one file a job") for line in lines)
    progress = [line for line in lines if line.startswith("[")]
    assert [p.split(" jobs")[0] for p in progress] == [f"[{i}/7" for i in range(1, 6)]
    assert "FAILED: rule bad (job 6)" in lines or any(line.startswith("FAILED: rule bad") for line in lines)
    assert "  | the reason it failed" in lines  # the log's tail, not only its path
    assert max(map(len, lines)) <= MAX_WIDTH
    assert len(lines) < 20  # vs ~15 lines a job on Snakemake's default console
