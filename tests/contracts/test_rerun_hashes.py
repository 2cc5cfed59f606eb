"""Rerun hashes are derived from imports.

Snakemake re-runs a rule when its ``code`` param changes and DVC a stage when a dep changes, so
both must cover every embtune module the stage's code imports. The reference for "what a stage
imports" is the interpreter itself: a subprocess imports ``embtune.cli`` and each stage module
(embtune's modules purged from ``sys.modules`` between stages) and reports which embtune files
it loaded. The static closure (embtune.core.codeversion) must be a superset of that; it also follows
function-level imports, which the hand-written cases below pin down.
"""

from __future__ import annotations

import ast
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

from embtune.core import codeversion
from embtune.core.codeversion import closure, code_version, missing_modules, stage_closure, stage_modules

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"
RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))


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
    # downloads too: a fix to stage-in re-stages (only an edit of code it runs: see below)
    assert {"stage_snapshot", "fetch_hf"} <= runs_embtune
    for rule in sorted(runs_embtune):
        assert RULES[rule]["code"] == RULES[rule]["shell"], (rule, RULES[rule])
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
        assert {own, "cli.py", "core/errors.py", "__init__.py"} <= imported[stage], stage


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
    assert ("plan", "plan/tables.py") in missing_modules({}, required)


def test_the_drift_of_issue_16_is_covered() -> None:
    """The table of modules the hand-kept lists had missed (checked by reading the
    imports: mteb_eval imports data.mteb_data; build.py imports tokenizer.py and, inside a
    function, the LR schedule (train/schedule.py then, core/optim.py now); plan/tables.py and recipe.py import
    models.flops; xnli.py data.jsonl)."""
    cases = {"evaluate-mteb": {"data/mteb_data.py"},
             "build-model": {"models/tokenizer.py", "core/optim.py"},
             "plan": {"models/flops.py"},
             "recipe": {"models/flops.py"},
             "prepare-xnli": {"data/jsonl.py"},
             "train": {"core/optim.py", "train/checkpoint.py"}}   # lazy import in loop.py
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
        "top.py": "from embtune.core.errors import DataError\n",   # core/errors.py does not exist: skipped
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


