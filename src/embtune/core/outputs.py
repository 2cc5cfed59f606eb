"""Which stage wrote an output, and the rule that a stage replaces only what it wrote.

Why: every stage replaces its output as a whole (temp + rename, :mod:`embtune.core.io`), so an
``--out`` that names an existing folder of other things (``results/demo/runs``,
``data/processed/demo``, a run's ``model/``, a user's notes) would delete it all. Comparing
outputs with inputs (:mod:`embtune.core.stage_paths`) does not catch that: those folders are no input.

So each output carries a *stage marker*: a hidden file beside it, ``.<name>.embtune-stage``,
holding the name of the stage that wrote it (beside, not inside, so that model folders, hashes
and directory listings are untouched, and one rule serves files and folders). Before any work,
:func:`check_owned` lets a stage replace a path only when it is missing, an empty folder, or this
stage's own earlier output (its marker, or the ``"stage"`` of a folder's ``manifest.json``, or a
folder made only of outputs of the stages it may replace); anything else is refused by name.
``embtune <stage> --force`` overrides (a person decides); the pipeline never needs it because
Snakemake removes a job's outputs before it runs.

:func:`claim` is the context the ``embtune`` command runs a stage in: it marks the declared
outputs as they are renamed into place (:func:`mark_if_claimed`, called by ``atomic_path`` before
the rename, so a marked output is never one this stage did not write) and once more when the
stage succeeds (outputs written by libraries that do not go through ``atomic_path``).
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from embtune.core.errors import DataError

MARKER_SUFFIX = ".embtune-stage"

#: Stages whose outputs a stage may also replace: the batch forms of a stage, and the folders a
#: run's stages share (a run directory holds train's model and evaluate-mteb's scores; replacing
#: the run replaces its evaluations, which belong to the old model).
ALSO_REPLACES: dict[str, frozenset[str]] = {
    "train": frozenset({"train-batch", "link-outputs", "evaluate-mteb", "model-card"}),
    "train-batch": frozenset({"train", "link-outputs"}),
    "tune-query": frozenset({"tune-query-batch", "link-outputs", "evaluate-pnd"}),
    "tune-query-batch": frozenset({"tune-query", "link-outputs"}),
    "link-outputs": frozenset({"train", "train-batch", "tune-query", "tune-query-batch", "evaluate-mteb",
                               "evaluate-pnd"}),
    "evaluate-mteb": frozenset({"link-outputs"}),
    "prepare-bge": frozenset({"prepare-bge-part"}),
    "prepare-bge-part": frozenset({"prepare-bge"}),
}


def marker_path(path: str | os.PathLike[str]) -> Path:
    p = Path(os.path.abspath(path))
    return p.parent / f".{p.name}{MARKER_SUFFIX}"


def owner(path: str | os.PathLike[str]) -> str | None:
    """The stage that wrote ``path`` (its marker; a folder's ``manifest.json`` ``"stage"``), or None."""
    try:
        text = marker_path(path).read_text(encoding="utf-8").strip()
        if text:
            return text
    except (OSError, UnicodeDecodeError):
        pass
    manifest = Path(path) / "manifest.json"
    if Path(path).is_dir() and manifest.is_file():
        with contextlib.suppress(OSError, ValueError, RecursionError):
            stage = json.loads(manifest.read_text(encoding="utf-8")).get("stage")
            return stage if isinstance(stage, str) else None
    return None


def may_replace(stage: str, writer: str | None) -> bool:
    return writer is not None and (writer == stage or writer in ALSO_REPLACES.get(stage, frozenset()))


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


#: What a resumable folder (read and written, deleted when the stage ends) of each stage holds,
#: so that one left by a killed run before markers existed is still recognised.
RESUMABLE_FILES: tuple[str, ...] = ("state.json", "state.pt", "tensors-*.safetensors", "tracking")


def why_not_replaceable(path: str | os.PathLike[str], stage: str,
                        own_names: tuple[str, ...] = ()) -> str | None:
    """Why ``stage`` must not replace ``path``, or None when it may (see the module docstring);
    ``own_names``: patterns of entries a folder of this stage's may hold without markers."""
    p = Path(path)
    if not os.path.lexists(p):
        return None
    writer = owner(p)
    if may_replace(stage, writer):
        return None
    if writer is not None:
        return f"holds the output of stage {writer!r}"
    if p.is_symlink():
        return "is a symbolic link this stage did not make"
    if not p.is_dir():
        return "is a file this stage did not write (no stage marker)"
    try:
        entries = _visible(p)
    except OSError as err:
        return f"cannot be listed ({err.strerror})"
    foreign = [e.name for e in entries if not may_replace(stage, owner(e))
               and not any(fnmatch.fnmatch(e.name, pat) for pat in own_names)]
    if not foreign:
        return None                       # empty, or only outputs of stages it may replace
    shown = ", ".join(foreign[:4]) + (f" and {len(foreign) - 4} more" if len(foreign) > 4 else "")
    return f"is a folder this stage did not write, holding {shown}"


def check_owned(outputs: Iterable[tuple[str, str]], stage: str, own_names: tuple[str, ...] = ()) -> None:
    """Refuse (``DataError``) the first output ``stage`` may not replace, naming it and why."""
    for label, path in outputs:
        why = why_not_replaceable(path, stage, own_names)
        if why:
            raise DataError(f"{label} {path}: {why}; expected a missing path or this stage's own earlier "
                            f"output (an output is replaced as a whole: choose another path, remove it, or "
                            f"pass --force to replace it)")


def check_apart(outputs: list[tuple[str, str]]) -> None:
    """No two outputs of one call are the same path or one inside the other: two batch members
    with one stage folder would both write it and one result would silently win."""
    keys = [(label, path, _key(path)) for label, path in outputs]
    for i, (label, path, key) in enumerate(keys):
        for other_label, other_path, other in keys[:i]:
            if key == other or key.is_relative_to(other) or other.is_relative_to(key):
                raise DataError(f"{label} {path}: the same as or nested with {other_label} {other_path}; "
                                "expected every output of one call apart from the others (one writer per output)")


def mark(path: str | os.PathLike[str], stage: str) -> None:
    """Write ``path``'s stage marker (temp + rename; skipped when it already says ``stage``)."""
    target = marker_path(path)
    with contextlib.suppress(OSError):
        if target.read_text(encoding="utf-8").strip() == stage:
            return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(stage + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class _Claim:
    stage: str
    paths: frozenset[Path]


_CLAIM: contextvars.ContextVar[_Claim | None] = contextvars.ContextVar("embtune_output_claim", default=None)


def _key(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def mark_if_claimed(path: str | os.PathLike[str]) -> None:
    """Called just before ``path`` is renamed into place: mark it when it is a declared output of
    the stage being run (nothing otherwise: library calls outside the ``embtune`` command)."""
    claim = _CLAIM.get()
    if claim is not None and _key(path) in claim.paths:
        mark(path, claim.stage)


@contextlib.contextmanager
def claim(stage: str, outputs: Iterable[tuple[str, str]], resumable: Iterable[tuple[str, str]] = (),
          *, force: bool = False) -> Iterator[None]:
    """Check that ``stage`` may replace each output and resumable folder (a checkpoint: kept
    across kills, deleted at the end, recognised by what it holds) unless ``force``, and run the
    body with the outputs claimed.
    The caller marks the outputs that exist once the stage has succeeded (:func:`mark_existing`)."""
    outs = [(label, str(path)) for label, path in outputs]
    keep = [(label, str(path)) for label, path in resumable]
    check_apart(outs + keep)
    if not force:
        check_owned(outs, stage)
        check_owned(keep, stage, RESUMABLE_FILES)
    token = _CLAIM.set(_Claim(stage, frozenset(_key(p) for _, p in outs)))
    try:
        yield
    finally:
        _CLAIM.reset(token)


def mark_existing(outputs: Iterable[tuple[str, str]], stage: str) -> None:
    """Mark each output that exists (written by a library that does not call :func:`mark_if_claimed`)."""
    for _, path in outputs:
        if os.path.lexists(path):
            with contextlib.suppress(OSError):
                mark(path, stage)


def split_force(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--force`` (the ``embtune`` command's own flag), and whether it was given."""
    return [a for a in argv if a != "--force"], "--force" in argv
