"""The library's import graph runs one way: base -> data -> models -> runconfig ->
train -> plan -> evaluate -> scaling -> plots, and the library never builds a path into the workflow/ folder.

Every ``import`` of every module under src/embtune is read with ``ast`` (function-level and
``TYPE_CHECKING`` imports included: a lazy import is still a dependency), resolved to the
module it names, and checked against the layer table below. A module may import its own layer
and any layer listed before it; ``stages/`` and ``cli.py`` (the drivers) may import anything.
A checker that can pass on anything proves nothing, so it is also run on hand-built trees whose
back-edges are known.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"

#: Lowest first. A module may import from its own layer and the layers before it.
LAYERS = ("base", "data", "models", "runconfig", "train", "plan", "evaluate", "scaling", "plots", "drivers")
#: Subpackages are layers of their own name (``stages/`` is a driver).
PACKAGES = {"data": "data", "models": "models", "train": "train", "evaluate": "evaluate",
            "scaling": "scaling", "plots": "plots", "stages": "drivers"}
#: Top-level modules, placed by what they import and what imports them:
#: - base: no embtune imports but each other (``optim`` holds the LR helpers that models/build.py,
#:   both training loops and the sweep read; ``codeversion`` hashes source files, what
#:   ``code_reach`` finds a stage runs);
#: - runconfig: the typed run configs the training loops take, built from the
#:   method registry in models/;
#: - plan: params and the grid (config validates freeze specs of train/, the sweep expands grids
#:   that evaluate/query_table.py and scaling/ read back), cost and the planning tables;
#: - plots: ``summary`` (headline numbers of finished results);
#: - drivers: the CLI dispatcher.
TOP_LEVEL = {"__init__": "base", "errors": "base", "io": "base", "outputs": "base", "locks": "base", "ranges": "base", "stage_paths": "base", "model_files": "base", "optim": "base", "codeversion": "base", "layout": "base",
             "params_yaml": "base", "pnd_sets": "base",
             "code_reach": "base", "code_units": "base", "failed_jobs": "base",
             "run_identity": "base", "batch_members": "base", "launch": "base", "gpus": "plan", "study_cost": "plan", "progress": "base",
             "config": "plan", "config_checks": "plan", "sweep": "plan", "query_sweep": "plan", "cost": "plan", "plan": "plan",
             "params_coverage": "plan", "runconfig": "runconfig", "summary": "plots", "cli": "drivers"}
#: Known back-edges, each with the work that removes it; the list must shrink, never go stale
#: (empty since the appendix-tables driver passes Fig. 20's drawing into scaling/appendix.py).
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str | None:
    """The layer of ``embtune[.x[.y]]``; None for a top-level module missing from the table."""
    parts = module.split(".")
    if len(parts) == 1:
        return TOP_LEVEL["__init__"]
    return PACKAGES.get(parts[1]) or TOP_LEVEL.get(parts[1])


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def imported_modules(path: Path, root: Path) -> list[tuple[str, int]]:
    """(embtune module, line) for every import in ``path``; ``from pkg import sub`` names the
    submodule when ``sub`` is one, relative imports are resolved against ``path``'s package."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out.append((base, node.lineno))
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names if _is_module(f"{base}.{a.name}", root)]
    return [(m, line) for m, line in out if m == root.name or m.startswith(root.name + ".")]


