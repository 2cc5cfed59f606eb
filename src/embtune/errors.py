"""The one exception type for bad input, and how its message is shown.

Why one type: every stage reads files a person (or another stage) wrote, and a broken file must
stop the stage with a message that says which file, which line or row, and what was expected,
not with a traceback from deep inside a parser. Stages raise :class:`DataError`; the ``embtune``
command (:mod:`embtune.cli`) prints ``embtune <stage>: error: <message>`` and exits 2.
"""

from __future__ import annotations

EXIT_DATA_ERROR = 2  # the usual exit status for bad usage/input (argparse uses it too)


class DataError(ValueError):
    """Bad input data; the message names the file (and line or row) and says what was expected.

    A ``ValueError`` so that code catching ``ValueError`` around parsing keeps working."""


def one_line(err: BaseException | str) -> str:
    """A library's error message on one line (pyarrow/polars messages span several lines)."""
    return " ".join(str(err).split())
