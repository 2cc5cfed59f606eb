"""CI exercises everything the paper-scale params.yaml selects.

Why: a path only params.yaml selects (a narrow-domain sweep, the held-out model, both towers) is
otherwise first run on a cluster after days of GPU time. Two checks:

1. Keys and value kinds (embtune.plan.params_coverage): every (key path, value kind) params.yaml uses
   is used by the EFFECTIVE params (params.yaml + presets, merged by embtune.plan.config.load_params as
   the workflow merges them) of some preset stack CI runs end to end, and every choice the schema
   allows for a per-run key (study base/cross, query sweeps/grids) is too. What CI cannot run
   offline is listed in EXEMPT with the reason; an exemption that is no longer needed fails.
2. The DAG: `snakemake -n` of the pipeline test's stack plans every rule of workflow/rules/ (but
   the two download rules), every evaluation set and tuning set of the schema, the held-out fit,
   the difficulty levels, the App. K exclusions and the tuned document tower; it trains every
   method params.yaml trains, and a registered method it does not train takes only branches of
   the generic stages a trained one takes (``switches``: a new method is its registry entry, its
   schema section and its own test, with no CI training run of its own unless it brings a branch).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embtune.core import pnd_sets
from embtune.models import methods as registry
from embtune.plan import params_coverage as pc
from embtune.plan.config import load_params, load_schema
from embtune.plan.sweep import training_plan

REPO = Path(__file__).resolve().parents[2]

#: The preset stacks CI runs end to end through Snakemake, and the test that runs each.
CI_STACKS = {
    "tests/helpers_pipeline.py": ["presets/demo.yaml", "presets/test.yaml"],   # test_pipeline_demo.py
    # params.yaml's hub paths (models, tokenizer, encoder, hf:// datasets) against a loopback hub
    "tests/e2e/test_rehearsal.py": ["presets/demo.yaml", "presets/ci.yaml", "presets/rehearsal.yaml"],
}

#: (key path, kind) of params.yaml that no CI preset can exercise, and why.
EXEMPT = {
    ("data.mteb.source", "=mteb"): "downloads MTEB data through the mteb library (network); CI copies "
                                   "data/demo/mteb (source: local)",
    ("data.mteb.local_dir", "null"): "only meaningful with data.mteb.source: mteb (above)",
    ("train.freeze.fractions", "=auto"): "planning-time alias resolved by sweep.freeze_fractions to "
                                         "k/6 or k/8 (tests/unit/core/test_sweep.py); the 2-block tiny suite "
                                         "resolves it to nothing, a 6-block one would add 10 runs; "
                                         "the freeze runs themselves use explicit fractions",
    ("train.variant_budgets", "{}"): "params.yaml's default (every variant at train.budgets): a preset "
                                     "layered on demo.yaml cannot empty the mapping it sets (mappings "
                                     "merge key by key); the paper plan (tests/unit/scaling/test_studies.py) runs it",
    ("train.variant_models", "{}"): "params.yaml's default (every variant on every model): a preset layered on "
                                    "demo.yaml cannot empty the mapping it sets; the paper plan (tests/unit/core/"
                                    "test_sweep.py) runs it",
}
EXEMPT_ALTERNATIVES = {
    ("train.freeze.fractions", "=auto"): EXEMPT[("train.freeze.fractions", "=auto")],
    ("train.compile", "=inductor"): "generates C++ kernels on a CPU: its first step took 260 s for a 2-layer model "
                                    "(benchmarks/kernels_measured.json), more than CI's whole budget for it; "
                                    "presets/test.yaml runs the same compile path with aot_eager (dynamo tracing, "
                                    "dynamic bucket widths) and make gpu-check step 6 runs inductor on a GPU",
}


def _effective(stack: list[str]) -> dict:
    return load_params([REPO / "params.yaml", *(REPO / p for p in stack)])


@pytest.fixture(scope="module")
def reference() -> dict:
    return load_params([REPO / "params.yaml"])


@pytest.fixture(scope="module")
def ci_params() -> list[dict]:
    return [_effective(stack) for stack in CI_STACKS.values()]


# ------------------------------------------------------------------------ which methods CI trains
def switches(method: registry.Method) -> set[tuple[str, object]]:
    """The registry entry's switches that the generic stages branch on after the plan: the export
    (a merged copy beside an adapter, which evaluate-mteb reads), a hyper-parameter column (its
    dtype in runs.parquet, its figures), the memory estimate's inputs, the recipe's settings hook,
    and what metrics.json and the model card record. A method's own hooks (apply, counts, variants)
    are its own test's to check (tests/contracts/test_method_registry.py trains its toy methods
    through the train stage); a CI pipeline run adds only these branches."""
    hyper = method.hyper
    return {("merged_export", method.merged_export), ("hyper column", hyper is not None),
            ("integer column", hyper.integer if hyper else None), ("full's memory estimate", method.saved_vectors is None),
            ("trains_embeddings", method.trains_embeddings), ("complete", method.complete is not None),
            ("reported", bool(method.reported)), ("card_row", method.card_row is not None)}


def needs_own_run(trained: set[str]) -> set[str]:
    """Registered methods CI does not train that take a switch no trained method takes."""
    covered = set().union(*(switches(registry.get(m)) for m in trained))
    return {m.name for m in registry.REGISTRY.values() if m.name not in trained and not switches(m) <= covered}


def ci_trained(ci_params: list[dict]) -> set[str]:
    """The methods the CI stacks' plans train (main grid and studies)."""
    return {r["method"] for params in ci_params for r in training_plan(params, apply_cap=False)[0]}


