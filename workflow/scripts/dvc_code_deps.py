"""Write (or --check) the library-code deps of every DVC stage in dvc.yaml, derived from imports.

Why: DVC re-runs a stage when one of its ``deps`` changes. A DVC stage runs one Snakemake phase,
so the library code it depends on is
- the import closure (embtune.core.codeversion) of every ``embtune <stage>`` that a rule of the
  phase runs; the phase's rules are those defined in the ``workflow/rules/*.smk`` files the
  stage already lists as deps;
- the closure of what the workflow itself imports while it builds the DAG (``from embtune...``
  lines of the Snakefile and the listed .smk files): e.g. embtune.plan.sweep decides which runs exist.

Why whole files, when Snakemake's rerun hashes cover only the definitions a stage reaches
(embtune.core.code_reach): DVC hashes files and nothing finer, and a DVC stage is a whole Snakemake
phase, so a per-file dep is both the finest DVC can track and enough. An edit DVC sees as a dep
change (an unused helper in io.py) makes ``dvc repro`` start the phase; Snakemake then compares
each job's ``code`` param and runs only jobs whose reached code changed, i.e. none. A per-stage
hash file as the dep would save that start (seconds) but need its own writer kept in step with
the workflow, which these derived file lists avoid.

Also written here, from the PND set registry (embtune.core.pnd_sets.sources): the rule of every PND
source with a loader (``rules``: the ``pnd_rules`` var, which the data phase targets and allows)
and its processed folder, as an output of the stage that prepares it (``outs``) and a dep of the
stage that reads it (``deps``), so that a set registered with a loader reaches dvc.yaml with no
hand edit.

The generated lines sit between two marker comments (per stage, and per kind of PND list) and
are the only part of dvc.yaml this script touches:

    python workflow/scripts/dvc_code_deps.py           # rewrite dvc.yaml
    python workflow/scripts/dvc_code_deps.py --check   # exit 1 when dvc.yaml is stale (tests/CI)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import yaml

from embtune.core import codeversion, pnd_sets

REPO = Path(__file__).resolve().parents[2]
BEGIN = "# >>> code deps of stage {stage}: written by workflow/scripts/dvc_code_deps.py"
END = "# <<< code deps of stage {stage}"
RULE = re.compile(r"^[ \t]*rule (\w+):", re.M)  # also a rule defined under `if` (indented)
# the CLI stage of a shell command: "embtune train ..." / "exec embtune train ..." /
# "exec {params.launch:q} embtune train ..." (a process launcher, embtune.jobs.launch)
SHELL_STAGE = re.compile(r"\"(?:exec )?(?:\{params\.launch:q\} )?embtune ([a-z][a-z0-9-]*)")
CODE_PARAM = re.compile(r"\bcode=code_version\(([^)]*)\)")
PND_BLOCK = re.compile(r"^([ \t]*)# >>> PND sources \((outs|deps|rules)\) of stage (\w+): written by "
                       r"workflow/scripts/dvc_code_deps\.py\n.*?^[ \t]*# <<< PND sources \(\2\) of stage \3\n",
                       re.M | re.S)
IMPORT_LINE = re.compile(r"^\s*(?:from\s+embtune[\w.]*\s+import\s+.+|import\s+embtune[\w.]*.*)$", re.M)


def rule_blocks(smk: Path) -> dict[str, str]:
    """rule name -> its text, from one Snakemake rule file."""
    text = smk.read_text()
    starts = [(m.start(), m.group(1)) for m in RULE.finditer(text)]
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return {name: text[start:end] for (start, name), end in zip(starts, ends)}


def rule_stages(smk: Path) -> dict[str, list[str]]:
    """rule name -> the ``embtune`` CLI stages its shell command runs (empty for shell-only rules)."""
    return {name: sorted(set(SHELL_STAGE.findall(block))) for name, block in rule_blocks(smk).items()}


def rule_code_params(smk: Path) -> dict[str, list[str] | None]:
    """rule name -> the stages named in its ``code=code_version(...)`` param (None: no param)."""
    out: dict[str, list[str] | None] = {}
    for name, block in rule_blocks(smk).items():
        m = CODE_PARAM.search(block)
        out[name] = None if m is None else [ast.literal_eval(a.strip()) for a in m.group(1).split(",") if a.strip()]
    return out


def workflow_imports(files: list[Path], root: Path = codeversion.ROOT) -> list[str]:
    """Modules named by the ``import embtune...`` / ``from embtune... import`` lines of Snakemake
    files (not Python as a whole, so line by line); ``from embtune import cost`` gives both."""
    modules: set[str] = set()
    for f in files:
        for line in IMPORT_LINE.findall(f.read_text()):
            node = ast.parse(line.strip().split("#", 1)[0].strip()).body[0]
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names)
            else:
                modules.add(node.module)
                modules.update(f"{node.module}.{a.name}" for a in node.names)
    return sorted(m for m in modules if codeversion.module_file(m, root) is not None)


def _stage_deps(stage: dict) -> list[str]:
    return list((stage.get("do") or stage).get("deps") or [])


def _stage_cmd(stage: dict) -> str:
    cmd = (stage.get("do") or stage).get("cmd") or ""
    return "\n".join(cmd) if isinstance(cmd, list) else cmd


def stage_code_files(deps: list[str], repo: Path = REPO, root: Path | None = None, cmd: str = "") -> list[str]:
    """src/embtune/... files a DVC stage with these deps runs (sorted); ``cmd``: its command,
    for a stage that runs an ``embtune <stage>`` itself rather than a Snakemake phase."""
    root = Path(root or codeversion.ROOT)
    smks = [repo / d for d in deps if re.fullmatch(r"workflow/rules/\w+\.smk", d)]
    cli_stages = {s for smk in smks for stages in rule_stages(smk).values() for s in stages}
    cli_stages |= set(re.findall(r"(?m)^\s*embtune ([a-z][a-z0-9-]*)", cmd))
    files = {f for s in cli_stages for f in codeversion.stage_closure(s, root)}
    snakefiles = [repo / "Snakefile", *smks] if "Snakefile" in deps else smks
    files |= set(codeversion.closure(workflow_imports(snakefiles, root), root))
    return [f"src/embtune/{f}" for f in sorted(files)]


def dvc_stage_files(dvc_yaml: Path = REPO / "dvc.yaml") -> dict[str, list[str]]:
    """DVC stage name -> its derived code deps."""
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    return {name: stage_code_files(_stage_deps(stage), dvc_yaml.parent, cmd=_stage_cmd(stage))
            for name, stage in stages.items()}


def render(text: str, files: dict[str, list[str]]) -> str:
    """dvc.yaml's text with each stage's marker block replaced by its derived file list."""
    for stage, paths in files.items():
        begin, end = BEGIN.format(stage=stage), END.format(stage=stage)
        pattern = re.compile(rf"^([ \t]*){re.escape(begin)}\n.*?^[ \t]*{re.escape(end)}\n", re.M | re.S)
        m = pattern.search(text)
        if m is None:
            raise SystemExit(f"dvc.yaml: stage {stage!r} has no '{begin}' ... '{end}' block in its deps")
        indent = m.group(1)
        block = "".join([f"{indent}{begin}\n", *(f"{indent}- {p}\n" for p in paths), f"{indent}{end}\n"])
        text = text[: m.start()] + block + text[m.end():]
    return text


def pnd_lines(kind: str, sources: list[str]) -> list[str]:
    """The dvc.yaml list items of the PND sources: their rules (a var the data phase targets and
    allows), their folders as persisted outs, or as deps."""
    if kind == "rules":
        return [f"- pnd_rules: {' '.join(pnd_sets.prepare_rule(s) for s in sources)}"]
    if kind == "outs":
        return [line for s in sources for line in (f"- ${{item.processed}}/{s}:", "    persist: true")]
    return [f"- ${{item.processed}}/{s}" for s in sources]


def render_pnd(text: str, sources: list[str] | None = None) -> str:
    """dvc.yaml's text with each PND sources block holding the registry's sources."""
    sources = list(pnd_sets.sources()) if sources is None else sources

    def block(m: re.Match[str]) -> str:
        indent, kind, stage = m.groups()
        head = f"{indent}# >>> PND sources ({kind}) of stage {stage}: written by workflow/scripts/dvc_code_deps.py\n"
        body = "".join(f"{indent}{line}\n" for line in pnd_lines(kind, sources))
        return head + body + f"{indent}# <<< PND sources ({kind}) of stage {stage}\n"

    return PND_BLOCK.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dvc-yaml", type=Path, default=REPO / "dvc.yaml")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not up to date")
    args = parser.parse_args(argv)
    text = args.dvc_yaml.read_text()
    new = render_pnd(render(text, dvc_stage_files(args.dvc_yaml)))
    if args.check:
        if new != text:
            print(f"{args.dvc_yaml}: code deps or PND sources are stale; run python workflow/scripts/dvc_code_deps.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        tmp = args.dvc_yaml.with_suffix(".yaml.tmp")
        tmp.write_text(new)
        tmp.replace(args.dvc_yaml)
    return 0


if __name__ == "__main__":
    sys.exit(main())
