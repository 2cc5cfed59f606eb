"""The members of a batch stage (``train-batch``, ``tune-query-batch``): reading them, deciding
whether a member's earlier outputs can be reused, and staging them into the batch's folder.

Why one module: both batch stages run several runs in one process and hand each run's outputs to
a link job (``embtune link-outputs``) through the same folder layout, so the checks on their
``--batch-json``, the reuse rule (same run, same code version) and the hard-linking must not
drift apart. The stages differ only in their member keys, the run files they write and what
"the same run" means; those come in as arguments. (The stages cannot import each other: a stage's
imports are part of its rerun hash, so tune-query-batch importing train-batch would re-run every
query run whenever training code changed.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError, one_line
from embtune.core.io import atomic_dir, link_tree
from embtune.core.layout import MANIFEST_JSON


def read_members(raw: str, keys: Sequence[str], run_files: Sequence[str]) -> list[dict[str, Any]]:
    """The ``--batch-json`` members (a JSON list, or a file holding it), each checked for
    ``keys``: a data error names the member and what is missing. A tracker folder named like one
    of ``run_files`` is refused, because staging puts it beside them in one folder."""
    try:
        members = json.loads(Path(raw).read_text() if raw.lstrip()[:1] not in "[{" else raw)
    except ValueError as err:
        raise DataError(f"--batch-json: {one_line(err)}") from None
    if not isinstance(members, list) or not members:
        raise DataError("--batch-json: expected a non-empty JSON list of members")
    for i, member in enumerate(members):
        missing = [k for k in keys if not isinstance(member, dict) or k not in member]
        if missing:
            raise DataError(f"--batch-json: member {i}: missing {', '.join(missing)} (expected {', '.join(keys)})")
        if Path(member["previous_tracking"]).name in run_files:
            raise DataError(f"--batch-json: member {i}: tracker folder {member['previous_tracking']!r} is named "
                            f"like a run file ({', '.join(run_files)})")
    return members


def up_to_date(run_dir: Path, code_version: str, same_run: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether ``run_dir`` holds a finished run (ok or a failure record) made by this code version
    whose manifest ``same_run`` accepts. Runs made by the one-run stages record no code version,
    so they are never reused; an unreadable or malformed manifest is not believed either."""
    try:
        manifest = json.loads((run_dir / MANIFEST_JSON).read_text())
        return manifest.get("code_version") == code_version and bool(same_run(manifest))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def stage_member(src_run: Path, src_tracking: Path, stage: Path, tracking_name: str,
                 run_files: Sequence[str]) -> None:
    """The member's folder in the batch output, hard-linked: the ``run_files`` its stage writes
    (not the evaluations a previous run folder may hold beside them) and its tracker folder under
    ``tracking_name`` (an empty one where nothing was tracked). Written whole or not at all."""
    with atomic_dir(stage) as tmp:
        link_tree(src_run, [tmp / name for name in run_files if (src_run / name).exists()])
        if src_tracking.is_dir():
            link_tree(src_tracking.parent, [tmp / src_tracking.name])
            if src_tracking.name != tracking_name:
                (tmp / src_tracking.name).rename(tmp / tracking_name)
        else:
            (tmp / tracking_name).mkdir()
