"""A failed run is a result, not a stop (issue 22's bar), through the real workflow on the small
CI stack (params.yaml + presets/demo.yaml + presets/ci.yaml: one tiny model, full / freeze / bias
at one budget, one query encoder) with every bias-only run forced to diverge
(``train.method_lr.bias: 1.0e+8``, the issue's override): ``snakemake --keep-going`` still writes
fits.json, the report and the recipe; the bias run leaves a failure record; the report names it
with its reason; fits.json says how many rows each method lost; and ``embtune status --json``
agrees with the runs table.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

IGNORE = shutil.ignore_patterns(".venv", "results", "processed", ".snakemake", ".git", "__pycache__",
                                ".pytest_cache", "*.egg-info", "raw")
STACK = ("presets/demo.yaml", "presets/ci.yaml", "diverge.yaml")
BIAS = "tiny-d64-l2__bias__c1.5e11__s0"
RESULTS = "results/ci"
TARGETS = (f"{RESULTS}/analysis/fits.json", f"{RESULTS}/analysis/report.md",
           f"{RESULTS}/analysis/recipes/recipe_c2e11.json")


@pytest.fixture(scope="module")
def diverged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("diverge") / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    (work / "diverge.yaml").write_text("train:\n  method_lr:\n    bias: 1.0e+8\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("EMBTUNE_SNAKEMAKE_RETRIES", None)
    cmd = [sys.executable, "-m", "snakemake", "--configfile", *STACK, "--cores", "2", "--keep-going",
           "--retries", "1", *TARGETS]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1500)
    if proc.returncode != 0:
        logs = sorted((work / RESULTS / "logs").rglob("*.log"))
        tails = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in logs[-6:])
        pytest.fail(f"snakemake failed:\n{proc.stderr[-6000:]}\n{tails}")
    return work


def test_the_diverged_run_leaves_a_failure_record(diverged: Path) -> None:
    run_dir = diverged / RESULTS / "runs" / BIAS
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["status"] == "failed" and metrics["method"] == "bias"
    rec = metrics["failure"]
    assert rec["reason"] == "diverged" and rec["attempt"] == 1 and rec["retries"] == 1
    assert rec["detail"].startswith(f"run {BIAS}: ")
    assert rec["partial"]["steps"] >= 0 and "flops" in rec["partial"]
    assert (run_dir / "model" / "README.txt").read_text().startswith("failed: diverged")
    assert json.loads((run_dir / "mteb.json").read_text())["status"] == "failed"
    log = (diverged / RESULTS / "logs" / "train" / f"{BIAS}.log").read_text()
    assert "failed for good: diverged" in log


def test_fits_report_and_recipe_are_written_and_name_the_loss(diverged: Path) -> None:
    analysis = diverged / RESULTS / "analysis"
    fits = json.loads((analysis / "fits.json").read_text())
    assert fits["lost_rows"]["bias"] == {"count": 1, "runs": [{"run_id": BIAS, "reason": "diverged"}]}
    assert fits["lost_rows"]["full"]["count"] == 0 and fits["lost_rows"]["freeze"]["count"] == 0
    assert fits["failed_runs"]["count"] == 1 and fits["failed_runs"]["by_reason"] == {"diverged": 1}
    assert "bias" not in fits["methods"]
    recipe = json.loads((analysis / "recipes" / "recipe_c2e11.json").read_text())
    assert recipe["budget"] == 2e11 and recipe["lost_rows"] == {"bias": 1}
    assert any(BIAS in w and "diverged" in w for w in recipe["warnings"])
    report = (analysis / "report.md").read_text()
    assert "## Failed runs" in report and f"| {BIAS} | diverged |" in report
    assert "Rows the fits lost: bias 1." in report
    table = pl.read_parquet(analysis / "runs.parquet")
    assert table.filter(pl.col("run_id") == BIAS)["failure_reason"].to_list() == ["diverged"]


def test_status_done_counts_equal_the_runs_table(diverged: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "embtune.cli", "status", "params.yaml", *STACK,
                           "--json", "--no-squeue"], cwd=diverged, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    table = pl.read_parquet(diverged / RESULTS / "analysis" / "runs.parquet")
    ok = {(s, m, me): n for s, m, me, n in table.filter(pl.col("status") == "ok")
          .group_by("study", "model", "method").len().rows()}
    done = {(g["study"], g["model"], g["method"]): g["done"] for g in out["groups"]
            if g["study"] != "paper2" and g["done"]}
    assert done == ok and sum(ok.values()) == 2             # full and freeze
    assert out["totals"]["failed"] == 1 and out["failed"] == [{"kind": "train", "id": BIAS, "reason": "diverged"}]
