"""One writer per output: an exclusive lock file beside (or inside) what a stage writes.

Why: two jobs writing one run folder (two batch members with one stage folder, a stage started
twice by hand) would both finish and one result would silently win. The lock is an ``flock`` on
a lock file holding ``pid <pid> on <host>``: a second writer fails at once with a
:class:`~embtune.core.errors.DataError` naming the holder. ``flock`` ends with its process, so a lock
file left by a killed process is free to take; when it names a process of this host that is
gone, the takeover is logged (on stderr) so that a person sees a previous writer died there.

A lock file this process created is removed on release; the inode is checked after locking so
that a writer racing with that removal never holds a lock on a file nobody else can see.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from embtune.core.errors import DataError

LOCK_SUFFIX = ".embtune-lock"


def lock_path_beside(path: str | os.PathLike[str]) -> Path:
    p = Path(os.path.abspath(path))
    return p.parent / f".{p.name}{LOCK_SUFFIX}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_note(text: str, path: Path) -> None:
    """Log a takeover when the lock file names a dead process of this host."""
    parts = text.split()
    if len(parts) >= 4 and parts[0] == "pid" and parts[2] == "on" and parts[1].isdigit():
        pid, host = int(parts[1]), parts[3]
        if host == socket.gethostname() and pid != os.getpid() and not _pid_alive(pid):
            print(f"embtune: {path}: taking over the lock left by pid {pid} on {host} (that process is gone)",
                  file=sys.stderr)


def _open_locked(path: Path, what: str, target: str | os.PathLike[str]) -> int:
    import fcntl

    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            raise DataError(f"{path}: {what} {target} is locked by {holder}; expected one writer at a "
                            "time (wait for it, or stop it)") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)                       # removed by its last holder meanwhile: lock the new one


@contextlib.contextmanager
def hold(path: str | os.PathLike[str], what: str, target: str | os.PathLike[str] | None = None,
         remove: bool = True) -> Iterator[Path]:
    """Hold an exclusive lock on the lock file ``path`` (parents created) for ``what`` ``target``."""
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_locked(lock, what, target if target is not None else lock.parent)
    try:
        _stale_note(os.pread(fd, 200, 0).decode("utf-8", "replace").strip(), lock)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield lock
    finally:
        if remove:
            with contextlib.suppress(OSError):
                lock.unlink()
        os.close(fd)


@contextlib.contextmanager
def hold_outputs(outputs: list[tuple[str, str]], stage: str) -> Iterator[None]:
    """One lock per declared output (``.<name>.embtune-lock`` beside it), taken in a fixed order.
    The other ranks of a multi-process job (torchrun sets ``RANK``) are the same writer as its rank
    0, which holds the locks for them: they take none."""
    if os.environ.get("RANK", "0") != "0":
        yield
        return
    with contextlib.ExitStack() as stack:
        for path in sorted({os.path.abspath(p) for _, p in outputs}):
            stack.enter_context(hold(lock_path_beside(path), f"{stage} output", path))
        yield