def test_reach_follows_names_not_files(package_tree) -> None:
    """Every way a name is reached, on a hand-built package whose reachable definitions are
    known: module attributes, from-imports, star imports, lazy imports, sub-modules, default
    arguments, base classes, a module used as a value, import-time registrations and a
    registering decorator; and what stays out: unused definitions, never-imported modules, the
    import-time effects of a loaded module that reach nothing the stage reads."""
    root = package_tree({
        "cli.py": """
            STAGES = {"go": ("embtune.a.main", "help")}
            def main(argv=None):
                return 0
        """,
        "a/__init__.py": "",
        "a/main.py": """
            from embtune import util, whole
            from embtune import tables, plugin, side   # loaded, never named
            from embtune.reg import get
            from .helpers import *
            import embtune.deep.mod as dm
            def _parser():
                return util.parser()
            def main(argv=None, default=util.DEFAULT):
                from embtune.lazy import lazy_fn
                return get("x") + lazy_fn() + star_fn() + dm.Thing().run() + getattr(whole, "f")()
            def unused():
                return util.never()
        """,
        "util.py": """
            DEFAULT = 1
            UNUSED_CONST = 2
            def parser():
                return _base()
            def _base():
                return 0
            def never():
                return 3
        """,
        "reg.py": """
            _TABLE = {}
            def register(name, fn):
                _TABLE[name] = fn
            def registering(fn):
                register(fn.__name__, fn)
                return fn
            def get(name):
                return _TABLE[name]()
            def _impl():
                return 1
            register("x", _impl)
            @registering
            def decorated():
                return 2
        """,
        "a/helpers.py": """
            from embtune.parent import Parent
            def star_fn():
                return Base.K
            class Base(Parent):
                K = 1
        """,
        "parent.py": "class Parent:\n    pass\nclass Other:\n    pass\n",
        "deep/__init__.py": "",
        "deep/mod.py": "class Thing:\n    def run(self):\n        return 1\n",
        "lazy.py": "def lazy_fn():\n    return 1\ndef other():\n    return 2\n",
        "whole.py": "def f():\n    return 1\ndef g():\n    return 2\n",
        "never.py": "def f():\n    return 1\n",
        # effects of loaded modules nothing names: a table no reached code reads does not count,
        # a registration into reg.py's table (which get() reads) and a third-party call do
        "tables.py": "_T = {}\ndef add(k):\n    _T[k] = 1\nfor k in (1, 2):\n    add(k)\n",
        "plugin.py": "from embtune.reg import register\nregister('p', lambda: 3)\n",
        "side.py": "import os\nos.environ.setdefault('X', '1')\n",
    })
    units = codeversion.stage_units("go", root=root)
    named = {rel: sorted(n for u in us if u.kind != "import" for n in u.binds) for rel, us in units.items()}
    effects = {rel: sum(u.kind == "effect" for u in us) for rel, us in units.items()}
    assert named == {
        "cli.py": ["main"],
        "a/main.py": ["_parser", "main"],
        "util.py": ["DEFAULT", "_base", "parser"],
        "reg.py": ["_TABLE", "_impl", "decorated", "get", "register", "registering"],
        "a/helpers.py": ["Base", "star_fn"],
        "parent.py": ["Parent"],
        "deep/mod.py": ["Thing"],
        "lazy.py": ["lazy_fn"],
        "whole.py": ["f", "g"],
        "plugin.py": [], "side.py": [],      # their effects only
    }
    assert effects["reg.py"] == 2       # register("x", _impl) and the decorated definition
    assert effects["a/main.py"] == 0 and effects["plugin.py"] == 1 and effects["side.py"] == 1
    assert "tables.py" not in units
    # one edit after another: each changes the hash iff it edits something reached
    edits = [(False, _append("util.py", "def also_unused():\n    return never()\n")),
             (False, _append("never.py", "X = 1\n")),
             (False, lambda r: _edit_function(r / "util.py", "never")),
             (False, lambda r: _edit_function(r / "lazy.py", "other")),
             (True, lambda r: _edit_function(r / "util.py", "_base")),        # through parser()
             (True, lambda r: _edit_function(r / "lazy.py", "lazy_fn")),      # a lazy import
             (True, lambda r: _edit_function(r / "whole.py", "g")),           # getattr(whole, ...)
             (True, lambda r: _edit_function(r / "reg.py", "decorated")),     # registered on import
             (True, _append("reg.py", "register('y', _impl)\n")),
             (False, lambda r: (r / "tables.py").write_text((r / "tables.py").read_text().replace("(1, 2)", "(1, 3)"))),
             (True, lambda r: (r / "plugin.py").write_text((r / "plugin.py").read_text().replace("3", "4"))),
             (True, lambda r: (r / "side.py").write_text((r / "side.py").read_text().replace("'1'", "'2'"))),
             (True, lambda r: (r / "util.py").write_text((r / "util.py").read_text().replace("DEFAULT = 1", "DEFAULT = 4"))),
             (True, lambda r: (r / "parent.py").write_text("class Parent:\n    y = 1\nclass Other:\n    pass\n")),
             (False, lambda r: (r / "parent.py").write_text("class Parent:\n    y = 1\nclass Other:\n    z = 1\n"))]
    for i, (counts, edit) in enumerate(edits):
        before = code_version("go", root=root)
        edit(root)
        assert (code_version("go", root=root) != before) == counts, i