def test_a_method_needs_a_ci_run_only_for_a_switch_no_trained_method_takes(monkeypatch, reference: dict,
                                                                           ci_params: list[dict]) -> None:
    """By hand: without LoRA nothing exports a merged copy or has an integer column; without
    freeze nothing has a float column or a recipe hook; bias-only's switches are full's and
    LoRA's. A new method with bias-only's switches needs no run; one that exports a merged copy
    needs one unless LoRA is trained (a switch at a time: the export does not read the column)."""
    paper = {name: registry.get(name) for name in ("full", "freeze", "bias", "lora")}   # the hand counts' four
    monkeypatch.setattr(registry, "REGISTRY", paper)
    assert needs_own_run({"full", "freeze", "bias"}) == {"lora"}
    assert needs_own_run({"full", "lora"}) == {"freeze"}
    assert needs_own_run({"full", "freeze", "bias", "lora"}) == set()
    bias = paper["bias"]
    monkeypatch.setitem(paper, "twin", registry.Method("twin", "Twin", "tab:gray", bias.apply,
                                                                   bias.counts, saved_vectors=13))
    assert needs_own_run({"full", "freeze", "bias", "lora"}) == set()
    monkeypatch.setitem(paper, "merged", registry.Method("merged", "Merged", "tab:olive", bias.apply,
                                                                     bias.counts, merged_export=True))
    assert needs_own_run({"full", "freeze", "bias", "lora"}) == set()
    assert needs_own_run({"full", "freeze", "bias"}) == {"lora", "merged"}
    # the schema choice it adds is the one the per-run check below exempts
    schema = load_schema()
    schema["$defs"]["method"]["enum"].append("twin")
    added = pc.missing_alternatives(reference, ci_params, schema) - pc.missing_alternatives(reference, ci_params)
    assert added == {("train.methods[]", "=twin")}


def test_ci_stacks_are_the_ones_the_tests_run() -> None:
    """The stacks above are what those tests pass to Snakemake (so this file cannot drift)."""
    for test, stack in CI_STACKS.items():
        text = (REPO / test).read_text()
        assert ", ".join(f'"{p}"' for p in stack) in text, (test, stack)


def test_kinds_by_hand() -> None:
    """The definitions on a hand-made file and schema (expected set written out)."""
    schema = {"type": "object", "properties": {
        "m": {"enum": ["x", "y"]},
        "l": {"type": "array", "items": {"enum": ["p", "q"]}},
        "o": {"oneOf": [{"const": "auto"}, {"type": "array", "items": {"type": "number"}}]},
        "query_tuning": {"type": "object", "properties": {"defaults": {"type": "object", "properties": {
            "freeze": {"type": "string"}, "scheduler": {"enum": ["none", "E0.95", "E0.98"]}}}}},
    }}
    params = {"m": "x", "l": ["p", "q"], "o": "auto", "n": None, "s": "free text", "e": [], "f": {},
              "b": True, "k": 3, "r": [{"z": 1.5}],
              "query_tuning": {"defaults": {"freeze": "emb_b0ai"},
                               "sweeps": {"freeze": ["emb_b0-5", "none"], "scheduler": ["E0.98"]},
                               "grids": [{"points": [{"scheduler": "E0.95"}]}]}}
    assert pc.pairs(params, schema) == {
        ("m", "=x"), ("l", "[..]"), ("l[]", "=p"), ("l[]", "=q"), ("o", "=auto"), ("n", "null"),
        ("s", "str"), ("e", "[]"), ("f", "{}"), ("b", "=true"), ("k", "number"), ("r", "[..]"),
        ("r[].z", "number"),
        ("query_tuning.defaults.freeze", "=emb_b0<part>"),
        ("query_tuning.sweeps.freeze", "[..]"), ("query_tuning.sweeps.freeze[]", "=emb_b0-K"),
        ("query_tuning.sweeps.freeze[]", "=none"),
        ("query_tuning.sweeps.scheduler", "[..]"), ("query_tuning.sweeps.scheduler[]", "=E<gamma>"),
        ("query_tuning.grids", "[..]"), ("query_tuning.grids[].points", "[..]"),
        ("query_tuning.grids[].points[].scheduler", "=E<gamma>"),
    }
    # a choice set elsewhere is the choice it sets: a swept scheduler is defaults.scheduler
    assert ("query_tuning.defaults.scheduler", "=E<gamma>") in pc.schema_kinds(params, schema)
    # query-run values count under the defaults key of the run config they make; the place keeps `set`
    assert pc.run_pairs({"query_tuning": params["query_tuning"]}, schema) == {
        ("query_tuning.defaults.freeze", "=emb_b0<part>"), ("query_tuning.defaults.freeze", "=emb_b0-K"),
        ("query_tuning.defaults.freeze", "=none"), ("query_tuning.defaults.scheduler", "=E<gamma>"),
        ("query_tuning.sweeps.freeze", "[..]"), ("query_tuning.sweeps.freeze", "set"),
        ("query_tuning.sweeps.scheduler", "[..]"), ("query_tuning.sweeps.scheduler", "set"),
        ("query_tuning.grids", "[..]"), ("query_tuning.grids[].points", "[..]"),
        ("query_tuning.grids[].points[].scheduler", "set"),
    }


