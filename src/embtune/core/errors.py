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


EXIT_BUG = 1   # an unexpected error: a traceback and a request to report it


def _malformed_types() -> tuple[type[BaseException], ...]:
    """Parser errors of the libraries stages read files with (imported only if already loaded:
    a stage that never imported polars cannot have raised its error)."""
    import sys

    found: list[type[BaseException]] = [UnicodeDecodeError]
    for module, names in (("polars.exceptions", ("PolarsError",)), ("pyarrow.lib", ("ArrowException",)),
                          ("yaml", ("YAMLError",)), ("safetensors", ("SafetensorError",)),
                          ("json", ("JSONDecodeError",))):
        mod = sys.modules.get(module)
        found += [getattr(mod, n) for n in names if mod is not None and isinstance(getattr(mod, n, None), type)]
    return tuple(found)


_DEVICE_TEXTS = {28: ("No space left on device", "os error 28", "StorageFull"),
                 122: ("Disk quota exceeded", "os error 122"),
                 30: ("Read-only file system", "os error 30", "ReadOnlyFilesystem")}


def device_errno(err: BaseException) -> int | None:
    """ENOSPC / EDQUOT / EROFS when ``err`` is a full or read-only device, also when a library
    (polars, safetensors: Rust I/O) reports it as its own error type with the OS text inside."""
    import errno as errno_

    if isinstance(err, OSError) and err.errno in (errno_.ENOSPC, errno_.EDQUOT, errno_.EROFS):
        return err.errno
    text = str(err)
    for code, needles in _DEVICE_TEXTS.items():
        if any(n in text for n in needles):
            return code
    return None


def known_failure(err: BaseException) -> str | None:
    """One line for a failure that is the input's or the machine's, not the code's: a full or
    read-only disk, a permission, a missing file, a malformed file, input nested too deeply,
    memory; None for anything else (a bug: the caller shows its traceback)."""
    import errno as errno_

    if isinstance(err, DataError):
        return one_line(err)
    code = device_errno(err)
    if code is not None and not isinstance(err, OSError):
        return (f"{errno_.errorcode.get(code, code)} while writing ({type(err).__name__}: {one_line(err)[:300]}); "
                "expected room to write on that device (the previous output is left as it was)")
    if isinstance(err, OSError) and err.errno is not None:
        where = err.filename if err.filename is not None else "output"
        name = errno_.errorcode.get(err.errno, str(err.errno))
        hint = {errno_.ENOSPC: "expected room to write on that device (the previous output is left as it was)",
                errno_.EDQUOT: "expected room in the disk quota",
                errno_.EROFS: "expected a writable filesystem",
                errno_.EACCES: "expected a path this user may read and write",
                errno_.EPERM: "expected a path this user may change (not immutable)",
                errno_.ENOENT: "expected it to exist"}.get(err.errno, "expected a readable input and a writable output")
        return f"{where}: {err.strerror or one_line(err)} ({name}); {hint}"
    if isinstance(err, RecursionError):
        return f"input nested too deeply to read ({one_line(err)}); expected a flat, well-formed file"
    if isinstance(err, MemoryError):
        return "out of memory; expected inputs that fit this machine's memory (or more memory)"
    if isinstance(err, _malformed_types()):
        return f"malformed input ({type(err).__name__}: {one_line(err)[:500]}); expected a well-formed file"
    return None
