"""Experiment tracking through accelerate's trackers: DVCLive by default, in DVC's own
format, read back by DVC itself; a tracker that is not installed is a params error; resumed runs
continue the same record; the tracker never enters a run's identity."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers_train import make_base_model, make_shards, one_thread, run_config

from embtune.train import loop, tracking

_one_thread = pytest.fixture(autouse=True)(one_thread)
REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("track")
    return make_base_model(root), make_shards(root / "bge", 48, 8, 190, 12)


def _tsv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_dvclive_records_every_step_in_dvcs_format(tmp_path, dirs) -> None:
    """One row per optimizer step in DVCLive's plots/metrics/train/*.tsv, the same losses as the
    run's own curve; params.yaml holds the run's settings; metrics.json the last values."""
    base, data = dirs
    run = run_config(base, data, budget=4e8, min_steps=2)
    res = loop.train_run(run, tmp_path / "ck", log_with="dvclive")
    assert res.status == "ok"
    live = tmp_path / "ck" / tracking.DIR / tracking.LIVE
    loss = _tsv(live / "plots/metrics/train/loss.tsv")
    assert [int(r["step"]) for r in loss] == [r["step"] for r in res.curve]
    assert [float(r["loss"]) for r in loss] == pytest.approx([r["loss"] for r in res.curve], rel=1e-6)
    flops = _tsv(live / "plots/metrics/train/flops.tsv")
    assert [int(float(r["flops"])) for r in flops] == [r["flops"] for r in res.curve]
    frac = _tsv(live / "plots/metrics/train/budget_fraction.tsv")
    assert float(frac[-1]["budget_fraction"]) == pytest.approx(res.curve[-1]["flops"] / 4e8)
    assert (live / "plots/metrics/train/step_time_s.tsv").is_file()
    assert (live / "plots/metrics/train/lr.tsv").is_file()
    params = yaml.safe_load((live / "params.yaml").read_text())
    assert params["budget"] == 4e8 and params["method"] == "full" and params["run_id"] == run.run_id
    summary = json.loads((live / "metrics.json").read_text())
    assert summary["val"]["loss"] == pytest.approx(res.metrics["val_loss"])
    assert summary["train"]["final_loss"] == pytest.approx(res.metrics["final_train_loss"])
    dvcyaml = yaml.safe_load((live.parent / "dvc.yaml").read_text())
    assert dvcyaml == {"metrics": ["dvclive/metrics.json"], "params": ["dvclive/params.yaml"],
                       "plots": [{"dvclive/plots/metrics": {"x": "step"}}]}


def test_resumed_run_continues_one_record(tmp_path, dirs) -> None:
    """Pre-empted after 2 steps then resumed: every step appears exactly once, in order."""
    base, data = dirs
    run = run_config(base, data, budget=4e8, min_steps=2)
    part = loop.train_run(run, tmp_path / "ck", stop_after_steps=2, log_with="dvclive")
    assert part.status == "preempted"
    full = loop.train_run(run, tmp_path / "ck", log_with="dvclive")
    steps = [int(r["step"]) for r in _tsv(tmp_path / "ck" / tracking.DIR / tracking.LIVE / "plots/metrics/train/loss.tsv")]
    assert steps == list(range(1, full.metrics["steps"] + 1))


def test_no_tracker_writes_nothing(tmp_path, dirs) -> None:
    base, data = dirs
    res = loop.train_run(run_config(base, data, budget=4e8, min_steps=2), tmp_path / "ck", log_with="none")
    assert res.status == "ok" and not (tmp_path / "ck" / tracking.DIR).exists()


@pytest.mark.slow
def test_dvc_reads_the_published_record(tmp_path, dirs) -> None:
    """`dvc plots show` lists the run's per-step loss from DVCLive's files and `dvc metrics show`
    reads its metrics, through DVCLive's own dvc.yaml (no glue), once published where the
    workflow puts it (results/tracking/runs/<run>)."""
    base, data = dirs
    run = run_config(base, data, budget=4e8, min_steps=2)
    res = loop.train_run(run, tmp_path / "ck", log_with="dvclive")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([str(BIN / "dvc"), "init", "-q"], cwd=repo, check=True)
    out = repo / "results/tracking/runs" / run.run_id
    tracking.publish(tmp_path / "ck" / tracking.DIR, out)
    plots = subprocess.run([str(BIN / "dvc"), "plots", "show", "--json"], cwd=repo, capture_output=True,
                           text=True, timeout=300)
    shown = json.loads(plots.stdout[plots.stdout.index("{"):])["data"]
    key = f"results/tracking/runs/{run.run_id}/dvclive/plots/metrics/train/loss.tsv"
    values = shown[key][0]["content"]["data"]["values"]
    assert [float(v["loss"]) for v in values] == pytest.approx([r["loss"] for r in res.curve], rel=1e-6)
    metrics = subprocess.run([str(BIN / "dvc"), "metrics", "show", "--json"], cwd=repo, capture_output=True,
                             text=True, timeout=300)
    data_ = json.loads(metrics.stdout[metrics.stdout.index("{"):])
    found = {k: v for rev in data_.values() for k, v in rev["data"].items()}
    rec = found[f"results/tracking/runs/{run.run_id}/dvclive/metrics.json"]["data"]
    assert rec["train"]["loss"] == pytest.approx(res.curve[-1]["loss"])


def test_publish_empty_when_nothing_tracked(tmp_path) -> None:
    tracking.publish(tmp_path / "absent", tmp_path / "out")
    assert (tmp_path / "out").is_dir() and not any((tmp_path / "out").iterdir())


def test_unavailable_tracker_is_a_params_error(tmp_path, monkeypatch) -> None:
    """`embtune validate-params` names tracking.log_with and how to fix it, before any job."""
    real = tracking.importlib.util.find_spec
    monkeypatch.setattr(tracking.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("mlflow",) else real(name, *a))
    assert "not installed" in tracking.tracker_problem("mlflow")
    assert tracking.tracker_problem("dvclive") is None and tracking.tracker_problem("none") is None
    assert "unknown tracker" in tracking.tracker_problem("neptune")
    with pytest.raises(ValueError, match="tracking.log_with"):
        tracking.selected("mlflow")


def test_validate_params_cli_refuses_a_missing_tracker(tmp_path) -> None:
    import importlib.util

    missing = next((n for n in ("wandb", "mlflow", "tensorboard") if importlib.util.find_spec(n) is None), None)
    if missing is None:
        pytest.skip("every optional tracker is installed here; the monkeypatched test covers the check")
    preset = tmp_path / "p.yaml"
    preset.write_text(f"tracking:\n  log_with: {missing}\n")
    proc = subprocess.run([str(BIN / "embtune"), "validate-params", "params.yaml", "presets/demo.yaml", str(preset)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "tracking.log_with" in proc.stderr and "not installed" in proc.stderr and str(preset) in proc.stderr


def test_tracker_is_not_part_of_a_runs_identity(monkeypatch) -> None:
    """The workflow passes the tracker through the environment, not the run config or a rule
    param: the run config (checkpoint fingerprints, Snakemake's params trigger) has no tracker."""
    from embtune.plan.config import load_params
    from embtune.plan.sweep import training_plan

    a = load_params(["params.yaml", "presets/demo.yaml"])
    b = load_params(["params.yaml", "presets/demo.yaml"], overrides={"tracking": {"log_with": "none"}})
    assert a["tracking"]["log_with"] == "dvclive" and b["tracking"]["log_with"] == "none"
    runs_a, runs_b = training_plan(a), training_plan(b)
    assert json.dumps(runs_a, sort_keys=True, default=str) == json.dumps(runs_b, sort_keys=True, default=str)
    smk = (REPO / "workflow/rules/train.smk").read_text()
    assert "tracking" not in "".join(line for line in smk.splitlines() if "params." in line and "=" in line)


def test_per_step_overhead_of_dvclive_is_measured(tmp_path) -> None:
    """Measured, not assumed: the cost of one logged step (what train.log_every_steps amortises)
    and of starting the tracker, printed for the record; a logged step must stay far below a
    training step of a real model (< 250 ms even on a loaded 2-core box)."""
    from accelerate import Accelerator

    acc = Accelerator(**tracking.accelerator_kwargs("dvclive", tmp_path))
    t0 = time.perf_counter()
    tr = tracking.Tracker(acc, "embtune", tmp_path / tracking.DIR, {"budget": 1.0, "method": "full"})
    t1 = time.perf_counter()
    values = {f"train/{k}": 1.0 for k in ("loss", "lr", "tokens", "flops", "budget_fraction", "step_time_s",
                                          "tokens_per_s")}
    for step in range(1, 41):
        tr.log(values, step)
    per_log = (time.perf_counter() - t1) / 40
    tr.end()
    print(f"DVCLive: start {t1 - t0:.2f} s, {per_log * 1e3:.1f} ms per logged step "
          f"({per_log * 1e3 / 10:.1f} ms/step amortised at log_every_steps=10)")
    rows = _tsv(tmp_path / tracking.DIR / tracking.LIVE / "plots/metrics/train/loss.tsv")
    assert len(rows) == 40
    assert per_log < 0.25


def test_logging_interval_is_log_every_steps_plus_the_last(tmp_path, dirs) -> None:
    base, data = dirs
    run = run_config(base, data, budget=4e8, min_steps=2, log_every_steps=4)
    res = loop.train_run(run, tmp_path / "ck", log_with="dvclive")
    n = res.metrics["steps"]
    rows = _tsv(tmp_path / "ck" / tracking.DIR / tracking.LIVE / "plots/metrics/train/loss.tsv")
    assert [int(r["step"]) for r in rows] == sorted({*range(4, n + 1, 4), n})


def test_train_stage_publishes_the_record_as_its_output(tmp_path, dirs, monkeypatch) -> None:
    """`embtune train --tracking-dir`: the record moves from the checkpoint folder (deleted after
    success) to the rule's declared output; a skipped run leaves an empty folder there."""
    from embtune.stages import train as stage

    monkeypatch.setenv("EMBTUNE_PROGRESS", "1")      # restored after --no-progress turns it off

    base, data = dirs
    for budget, steps in ((4e8, True), (1e3, False)):
        run = run_config(base, data, budget=budget, min_steps=2)
        as_json = json.dumps(run if isinstance(run, dict) else run.to_dict())
        out, ck, tr = tmp_path / f"run{budget:g}", tmp_path / f"ck{budget:g}", tmp_path / f"tr{budget:g}"
        assert stage.main(["--run-config-json", as_json, "--out-dir", str(out), "--checkpoint-dir", str(ck),
                           "--tracking-dir", str(tr), "--log-with", "dvclive", "--no-progress"]) == 0
        assert not ck.exists() and tr.is_dir()
        if steps:
            n = json.loads((out / "metrics.json").read_text())["steps"]
            assert int(_tsv(tr / tracking.LIVE / "plots/metrics/train/loss.tsv")[-1]["step"]) == n
            assert (tr / "dvc.yaml").is_file()
        else:
            assert json.loads((out / "metrics.json").read_text())["status"] == "skipped" and not any(tr.iterdir())
