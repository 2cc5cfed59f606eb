"""Streaming JSONL reader shared by the data stages.

Why: the source dumps (BGE pairs, MSMARCO triplets, arXiv snapshot) are large and sometimes
gzip-compressed; reading them line by line keeps memory bounded, and every parse problem is
reported as ``<path>:<line>: <reason>`` so a bad line is never silently skipped.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


class DataError(ValueError):
    """Bad input data; the message names the file and line so the user can find and fix it."""


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open a text file for reading, transparently decompressing ``.gz`` (by magic bytes).

    Why magic bytes: files are sometimes renamed or downloaded without their extension."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    with open(p, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8")
    return open(p, encoding="utf-8")


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_no, obj)`` for every non-blank line of a JSONL(.gz) file (1-based lines).

    Blank lines are skipped (trailing newlines are common); anything else that is not valid JSON
    raises :class:`DataError` ``"<path>:<line>: <reason>"``: a corrupt line in a dataset means the
    dump is broken and must be looked at, not quietly dropped."""
    with open_text(path) as fh:
        line_no = 0
        while True:
            try:
                line = fh.readline()
            except (UnicodeDecodeError, EOFError, OSError, gzip.BadGzipFile) as err:
                raise DataError(f"{path}:{line_no + 1}: unreadable ({err})") from None
            if not line:
                return
            line_no += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{line_no}: invalid JSON ({err.msg} at column {err.colno})") from None
            yield line_no, obj


def run_stage(stage: str, run: Callable[[Any], dict[str, Any]], args: Any,
              summary: Callable[[dict[str, Any]], str]) -> int:
    """The CLI tail every data stage shares: run, report a DataError as one line and exit 2,
    otherwise print a one-line summary of the manifest and exit 0."""
    try:
        manifest = run(args)
    except DataError as err:
        print(f"embtune {stage}: {err}", file=sys.stderr)
        return 2
    print(summary(manifest))
    return 0
