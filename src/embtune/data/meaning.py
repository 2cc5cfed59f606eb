"""Checks of what evaluation and training tables mean, not only their columns.

Why: a table can have the right columns and types and still be wrong in a way that changes
every number computed from it without an error: a positive that equals one of its negatives (a
comparison that cannot be won), a paper listed as its own negative, ``positives`` stored as one
string (iterated letter by letter: thousands of "comparisons"), a duplicated id (counted twice).
Each check raises :class:`~embtune.core.errors.DataError` naming the file, the row and what was
expected. Texts are compared after :func:`normalised` (case and whitespace), the way a person
would call two texts the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.errors import DataError


def normalised(text: Any) -> str:
    """Case-folded, whitespace-collapsed text (``"A  b"`` and ``"a b"`` are one text)."""
    return " ".join(str(text).split()).casefold()


def check_unique(path: str | Path, frame: pl.DataFrame, column: str) -> None:
    """Every value of ``column`` once (ids)."""
    if column not in frame.columns:
        return
    dup = frame[column].is_duplicated()
    if dup.any():
        rows = dup.arg_true().to_list()
        raise DataError(f"{path}: {column} {frame[column][rows[0]]!r} appears in rows {rows[0]} and {rows[1]}; "
                        f"expected unique {column} values")


def _text_column(path: str | Path, frame: pl.DataFrame, column: str) -> None:
    """Text in every row (an integer column would be read as digits)."""
    if frame[column].dtype not in (pl.String, pl.Utf8) or frame[column].null_count():
        raise DataError(f"{path}: column {column!r} has type {frame[column].dtype} with "
                        f"{frame[column].null_count()} nulls; expected text in every row")


def _list_column(path: str | Path, frame: pl.DataFrame, column: str) -> None:
    dtype = frame[column].dtype
    if not (isinstance(dtype, pl.List) and dtype.inner in (pl.String, pl.Utf8, pl.Null)):
        raise DataError(f"{path}: column {column!r} has type {dtype}; expected a list of strings per row "
                        "(one string would be read letter by letter)")


def check_grouped(path: str | Path, frame: pl.DataFrame) -> None:
    """A grouped evaluation table (query, positives[], negatives[]): lists of strings, at least one
    positive and one negative per row, no positive equal to a negative of its row, unique ids."""
    _text_column(path, frame, "query")
    for column in ("positives", "negatives"):
        _list_column(path, frame, column)
    check_unique(path, frame, "sample_id")
    for i, (pos, neg) in enumerate(zip(frame["positives"].to_list(), frame["negatives"].to_list(), strict=True)):
        if not pos or not neg:
            raise DataError(f"{path}: row {i}: {'positives' if not pos else 'negatives'} is empty; expected at "
                            "least one positive and one negative per query")
        clash = {normalised(p) for p in pos if p is not None} & {normalised(n) for n in neg if n is not None}
        if clash:
            raise DataError(f"{path}: row {i}: a positive is also a negative ({next(iter(clash))[:60]!r}); "
                            "expected every positive to differ from the row's negatives")


def check_triplets(path: str | Path, frame: pl.DataFrame, columns: tuple[str, str, str]) -> None:
    """(anchor, positive, negative) rows: the three texts differ (a paper is not its own
    negative, nor its own positive)."""
    for c in columns:
        _text_column(path, frame, c)
    a, p, n = (frame[c].to_list() for c in columns)
    for i, texts in enumerate(zip(a, p, n, strict=True)):
        keys = [normalised(t) for t in texts]
        for (x, y) in ((1, 2), (0, 2), (0, 1)):
            if keys[x] == keys[y]:
                raise DataError(f"{path}: row {i}: {columns[x]} and {columns[y]} are the same text "
                                f"({str(texts[x])[:60]!r}); expected three different texts per triplet")


def _count_problem(errors: Any, total: Any) -> str | None:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (errors, total))
    if not numbers:
        return None
    if not (0 <= errors <= total):
        return f"errors {errors!r} of total {total!r}; expected 0 <= errors <= total"
    return None


def check_counts(path: str | Path, obj: Any, at: str = "") -> None:
    """Every ``{"errors", "total"}`` pair in a JSON tree (pnd.json): 0 <= errors <= total."""
    if isinstance(obj, dict):
        why = _count_problem(obj.get("errors"), obj.get("total")) if "errors" in obj and "total" in obj else None
        if why:
            raise DataError(f"{path}: field {at or '(top)'}: {why}")
        for key, value in obj.items():
            check_counts(path, value, f"{at}.{key}" if at else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            check_counts(path, value, f"{at}[{i}]")


def check_count_rows(path: str | Path, frame: pl.DataFrame) -> None:
    """A table of error counts (xnli_counts.parquet): 0 <= errors <= total on every row."""
    if not {"errors", "total"} <= set(frame.columns):
        raise DataError(f"{path}: columns {frame.columns}; expected errors and total")
    for i, (errors, total) in enumerate(zip(frame["errors"].to_list(), frame["total"].to_list(), strict=True)):
        why = _count_problem(errors, total)
        if why:
            raise DataError(f"{path}: row {i}: {why}")
