"""Streaming JSONL reader shared by the data stages.

Why: the source dumps (BGE pairs, MSMARCO triplets, arXiv snapshot) are large and sometimes
gzip-compressed; reading them line by line keeps memory bounded, and every parse problem is
reported as ``<path>:<line>: <reason>`` so a bad line is never silently skipped.

Why lines are split as bytes and decoded one at a time: a text wrapper decodes the file in 8 KiB
chunks, so a bad UTF-8 byte surfaces while an *earlier* line is being read (several lines early
for long lines) and its position is lost. Splitting first gives the exact line and byte offset.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

from embtune.core.errors import DataError, one_line

__all__ = ["DataError", "drop_summary", "is_gzip", "iter_jsonl", "iter_jsonl_range", "iter_lines",
           "open_text", "run_stage"]

GZIP_MAGIC = b"\x1f\x8b"
BOM = "\ufeff"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")   # how a surrogate is written in JSON
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")   # json.loads joins valid pairs: any left is lone


def scrub_surrogates(obj: Any) -> tuple[Any, int]:
    """``obj`` with every lone surrogate in its strings replaced by U+FFFD, and how many.

    Why: JSON may escape half a surrogate pair (``"\\ud800"``); Python parses it into a string
    that cannot be encoded as UTF-8, and the tokenizer or parquet writer then crashes far from
    the line that held it."""
    if isinstance(obj, str):
        return _LONE_SURROGATE.subn("\ufffd", obj)
    if isinstance(obj, list):
        pairs = [scrub_surrogates(v) for v in obj]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    if isinstance(obj, dict):
        pairs = {k: scrub_surrogates(v) for k, v in obj.items()}
        return {k: v for k, (v, _) in pairs.items()}, sum(n for _, n in pairs.values())
    return obj, 0


def _parsed(line: str, fixes: Counter | None) -> Any:
    obj = json.loads(line)
    if _SURROGATE_ESCAPE.search(line):
        obj, n = scrub_surrogates(obj)
        if fixes is not None and n:
            fixes["lone_surrogates_replaced"] += n
    return obj


def _open_binary(path: Path) -> BinaryIO:
    """The file's bytes, gunzipped when it starts with the gzip magic bytes.

    Why magic bytes: files are sometimes renamed or downloaded without their extension."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if _is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line_no, text)`` for every line of a UTF-8 text file (``.gz`` read transparently).

    Line numbers are 1-based; ``\\r\\n`` endings read as ``\\n``. Bad bytes raise
    :class:`DataError` naming the exact line and byte offset; a corrupt or truncated gzip stream
    raises one naming how far the file could be read."""
    p = Path(path)
    with _open_binary(p) as fh:
        gz = isinstance(fh, gzip.GzipFile)
        line_no = offset = 0
        try:
            for raw in fh:
                line_no += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    reason = _utf8_error(p, gz, line_no, offset, raw, err)
                    raise DataError(_damaged_gzip(p, line_no, reason) if gz else reason) from None
                offset += len(raw)
                if line_no == 1 and text.startswith(BOM):   # a byte-order mark is not content
                    text = text[1:]
                yield line_no, text if text[-2:] != "\r\n" else text[:-2] + "\n"
        except (EOFError, OSError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
            raise DataError(_read_error(p, gz, line_no, offset, err)) from None


def _read_error(path: Path, gz: bool, line_no: int, offset: int, err: BaseException) -> str:
    where = f"read up to line {line_no} (byte {offset} of the uncompressed text) before the error"
    if not gz:
        return f"{path}: read failed after line {line_no} ({one_line(err)})"
    if isinstance(err, EOFError):
        what = "the file ends inside the gzip stream (truncated)"
    elif isinstance(err, gzip.BadGzipFile) and ("CRC" in str(err) or "length" in str(err)):
        what = "the data fail the gzip checksum, so lines already read may hold damaged text"
    else:
        what = "invalid compressed data"
    return (f"{path}: corrupt or truncated gzip stream ({one_line(err)}): {what}; {where}; "
            "expected a complete gzip file (download or compress it again)")


def _damaged_gzip(path: Path, line_no: int, reason: str) -> str:
    """For a parse error in a gzip file: when the gzip stream itself is damaged (damaged deflate
    data can inflate to garbage that only the end-of-stream checksum exposes), that is the cause
    to report; otherwise ``reason``. Reads the whole stream once, on this error path only."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (EOFError, OSError, zlib.error) as err:
        return (f"{path}: corrupt or truncated gzip stream ({one_line(err)}); the damage shows "
                f"first at line {line_no} ({reason.removeprefix(f'{path}:{line_no}: ')}); "
                "expected a complete gzip file (download or compress it again)")
    return reason


def _utf8_error(path: Path, gz: bool, line_no: int, offset: int, raw: bytes,
                err: UnicodeDecodeError) -> str:
    column = len(raw[:err.start].decode("utf-8", errors="replace")) + 1
    where = "uncompressed byte offset" if gz else "byte offset"
    return (f"{path}:{line_no}: invalid UTF-8 byte 0x{raw[err.start]:02x} at column {column} "
            f"({where} {offset + err.start}): {err.reason}; expected UTF-8 text")


