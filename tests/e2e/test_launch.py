"""Multi-process training through the rule: ``gpu: N`` or ``nproc: N`` on a training
job starts N processes (torchrun, embtune.jobs.launch), and 2 CPU processes (gloo) through the rule
train the same run as the one process of the finished demo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers_pipeline import DEMO_PRESETS, IGNORE, REPO, snakemake

from embtune.jobs import launch


def test_the_launcher_follows_nproc_then_gpu() -> None:
    assert launch.launcher({}) == []
    assert launch.launcher({"gpu": 1}) == []
    assert launch.launcher({"gpu": 4}) == ["torchrun", "--standalone", "--nproc-per-node=4", "--no-python"]
    assert launch.launcher({"gpu": 4, "nproc": 2}) == [
        "env", "ACCELERATE_USE_CPU=true", "torchrun", "--standalone", "--nproc-per-node=2", "--no-python"]
    assert launch.launcher({"gpu": 0, "nproc": 1}) == []
    with pytest.raises(ValueError, match="gpu='two'"):
        launch.launcher({"gpu": "two"})
    with pytest.raises(ValueError, match="nproc=-1"):
        launch.launcher({"nproc": -1})


def test_the_rule_runs_the_launcher_quoted() -> None:
    """The shell command puts the launcher before `embtune train`, quoted, from resources only."""
    text = (REPO / "workflow/rules/train.smk").read_text()
    assert '"exec {params.launch:q} embtune train' in text
    assert "def train_launcher(wildcards, resources):" in (REPO / "workflow/rules/inputs.smk").read_text()


def _safetensors(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    files = sorted((run_dir / "trained").rglob("*.safetensors"))
    assert files, run_dir
    return load_file(str(files[0]))


def two_processes_match_one(done: Path, work: Path, presets: tuple[str, ...], results: str) -> dict:
    """Train the shortest finished full run of ``done`` again in ``work`` (a fresh copy of the
    repo with only that run's inputs) through the rule with ``nproc=2``; compare."""
    runs = [json.loads(p.read_text()) for p in (done / results / "runs").glob("*/metrics.json")]
    ok = [m for m in runs if m.get("status") == "ok" and m["method"] == "full" and m["batch_size"] % 2 == 0]
    one = min(ok, key=lambda m: (m["steps"], m["run_id"]))
    run_dir = done / results / "runs" / one["run_id"]
    cfg = json.loads((run_dir / "manifest.json").read_text())["run"]
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    for rel in (cfg["data"]["train_dir"], cfg["base_model_dir"]):
        shutil.copytree(done / rel, work / rel)
    target = f"{results}/runs/{one['run_id']}/metrics.json"
    # one job per run (params.yaml's train.runs_per_job; the demo trains in batches of 8): the
    # launcher starts `embtune train` itself
    (work / "presets" / "one_job_per_run.yaml").write_text("train:\n  runs_per_job: 1\n")
    proc = snakemake(work, target, "--allowed-rules", "train_contrastive", "--set-resources",
                     "train_contrastive:nproc=2", "-p", presets=(*presets, "presets/one_job_per_run.yaml"),
                     timeout=1200)
    log = work / results / "logs" / "train" / f"{one['run_id']}.log"
    assert proc.returncode == 0, proc.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")
    assert "torchrun --standalone --nproc-per-node=2" in proc.stdout + proc.stderr
    two = json.loads((work / target).read_text())
    assert two["world_size"] == 2 and one.get("world_size", 1) == 1
    assert two["steps"] == one["steps"] and two["tokens"] == one["tokens"] and two["flops"] == one["flops"]
    assert two["final_train_loss"] == pytest.approx(one["final_train_loss"], rel=1e-5)
    assert two["val_loss"] == pytest.approx(one["val_loss"], rel=1e-5)
    a, b = _safetensors(run_dir), _safetensors(work / results / "runs" / one["run_id"])
    assert a.keys() == b.keys()
    for name in a:
        diff = (a[name] - b[name]).abs().max().item()
        # key biases get an exactly-zero gradient (softmax is shift invariant): their AdamW updates
        # are normalised float noise, bounded by lr per step (tests/e2e/test_train_distributed.py)
        bound = one["peak_lr"] * one["steps"] if name.endswith("query_key_value.bias") else 1e-5
        assert diff <= bound, (name, diff)
    return {"one": one, "two": two}


@pytest.mark.slow
def test_two_cpu_processes_through_the_rule_match_one(demo_run: Path, tmp_path: Path) -> None:
    two_processes_match_one(demo_run, tmp_path / "repo", DEMO_PRESETS, "results/demo")
