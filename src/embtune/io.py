"""Atomic output writing, manifests and provenance.

Why: a killed SLURM job must never leave a file that looks complete, because Snakemake and DVC
decide what to re-run from what exists. Every output goes to a temporary sibling and is renamed
into place (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
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
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    target = tmp / final.name
    try:
        yield target
        if final.is_dir() and not final.is_symlink():
            _rmtree(final)
        os.replace(target, final)
    finally:
        _rmtree(tmp)


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

    from embtune.errors import DataError, one_line

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
        from embtune.errors import DataError

        raise DataError(f"{p}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
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
