"""Environment faults: a full disk mid-write, an unwritable or too small output
location, and two writers on one run directory. Each gives one line (exit 2), no traceback, the
old output intact, and is noticed before the work (``train`` before training).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers_cli import one_error  # noqa: E402

from embtune.cli import main as cli_main
from embtune.core.outputs import MARKER_SUFFIX, mark


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def analysis(tmp_path_factory) -> dict[str, Path]:
    from embtune.scaling.synthetic import synthetic_runs

    root = tmp_path_factory.mktemp("analysis")
    synthetic_runs(models=[("tiny-d128-l2", 128, 2), ("tiny-d128-l4", 128, 4)],
                   budgets=[1e11, 2e11, 4e11]).write_parquet(root / "runs.parquet")
    assert cli_main(["fit-scaling", "--runs", str(root / "runs.parquet"), "--bootstrap", "0",
                     "--out", str(root / "fits.json")]) == 0
    return {"runs": root / "runs.parquet", "fits": root / "fits.json"}


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


STAGES = {
    "fit-scaling": lambda a, o: ["fit-scaling", "--runs", str(a["runs"]), "--bootstrap", "0", "--out", str(o)],
    "recipe": lambda a, o: ["recipe", "--budget", "2e11", "--fits", str(a["fits"]), "--runs", str(a["runs"]),
                            "--out", str(o)],
    "summary": lambda a, o: ["summary", "--runs", str(a["runs"]), "--fits", str(a["fits"]), "--out", str(o)],
}


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EDQUOT, errno.EROFS], ids=["ENOSPC", "EDQUOT", "EROFS"])
@pytest.mark.parametrize("stage", list(STAGES))
def test_full_disk_mid_write_keeps_the_old_output(tmp_path, capsys, monkeypatch, analysis, stage, errno_):
    """The io layer's write fails half-way (some bytes written, then the device is full)."""
    out = tmp_path / "out.json"
    out.write_text('{"old": "output"}\n')
    mark(out, stage)                                     # the stage's own earlier output
    before = {p: sha(p) for p in (out, analysis["runs"], analysis["fits"])}

    def half_then_full(self, data):
        with open(self, "wb") as fh:
            fh.write(data[: len(data) // 2])
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    msg = one_error(cli_main(STAGES[stage](analysis, out)), capsys.readouterr().err, stage)
    monkeypatch.undo()
    assert f"{out}: {os.strerror(errno_)} while writing it ({errno.errorcode[errno_]})" in msg
    assert "the previous output is left as it was" in msg
    assert {p: sha(p) for p in before} == before                     # old output and inputs intact
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")
                and not p.name.endswith(MARKER_SUFFIX)]                 # no temporary left


def test_full_disk_when_creating_the_temporary(tmp_path, capsys, monkeypatch, analysis):
    import tempfile

    monkeypatch.setattr(tempfile, "mkdtemp", _no_space)
    msg = one_error(cli_main(STAGES["fit-scaling"](analysis, tmp_path / "fits.json")), capsys.readouterr().err,
                    "fit-scaling")
    assert "No space left on device while writing it (ENOSPC)" in msg


def test_other_os_errors_are_not_disguised(tmp_path):
    from embtune.core.io import atomic_path

    with pytest.raises(PermissionError), atomic_path(tmp_path / "x"):
        raise PermissionError(errno.EACCES, "denied")


# --------------------------------------------------------------------------- before the work
@pytest.fixture(scope="module")
def train_inputs(tmp_path_factory):
    from helpers_train import make_base_model, make_shards

    root = tmp_path_factory.mktemp("train")
    return make_base_model(root), make_shards(root / "bge", 64, 10, 190, 12)


def _train(run: dict, out: Path, ck: Path) -> int:
    return cli_main(["train", "--run-config-json", json.dumps(run), "--out-dir", str(out), "--checkpoint-dir", str(ck)])


@pytest.mark.parametrize("which", ["out-dir", "checkpoint-dir"])
def test_train_notices_an_unwritable_location_before_training(tmp_path, capsys, monkeypatch, train_inputs, which):
    """Root may write anywhere, so "not writable" is simulated where the check asks."""
    from helpers_train import run_json

    from embtune.core import stage_paths
    from embtune.train import loop

    locked = tmp_path / ("outs" if which == "out-dir" else "cks")
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(stage_paths.os, "access", lambda p, mode: False if Path(p) == locked else real(p, mode))
    monkeypatch.setattr(loop, "train_run", lambda *a, **k: pytest.fail("trained before checking"))
    run = run_json(*train_inputs)
    out, ck = (locked / "run", tmp_path / "ck") if which == "out-dir" else (tmp_path / "run", locked / "ck")
    msg = one_error(_train(run, out, ck), capsys.readouterr().err, "train")
    assert f"--{which} {out if which == 'out-dir' else ck}: {locked} is not writable" in msg


def test_train_notices_too_little_free_space_before_training(tmp_path, capsys, monkeypatch, train_inputs):
    from helpers_train import run_json

    from embtune.core import stage_paths
    from embtune.train import loop

    base_bytes = sum(p.stat().st_size for p in train_inputs[0].rglob("*") if p.is_file())
    monkeypatch.setattr(stage_paths.shutil, "disk_usage",
                        lambda p: shutil._ntuple_diskusage(10**12, 10**12 - 1000, 1000))
    monkeypatch.setattr(loop, "train_run", lambda *a, **k: pytest.fail("trained before checking"))
    msg = one_error(_train(run_json(*train_inputs), tmp_path / "run", tmp_path / "ck"),
                    capsys.readouterr().err, "train")
    assert "0 MiB free on" in msg and f"expected at least {3 * base_bytes / 2**20:.0f} MiB" in msg


def test_unwritable_output_of_a_quick_stage(tmp_path, capsys, monkeypatch, analysis):
    from embtune.core import stage_paths

    real = os.access
    monkeypatch.setattr(stage_paths.os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    msg = one_error(cli_main(STAGES["recipe"](analysis, tmp_path / "sub" / "recipe.json")),
                    capsys.readouterr().err, "recipe")
    assert f"--out {tmp_path / 'sub' / 'recipe.json'}: {tmp_path} is not writable" in msg


# --------------------------------------------------------------------------- one writer
def test_second_writer_on_a_run_directory_fails_at_once(tmp_path, capsys, monkeypatch, train_inputs):
    import socket

    from helpers_train import run_json

    from embtune.core.stage_paths import exclusive_lock
    from embtune.train import loop

    monkeypatch.setattr(loop, "train_run", lambda *a, **k: pytest.fail("second writer trained"))
    run = run_json(*train_inputs)
    with exclusive_lock(tmp_path / "ck", "run directory"):          # the first writer holds it
        msg = one_error(_train(run, tmp_path / "run", tmp_path / "ck"), capsys.readouterr().err, "train")
    assert f"is locked by pid {os.getpid()} on {socket.gethostname()}" in msg
    assert f"{tmp_path / 'ck' / '.embtune.lock'}" in msg and "expected one writer at a time" in msg
    assert not (tmp_path / "run").exists()


def test_lock_is_released_and_taken_again(tmp_path):
    from embtune.core.errors import DataError
    from embtune.core.stage_paths import exclusive_lock

    with exclusive_lock(tmp_path / "d"):
        with pytest.raises(DataError, match="is locked by pid"), exclusive_lock(tmp_path / "d"):
            pass
    with exclusive_lock(tmp_path / "d"):     # released when the first holder left
        pass


def test_lock_holder_in_another_process(tmp_path):
    """flock between processes: a child holding the lock blocks this one, naming the child."""
    import subprocess
    import sys

    from embtune.core.errors import DataError
    from embtune.core.stage_paths import exclusive_lock

    code = ("import sys, time; from embtune.core.stage_paths import exclusive_lock\n"
            f"with exclusive_lock({str(tmp_path / 'd')!r}):\n    print('held', flush=True); sys.stdin.read()\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(DataError, match=f"is locked by pid {child.pid} "), exclusive_lock(tmp_path / "d"):
            pass
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    with exclusive_lock(tmp_path / "d"):
        pass