class _CheckedText(io.TextIOBase):
    """A read-only text file over :func:`iter_lines`: iteration, ``readline`` and ``read`` give
    what a text file gives, but decoding and gzip errors name the line (see the module doc)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._lines = iter_lines(path)
        self._pending = ""

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        self._checkClosed()  # type: ignore[attr-defined]
        if not self._pending:
            self._pending = next(self._lines, (0, ""))[1]
        if size is None or size < 0 or size >= len(self._pending):
            line, self._pending = self._pending, ""
        else:
            line, self._pending = self._pending[:size], self._pending[size:]
        return line

    def read(self, size: int | None = -1) -> str:
        parts: list[str] = []
        n = 0
        while size is None or size < 0 or n < size:
            line = self.readline(-1 if size is None or size < 0 else size - n)
            if not line:
                break
            parts.append(line)
            n += len(line)
        return "".join(parts)

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        self._lines.close()
        super().close()


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open a UTF-8 text file for reading, transparently decompressing ``.gz`` (by magic bytes).

    A missing file, bad UTF-8 and a corrupt gzip stream raise :class:`DataError` naming the file
    and line (the file is opened here, so a missing one fails at once)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    return _CheckedText(p)  # type: ignore[return-value]


def iter_jsonl(path: str | os.PathLike[str], fixes: Counter | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_no, obj)`` for every non-blank line of a JSONL(.gz) file (1-based lines).

    Blank lines are skipped (trailing newlines are common); anything else that is not valid JSON
    raises :class:`DataError` ``"<path>:<line>: <reason>"``: a corrupt line in a dataset means the
    dump is broken and must be looked at, not quietly dropped. A leading BOM is stripped; lone
    surrogates are replaced by U+FFFD and counted in ``fixes`` (``lone_surrogates_replaced``)."""
    p = Path(path)
    for line_no, line in iter_lines(p):
        if not line.strip():
            continue
        try:
            obj = _parsed(line, fixes)
        except json.JSONDecodeError as err:
            reason = f"{p}:{line_no}: invalid JSON ({err.msg} at column {err.colno})"
            raise DataError(_damaged_gzip(p, line_no, reason) if _is_gzip(p) else reason) from None
        yield line_no, obj


def iter_jsonl_range(path: str | os.PathLike[str], start: int, end: int) -> Generator[tuple[int, Any], None, int]:
    """:func:`iter_jsonl` over the lines of a plain (not gzip) file that *start* in the byte range
    ``[start, end)``; line numbers count from 1 at the range's first line. The generator returns
    the number of lines in the range (blank ones included).

    Why: a scattered stage splits one big file into byte ranges, one per job. A line belongs to
    the range holding its first byte, so consecutive ranges read every line exactly once. A job
    does not know how many lines come before its range; the errors here count them (on the error
    path only) and name the file's real line, as :func:`iter_jsonl` does."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    with open(p, "rb") as fh:
        pos = start
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":  # inside a line: it belongs to the range before
                pos = start + len(fh.readline())
        fh.seek(pos)
        line_no = 0
        try:
            for raw in fh:
                if pos >= end:
                    break
                line_no += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise DataError(_utf8_error(p, False, _line_at(p, pos), pos, raw, err)) from None
                at, pos = pos, pos + len(raw)
                if at == 0 and text.startswith(BOM):
                    text = text[1:]
                if not text.strip():
                    continue
                try:
                    obj = _parsed(text, None)
                except json.JSONDecodeError as err:
                    raise DataError(f"{p}:{_line_at(p, at)}: invalid JSON ({err.msg} at column "
                                    f"{err.colno})") from None
                yield line_no, obj
        except OSError as err:
            raise DataError(_read_error(p, False, _line_at(p, pos) - 1, pos, err)) from None
    return line_no


def _line_at(path: Path, offset: int) -> int:
    """The 1-based number of the line starting at byte ``offset`` (counts the newlines before)."""
    n = 0
    with open(path, "rb") as fh:
        while offset > 0:
            block = fh.read(min(offset, 1 << 24))
            if not block:
                break
            n += block.count(b"\n")
            offset -= len(block)
    return n + 1


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with the gzip magic bytes (how every reader here detects gzip)."""
    return _is_gzip(path)


def _is_gzip(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def drop_summary(counts: Mapping[str, int], examples: Mapping[str, Sequence[str]], shown: int = 3) -> str:
    """``"reason: n (e.g. file:line, ...); ..."``, most frequent reason first, on one line.

    For the error a stage raises when filtering left nothing: the user needs to see *why* every
    record was dropped, not only that none is left."""
    parts = []
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        where = list(examples.get(reason, ()))[:shown]
        parts.append(f"{reason}: {n}" + (f" (e.g. {', '.join(where)})" if where else ""))
    return "; ".join(parts) if parts else "no records read"


def run_stage(stage: str, run: Callable[[Any], dict[str, Any]], args: Any,
              summary: Callable[[dict[str, Any]], str]) -> int:
    """The CLI tail every data stage shares: run, report a DataError as one line and exit 2,
    otherwise print a one-line summary of the manifest and exit 0."""
    try:
        manifest = run(args)
    except DataError as err:
        print(f"embtune {stage}: error: {one_line(err)}", file=sys.stderr)
        return 2
    print(summary(manifest))
    return 0
