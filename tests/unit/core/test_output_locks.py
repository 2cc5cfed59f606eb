"""One writer per output: a second holder is refused naming the first, a dead holder's lock is
taken over, and the ranks of one multi-process job share rank 0's locks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from embtune.core.errors import DataError
from embtune.core.locks import hold_outputs, lock_path_beside


def test_a_second_holder_of_an_output_lock_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with hold_outputs([("--out", str(out))], "train"):
        assert lock_path_beside(out).exists()
        with pytest.raises(DataError, match=rf"locked by pid {os.getpid()}"):
            with hold_outputs([("--out", str(out))], "train"):
                pass
    assert not lock_path_beside(out).exists()


def test_a_dead_processes_lock_is_taken_over(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)                                      # a process that has exited
    lock_path_beside(out).write_text(f"pid {pid} on {socket.gethostname()}\n")   # what a holder writes
    with hold_outputs([("--out", str(out))], "train"):
        pass
    assert str(pid) in capsys.readouterr().err                   # the takeover is logged


def test_the_ranks_of_one_job_share_rank_zeros_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torchrun starts every rank with the same command: rank 0 holds the locks, the others none."""
    out = tmp_path / "run"
    monkeypatch.setenv("RANK", "0")
    with hold_outputs([("--out", str(out))], "train"):
        monkeypatch.setenv("RANK", "1")
        with hold_outputs([("--out", str(out))], "train"):
            pass
        assert lock_path_beside(out).exists()                    # still rank 0's
