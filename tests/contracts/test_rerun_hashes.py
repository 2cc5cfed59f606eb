"""Rerun hashes are derived from imports (issue 16, item 1).

Snakemake re-runs a rule when its ``code`` param changes and DVC a stage when a dep changes, so
both must cover every embtune module the stage's code imports. The reference for "what a stage
imports" is the interpreter itself: a subprocess imports ``embtune.cli`` and each stage module
(embtune's modules purged from ``sys.modules`` between stages) and reports which embtune files
it loaded. The static closure (embtune.codeversion) must be a superset of that; it also follows
function-level imports, which the hand-written cases below pin down.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from embtune import codeversion
from embtune.codeversion import closure, code_version, missing_modules, stage_closure, stage_modules

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"
RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))
# Downloads only: a code edit must not re-download gigabytes (the file is named by its URI).
NO_CODE_PARAM = {"fetch_hf", "stage_snapshot"}


def _load_script():
    path = REPO / "workflow" / "scripts" / "dvc_code_deps.py"
    spec = importlib.util.spec_from_file_location("dvc_code_deps", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _load_script()


def _rules() -> dict[str, dict]:
    """rule -> {"shell": CLI stages in its shell command, "code": stages named by its code param},
    read with this test's own regexes."""
    out = {}
    for smk in RULE_FILES:
        text = smk.read_text()
        for block in re.split(r"(?m)^(?=[ \t]*rule \w+:)", text)[1:]:
            name = re.match(r"\s*rule (\w+):", block).group(1)
            shell = block.split("shell:", 1)[1] if "shell:" in block else ""
            code = re.search(r"code=code_version\(\"([a-z0-9-]+)\"\)", block)
            out[name] = {"shell": sorted(set(re.findall(r"embtune ([a-z][a-z0-9-]+) ", shell))),
                         "code": [code.group(1)] if code else None, "file": smk.name}
    return out


RULES = _rules()