def test_ci_presets_exercise_every_key_params_yaml_uses(reference: dict, ci_params: list[dict]) -> None:
    missing = pc.missing(reference, ci_params) - set(EXEMPT)
    assert not missing, ("params.yaml uses these (key, kind) pairs but no CI preset "
                         f"({', '.join(CI_STACKS)}) exercises them:\n{pc.format_pairs(missing)}")


def test_ci_presets_exercise_every_per_run_choice(reference: dict, ci_params: list[dict]) -> None:
    """Reading options params.yaml leaves at the text's default (logit_scale: exp, LoRA alpha =
    rank, triplet distance dist, Adadelta, ...) still run in CI."""
    missing = pc.missing_alternatives(reference, ci_params) - set(EXEMPT_ALTERNATIVES)
    # a registered method whose every switch a CI-trained method takes needs no CI run of its own
    trained = ci_trained(ci_params)
    missing -= {("train.methods[]", f"={m}") for m in registry.names() if m not in needs_own_run(trained)}
    assert not missing, f"schema choices no CI preset exercises:\n{pc.format_pairs(missing)}"


def test_exemptions_are_still_needed(reference: dict, ci_params: list[dict]) -> None:
    stale = set(EXEMPT) - pc.missing(reference, ci_params)
    stale |= set(EXEMPT_ALTERNATIVES) - pc.missing_alternatives(reference, ci_params)
    assert not stale, f"exemptions no longer needed (remove them): {sorted(stale)}"


def _without(tmp_path: Path, *keys: str) -> dict:
    """presets/test.yaml with dotted ``keys`` removed, layered like CI's pipeline test."""
    preset = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    for key in keys:
        *parents, leaf = key.split(".")
        node = preset
        for part in parents:
            node = node[part]
        del node[leaf]
    out = tmp_path / "test.yaml"
    out.write_text(yaml.safe_dump(preset))
    return load_params([REPO / "params.yaml", REPO / "presets/demo.yaml", out])


def test_checker_reports_a_removed_key(tmp_path: Path, reference: dict, ci_params: list[dict]) -> None:
    """The check can fail: drop the narrow-domain sweep from a copy of the CI preset and it shows
    up (demo.yaml's empty train_data comes back). (The held-out model is no longer a witness: the
    demo itself holds its largest size out.)"""
    other = ci_params[1:]
    reduced = _without(tmp_path, "query_tuning.sweeps.train_data")
    missing = pc.missing(reference, [reduced, *other])
    assert missing - set(EXEMPT) == {    # the grid points still tune on math, physics, cs
        ("query_tuning.sweeps.train_data", "[..]"), ("query_tuning.sweeps.train_data", "set")}
    # one grid form and one per-run option
    preset = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    preset["query_tuning"]["grids"] = [g for g in preset["query_tuning"]["grids"]
                                       if g["name"] not in ("points-micro", "variants-micro")
                                       and not g["name"].startswith("fig")]   # fig03 freezes emb_odw too
    (tmp_path / "grids.yaml").write_text(yaml.safe_dump(preset))
    reduced = load_params([REPO / "params.yaml", REPO / "presets/demo.yaml", tmp_path / "grids.yaml"])
    assert {("query_tuning.grids[].points", "[..]"), ("query_tuning.grids[].points[].scheduler", "set"),
            ("query_tuning.defaults.freeze", "=emb_odw")} <= pc.missing(reference, [reduced, *other])
    assert ("query_tuning.defaults.optimizer", "=adadelta") in pc.missing_alternatives(reference, [reduced, *other])


