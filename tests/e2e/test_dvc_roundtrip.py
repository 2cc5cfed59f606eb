"""DVC round trip and incremental re-runs, asserted by counting the jobs Snakemake plans.

On a throw-away git copy of the repo, with HOME pointed at a temp dir (so the project's default
remote `~/.cache/embtune/dvc-remote` is a fresh directory, exactly as it works out of the box):

1. `dvc repro analyze@ci` runs the data / models / analyze stages (the Snakemake phases of the
   reduced preset presets/ci.yaml), `git commit` of dvc.lock, `dvc push` to the default remote.
2. A colleague: `git clone` into a new directory, `dvc pull`. DVC restores content, not
   modification times, so Snakemake (which always compares mtimes) would re-run jobs whose
   inputs happen to be newer than their outputs; `snakemake --touch` (runs nothing, ~1 s) makes
   the mtimes agree with the DAG. After it, `snakemake -n` plans NOTHING and `dvc status` is
   clean.
3. Incremental: changing one training hyper-parameter plans only training + evaluation of the
   affected runs and the analysis — never data prep, base models or query tuning; changing the
   evaluation rules' code plans only evaluation + analysis.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

PRESETS = ["presets/demo.yaml", "presets/ci.yaml"]
STAGES = ["data@ci", "models@ci", "analyze@ci"]
def _rules_in(stage: str) -> set[str]:
    """The rules a stage file defines, read from the file so that a new rule cannot be forgotten here."""
    text = (REPO / "workflow" / "rules" / f"{stage}.smk").read_text()
    return set(re.findall(r"^[ \t]*rule (\w+):", text, flags=re.M))


DATA_RULES = _rules_in("data")
TRAIN_RULES = _rules_in("train")
EVAL_RULES = _rules_in("evaluate")
ANALYSIS_RULES = _rules_in("analyze") | {"all"}


def _ignore(directory: str, names: list[str]) -> set[str]:
    skip = {".venv", ".snakemake", ".git", "__pycache__", ".pytest_cache", "results", "logs"}
    out = {n for n in names if n in skip or n.endswith(".egg-info")}
    d = Path(directory)
    if d.name == ".dvc":
        out |= {n for n in names if n in ("cache", "tmp", "config.local")}
    if d.name == "data":
        out |= {n for n in names if n in ("processed", "raw")}
    return out


def _env(home: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    return {
        **base,
        "HOME": str(home),                      # the default remote ~/.cache/embtune/dvc-remote
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1",
        "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
        "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid",
        "DVC_NO_ANALYTICS": "1",
    }


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300,
         check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        tails = ""
        for logs in cwd.glob("results/ci/logs"):
            files = sorted(logs.rglob("*.log"), key=lambda p: p.stat().st_mtime)[-4:]
            tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1500:]}" for p in files)
        pytest.fail(f"{' '.join(cmd)} failed (rc={proc.returncode}) in {cwd}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}\n{tails}")
    return proc


def planned_jobs(workdir: Path, env: dict[str, str], *extra: str) -> collections.Counter:
    """Rule -> job count from `snakemake -n`'s job table (an empty Counter = nothing to do)."""
    proc = _run(["snakemake", "-n", "--configfile", *PRESETS, *extra], workdir, env)
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return collections.Counter()
    m = re.search(r"^Job stats:\n(.*?)^total\s+(\d+)", text, flags=re.M | re.S)
    assert m, f"no job table in the dry run:\n{text[-3000:]}"
    counts = collections.Counter()
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    assert sum(counts.values()) == int(m.group(2)), text[-3000:]
    return counts


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ci preset reproduced through dvc.yaml, committed and pushed to the default remote."""
    if not (REPO / "dvc.yaml").exists() or not (REPO / "Snakefile").exists():
        pytest.fail("dvc.yaml and Snakefile must exist at the repo root")
    base = tmp_path_factory.mktemp("dvc")
    home, origin = base / "home", base / "origin"
    home.mkdir()
    shutil.copytree(REPO, origin, ignore=_ignore, symlinks=True)
    env = _env(home)
    _run(["git", "init", "-q", "-b", "main"], origin, env)
    _run(["git", "add", "-A"], origin, env)
    _run(["git", "commit", "-q", "-m", "code"], origin, env)
    t0 = time.monotonic()
    _run(["dvc", "repro", "analyze@ci"], origin, env, timeout=1500)
    repro_s = time.monotonic() - t0
    _run(["git", "add", "-A"], origin, env)
    _run(["git", "commit", "-q", "-m", "results (dvc.lock)"], origin, env)
    push = _run(["dvc", "push"], origin, env)
    remote = home / ".cache/embtune/dvc-remote"
    assert remote.is_dir() and any(remote.rglob("*")), f"default remote {remote} is empty:\n{push.stdout}"
    print(f"\n[timing] dvc repro analyze@ci: {repro_s:.1f} s")
    return {"base": base, "home": home, "origin": origin, "env": env}


def test_lock_records_every_phase(produced: dict) -> None:
    lock = (produced["origin"] / "dvc.lock").read_text()
    for stage in STAGES:
        assert f"{stage}:" in lock, stage
    # what Snakemake built is what DVC versions, and it is not in git
    tracked = _run(["git", "ls-files", "results", "data/processed"], produced["origin"], produced["env"]).stdout
    assert tracked.strip() == ""


def test_fresh_clone_pull_nothing_to_do(produced: dict) -> None:
    env = produced["env"]
    clone = produced["base"] / "clone"
    _run(["git", "clone", "-q", str(produced["origin"]), str(clone)], produced["base"], env)
    assert not (clone / "results").exists()
    _run(["dvc", "pull", *STAGES], clone, env)
    assert (clone / "results/ci/metrics.json").is_file()
    assert (clone / "data/processed/ci/bge").is_dir()

    status = _run(["dvc", "status", *STAGES], clone, env).stdout
    assert "up to date" in status, status

    # Modification times after `dvc pull` are checkout order, not DAG order: report (not assert)
    # what Snakemake would re-run without the touch, then make the mtimes agree.
    before = planned_jobs(clone, env)
    print(f"\n[dvc] fresh clone before `snakemake --touch`: {sum(before.values())} jobs {dict(before)}")
    t0 = time.monotonic()
    _run(["snakemake", "--touch", "--cores", "1", "--configfile", *PRESETS], clone, env)
    print(f"[timing] snakemake --touch: {time.monotonic() - t0:.1f} s")

    assert planned_jobs(clone, env) == collections.Counter(), "snakemake -n must report nothing to do"
    # with the slurm profile too (the cluster user's command); dry runs never contact SLURM
    if shutil.which("sinfo"):
        proc = _run(["snakemake", "--profile", "slurm", "-n", "--configfile", *PRESETS], clone,
                    {**env, "EMBTUNE_SLURM_STATUS_COMMAND": "squeue"}, check=False)
        if proc.returncode == 0:
            assert "Nothing to be done" in proc.stdout + proc.stderr
    status = _run(["dvc", "status", *STAGES], clone, env).stdout
    assert "up to date" in status, f"dvc status after snakemake --touch:\n{status}"
    # the same in the producer's workspace, without any touch
    assert planned_jobs(produced["origin"], env) == collections.Counter()
    assert "up to date" in _run(["dvc", "status", *STAGES], produced["origin"], env).stdout


def test_training_hyperparameter_change_replans_only_training_and_downstream(produced: dict) -> None:
    origin, env = produced["origin"], produced["env"]
    override = origin / "override-train.yaml"
    override.write_text("train:\n  temperature: 0.05\n")
    try:
        jobs = planned_jobs(origin, env, str(override.name))
    finally:
        override.unlink()
    from embtune.config import load_params
    from embtune.sweep import training_runs

    runs, _ = training_runs(load_params([origin / "params.yaml", *(origin / p for p in PRESETS)]))
    assert jobs["train_contrastive"] == len(runs), jobs
    assert jobs["evaluate_mteb"] == len(runs) and jobs["evaluate_mteb_batch"] == 1, jobs   # one model's runs
    assert not set(jobs) & DATA_RULES, f"data prep re-planned: {jobs}"
    assert not set(jobs) & {"build_model", "tune_query", "evaluate_pnd_base", "evaluate_pnd_query"}, jobs
    assert set(jobs) <= {"train_contrastive", "evaluate_mteb_batch", "evaluate_mteb"} | ANALYSIS_RULES, jobs
    assert jobs["collect_runs"] == 1 and jobs["summary"] == 1, jobs


def test_evaluation_code_change_replans_only_evaluation_and_analysis(produced: dict) -> None:
    origin, env = produced["origin"], produced["env"]
    rules = origin / "workflow/rules/evaluate.smk"
    original = rules.read_text()
    assert original.count('"embtune evaluate-') >= 3
    rules.write_text(original.replace('"embtune evaluate-', '"EMBTUNE_EVAL_REV=2 embtune evaluate-'))
    try:
        jobs = planned_jobs(origin, env)
    finally:
        rules.write_text(original)
    assert jobs["evaluate_mteb"] >= 1 and jobs["evaluate_pnd_base"] >= 1, jobs
    assert set(jobs) <= EVAL_RULES | ANALYSIS_RULES, f"beyond evaluation + analysis: {jobs}"
    assert not set(jobs) & (DATA_RULES | TRAIN_RULES), jobs
    # and back to nothing to do once the edit is reverted
    assert planned_jobs(origin, env) == collections.Counter()
