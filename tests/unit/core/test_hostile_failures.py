"""No traceback reaches a user: the ``embtune`` command turns a full or read-only disk, a
permission, a malformed or too deeply nested file into one line and exit 2, and shows an
unexpected error's traceback with a line saying it is a bug to report (exit 1).

The full-disk and read-only cases run on a real small tmpfs where this machine lets the test
mount one (root in a container); elsewhere they are skipped, and the monkeypatched full-disk tests
of test_bad_input_env.py still cover the io layer.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from helpers_cli import one_error as one_line  # noqa: E402

from embtune.cli import main as cli_main
from embtune.core.errors import known_failure
from embtune.core.outputs import mark


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@pytest.fixture()
def batch(tmp_path) -> Path:
    src = tmp_path / "batch"
    src.mkdir()
    (src / "metrics.json").write_bytes(b"x" * 300_000)        # larger than the small tmpfs below
    return src


# ------------------------------------------------------------------------- the handler
def test_an_unexpected_error_shows_its_traceback_and_asks_for_a_report(tmp_path, capsys, monkeypatch, batch):
    import embtune.stages.link_outputs as stage

    def boom(argv):
        raise KeyError("a bug")

    monkeypatch.setattr(stage, "main", boom)
    rc = cli_main(["link-outputs", "--src", str(batch), "--out", str(tmp_path / "o" / "metrics.json")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "Traceback" in err and "KeyError: 'a bug'" in err
    assert err.strip().splitlines()[-1].startswith("embtune link-outputs: internal error (KeyError); this is a bug")


@pytest.mark.parametrize("exc,want", [
    (PermissionError(errno.EACCES, "Permission denied", "/data/x.json"),
     "/data/x.json: Permission denied (EACCES); expected a path this user may read and write"),
    (PermissionError(errno.EPERM, "Operation not permitted", "/data/immutable"),
     "/data/immutable: Operation not permitted (EPERM); expected a path this user may change (not immutable)"),
    (OSError(errno.ENOSPC, "No space left on device", "/full/out.parquet"),
     "/full/out.parquet: No space left on device (ENOSPC)"),
    (RecursionError("maximum recursion depth exceeded"), "input nested too deeply to read"),
    (MemoryError(), "out of memory"),
])
def test_known_failures_are_one_line(tmp_path, capsys, monkeypatch, batch, exc, want):
    import embtune.stages.link_outputs as stage

    def fail(argv):
        raise exc

    monkeypatch.setattr(stage, "main", fail)
    line = one_line(cli_main(["link-outputs", "--src", str(batch), "--out", str(tmp_path / "o" / "m.json")]),
                    capsys.readouterr().err, "link-outputs")
    assert want in line, line


def test_a_library_error_for_a_full_disk_is_a_full_disk():
    """polars reports ENOSPC as a ComputeError carrying the OS text."""
    pl = pytest.importorskip("polars")
    line = known_failure(pl.exceptions.ComputeError(
        "parquet: File out of specification: underlying IO error: No space left on device (os error 28)"))
    assert line is not None and line.startswith("ENOSPC while writing")


def test_json_nested_100000_deep_is_one_line(tmp_path, capsys):
    runs = tmp_path / "runs.parquet"
    runs.write_bytes(b"PAR1")
    fits = tmp_path / "fits.json"
    fits.write_text("[" * 100_000 + "]" * 100_000)
    before = tree(tmp_path)
    line = one_line(cli_main(["recipe", "--budget", "1e12", "--fits", str(fits), "--runs", str(runs),
                              "--out", str(tmp_path / "recipe.json")]), capsys.readouterr().err, "recipe")
    assert f"{fits}: JSON nested too deeply to read" in line
    assert tree(tmp_path) == before


def test_a_deep_run_config_argument_is_one_line(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    rc = cli_main(["train", "--run-config-json", deep, "--out-dir", str(tmp_path / "r"),
                   "--checkpoint-dir", str(tmp_path / "c")])
    one_line(rc, capsys.readouterr().err, "train")
    assert not (tmp_path / "r").exists()


def test_malformed_yaml_params_is_one_line(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("seed: [1, 2\ntrain: {: :\n")
    before = tree(tmp_path)
    rc, err = cli_main(["validate-params", str(params)]), capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{params}:2: not valid YAML (") and "column" in lines[0], lines[0]
    assert tree(tmp_path) == before


def test_a_binary_metrics_file_is_one_line(tmp_path, capsys):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "metrics.json").write_bytes(b"\xff\xfe\x00garbage")
    before = tree(tmp_path)
    line = one_line(cli_main(["collect-runs", "--runs-dir", str(tmp_path / "runs"), "--out",
                              str(tmp_path / "out.parquet")]), capsys.readouterr().err, "collect-runs")
    assert str(run / "metrics.json") in line
    assert tree(tmp_path) == before


# ------------------------------------------------------------------------- a real small disk
@contextlib.contextmanager
def _tmpfs(root: Path, size: str, readonly: bool = False):
    mnt = root / f"mnt-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    opts = f"size={size}" + (",ro" if readonly else "")
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this machine does not allow mounting a tmpfs: {done.stderr.strip()[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_on_a_real_tmpfs_keeps_the_previous_output(tmp_path, capsys, batch):
    with _tmpfs(tmp_path, "128k") as disk:
        out = disk / "run" / "metrics.json"
        out.parent.mkdir()
        out.write_bytes(b'{"previous": true}\n')
        mark(out, "link-outputs")
        before = tree(disk) | tree(batch)
        line = one_line(cli_main(["link-outputs", "--src", str(batch), "--out", str(out)]),
                        capsys.readouterr().err, "link-outputs")
        assert f"{out}: No space left on device while writing it (ENOSPC)" in line
        assert "the previous output is left as it was" in line
        assert tree(disk) | tree(batch) == before


def test_full_disk_during_a_parquet_write_on_a_real_tmpfs(tmp_path, capsys):
    pl = pytest.importorskip("polars")
    runs = tmp_path / "runs"
    for i in range(40):
        d = runs / f"run{i:02d}"
        d.mkdir(parents=True)
        (d / "metrics.json").write_text(json.dumps({"status": "ok", "method": "full", "model": "tiny",
                                                    "budget": 1e12, "final_train_loss": 2.0, "flops": 1e12,
                                                    "tokens": 1e6 + i, "steps": 10, "skip_reason": "x" * 4000}))
    with _tmpfs(tmp_path, "16k") as disk:
        (disk / "fill").write_bytes(b"x" * 12_000)
        rc = cli_main(["collect-runs", "--runs-dir", str(runs), "--out", str(disk / "runs.parquet")])
        line = one_line(rc, capsys.readouterr().err, "collect-runs")
        assert "ENOSPC" in line or "No space left" in line, line
        assert not (disk / "runs.parquet").exists()
        assert pl is not None


def test_a_read_only_output_location_is_refused_before_work(tmp_path, capsys, batch):
    with _tmpfs(tmp_path, "64k", readonly=True) as disk:
        line = one_line(cli_main(["link-outputs", "--src", str(batch), "--out", str(disk / "metrics.json")]),
                        capsys.readouterr().err, "link-outputs")
        assert "is not writable" in line and str(disk) in line