# ------------------------------------------------------------------------------------ the DAG
def _rules(stage: str) -> set[str]:
    """The rules a rule file defines; data.smk's prepare_pnd is one rule per PND source."""
    found = set(re.findall(r"^[ \t]*rule (\w+):", (REPO / "workflow/rules" / f"{stage}.smk").read_text(), flags=re.M))
    generated = {pnd_sets.prepare_rule(s) for s in pnd_sets.sources()} if "prepare_pnd" in found else set()
    return found - {"prepare_pnd"} | generated


@pytest.fixture(scope="module")
def ci_dag(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, int], list[list[str]]]:
    """`snakemake -n -p` of the pipeline test's stack into empty output folders: job counts per
    rule and the argv of every planned shell command."""
    tmp = tmp_path_factory.mktemp("ci-dag")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    stack = CI_STACKS["tests/helpers_pipeline.py"]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--configfile", *stack, "--config",
                           f"paths={{raw: data/raw, processed: {tmp}/processed, results: {tmp}/results}}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    table = out.split("Job stats:", 1)[1].split("total", 1)[0]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}
    # (training: `exec {launcher} embtune train`, the launcher empty for one process)
    commands = [shlex.split(re.sub(r"^Shell command: (exec +)?", "", line).split(" > ")[0])
                for line in out.splitlines() if re.match(r"Shell command: (exec +)?embtune ", line)]
    return counts, commands


def _args(argv: list[str], flag: str) -> list[str]:
    """Values after ``flag`` up to the next ``--option``."""
    if flag not in argv:
        return []
    rest = argv[argv.index(flag) + 1:]
    return rest[:next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))]


def test_ci_dag_runs_every_rule_dataset_and_analysis_path(ci_dag, reference: dict) -> None:
    counts, commands = ci_dag
    every = set().union(*(_rules(s) for s in ("data", "train", "evaluate", "analyze")))
    downloads = {"fetch_hf", "require_raw", "stage_snapshot", "stage_in"}   # network / hand-placed sources: demo data is local
    assert every - downloads - set(counts) == set(), "rules the CI pipeline never runs"
    schema = load_schema()
    by_stage: dict[str, list[list[str]]] = {}
    for argv in commands:
        by_stage.setdefault(argv[1], []).append(argv)
    pnd = by_stage["evaluate-pnd"]
    # every evaluation set of the schema (Table 1, Table 2) and every tuning set (App. K)
    evaluated = {d for argv in pnd for d in _args(argv, "--datasets")}
    assert evaluated == set(schema["properties"]["query_tuning"]["properties"]["evaluate_on"]["items"]["enum"])
    # (one job per query run, or batches with query_tuning.runs_per_job > 1: presets/demo.yaml's 8)
    tuned = [json.loads(_args(argv, "--run-config-json")[0]) for argv in by_stage.get("tune-query", [])]
    tuned += [m["run"] for argv in by_stage.get("tune-query-batch", []) for m in json.loads(_args(argv, "--batch-json")[0])]
    assert {r["train_data"] for r in tuned} == set(
        schema["properties"]["query_tuning"]["properties"]["defaults"]["properties"]["train_data"]["enum"])
    assert {pc._freeze_family(r["freeze"]) for r in tuned} == {pc._freeze_family(s) for s in pc.FREEZE_SPECS}
    assert any(r["tune_doc_tower"] for r in tuned) and any("--doc-model-dir" in argv for argv in pnd)
    # App. K: base and tuned evaluations exclude each tuned domain alike
    assert all(_args(argv, "--exclude-domains") == ["cs", "math", "physics"] for argv in pnd)
    # App. H, Fig. 6: every difficulty level params.yaml builds is scored
    assert all(sorted(map(int, _args(argv, "--arxiv-levels"))) == reference["data"]["arxiv"]["levels"] for argv in pnd)
    # paper 1: every method params.yaml trains is trained here (presets/ci.yaml's main grid, which the
    # rehearsal runs, has freeze and bias), and every registered method takes only switches a trained
    # one takes; the held-out model on
    # (the pipeline test's stack trains in batches, train.runs_per_job 8 from presets/demo.yaml;
    # presets/ci.yaml's stack one job per run, params.yaml's train.runs_per_job 1)
    methods = {json.loads(_args(argv, "--run-config-json")[0])["method"] for argv in by_stage.get("train", [])}
    methods |= {m["run"]["method"] for argv in by_stage["train-batch"] for m in json.loads(_args(argv, "--batch-json")[0])}
    methods |= {r["method"] for r in training_plan(_effective(CI_STACKS["tests/e2e/test_rehearsal.py"]))[0]}
    assert set(reference["train"]["methods"]) <= methods and not needs_own_run(methods)
    assert [_args(argv, "--holdout") for argv in by_stage["fit-scaling"]] == [["largest_model"]]