@pytest.fixture(scope="module")
def imported() -> dict[str, set[str]]:
    """CLI stage -> embtune files (relative to src/embtune) that importing it loads, measured."""
    script = textwrap.dedent("""
        import importlib, json, sys
        from embtune.cli import STAGES
        out = {}
        for stage, (module, _) in STAGES.items():
            for name in [n for n in sys.modules if n == "embtune" or n.startswith("embtune.")]:
                del sys.modules[name]
            importlib.import_module("embtune.cli")
            importlib.import_module(module)
            out[stage] = sorted(m.__file__ for n, m in sys.modules.items()
                                if (n == "embtune" or n.startswith("embtune.")) and getattr(m, "__file__", None))
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    measured = json.loads(proc.stdout.strip().splitlines()[-1])
    return {stage: {Path(f).resolve().relative_to(SRC).as_posix() for f in files}
            for stage, files in measured.items()}


def test_every_rule_that_runs_embtune_hashes_exactly_that_stage() -> None:
    runs_embtune = {r for r, v in RULES.items() if v["shell"]}
    assert {"train_contrastive", "evaluate_mteb_batch", "build_model", "plan", "recipe", "prepare_xnli"} <= runs_embtune
    for rule in sorted(runs_embtune - NO_CODE_PARAM):
        assert RULES[rule]["code"] == RULES[rule]["shell"], (rule, RULES[rule])
    for rule in NO_CODE_PARAM:
        assert RULES[rule]["code"] is None, rule
    # no hand-kept file lists are left anywhere in the workflow
    for smk in RULE_FILES:
        assert not re.search(r"code_version\([^)]*\.py", smk.read_text()), smk.name


def test_static_closure_covers_every_measured_import(imported: dict[str, set[str]]) -> None:
    assert set(imported) == set(stage_modules())
    derived = {s: stage_closure(s) for s in imported}
    assert missing_modules(derived, imported) == []
    # sanity of the reference: each stage loads its own module and the dispatcher
    for stage, module in stage_modules().items():
        own = module.removeprefix("embtune.").replace(".", "/") + ".py"
        assert {own, "cli.py", "errors.py", "__init__.py"} <= imported[stage], stage


def test_every_rule_covers_its_imports_and_a_hand_removed_module_is_reported(
        imported: dict[str, set[str]]) -> None:
    coded = {r: v for r, v in RULES.items() if v["code"]}
    derived = {r: {f for s in v["code"] for f in stage_closure(s)} for r, v in coded.items()}
    required = {r: set().union(*(imported[s] for s in v["shell"])) for r, v in coded.items()}
    assert missing_modules(derived, required) == []
    # Remove, by hand, one module from each rule's list: the checker names that rule and module.
    for rule, files in derived.items():
        stage = RULES[rule]["code"][0]
        dropped = stage_modules()[stage].removeprefix("embtune.").replace(".", "/") + ".py"
        assert dropped in files
        tampered = {**derived, rule: files - {dropped}}
        assert missing_modules(tampered, required) == [(rule, dropped)], rule
    # a rule with no list at all misses everything it imports
    assert ("plan", "plan.py") in missing_modules({}, required)


def test_the_drift_of_issue_16_is_covered() -> None:
    """The table of issue 16: modules the hand-kept lists had missed (checked by reading the
    imports: mteb_eval imports data.mteb_data; build.py imports tokenizer.py and, inside a
    function, the LR schedule (train/schedule.py then, optim.py now); plan.py and recipe.py import
    models.flops; xnli.py data.jsonl)."""
    cases = {"evaluate-mteb": {"data/mteb_data.py"},
             "build-model": {"models/tokenizer.py", "optim.py"},
             "plan": {"models/flops.py"},
             "recipe": {"models/flops.py"},
             "prepare-xnli": {"data/jsonl.py"},
             "train": {"optim.py", "train/checkpoint.py"}}   # lazy import in loop.py
    for stage, files in cases.items():
        assert files <= set(stage_closure(stage)), stage


def test_import_forms_resolve_to_files(package_tree) -> None:
    """Relative imports, `from pkg import submodule`, parent __init__s, lazy imports, and names
    that are not modules, on a hand-built package whose closure is known."""
    root = package_tree({
        "cli.py": 'STAGES = {"go": ("embtune.a.main", "help")}\n',
        "a/__init__.py": "",
        "a/main.py": """
            from . import helper
            from .sub.deep import thing
            from embtune import top
            def later():
                from ..lazy import f
        """,
        "a/helper.py": "from embtune.a.sub import other  # a sub-module imported by name\n",
        "a/sub/__init__.py": "from .init_dep import x\n",
        "a/sub/deep.py": "thing = 1\n",
        "a/sub/other.py": "import os\n",
        "a/sub/init_dep.py": "x = 1\n",
        "top.py": "from embtune.errors import DataError\n",   # errors.py does not exist: skipped
        "lazy.py": "def f(): pass\n",
        "unused.py": "",
        "b/__init__.py": "",
        "b/never.py": "",
    })
    assert stage_modules(root) == {"go": "embtune.a.main"}
    assert stage_closure("go", root) == sorted([
        "__init__.py", "cli.py", "a/__init__.py", "a/main.py", "a/helper.py", "a/sub/__init__.py",
        "a/sub/deep.py", "a/sub/other.py", "a/sub/init_dep.py", "top.py", "lazy.py"])
    assert closure(["embtune.b.never"], root) == ["__init__.py", "b/__init__.py", "b/never.py"]
    with pytest.raises(KeyError, match="unknown embtune stage 'nope'"):
        stage_closure("nope", root)


def _flip_one_byte(path: Path) -> None:
    """One statement more (the hash ignores comments and docstrings: tests/e2e/test_rerun_identity.py)."""
    path.write_bytes(path.read_bytes() + b"\n_EDITED = 1\n")


@pytest.mark.parametrize(("module", "importers"), [
    # hand-read from the sources: who imports the module (directly, transitively or lazily)
    # model-card: evaluate/mteb_card.py; mark-failed writes the records of evaluate-mteb, train and
    # tune-query with their own writers (lazily imported)
    ("data/mteb_data.py", {"materialise-mteb", "evaluate-mteb", "model-card", "mark-failed"}),
    # optim.py: lazily by models/build.py and train/loop.py, by train/query_tower.py, and by
    # sweep.py, which the stages reach through config.py -> config_checks.py (lazily) or directly
    # (the figures driver reads only plots/ and scaling/: no sweep since it moved to stages/;
    # collect-runs, fit-scaling and figures' failed-runs section read cost.py, which reads
    # params_yaml.py, not config.py, since the config -> sweep -> config cycle went; status reads
    # config.py, which reaches sweep.py through config_checks.py; train-batch runs train's code,
    # tune-query-batch tune-query's)
    ("optim.py", {"train", "train-batch", "build-model", "tune-query", "tune-query-batch", "validate-params", "plan",
                  "query-table", "appendix-tables", "status", "mark-failed"}),
    ("summary.py", {"summary"}),
    ("batch_members.py", {"train-batch", "tune-query-batch"}),   # only the two batch stages
])
def test_one_byte_changes_exactly_the_importers_hashes(tmp_path: Path, module: str,
                                                       importers: set[str]) -> None:
    root = tmp_path / "embtune"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    stages = sorted(stage_modules(root))
    before = {s: code_version(s, root=root) for s in stages}
    assert before == {s: code_version(s, root=SRC) for s in stages}   # a copy hashes the same
    _flip_one_byte(root / module)
    after = {s: code_version(s, root=root) for s in stages}
    assert {s for s in stages if after[s] != before[s]} == importers
    # and through the rules: a rule's hash changes iff its stage imports the module
    changed_rules = {r for r, v in RULES.items() if v["code"]
                     and code_version(*v["code"], root=root) != code_version(*v["code"], root=SRC)}
    assert changed_rules == {r for r, v in RULES.items() if v["code"] and set(v["code"]) & importers}


def _forget_in_process() -> None:
    """A new process: the in-memory memos go, the disk cache stays."""
    for memo in (codeversion._imported_names_cached, codeversion._normalised_cached,
                 codeversion._content_hash_cached, codeversion._stage_modules_cached):
        memo.cache_clear()


def test_the_disk_cache_gives_the_same_hashes_and_a_warm_one_parses_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "embtune"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    stages = sorted(stage_modules(root))
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    monkeypatch.setenv(codeversion.CACHE_ENV, str(not_a_dir))      # unwritable: computed, no error
    _forget_in_process()
    reference = {s: code_version(s, root=root) for s in stages}
    cache = tmp_path / "cache"
    monkeypatch.setenv(codeversion.CACHE_ENV, str(cache))
    _forget_in_process()
    assert {s: code_version(s, root=root) for s in stages} == reference
    entries = sorted((cache / "codeversion").iterdir())
    assert len(entries) > len(stages)

    def no_parsing(*_args, **_kwargs):
        raise AssertionError("a warm cache parsed a module")

    _forget_in_process()
    with monkeypatch.context() as m:
        m.setattr(codeversion.ast, "parse", no_parsing)
        assert {s: code_version(s, root=root) for s in stages} == reference
    # a comment is a new byte: the entries miss, the module is parsed, the hashes stay
    (root / "optim.py").write_text((root / "optim.py").read_text() + "\n# a comment\n")
    _forget_in_process()
    assert {s: code_version(s, root=root) for s in stages} == reference
    # damaged entries are recomputed, not believed
    for entry in (cache / "codeversion").iterdir():
        entry.write_text("0123456789abcdef\nnot a digest nor a module\n")
    _forget_in_process()
    assert {s: code_version(s, root=root) for s in stages} == reference
    _forget_in_process()
    (root / "optim.py").write_bytes((root / "optim.py").read_bytes() + b"\n_EDITED = 1\n")
    changed = {s for s in stages if code_version(s, root=root) != reference[s]}
    assert "train" in changed and "summary" not in changed


# ------------------------------------------------------------------------------------- DVC
def _dvc_src_deps(stage: dict) -> set[str]:
    """The src/embtune files a dvc.yaml stage lists (a listed directory stands for its files)."""
    out = set()
    for dep in (stage.get("do") or stage)["deps"]:
        if dep.startswith("src/embtune"):
            p = REPO / dep
            files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
            out |= {f.relative_to(SRC).as_posix() for f in files}
    return out


def _dvc_required(stage: dict, imported: dict[str, set[str]]) -> set[str]:
    """Every module the CLI stages of the stage's rules import (rules read by this test)."""
    smks = {Path(d).name for d in (stage.get("do") or stage)["deps"] if d.startswith("workflow/rules/")}
    cli = {s for v in RULES.values() if v["file"] in smks for s in v["shell"]}
    assert cli, "a DVC stage that runs no embtune stage"
    return set().union(*(imported[s] for s in cli))


def test_committed_dvc_yaml_matches_the_generator() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "workflow/scripts/dvc_code_deps.py"), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr


