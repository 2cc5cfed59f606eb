"""Which jobs of a Snakemake run failed for good, read from Snakemake's own log.

Why: a job killed from outside (a cgroup OOM kill, a node failure, ``kill -9``, SLURM's hard
time limit) leaves no output, so the runs table, the fits and the query tables would wait for it
forever. Snakemake's ``onerror`` handler gets the run's log; this module reads it and returns the
failures that Snakemake gave up on (after its last ``--retries`` attempt), with the rule, the
wildcards, the outputs and what the executor said (SLURM job id and state). Turning them into
failure records is :mod:`embtune.stages.mark_failed`'s job.

Snakemake 9 prints a job as ``[local]rule NAME:`` followed by indented ``key: value`` lines
(``jobid``, ``output``, ``wildcards``, ...), and a failure as ``Error in rule NAME:`` with the
same layout plus ``message`` and ``external_jobid``; a retry follows with ``Trying to restart job
N.``. Both are parsed by key, so a new key or an order change does not break the reader.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

_HEADER = re.compile(r"^(?:(?:local)?rule (\w+)|Error in rule (\w+)):\s*$")
_FIELD = re.compile(r"^ {4}(\w+): ?(.*)$")
_RESTART = re.compile(r"^Trying to restart job (\d+)\.")
_LOGFILE = re.compile(r"^Logfile .*:\s*$")


@dataclasses.dataclass(frozen=True)
class FailedJob:
    """A job Snakemake gave up on: its rule, wildcards, outputs and the executor's message."""

    rule: str
    jobid: str
    wildcards: dict[str, str]
    output: tuple[str, ...]
    message: str
    external_jobid: str

    def detail(self) -> str:
        """One line for the failure record: what killed it, as far as Snakemake knows."""
        parts = [f"rule {self.rule} failed for good"]
        if self.external_jobid:
            parts.append(f"SLURM job {self.external_jobid}")
        if self.message and self.message != "None":
            parts.append(self.message)
        return "; ".join(parts)


def _wildcards(text: str) -> dict[str, str]:
    """``run=a, batch=b`` -> {run: a, batch: b} (Snakemake's wildcard line; values hold no ', ')."""
    out = {}
    for item in text.split(", "):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _own_lines(lines: list[str]) -> list[str]:
    """The controller's own lines: without the job logs it prints after a failure
    (``show-failed-logs``: ``Logfile X:`` then the log between two ``=====`` rules), whose
    blocks are the job-step Snakemake's (job id 0 there) and would read as failures here."""
    out, i = [], 0
    while i < len(lines):
        if _LOGFILE.match(lines[i]) and i + 1 < len(lines) and lines[i + 1].startswith("====="):
            rule, i = lines[i + 1].rstrip(), i + 2     # closed by the same rule (a job log has its own
            while i < len(lines) and lines[i].rstrip() != rule:     # shorter "=====" under SNAKEMAKE)
                i += 1
        else:
            out.append(lines[i])
        i += 1
    return out


def _blocks(lines: list[str]) -> Iterable[tuple[str, str, dict[str, str]]]:
    """(kind, rule, fields) per job header or error block; kind is 'job', 'error' or 'restart'."""
    i = 0
    while i < len(lines):
        restart = _RESTART.match(lines[i])
        if restart:
            yield "restart", "", {"jobid": restart.group(1)}
            i += 1
            continue
        head = _HEADER.match(lines[i])
        if not head:
            i += 1
            continue
        fields: dict[str, str] = {}
        i += 1
        while i < len(lines) and lines[i].startswith("    "):
            field = _FIELD.match(lines[i])
            if field:
                fields.setdefault(field.group(1), field.group(2).strip())
            i += 1
        yield ("job", head.group(1), fields) if head.group(1) else ("error", head.group(2), fields)


def final_failures(log_text: str) -> list[FailedJob]:
    """The jobs whose last error was not followed by a restart: Snakemake's final failures, in
    the order they failed. The wildcards come from the job's own header (an error block has
    none), matched by job id."""
    wildcards: dict[str, dict[str, str]] = {}
    failed: dict[str, FailedJob] = {}
    for kind, rule, fields in _blocks(_own_lines(log_text.splitlines())):
        jobid = fields.get("jobid", "")
        if kind == "job":
            wildcards[jobid] = _wildcards(fields.get("wildcards", ""))
        elif kind == "restart":
            failed.pop(jobid, None)
        elif jobid:
            failed.pop(jobid, None)          # re-inserted: the order is the order of the last failure
            failed[jobid] = FailedJob(
                rule=rule, jobid=jobid, wildcards=wildcards.get(jobid, {}),
                output=tuple(p for p in fields.get("output", "").split(", ") if p),
                message=fields.get("message", ""), external_jobid=fields.get("external_jobid", ""))
    return list(failed.values())
