"""The suite's own layout: every test file sits in a tier, the files that share
the demo run or a SLURM cluster are scheduled on one xdist worker, and no test name is written twice."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

from conftest import XDIST_GROUPS

TESTS = Path(__file__).resolve().parents[1]
SUBPACKAGES = {p.name for p in (TESTS.parent / "src/embtune").iterdir() if (p / "__init__.py").is_file()}


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_file_sits_in_a_tier() -> None:
    misplaced = []
    for f in _test_files():
        parts = f.relative_to(TESTS).parts
        ok = (parts[0] in {"contracts", "e2e"} and len(parts) == 2) or \
             (parts[0] == "unit" and len(parts) == 3 and parts[1] in SUBPACKAGES | {"core"})
        if not ok:
            misplaced.append(str(f.relative_to(TESTS)))
    assert misplaced == [], f"put these under tests/unit/<subpackage>/, tests/contracts/ or tests/e2e/: {misplaced}"


def test_files_sharing_the_demo_run_or_a_slurm_cluster_share_a_worker() -> None:
    want = {}
    for f in _test_files():
        if f == Path(__file__).resolve():
            continue
        text = f.read_text()
        key = str(f.relative_to(TESTS.parent))
        if "demo_run" in text:
            want[key] = "demo"
        if "slurm_cluster" in text:
            want[key] = "slurm"
    assert want == XDIST_GROUPS


def test_no_test_name_is_written_twice() -> None:
    seen = collections.defaultdict(list)
    for f in _test_files():
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                seen[node.name].append(str(f.relative_to(TESTS)))
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}
