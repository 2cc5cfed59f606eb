"""Materialise the pinned MTEB tasks to local parquet files (stage ``materialise-mteb``).

Why a driver apart from :mod:`embtune.data.mteb_data` (which documents the layout): the library
turns mteb datasets into tables, reads, checks and writes one task; the arguments, the loop over
tasks and the output directory (every task and the manifest, built in a temporary sibling and
renamed into place together) live here.

Exit status: 0, or 1 with the problem printed when a task's data is missing or invalid (the
status this stage has always had; other stages' bad input exits 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import EXIT_DATA_ERROR, one_line
from embtune.core.io import atomic_dir, check_replaceable, provenance, write_json
from embtune.data.mteb_data import (
    RETRIEVAL_TYPES,
    copy_task,
    frames_from_mteb,
    local_splits,
    read_task_dir,
    row_counts,
    task_type,
    validate_frames,
    write_task,
)

STAGE = "materialise-mteb"


def materialise(tasks: Sequence[str], source: str, local_dir: Path | None, out: Path) -> dict[str, Any]:
    """Write every task under ``out``; returns the manifest's ``tasks`` record."""
    record: dict[str, Any] = {}
    for name in tasks:
        kind = task_type(name)
        retrieval = kind in RETRIEVAL_TYPES
        if source == "local":
            assert local_dir is not None
            frames = read_task_dir(local_dir / name, retrieval)
            splits = local_splits(kind)
        else:
            frames = frames_from_mteb(name)
            splits = sorted({split for _, split in frames})
        problems = validate_frames(name, kind, frames, splits)
        if problems:
            raise ValueError("invalid MTEB task data:\n  " + "\n  ".join(problems))
        if source == "local":
            assert local_dir is not None
            copy_task(local_dir / name, out / name)
        else:
            write_task(frames, out / name)
        record[name] = {"type": kind, "rows": row_counts(frames)}
    return record


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", required=True)
    p.add_argument("--source", choices=["mteb", "local"], required=True)
    p.add_argument("--local-dir", type=Path, default=None, help="with --source local: holds <Task>/")
    p.add_argument("--out", type=Path, required=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.source == "local" and args.local_dir is None:
        _parser().error("--source local needs --local-dir")
    try:
        check_replaceable(args.out, own_dirs=(), stage=STAGE)
        with atomic_dir(args.out) as tmp:       # tasks and manifest appear together or not at all
            record = materialise(args.tasks, args.source, args.local_dir, tmp)
            write_json(tmp / "manifest.json",
                       provenance(stable=True, stage=STAGE, source=args.source,
                                  local_dir=str(args.local_dir) if args.local_dir else None, tasks=record))
    except (FileNotFoundError, ValueError) as err:
        print(f"embtune {STAGE}: error: {one_line(err)}", file=sys.stderr)
        return EXIT_DATA_ERROR
    for name, info in record.items():
        print(f"{name:<28} {info['type']:<20} {sum(info['rows'].values()):>7} rows")
    return 0
