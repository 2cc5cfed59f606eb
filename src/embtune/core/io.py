"""Atomic output writing, manifests and provenance.

Why: a killed SLURM job must never leave a file that looks complete, because Snakemake and DVC
decide what to re-run from what exists. Every output goes to a temporary sibling and is renamed
into place (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

TRACKED_PACKAGES = (
    "embtune", "torch", "transformers", "peft", "accelerate", "sentence-transformers",
    "mteb", "tokenizers", "polars", "numpy", "scipy", "snakemake", "dvc",
)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success.

    Works for files and directories (e.g. ``save_pretrained`` folders)."""
    final = Path(path)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    except OSError as err:
        raise _no_room(final, err) if err.errno in NO_ROOM else err from None
    target = tmp / final.name
    try:
        yield target
        from embtune.core.outputs import mark_if_claimed

        mark_if_claimed(final)        # before the rename: what appears at ``final`` is marked
        if final.is_dir() and not final.is_symlink():
            # Move the old directory aside in one rename, never delete it in place: a kill during
            # a long rmtree would leave a half-deleted old output that looks like a whole one.
            # Killed between the two renames, nothing is at ``final``: never a mix.
            os.replace(final, tmp / ".replaced")
        os.replace(target, final)
    except Exception as err:
        from embtune.core.errors import device_errno

        code = device_errno(err)      # also a library's own error type for a full disk (polars)
        if code is None:
            raise
        raise _no_room(final, err, code) from None
    finally:
        _rmtree(tmp)


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)   # the device, not the data: one line, not a traceback


def _no_room(final: Path, err: Exception, code: int | None = None) -> Exception:
    """A full (or read-only) device while writing ``final``: one line (``DataError``, exit 2)
    saying that the previous output, if any, is left as it was."""
    from embtune.core.errors import DataError

    code = code if code is not None else getattr(err, "errno", None)
    what = getattr(err, "strerror", None) or (os.strerror(code) if isinstance(code, int) else str(err))
    return DataError(f"{final}: {what} while writing it ({errno.errorcode.get(code, code)}); "
                     "the previous output is left as it was; expected room to write on that device")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary directory that replaces ``path`` as a whole on success, so a
    directory output appears complete or not at all (write its manifest last inside it)."""
    with atomic_path(path) as tmp:
        tmp.mkdir()
        yield tmp


def check_replaceable(path: str | os.PathLike[str], own_dirs: tuple[str, ...] = ("model",),
                      stage: str | None = None) -> None:
    """Refuse to replace, as a whole, a directory that does not look like this stage's output:
    one holding subdirectories other than ``own_dirs``, unless its ``manifest.json`` names
    ``stage``. Why: ``--out results`` by mistake would otherwise delete every result."""
    root = Path(path)
    if not root.is_dir():
        return
    if stage is not None and (root / "manifest.json").is_file():
        with contextlib.suppress(ValueError, OSError):
            manifest = read_json(root / "manifest.json")
            if isinstance(manifest, dict) and manifest.get("stage") == stage:
                return
    foreign = sorted(p.name for p in root.iterdir()
                     if p.is_dir() and p.name not in own_dirs and not p.name.startswith("."))
    if foreign:
        raise ValueError(f"{root}: holds directories this stage does not write ({', '.join(foreign[:5])}); "
                         "the output directory is replaced as a whole, so it must be the stage's own "
                         "(delete it if it is a stale output)")


#: Snakemake's mtime carrier of a directory output. Never linked: a hard link shares the inode, so
#: Snakemake touching the copy's carrier would date the original folder too, and every job that
#: reads the original would re-plan as "updated input".
SNAKEMAKE_TIMESTAMP = ".snakemake_timestamp"


def link_or_copy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Hard-link ``src`` to ``dst`` (no copy of gigabytes of weights), else copy it."""
    try:
        os.link(src, dst)
    except OSError:             # another filesystem, or links not allowed: copy
        shutil.copy2(src, dst)


