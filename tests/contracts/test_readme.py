"""The README is the first thing a researcher runs: every command it shows must work as written
after `make demo` / `make test` (inside the activated .venv), and it stays short enough to read
in five minutes. Commands are checked against what they name: make targets in the Makefile,
`embtune` stages in the CLI (the cheap read-only ones are run for real), Snakemake and DVC flags
through their own argument parsers, rule targets in the workflow, and every file path it cites."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 200
# `embtune` stages the README runs for real: read-only and fast (a few seconds each).
RUN_FOR_REAL = {"status", "plan"}


def readme_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


def shell_commands() -> list[list[str]]:
    commands = []
    for block in readme_blocks("bash"):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                commands.append(shlex.split(line))
    return commands


def test_readme_is_short() -> None:
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines, more than {MAX_LINES}: move detail to docs/"


def test_readme_cites_only_files_that_exist() -> None:
    cited = set(re.findall(r"`((?:docs|slurm|presets|workflow|src|tests|benchmarks)/[\w./-]*)`", README.read_text()))
    cited |= set(re.findall(r"`((?:params\.yaml|Makefile|Snakefile|dvc\.yaml))`", README.read_text()))
    missing = sorted(p for p in cited if not (ROOT / p).exists())
    assert cited and not missing, f"README.md cites paths that do not exist: {missing}"


def test_every_readme_command_names_something_real() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    stages = _embtune_stages()
    rules = set(re.findall(r"^rule (\w+):", "\n".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk")), flags=re.M))
    seen = set()
    for argv in shell_commands():
        tool = argv[0]
        seen.add(tool)
        if tool == "make":
            assert argv[1] in targets, f"README: `make {argv[1]}` is not a Makefile target"
        elif tool == "source":
            assert argv[1] == ".venv/bin/activate" and re.search(r"^VENV \?= \.venv$", makefile, flags=re.M)
        elif tool == "embtune":
            assert argv[1] in stages, f"README: `embtune {argv[1]}` is not a stage"
        elif tool == "snakemake":
            _check_snakemake(argv[1:], rules)
        elif tool == "dvc":
            out = subprocess.run([_venv_tool("dvc"), *argv[1:2], "--help"], capture_output=True, text=True)
            assert out.returncode == 0, f"README: `dvc {argv[1]}` is not a dvc command: {out.stderr[-300:]}"
        else:
            pytest.fail(f"README shows a command this test does not know how to check: {' '.join(argv)}")
    assert {"make", "embtune", "snakemake", "dvc"} <= seen


@pytest.mark.parametrize("argv", [a for a in shell_commands() if a[0] == "embtune" and a[1] in RUN_FOR_REAL], ids=" ".join)
def test_readme_embtune_commands_run(argv: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "embtune.cli", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"README: `{' '.join(argv)}` exited {out.returncode}: {out.stderr[-500:]}"
    assert out.stdout.strip()


def test_readme_python_is_valid_and_imports_exist() -> None:
    blocks = readme_blocks("python")
    assert blocks
    for block in blocks:
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = __import__(node.module, fromlist=[a.name for a in node.names])
                for alias in node.names:
                    assert hasattr(module, alias.name), f"README imports {alias.name} from {node.module}: no such name"


def _embtune_stages() -> set[str]:
    from embtune.cli import STAGES

    return set(STAGES)


def _venv_tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _check_snakemake(args: list[str], rules: set[str]) -> None:
    from snakemake.cli import get_argument_parser

    parsed = get_argument_parser().parse_args(args)
    for target in parsed.targets or []:
        assert target in rules or target == "all", f"README: snakemake target {target!r} is not a rule"
    if parsed.profile:
        assert (ROOT / parsed.profile / "config.yaml").exists(), f"README: profile {parsed.profile} has no config.yaml"
    for configfile in parsed.configfile or []:
        assert (ROOT / configfile).exists(), f"README: --configfile {configfile} does not exist"
