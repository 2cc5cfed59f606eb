"""``embtune train-batch`` (train.runs_per_job > 1): several runs in one process, each trained as
``embtune train`` trains it alone, a member reused (not retrained) when its finished outputs have
the same identity and code version, and a pre-empted batch resuming after its finished members."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_json

from embtune.core import run_identity
from embtune.core.io import link_tree
from embtune.stages import train as train_stage
from embtune.stages import train_batch

_one_thread = pytest.fixture(autouse=True)(one_thread)
RUN_FILES = ("metrics.json", "curve.csv", "manifest.json", "trained")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    return make_base_model(root), make_shards(root / "bge", 96, 10, 190, 12)


def _runs(dirs, lr: float = 1e-3) -> list[dict]:
    base, data = dirs
    return [run_json(base, data, "full", budget=4e8, peak_lr=lr), run_json(base, data, "bias", budget=8e8)]


def _members(runs: list[dict], root: Path, out: Path) -> list[dict]:
    return [{"run": run_identity.identity(r), "stage": str(out / r["run_id"]),
             "checkpoint": str(root / "ck" / r["run_id"]), "previous": str(root / "runs" / r["run_id"]),
             "previous_tracking": str(root / "tracking" / r["run_id"])} for r in runs]


def _batch(runs: list[dict], root: Path, out: Path, *extra: str, code: str = "v1") -> int:
    runtime = {r["run_id"]: run_identity.runtime(r) for r in runs}
    return train_batch.main(["--batch-json", json.dumps(_members(runs, root, out)), "--runtime-json",
                             json.dumps(runtime), "--code-version", code, "--log-with", "none", *extra])


def _link(runs: list[dict], root: Path, out: Path) -> None:
    """What the link jobs (rule train_contrastive) do: each member's outputs into its run folder."""
    for r in runs:
        src = out / r["run_id"]
        link_tree(src, [root / "runs" / r["run_id"] / name for name in RUN_FILES])
        link_tree(src, [root / "tracking" / r["run_id"]])


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


@pytest.mark.slow
def test_a_batch_trains_each_run_as_train_does_and_reuses_what_is_up_to_date(dirs, tmp_path, capsys) -> None:
    runs = _runs(dirs)
    # the reference: each run alone through `embtune train`
    alone = {}
    for r in runs:
        out = tmp_path / "alone" / r["run_id"]
        assert train_stage.main(["--run-config-json", json.dumps(r), "--out-dir", str(out), "--checkpoint-dir",
                                 str(tmp_path / "alone-ck" / r["run_id"]), "--log-with", "none"]) == 0
        alone[r["run_id"]] = _metrics(out)

    assert _batch(runs, tmp_path, tmp_path / "b1") == 0
    assert "2 runs: 2 trained, 0 reused" in capsys.readouterr().out
    for r in runs:
        staged = tmp_path / "b1" / r["run_id"]
        got = _metrics(staged)
        assert got["status"] == "ok" and got["steps"] == alone[r["run_id"]]["steps"] > 0
        assert got["final_train_loss"] == alone[r["run_id"]]["final_train_loss"]     # bit-identical
        assert json.loads((staged / "manifest.json").read_text())["code_version"] == "v1"
        assert (staged / r["run_id"]).is_dir()                 # the tracker folder, by the link's name
        assert not Path(f"{tmp_path / 'ck' / r['run_id']}.done").exists()    # cleaned when all finished
    _link(runs, tmp_path, tmp_path / "b1")

    # another member's change: the full run (new lr) retrains, the bias run is linked, not retrained
    changed = _runs(dirs, lr=2e-3)
    assert _batch(changed, tmp_path, tmp_path / "b2") == 0
    assert "2 runs: 1 trained, 1 reused" in capsys.readouterr().out
    bias = runs[1]["run_id"]
    assert os.path.samefile(tmp_path / "b2" / bias / "trained" / "model.safetensors",
                            tmp_path / "runs" / bias / "trained" / "model.safetensors")
    full = changed[0]["run_id"]
    assert _metrics(tmp_path / "b2" / full)["final_train_loss"] != alone[full]["final_train_loss"]

    # a new code version of the train stage: nothing is reused
    assert _batch(runs, tmp_path, tmp_path / "b3", code="v2") == 0
    assert "2 runs: 2 trained, 0 reused" in capsys.readouterr().out


@pytest.mark.slow
def test_a_preempted_batch_resumes_after_its_finished_members(dirs, tmp_path, capsys) -> None:
    runs = _runs(dirs)
    assert _batch(runs, tmp_path, tmp_path / "ref") == 0
    steps = [_metrics(tmp_path / "ref" / r["run_id"])["steps"] for r in runs]
    assert steps[0] < steps[1], steps                     # the second run is the longer one
    capsys.readouterr()
    root = tmp_path / "preempted"
    # the "signal" arrives after steps[0] + 1 steps of a run: the first finishes, the second stops
    code = _batch(runs, root, root / "b", "--stop-after-steps", str(steps[0] + 1))
    assert code == train_stage.EXIT_PREEMPTED
    assert "stopped at " + runs[1]["run_id"] in capsys.readouterr().err
    assert (Path(f"{root / 'ck' / runs[0]['run_id']}.done") / "run" / "manifest.json").exists()
    assert (root / "ck" / runs[1]["run_id"]).is_dir()      # the second run's checkpoint, to resume
    # Snakemake deletes a failed job's output before the retry
    assert _batch(runs, root, root / "b-retry") == 0
    assert "2 runs: 1 trained, 1 reused" in capsys.readouterr().out
    for r in runs:     # the resumed batch ends where the uninterrupted one did
        assert _metrics(root / "b-retry" / r["run_id"])["final_train_loss"] == \
            _metrics(tmp_path / "ref" / r["run_id"])["final_train_loss"]


def test_a_time_limit_on_the_last_attempt_leaves_records_for_the_members_after_it(
        dirs, tmp_path, monkeypatch) -> None:
    """SLURM's signal (here the test hook) stops the first member on the last attempt: its
    time_limit record, and one for the second member, which is not started (no time left), so
    the batch's output is whole and the job ends 0."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    runs = _runs(dirs)
    out = tmp_path / "b"
    assert _batch(runs, tmp_path, out, "--stop-after-steps", "2", "--attempt", "1", "--retries", "0") == 0
    first, second = (_metrics(out / r["run_id"])["failure"] for r in runs)
    assert first["reason"] == second["reason"] == "time_limit", (first, second)
    assert first["partial"]["steps"] == 2 and second["partial"]["steps"] == 0, (first, second)
    assert second["detail"].startswith(f"not started: the job's time ran out while {runs[0]['run_id']} trained")
    assert (tmp_path / "ck" / runs[0]["run_id"]).is_dir() and not (tmp_path / "ck" / runs[1]["run_id"]).exists()


def test_bad_batch_json_names_the_member_and_key(tmp_path) -> None:
    from embtune.core.errors import DataError

    with pytest.raises(DataError, match=r"member 0: missing checkpoint, previous"):
        train_batch.read_members(json.dumps([{"run": {}, "stage": "x", "previous_tracking": "t"}]))
    with pytest.raises(DataError, match="non-empty JSON list"):
        train_batch.read_members("[]")
