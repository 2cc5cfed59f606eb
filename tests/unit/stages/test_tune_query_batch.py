"""``embtune tune-query-batch`` (query_tuning.runs_per_job > 1): several query runs in one process,
each tuned as ``embtune tune-query`` tunes it alone, a member reused (not re-tuned) when its
finished outputs have the same config and code version, a diverged member a failure record that
does not stop the batch."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers_train import one_thread
from helpers_train import query_run as _run
from helpers_train import query_triplets as _triplets
from helpers_train import write_query_data as _write

from embtune.core.errors import DataError
from embtune.core.io import link_tree
from embtune.stages import tune_query, tune_query_batch

_one_thread = pytest.fixture(autouse=True)(one_thread)
LINKED = ("metrics.json", "curve.csv", "layer_changes.csv", "manifest.json", "model")


def _runs(lr: float = 1e-4) -> list[dict]:
    # the second diverges: AdamW moves each weight by ~lr, and 1e30 overflows float32
    return [_run(lr=lr, lr_effective=lr, qrun_id="lr"), _run(lr=1e30, lr_effective=1e30, qrun_id="nan")]


def _members(runs: list[dict], root: Path, out: Path) -> list[dict]:
    return [{"run": r, "stage": str(out / r["qrun_id"]), "previous": str(root / "runs" / r["qrun_id"]),
             "previous_tracking": str(root / "tracking" / r["qrun_id"])} for r in runs]


def _batch(runs: list[dict], root: Path, out: Path, data: Path, code: str = "v1") -> int:
    return tune_query_batch.main(["--batch-json", json.dumps(_members(runs, root, out)), "--code-version", code,
                                  "--data-dir", str(data), "--cache-dir", str(root / "cache"), "--threads", "1",
                                  "--attempt", "1", "--retries", "2", "--no-progress"])


def _link(runs: list[dict], root: Path, out: Path) -> None:
    """What the link jobs (rule tune_query) do: each member's outputs into its run folder."""
    for r in runs:
        src = out / r["qrun_id"]
        link_tree(src, [root / "runs" / r["qrun_id"] / name for name in LINKED if (src / name).exists()])
        link_tree(src, [root / "tracking" / r["qrun_id"]])


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


@pytest.mark.slow   # ~40 s (seven tunings of MiniLM): make test runs it, make test-fast does not
def test_a_batch_tunes_each_run_as_tune_query_does_and_reuses_what_is_up_to_date(tmp_path, capsys) -> None:
    data = tmp_path / "data"
    _write(data, _triplets(8), _triplets(4, offset=100))
    runs = _runs()
    alone = {}
    for r in runs:           # the reference: each run alone through `embtune tune-query`
        out = tmp_path / "alone" / r["qrun_id"]
        assert tune_query.main(["--run-config-json", json.dumps(r), "--data-dir", str(data), "--out-dir", str(out),
                                "--cache-dir", str(tmp_path / "alone-cache"), "--threads", "1",
                                "--attempt", "1", "--retries", "2"]) == 0
        alone[r["qrun_id"]] = _metrics(out)
    assert alone["lr"]["status"] == "ok" and alone["nan"]["status"] == "failed"

    assert _batch(runs, tmp_path, tmp_path / "b1", data) == 0
    assert "2 query runs: 2 tuned, 0 reused" in capsys.readouterr().out
    got = _metrics(tmp_path / "b1" / "lr")
    assert got["val_loss"] == alone["lr"]["val_loss"] and got["val_errors"] == alone["lr"]["val_errors"]
    assert got["epochs"] == alone["lr"]["epochs"] >= 1
    failed = _metrics(tmp_path / "b1" / "nan")
    assert failed["status"] == "failed" and failed["failure"]["reason"] == "diverged"
    for r in runs:
        staged = tmp_path / "b1" / r["qrun_id"]
        assert json.loads((staged / "manifest.json").read_text())["code_version"] == "v1"
        assert (staged / r["qrun_id"]).is_dir()                # the tracker folder, by the link's name
    assert not (tmp_path / "b1" / ".tracking").exists()
    _link(runs, tmp_path, tmp_path / "b1")

    # another member's change: it re-tunes, the diverged run's record is linked, not re-tuned
    changed = _runs(lr=2e-4)
    assert _batch(changed, tmp_path, tmp_path / "b2", data) == 0
    assert "2 query runs: 1 tuned, 1 reused" in capsys.readouterr().out
    assert os.path.samefile(tmp_path / "b2" / "nan" / "metrics.json", tmp_path / "runs" / "nan" / "metrics.json")
    assert _metrics(tmp_path / "b2" / "lr")["val_loss"] != alone["lr"]["val_loss"]

    # a new code version of tune-query: nothing is reused
    assert _batch(runs, tmp_path, tmp_path / "b3", data, code="v2") == 0
    assert "2 query runs: 2 tuned, 0 reused" in capsys.readouterr().out


def test_bad_query_batch_json_names_the_member_and_key() -> None:
    with pytest.raises(DataError, match=r"member 0: missing previous, previous_tracking"):
        tune_query_batch.read_members(json.dumps([{"run": {}, "stage": "x"}]))
    with pytest.raises(DataError, match=r"member 0: tracker folder .* is named like a run file"):
        tune_query_batch.read_members(json.dumps([{"run": {}, "stage": "x", "previous": "p",
                                                   "previous_tracking": "t/model"}]))