_TRACE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import embtune
    from embtune import cli
    root = str(Path(embtune.__file__).parent)
    seen = set()
    def prof(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(root):
            return
        f = frame.f_back
        while f is not None:   # code run while a module is imported is not a call of the stage
            if f.f_code.co_name == "<module>" and f.f_code.co_filename.startswith(root):
                return
            f = f.f_back
        seen.add((frame.f_code.co_filename, frame.f_code.co_firstlineno))
    sys.setprofile(prof)
    rc = cli.main(sys.argv[1:])
    sys.setprofile(None)
    print(json.dumps({"rc": rc, "calls": sorted(seen)}))
""")


@pytest.mark.parametrize("argv", [
    ["validate-params", "params.yaml", "presets/demo.yaml"],
    ["plan", "params.yaml", "--out-runs", "{tmp}/runs.csv", "--out-skipped", "{tmp}/skipped.csv",
     "--out-cost", "{tmp}/cost.csv", "--out-plan", "{tmp}/plan.json"],
])
@pytest.mark.slow
def test_every_function_a_stage_calls_is_in_its_reach(tmp_path: Path, argv: list[str]) -> None:
    """The reference is the interpreter: a profiler records every embtune function the stage
    calls (after imports); each one's top-level definition must be among the stage's units."""
    proc = subprocess.run([sys.executable, "-c", _TRACE, *(a.format(tmp=tmp_path) for a in argv)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(SRC.parent)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0
    called: dict[str, set[str]] = {}
    for filename, line in result["calls"]:
        path = Path(filename)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                    min([node.lineno, *(d.lineno for d in node.decorator_list)]) <= line <= node.end_lineno):
                called.setdefault(path.relative_to(SRC).as_posix(), set()).add(node.name)
    assert sum(map(len, called.values())) > 50 and "cli.py" in called     # the reference saw the run
    reach = {rel: {n for u in units for n in u.binds} for rel, units in codeversion.stage_units(argv[0]).items()}
    assert {rel: names - reach.get(rel, set()) for rel, names in called.items() if names - reach.get(rel, set())} == {}


def _edit_function(path: Path, name: str) -> None:
    """One statement more inside function ``name`` of the file (before its last statement)."""
    text = path.read_text()
    node = next(n for n in ast.walk(ast.parse(text))
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    last = node.body[-1]
    lines = text.splitlines(keepends=True)
    lines.insert(last.lineno - 1, " " * last.col_offset + "_edited = 1\n")
    path.write_text("".join(lines))


def _copy_src(tmp_path: Path) -> Path:
    root = tmp_path / "embtune"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _changed_by(root: Path, edit) -> set[str]:
    """Stages whose hash ``edit(root)`` changes, on a copy of the source tree."""
    stages = sorted(stage_modules(root))
    before = {s: code_version(s, root=root) for s in stages}
    assert before == {s: code_version(s, root=SRC) for s in stages}   # a copy hashes the same
    edit(root)
    return {s for s in stages if code_version(s, root=root) != before[s]}


@pytest.mark.parametrize(("module", "function", "callers"), [
    # hand-read from the sources: which stages call the function (directly, transitively or
    # through a lazy import); importing its module is not enough
    # read_task_dir: evaluate/mteb_eval.py's task loader and the materialise-mteb driver; the
    # model card imports mteb_eval only for read_mteb_results, which does not call it
    ("data/mteb_data.py", "read_task_dir", {"materialise-mteb", "evaluate-mteb"}),
    # lr_multiplier: lazily by train/loop.py's build_optimizer (train, and train-batch, which
    # runs train's code) and models/build.py's pretrain_causal_lm (build-model); the sweep,
    # which most stages reach, reads scaled_lr from the same module, not this
    ("core/optim.py", "lr_multiplier", {"train", "train-batch", "build-model"}),
    # epoch_lrs: paper 2's query tower (train/query_tower.py) only
    ("core/optim.py", "epoch_lrs", {"tune-query", "tune-query-batch"}),
    ("plots/summary.py", "training_summary", {"summary"}),
    ("jobs/batch_members.py", "stage_member", {"train-batch", "tune-query-batch"}),   # the two batch drivers
    # candidates: a PND loader's, which the generic prepare-pnd stage imports by the name its
    # sets give in the registry (embtune.core.codeversion.loaded_by_name), not by an import statement
    ("data/hotpotqa.py", "candidates", {"prepare-pnd"}),
])
def test_an_edit_in_a_function_changes_exactly_its_callers_hashes(tmp_path: Path, module: str, function: str,
                                                                  callers: set[str]) -> None:
    root = _copy_src(tmp_path)
    assert _changed_by(root, lambda r: _edit_function(r / module, function)) == callers
    # and through the rules: a rule's hash changes iff its stage calls the function
    changed_rules = {r for r, v in RULES.items() if v["code"]
                     and code_version(*v["code"], root=root) != code_version(*v["code"], root=SRC)}
    assert changed_rules == {r for r, v in RULES.items() if v["code"] and set(v["code"]) & callers}


def _append(rel: str, text: str):
    return lambda root: (root / rel).write_text((root / rel).read_text() + text)


@pytest.mark.parametrize(("module", "text"), [
    ("core/io.py", "\n\ndef unused_helper(path):\n    return write_text(path, '')\n"),
    ("core/pnd_sets.py", "\nUNUSED_CONSTANT = 3\n"),
    ("train/losses.py", "\n\nclass UnusedLoss(torch.nn.Module):\n    scale = 2.0\n"),
    ("core/stage_paths.py", "\n_EDITED = 1\n"),     # read by every stage (cli.main), this name by none
])
def test_a_definition_nothing_names_changes_no_hash(tmp_path: Path, module: str, text: str) -> None:
    assert _changed_by(_copy_src(tmp_path), _append(module, text)) == set()


def test_a_change_to_the_contrastive_loss_changes_every_training_stage(tmp_path: Path) -> None:
    """symmetric_infonce (train/losses.py) is paper 1's training loss; paper 2's query tower
    trains with triplet_margin_loss, build-model's pre-training with the causal LM loss."""
    def edit(root: Path) -> None:
        losses = root / "train" / "losses.py"
        old = "F.cross_entropy(logits.T, labels)) / 2"
        assert losses.read_text().count(old) == 1
        losses.write_text(losses.read_text().replace(old, "F.cross_entropy(logits.T, labels)) * 0.5"))

    assert _changed_by(_copy_src(tmp_path), edit) == {"train", "train-batch"}
    # every training rule (batch jobs, and the per-run rule in both of its forms) hashes one of them
    train_smk = (REPO / "workflow" / "rules" / "train.smk").read_text()
    blocks = re.split(r"(?m)^(?=[ \t]*rule \w+:)", train_smk)[1:]
    training = [b for b in blocks if re.match(r"\s*rule train_\w+:", b)]
    assert len(training) == 3
    for block in training:
        assert re.search(r'code_version\("train(-batch)?"\)', block), block[:80]


def test_an_import_time_registration_counts_where_its_module_is_loaded(tmp_path: Path) -> None:
    """models/methods.py fills its method registry with module-level register(...) calls: an
    edit of one changes the stages that load the module, though no function names it."""
    def edit(root: Path) -> None:
        methods = root / "models" / "methods.py"
        old = 'register(Method("bias", "Bias-only", "tab:red"'
        assert methods.read_text().count(old) == 1
        methods.write_text(methods.read_text().replace(old, old.replace("tab:red", "tab:pink")))

    changed = _changed_by(_copy_src(tmp_path), edit)
    assert {"train", "train-batch", "plan", "fit-scaling"} <= changed
    assert not changed & {"summary", "stage-in", "fetch", "prepare-xnli"}


def test_a_table_filled_on_import_counts_only_where_it_is_read(tmp_path: Path) -> None:
    """core/pnd_sets.py fills its registry of PND evaluation sets with a module-level loop. Paper 1's
    training imports the module (core/layout.py does) but reads no PND set; split-msmarco names its
    output files after them (layout.pnd_file_name) and evaluate-pnd evaluates them. A changed set
    re-runs those, not training."""
    def edit(root: Path) -> None:
        pnd_sets = root / "core/pnd_sets.py"
        old = '"msmarco/eval.parquet"'
        assert pnd_sets.read_text().count(old) == 1
        pnd_sets.write_text(pnd_sets.read_text().replace(old, '"msmarco/eval_v2.parquet"'))

    changed = _changed_by(_copy_src(tmp_path), edit)
    assert {"evaluate-pnd", "split-msmarco"} <= changed
    assert not changed & {"train", "train-batch", "evaluate-mteb", "build-model"}


def _forget_in_process() -> None:
    """A new process: the in-memory memos go, the disk cache stays."""
    for memo in (codeversion._imported_names_cached, codeversion._normalised_cached, codeversion._units_cached,
                 codeversion._content_hash_cached, codeversion._stage_modules_cached):
        memo.cache_clear()


@pytest.mark.slow
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
    (root / "core/optim.py").write_text((root / "core/optim.py").read_text() + "\n# a comment\n")
    _forget_in_process()
    assert {s: code_version(s, root=root) for s in stages} == reference
    # damaged entries are recomputed, not believed
    for entry in (cache / "codeversion").iterdir():
        entry.write_text("0123456789abcdef\nnot a digest nor a module\n")
    _forget_in_process()
    assert {s: code_version(s, root=root) for s in stages} == reference
    _forget_in_process()
    _edit_function(root / "core/optim.py", "lr_multiplier")
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
    """Every module the CLI stages of the stage's rules import (rules read by this test), or of
    the ``embtune <stage>`` its own command runs (config@<preset>)."""
    smks = {Path(d).name for d in (stage.get("do") or stage)["deps"] if d.startswith("workflow/rules/")}
    cli = {s for v in RULES.values() if v["file"] in smks for s in v["shell"]}
    cmd = (stage.get("do") or stage)["cmd"]
    cli |= set(re.findall(r"(?m)^embtune ([a-z][a-z0-9-]+)", "\n".join(cmd) if isinstance(cmd, list) else cmd))
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
    assert set(stages) == {"config", "data", "models", "analyze"}
    declared = {name: _dvc_src_deps(st) for name, st in stages.items()}
    required = {name: _dvc_required(st, imported) for name, st in stages.items()}
    assert missing_modules(declared, required) == []
    assert "train/loop.py" in required["models"] and "data/xnli.py" in required["data"]
    assert "scaling/recipe.py" in required["analyze"]
    assert "plan/config.py" in required["config"]

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
    """common.smk plans the grid with embtune.plan.sweep and resources.smk sizes jobs with
    embtune.plan.cost: editing them changes which jobs exist, so DVC must re-run the phases."""
    files = SCRIPT.dvc_stage_files(REPO / "dvc.yaml")
    for stage in ("data", "models", "analyze"):
        assert {"src/embtune/plan/sweep.py", "src/embtune/plan/config.py", "src/embtune/core/codeversion.py"} <= set(files[stage])
    assert "src/embtune/plan/cost.py" in files["models"]     # resources.smk
    assert codeversion.ROOT == SRC