def back_edges(root: Path) -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import that reaches a higher layer."""
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = module_name(path, root)
        rank = LAYERS.index(layer_of(importer))
        for imported, line in imported_modules(path, root):
            target = layer_of(imported)
            if target is not None and LAYERS.index(target) > rank:
                found.append((importer, imported, line))
    return found


def test_every_library_module_has_a_layer() -> None:
    unplaced = [module_name(p, SRC) for p in SRC.rglob("*.py") if layer_of(module_name(p, SRC)) is None]
    assert unplaced == [], f"add these to TOP_LEVEL in {Path(__file__).name}: {unplaced}"


def test_no_module_imports_from_a_higher_layer() -> None:
    edges = [e for e in back_edges(SRC) if e[:2] not in ALLOWED]
    assert edges == [], "imports against the layer order " + " -> ".join(LAYERS) + ":\n" + "\n".join(
        f"  {a} (line {line}) imports {b}" for a, b, line in edges)


def test_each_allowed_back_edge_still_exists() -> None:
    present = {e[:2] for e in back_edges(SRC)}
    assert ALLOWED <= present, f"remove from ALLOWED (gone): {sorted(ALLOWED - present)}"


def test_the_checker_finds_lazy_relative_and_submodule_back_edges(package_tree) -> None:
    """Hand-built tree, back-edges known: a function-level import (the models -> train edge that
    models/build.py had), a relative one, ``from pkg import submodule``, and a top-level module
    below its importer; allowed edges (same layer, downward, drivers) are not reported."""
    root = package_tree({
        "optim.py": "",
        "sweep.py": "from embtune.models import build\n",                     # plan -> models: fine
        "models/__init__.py": "",
        "models/build.py": """
            from embtune.optim import lr_multiplier
            def pretrain():
                from embtune.train.schedule import lr_multiplier
        """,
        "models/embed_cache.py": "from ..evaluate import pnd\n",
        "train/__init__.py": "",
        "train/schedule.py": "from embtune import sweep\n",
        "evaluate/__init__.py": "",
        "evaluate/pnd.py": "from . import other\nfrom embtune.train import schedule\n",
        "evaluate/other.py": "",
        "stages/__init__.py": "",
        "stages/go.py": "from embtune.evaluate.pnd import x\nimport embtune.train.schedule\n",
    })
    assert sorted(back_edges(root)) == [
        ("embtune.models.build", "embtune.train.schedule", 4),
        ("embtune.models.embed_cache", "embtune.evaluate", 1),
        ("embtune.models.embed_cache", "embtune.evaluate.pnd", 1),
        ("embtune.train.schedule", "embtune.sweep", 1),
    ]


# --------------------------------------------------------------- no import cycles
def import_cycles(root: Path) -> list[list[str]]:
    """The import cycles of the tree under ``root``: each strongly connected component of two or
    more modules (function-level imports count), sorted (networkx, a dependency of torch)."""
    import networkx as nx

    graph = nx.DiGraph()
    for path in root.rglob("*.py"):
        me = module_name(path, root)
        graph.add_node(me)
        graph.add_edges_from((me, m) for m, _ in imported_modules(path, root) if m != me)
    known = {module_name(p, root) for p in root.rglob("*.py")}
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph.subgraph(known)) if len(c) > 1)


def test_the_library_has_no_import_cycle() -> None:
    """Within a layer too: config -> config_checks -> sweep -> config was one."""
    assert import_cycles(SRC) == []


def test_the_cycle_check_finds_cycles(package_tree) -> None:
    """A three-module cycle through a function-level import, a two-module one through a
    package's ``__init__``, and a chain that is not a cycle."""
    root = package_tree({
        "config.py": "from embtune import checks\n",
        "checks.py": "def f():\n    from embtune.sweep import x\n",
        "sweep.py": "from embtune.config import deep_merge\n",
        "models/__init__.py": "from embtune.models.flops import P\n",
        "models/flops.py": "from embtune.models import families\n",
        "models/families.py": "",
        "plots/__init__.py": "",
        "plots/a.py": "from embtune.plots import b\n",
        "plots/b.py": "from embtune.models import flops\n",
    })
    assert import_cycles(root) == [["embtune.checks", "embtune.config", "embtune.sweep"],
                                   ["embtune.models", "embtune.models.flops"]]


# --------------------------------------------------------------- the library does not read workflow/
WORKFLOW_PATH = re.compile(r"(^|[/\\])workflow([/\\]|$)")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def workflow_paths(path: Path) -> list[tuple[int, str]]:
    """(line, string) for each string in code (docstrings and comments aside) that is, or holds,
    a ``workflow`` path component: ``ROOT / "workflow"`` or ``"workflow/schemas/x.yaml"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
            and WORKFLOW_PATH.search(n.value))


def test_no_library_module_builds_a_path_into_workflow() -> None:
    found = {str(p.relative_to(SRC)): hits for p in sorted(SRC.rglob("*.py")) if (hits := workflow_paths(p))}
    assert found == {}


def test_the_workflow_path_check_can_fail(tmp_path: Path) -> None:
    code = tmp_path / "m.py"
    code.write_text('"""Docs may name workflow/rules/x.smk."""\nfrom pathlib import Path\n'
                    'A = Path(__file__).parents[2] / "workflow" / "schemas"\n'
                    'B = "workflow/schemas/params.schema.yaml"\nC = "the workflow does"\n')
    assert workflow_paths(code) == [(3, "workflow"), (4, "workflow/schemas/params.schema.yaml")]


def test_the_params_schema_ships_in_the_package_and_workflow_links_to_it() -> None:
    from embtune import config

    shipped = SRC / config.SCHEMA_RESOURCE
    link = REPO / "workflow" / "schemas" / "params.schema.yaml"
    assert link.is_symlink() and link.resolve() == shipped.resolve()
    assert config.load_schema() == config.read_yaml(shipped)
    assert '"schemas/*.yaml"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.parametrize("module", ["embtune.models.build", "embtune.sweep", "embtune.train.query_tower"])
def test_the_back_edges_of_issue_16_are_gone(module: str) -> None:
    """models -> train, sweep -> train, train -> evaluate: the three edges the issue names."""
    path = SRC / (module.removeprefix("embtune.").replace(".", "/") + ".py")
    forbidden = {"embtune.models.build": "train", "embtune.sweep": "train", "embtune.train.query_tower": "evaluate"}
    assert [m for m, _ in imported_modules(path, SRC) if layer_of(m) == forbidden[module]] == []
