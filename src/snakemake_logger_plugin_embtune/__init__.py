"""A Snakemake console a person can watch: one progress line, the job logs' folder, and failures.

Snakemake's default console prints every job's rule block (inputs, outputs, wildcards,
resources, reason, shell command): ~15 lines a job, 3,500 lines for the demo's 212 jobs, where
the one fact a person wants, how far along and how long to go, never appears. This handler
(selected with ``snakemake --logger embtune``; ``make demo`` does) prints instead:

- once, where the job logs are (``tail -f`` them), and how many jobs are planned;
- one progress line, rewritten in place on a terminal and printed once per finished job
  otherwise: jobs done/total, the rules running now, elapsed time and an ETA from the mean time
  per finished job so far;
- every failed job as a few lines: the rule, its wildcards, its log and the log's last lines;
- Snakemake's own warnings and errors, each line cut to :data:`MAX_WIDTH` characters.

Plain ``snakemake`` still prints every job. Written by hand because Snakemake's logger plugin
interface gives the events but no progress console of this kind is published as a plugin.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

MAX_WIDTH = 300
LOG_TAIL_LINES = 12
# Snakemake's plain INFO messages worth a line: the verdict and where its own log went.
SUMMARY_PREFIXES = ("Nothing to be done", "Complete log")


def clock(seconds: float) -> str:
    """``1h02m``, ``14m05s`` or ``42s``: short enough for one line."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def eta(elapsed: float, done: int, total: int) -> str | None:
    """Time left at the mean time per finished job so far; None before the first job ends."""
    if done <= 0 or total <= done:
        return None
    return clock(elapsed / done * (total - done))


def cut(line: str, width: int = MAX_WIDTH) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def log_folder(paths: list[str]) -> str | None:
    """The folder holding a job's log files: the deepest common folder of its first log's
    ``logs`` component, so that one ``tail -f`` line covers every rule's logs."""
    if not paths:
        return None
    parts = Path(paths[0]).parts
    if "logs" in parts:
        return str(Path(*parts[: parts.index("logs") + 1]))
    return str(Path(paths[0]).parent)


class ProgressState:
    """What the progress line shows; pure, so it is tested without Snakemake."""

    def __init__(self, now: float) -> None:
        self.start = now
        self.done = 0
        self.total = 0
        self.running: dict[int, str] = {}

    def started(self, jobid: int, rule: str) -> None:
        self.running[jobid] = rule

    def finished(self, jobid: int) -> None:
        self.running.pop(jobid, None)

    def line(self, now: float) -> str:
        rules = Counter(self.running.values())
        current = ", ".join(f"{r}×{n}" if n > 1 else r for r, n in rules.most_common(3))
        if len(rules) > 3:
            current += ", ..."
        left = eta(now - self.start, self.done, self.total)
        pct = f"{100 * self.done / self.total:.0f}%" if self.total else "?"
        text = f"[{self.done}/{self.total or '?'} jobs, {pct}] {clock(now - self.start)} elapsed"
        text += f", ETA {left}" if left else ""
        text += f" | running: {current}" if current else ""
        return cut(text)


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        self.stream = sys.stderr
        self.tty = self.stream.isatty() and not os.environ.get("CI")
        self.state = ProgressState(time.monotonic())
        self.logs_shown = False
        self.live = False

    # -- the interface's declarations
    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    # -- events
    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._emit(record)
        except Exception:  # a console must never take the workflow down
            self.handleError(record)

    def _emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event == LogEvent.JOB_INFO:
            self.state.started(record.jobid, record.rule_name)
            if not self.logs_shown and getattr(record, "log", None):
                folder = log_folder(list(record.log))
                self._print(f"job logs: {folder}/, one file a job (follow one: tail -f {record.log[0]})")
                self.logs_shown = True
            self._progress()
        elif event == LogEvent.JOB_FINISHED:
            self.state.finished(record.job_id)
        elif event == LogEvent.PROGRESS:
            self.state.done, self.state.total = record.done, record.total
            self._progress(force_print=True)
        elif event == LogEvent.JOB_ERROR:
            self._job_error(record)
        elif event == LogEvent.RUN_INFO and isinstance(getattr(record, "stats", None), dict):
            total = int(record.stats.get("total", 0))
            if total:
                self.state.total = total
                self._print(f"{total} jobs to run")
        elif event is None and record.levelno >= logging.WARNING:
            for line in str(record.getMessage()).splitlines():
                self._print(line)
        elif event is None and str(record.getMessage()).startswith(SUMMARY_PREFIXES):
            self._print(str(record.getMessage()).splitlines()[0])

    def _job_error(self, record: logging.LogRecord) -> None:
        self.state.finished(record.jobid)
        wildcards = ", ".join(f"{k}={v}" for k, v in dict(getattr(record, "wildcards", None) or {}).items())
        self._print(f"FAILED: rule {record.rule_name} (job {record.jobid}) {wildcards}".rstrip())
        for log in getattr(record, "log", None) or []:
            self._print(f"  log: {log}")
            path = Path(log)
            if path.is_file():
                tail = path.read_text(errors="replace").replace("\r", "\n").splitlines()[-LOG_TAIL_LINES:]
                for line in tail:
                    self._print(f"  | {line}")

    # -- output
    def _progress(self, force_print: bool = False) -> None:
        text = self.state.line(time.monotonic())
        if self.tty:
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()
            self.live = True
        elif force_print:
            self._print(text)

    def _print(self, line: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.live = False
        self.stream.write(cut(line) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.live = False
        super().close()