def test_every_dvc_stage_covers_its_imports_and_a_hand_removed_dep_is_reported(
        imported: dict[str, set[str]], tmp_path: Path) -> None:
    text = (REPO / "dvc.yaml").read_text()
    stages = yaml.safe_load(text)["stages"]
    assert set(stages) == {"data", "models", "analyze"}
    declared = {name: _dvc_src_deps(st) for name, st in stages.items()}
    required = {name: _dvc_required(st, imported) for name, st in stages.items()}
    assert missing_modules(declared, required) == []
    assert "train/loop.py" in required["models"] and "data/xnli.py" in required["data"]
    assert "scaling/recipe.py" in required["analyze"]

    # Remove one dep line by hand: both the coverage check and the generator's --check object.
    victim = "        - src/embtune/train/loop.py\n"
    assert text.count(victim) == 1
    tampered_text = text.replace(victim, "")
    tampered = {n: _dvc_src_deps(st) for n, st in yaml.safe_load(tampered_text)["stages"].items()}
    assert missing_modules(tampered, required) == [("models", "train/loop.py")]
    copy = tmp_path / "dvc.yaml"
    copy.write_text(tampered_text)
    shutil.copytree(REPO / "workflow", tmp_path / "workflow")
    shutil.copy(REPO / "Snakefile", tmp_path / "Snakefile")
    assert SCRIPT.main(["--dvc-yaml", str(copy), "--check"]) == 1
    assert SCRIPT.main(["--dvc-yaml", str(copy)]) == 0       # regenerating restores it
    assert copy.read_text() == text


def test_dvc_deps_include_what_the_workflow_imports_to_build_the_dag() -> None:
    """common.smk plans the grid with embtune.sweep and resources.smk sizes jobs with
    embtune.cost: editing them changes which jobs exist, so DVC must re-run the phases."""
    files = SCRIPT.dvc_stage_files(REPO / "dvc.yaml")
    for stage in ("data", "models", "analyze"):
        assert {"src/embtune/sweep.py", "src/embtune/config.py", "src/embtune/codeversion.py"} <= set(files[stage])
    assert "src/embtune/cost.py" in files["models"]     # resources.smk
    assert codeversion.ROOT == SRC
