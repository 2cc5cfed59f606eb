"""One plan per invocation.

The plan (training runs before and after the GPU-hour cap, skips, study memberships, query runs
and their memberships) is expanded once: the params validation expands it to check it and
returns it (:func:`embtune.plan.config.validate_plan`), the workflow's common.smk reads that, the
``plan`` stage writes the training part as JSON, and ``appendix-tables`` reads that JSON.
The tests count the expansions by wrapping ``sweep.expand_training`` and ``query_sweep.expand_query``
(every caller reaches them through the module: config_checks imports them when it runs).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from embtune.plan import query_sweep, sweep
from embtune.plan.config import load_params, load_plan
from embtune.plan.query_sweep import query_plan
from embtune.plan.sweep import training_plan

REPO = Path(__file__).resolve().parents[2]
DEMO = [REPO / "params.yaml", REPO / "presets/demo.yaml"]

#: Runs Snakemake's own command line in this interpreter, counting the expansions, then prints them.
COUNTING_SNAKEMAKE = """
import atexit, json, sys
from embtune.plan import query_sweep
from embtune.plan import sweep
counts = {"training": 0, "query": 0}
def counting(key, real):
    def wrapper(*args, **kwargs):
        counts[key] += 1
        return real(*args, **kwargs)
    return wrapper
sweep.expand_training = counting("training", sweep.expand_training)
query_sweep.expand_query = counting("query", query_sweep.expand_query)
atexit.register(lambda: print("EXPANSIONS " + json.dumps(counts), file=sys.stderr))
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often this test expands each part of the plan."""
    counts = {"training": 0, "query": 0}
    for key, module, name in (("training", sweep, "expand_training"), ("query", query_sweep, "expand_query")):
        real = getattr(module, name)

        def wrapper(*args, _real=real, _key=key, **kwargs):
            counts[_key] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)
    return counts


def test_validation_returns_the_plan_and_expands_it_once(expansions: dict[str, int]) -> None:
    params, plan = load_plan(DEMO)
    assert expansions == {"training": 1, "query": 1}
    # the same plan as an independent expansion of the same params (the JSON the rules pass)
    runs, skipped, members = training_plan(params)
    qruns, qmembers = query_plan(params)
    assert [r.to_dict() for r in plan.runs] == runs and plan.skipped == skipped and plan.members == members
    assert [q.to_dict() for q in plan.qruns] == qruns and plan.qmembers == qmembers
    assert plan.candidates == plan.runs       # the demo has no GPU-hour cap: nothing dropped
    assert load_params(DEMO) == params


@pytest.mark.slow
def test_snakemake_dry_run_on_params_yaml_expands_each_plan_once_under_30_s_cpu() -> None:
    """``snakemake -n`` on params.yaml (the paper's ~1,000 training runs): one training and one
    query expansion in the whole invocation (there were 3 and 2), and < 30 s CPU (the issue's bar;
    measured 9.3 s user + 0.5 s system on the 2-core CI box)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", COUNTING_SNAKEMAKE, "-n", "--cores", "1", "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("EXPANSIONS "))
    assert json.loads(line.split(" ", 1)[1]) == {"training": 1, "query": 1}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 30.0, f"snakemake -n took {cpu:.1f} s CPU"


def test_the_plan_stage_writes_what_appendix_tables_reads(tmp_path, expansions: dict[str, int]) -> None:
    """``embtune plan --out-plan``: the memberships and skips of the training plan, as JSON; the
    appendix-tables stage reads its memberships from there instead of expanding the grid."""
    from embtune.stages import plan as plan_stage

    params = load_params([*DEMO, REPO / "presets/test.yaml"])
    grid = json.dumps({k: params[k] for k in ("models", "train", "paths")})
    out = tmp_path / "plan.json"
    expansions.update(training=0, query=0)             # load_params above expanded once
    assert plan_stage.main(["--params-json", grid, "--flops-per-second", "7.8e13", "--out-plan", str(out)]) == 0
    assert expansions["training"] == 1
    written = json.loads(out.read_text())
    runs, skipped, members = training_plan(params)
    assert written["runs"] == [r["run_id"] for r in runs] and written["members"] == members
    assert written["skipped"] == [{"run_id": s.run_id, "reason": s.reason, "status": s.status} for s in skipped]
    assert {m["study"] for m in written["members"]} - {"main"}      # the test preset has studies
