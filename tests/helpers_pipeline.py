"""The demo pipeline through Snakemake on a copy of the repo, shared by the tests that need a
finished pipeline (tests/e2e/test_pipeline_demo.py, tests/e2e/test_rerun_identity.py): it runs once per
session (conftest.py's ``demo_run``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(".venv", "results", "processed", ".snakemake", ".git", "__pycache__",
                                ".pytest_cache", "*.egg-info", "raw")
DEMO_PRESETS = ("presets/demo.yaml", "presets/test.yaml")


def snakemake(workdir: Path, *args: str, presets: tuple[str, ...] = DEMO_PRESETS,
              timeout: int = 3000) -> subprocess.CompletedProcess:
    """The demo + test pipeline took 1,297-1,376 s on one of make test's two xdist workers (the
    other busy): the default leaves twice that before a slow CI machine fails it."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", *presets, "--cores", "2", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def run_demo(work: Path) -> str | None:
    """Copy the repo to ``work`` and run the demo there; None, or the failure's logs."""
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    proc = snakemake(work)
    if proc.returncode == 0:
        return None
    logs = sorted((work / "results/demo/logs").rglob("*.log"))
    tails = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in logs[-6:])
    return f"snakemake failed:\n{proc.stderr[-6000:]}\n{tails}"


def jobs_of(proc: subprocess.CompletedProcess, rule: str) -> int:
    """Jobs of ``rule`` in `snakemake -n`'s job table (0 when it has none, or nothing to do)."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    m = re.search(rf"^{re.escape(rule)}\s+(\d+)\s*$", proc.stdout + proc.stderr, re.M)
    return int(m.group(1)) if m else 0
