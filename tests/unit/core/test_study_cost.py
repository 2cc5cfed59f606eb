"""The whole study's cost (embtune.plan.study_cost): GPU-hours per part at a throughput per
model size, the disk it writes, the DVC-remote warning, the plan-time max_epochs drop, and what
`embtune plan params.yaml` prints."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_train import planned_run

from embtune.plan import study_cost

REPO = Path(__file__).resolve().parents[3]


def test_mfu_curve_is_log_linear_between_points_and_flat_outside() -> None:
    curve = ((1e7, 0.1), (1e9, 0.3))
    at = lambda n: study_cost.flops_per_second_at(n, 1e14, curve)  # noqa: E731
    assert at(1e7) == pytest.approx(1e13) and at(1e9) == pytest.approx(3e13)
    assert at(1e8) == pytest.approx(2e13)           # halfway in log10: 0.1 + 0.2 / 2
    assert at(1e3) == pytest.approx(1e13) and at(1e12) == pytest.approx(3e13)


def test_the_profile_curve_is_read() -> None:
    peak, curve, source = study_cost.mfu_curve()
    assert peak > 0 and len(curve) >= 2 and "mfu_curve" in source


def _run(method: str = "full") -> dict:
    spec = {"name": "m", "source": "hub", "hidden_size": 512, "num_layers": 6}
    return planned_run(spec, method, train={"gradcache_chunk": 128, "gradient_checkpointing": False}).to_dict()


def test_mteb_hours_and_disk_by_hand() -> None:
    run = _run()
    n = run["planned"]["n_total"]
    params = {"evaluate": {"mteb": {"tasks": ["A", "B"], "max_length": None}}, "query_tuning": {"models": []}}
    hours = study_cost.gpu_hours([run], [run["run_id"]], [], params, fps=1e14)
    peak, curve, _ = study_cost.mfu_curve()
    fps_n = study_cost.flops_per_second_at(n, peak, curve)
    # one batch job's start-up + the checkpoint's load + its forward FLOPs at its size's rate
    by_hand = (study_cost.MTEB_JOB_MIN + study_cost.MTEB_RUN_MIN) / 60 \
        + 2 * n * 2 * study_cost.MTEB_TEXTS_PER_TASK * 75 / fps_n / 3600
    assert hours["MTEB evaluation"] == pytest.approx(by_hand)
    assert hours["query tuning"] == 0 and hours["PND evaluation"] == 0
    # training: 8N (full, two-pass GradCache) per token at the rate, + 0.1 s a step, + start-up
    train = 8 * n * 1e9 / fps_n / 3600 + 5000 * study_cost.DEFAULT_STEP_OVERHEAD_S / 3600 + study_cost.TRAIN_JOB_MIN / 60
    assert hours["training"] == pytest.approx(train, rel=1e-6)
    disk = study_cost.disk_bytes([run], [], {})
    full = 4 * (n + 50304 * 512)                    # fp32, embeddings included
    assert disk["run folders (fp32)"] == full
    assert disk["checkpoints (largest one)"] == full + 8 * (n + 50304 * 512)     # + AdamW moments
    assert math.isclose(disk["DVC cache (a copy of the folders)"], full)


def _dvc(tmp_path: Path, url: str) -> Path:
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text(f"[core]\n    remote = r\n['remote \"r\"']\n    url = {url}\n")
    return tmp_path


def test_dvc_remote_under_home_warns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "a").mkdir()
    repo = _dvc(tmp_path / "a", str(home / "remote"))
    warning = study_cost.dvc_remote_warning(repo, home=home)
    assert warning and "under $HOME" in warning and "'r'" in warning
    other = tmp_path / "b"
    other.mkdir()
    assert study_cost.dvc_remote_warning(_dvc(other, "s3://bucket/x"), home=home) is None
    shared = tmp_path / "c"
    shared.mkdir()
    assert study_cost.dvc_remote_warning(_dvc(shared, "/srv/shared/remote"), home=home) is None


def test_plan_drops_runs_beyond_max_epochs_of_planned_pairs(paper: dict) -> None:
    from embtune.plan.sweep import training_runs

    runs, skipped = training_runs(paper, apply_cap=False)
    epochs = [s for s in skipped if "train.planned_pairs" in s.reason]
    t = paper["train"]
    assert t["planned_pairs"] == 2e8 and len(epochs) == 48
    assert all(r["planned"]["steps"] * t["batch_size"] <= t["max_epochs"] * t["planned_pairs"] for r in runs)
    without, _ = training_runs({**paper, "train": {**t, "planned_pairs": None}}, apply_cap=False)
    assert len(without) == len(runs) + len(epochs)


def test_embtune_plan_prints_every_part_and_the_disk() -> None:
    proc = subprocess.run([str(Path(sys.executable).parent / "embtune"), "plan", "params.yaml"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for part in ("training (calibrated)", "training  ", "MTEB evaluation", "query tuning", "30-40k A100-hours",
                 "PND evaluation", "run folders (fp32)", "checkpoints (largest one)", "DVC cache",
                 "GPU classes (", "1007 training runs planned"):
        assert part in out, part


@pytest.mark.slow
def test_the_plan_and_the_slurm_requests_agree() -> None:
    """On params.yaml, `embtune plan`'s total GPU-hours and the sum of the first-attempt time
    requests of every GPU job `snakemake --profile slurm` would submit agree within 1.5x: one
    throughput model prices both (study_cost.JobHours)."""
    import re

    gpu_rules = {"train_contrastive", "tune_query", "evaluate_mteb_batch", "evaluate_pnd_base", "evaluate_pnd_query"}
    dry = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--profile", "slurm"], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stderr[-1000:]
    minutes = 0
    for block in re.split(r"\n(?=rule \w+:)", dry.stdout):
        rule, runtime = re.match(r"rule (\w+):", block), re.search(r"runtime=(\d+)", block)
        if rule and runtime and rule.group(1) in gpu_rules:
            minutes += int(runtime.group(1))
    plan = subprocess.run([str(Path(sys.executable).parent / "embtune"), "plan", "params.yaml"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    total = float(re.search(r"^  total\s+([\d.e+]+)\s+\(FLOPs at", plan.stdout, flags=re.M).group(1))
    requested = minutes / 60
    assert 1.0 <= requested / total <= 1.5, (requested, total)
