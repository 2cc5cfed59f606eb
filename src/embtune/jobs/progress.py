"""Progress with ETA for the long loops (training, query tuning, PND evaluation, BGE preparation).

One helper for all of them: on a terminal a tqdm bar (count, rate, ETA and the current loss as
postfix); elsewhere (SLURM, a log file, any non-TTY) the same facts as a plain line every
``every_s`` seconds and at the end, because tqdm's carriage-return redraws turn a log file into
one unreadable line. tqdm's own formatting (``format_interval``, ``format_sizeof``) is reused.
``$EMBTUNE_PROGRESS=0`` (set by a stage's ``--no-progress``) turns both off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")
ENV = "EMBTUNE_PROGRESS"
#: Seconds between two plain lines (non-TTY); ``$EMBTUNE_PROGRESS_EVERY`` overrides.
EVERY_S = 30.0


def disable() -> None:
    """Turn progress off for this process and its children (a stage's ``--no-progress``)."""
    os.environ[ENV] = "0"


def enabled() -> bool:
    return os.environ.get(ENV, "1") not in ("0", "false", "no", "")


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class Progress:
    """``update(n, **postfix)`` after each unit of work; ``close()`` at the end (or use ``with``)."""

    def __init__(self, total: int | None, desc: str, *, unit: str = "it", initial: int = 0,
                 stream: IO[str] | None = None, tty: bool | None = None, every_s: float | None = None,
                 enable: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.on = enable and enabled()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.every = float(os.environ.get("EMBTUNE_PROGRESS_EVERY", every_s if every_s is not None else EVERY_S))
        self.start = self.last = time.monotonic()
        self.initial = self.printed = initial
        self.postfix: dict[str, Any] = {}
        self.bar = None
        if self.on and self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, file=self.stream,
                            dynamic_ncols=True, leave=False)

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.n += n
        self.postfix.update(postfix)
        if not self.on:
            return
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix({k: _fmt(v) for k, v in postfix.items()}, refresh=False)
            self.bar.update(n)
        elif time.monotonic() - self.last >= self.every:
            self._line()

    def line(self) -> str:
        """The plain progress line: count, percent, rate, elapsed, ETA, postfix."""
        from tqdm import tqdm

        elapsed = time.monotonic() - self.start
        done = self.n - self.initial
        rate = done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.desc}: {self.n}" + (f"/{self.total} ({100 * self.n / self.total:.0f}%)" if self.total else "")
                 + f" {self.unit}", f"{rate:.3g} {self.unit}/s", f"elapsed {tqdm.format_interval(elapsed)}"]
        if self.total and rate > 0:
            parts.append(f"ETA {tqdm.format_interval((self.total - self.n) / rate)}")
        parts += [f"{k} {_fmt(v)}" for k, v in self.postfix.items()]
        return ", ".join(parts)

    def _line(self) -> None:
        self.last, self.printed = time.monotonic(), self.n
        print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.on and self.n != self.printed:       # the final count, unless just printed
            self._line()
        self.on = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def iterate(items: Iterable[T], desc: str, *, total: int | None = None, unit: str = "it",
            enable: bool = True, **kwargs: Any) -> Iterator[T]:
    """``items`` with progress (one unit per item)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with Progress(total, desc, unit=unit, enable=enable, **kwargs) as bar:
        for item in items:
            yield item
            bar.update(1)