def link_tree(src_dir: str | os.PathLike[str], outputs: list[str | os.PathLike[str]]) -> None:
    """Hard-link (or copy, where links are impossible) ``src_dir/<name>`` onto each output path,
    files and folders, each replaced atomically, in the order given (put a commit marker last)."""
    for out in outputs:
        out = Path(out)
        src = Path(src_dir) / out.name
        if not src.exists():
            raise FileNotFoundError(f"{src}: missing; expected the batch job to have written it")
        with atomic_path(out) as tmp:
            if src.is_dir():
                shutil.copytree(src, tmp, copy_function=link_or_copy,
                                ignore=shutil.ignore_patterns(SNAKEMAKE_TIMESTAMP))
            else:
                link_or_copy(src, tmp)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Deterministic JSON (sorted keys) so re-runs are byte-identical."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    try:
        import numpy as np

        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_parquet(path: str | os.PathLike[str], frame: Any) -> None:
    """Write a polars DataFrame atomically (no statistics timestamps: byte-identical reruns)."""
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression="zstd", statistics=False)


def read_parquet(path: str | os.PathLike[str], expected: str, columns: list[str] | None = None) -> Any:
    """A parquet file as a polars DataFrame; a corrupt or truncated file raises ``DataError``
    ``"<path>: not a readable parquet file (<reason>); expected <expected>"``.

    Why: polars' and pyarrow's messages name neither the file nor what it should have held."""
    import polars as pl

    from embtune.core.errors import DataError, one_line

    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found; expected {expected}")
    try:
        return pl.read_parquet(p, columns=columns)
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        raise DataError(f"{p}: not a readable parquet file ({one_line(err)}); expected {expected}") from None


def read_json(path: str | os.PathLike[str]) -> Any:
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: file not found") from None
    except json.JSONDecodeError as err:
        from embtune.core.errors import DataError

        raise DataError(f"{p}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        from embtune.core.errors import DataError

        raise DataError(f"{p}: JSON nested too deeply to read; expected a well-formed file") from None
    except UnicodeDecodeError as err:
        from embtune.core.errors import DataError

        raise DataError(f"{p}: not UTF-8 text ({err.reason} at byte {err.start}); expected a JSON file") from None


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def json_sha256(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace): equal for equal content."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


MANIFEST_NAMES = ("manifest.json", "meta.json")


def dir_fingerprint(path: str | os.PathLike[str], manifests: tuple[str, ...] = MANIFEST_NAMES) -> str:
    """sha256 over a directory's file names and sizes, plus the contents of its top-level
    manifest (``manifest.json`` / ``meta.json``), or of every file when it has none.

    Why not hash every file: training data and base models are gigabytes, and a resume must not
    re-read them; every stage that writes them records its inputs, seed and counts in its
    manifest, so a rebuilt directory has a different manifest. Hidden entries (``.*``) are left
    out. Directories without a manifest (hand-made ones, test fixtures) are hashed in full."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: directory not found")
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*")
                   if p.is_file() and not any(s.startswith(".") for s in p.relative_to(root).parts))
    full = not any((root / m).is_file() for m in manifests)
    h = hashlib.sha256()
    for rel, file in files:
        h.update(f"{rel}\0{file.stat().st_size}\0".encode())
        if full or rel in manifests:
            h.update(sha256_file(file).encode())
    return h.hexdigest()


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The repo's HEAD commit (with ``-dirty`` when the tree has changes), or None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(*, stable: bool = False, **extra: Any) -> dict[str, Any]:
    """What every manifest records: versions, commit, python, plus ``extra``.

    ``stable=True`` leaves out what changes between identical re-runs (time, host, job id), for
    data-prep manifests that must be byte-identical when inputs and seed are."""
    record: dict[str, Any] = {
        "git_commit": git_commit(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        **extra,
    }
    if not stable:
        record.update(
            created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            host=platform.node(),
            slurm_job_id=os.environ.get("SLURM_JOB_ID"),
        )
    return record
