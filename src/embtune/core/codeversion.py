"""The library code each ``embtune <stage>`` runs, derived from the source: rerun hashes.

Why: Snakemake re-runs a job when a rule's params change (its ``params`` rerun trigger), so every
rule that runs project code carries ``code=code_version("<stage>")``, a hash of the code its CLI
stage runs; DVC re-runs a stage when one of its ``deps`` changes, so each DVC stage lists source
files. Both are derived here, never hand-kept (hand-kept lists drifted from the imports):

- a stage's entry points are ``embtune/cli.py`` (the dispatcher) and the module that
  ``cli.STAGES`` maps the stage name to, read from cli.py's source with ``ast``;
- **the rerun hash** (:func:`code_version`) covers the functions, classes, constants and
  import-time statements reachable *by name* from ``cli.main`` and the stage module's
  ``main``/``_parser``/``_parse`` (:mod:`embtune.core.code_reach` has the rules), each as its AST
  without docstrings. So a comment, a docstring, the formatting, or a definition nothing
  reachable names (a new helper in io.py, which nearly every stage imports) re-runs nothing,
  while an edit of code a stage can run re-runs it (tests/contracts/test_rerun_hashes.py,
  tests/e2e/test_rerun_identity.py);
- **the import closure** (:func:`stage_closure`): every module the stage imports, function-level
  lazy imports included, with parent packages' ``__init__.py``. It is a superset of what a plain
  ``import`` loads, which the contract test checks against ``sys.modules`` in a fresh
  interpreter. DVC depends on files, so its ``deps`` are these whole files
  (workflow/scripts/dvc_code_deps.py): ``dvc repro`` then re-runs the Snakemake phase, and
  Snakemake, by the rerun hashes, runs only the jobs whose code changed;
- only modules under the ``embtune`` package count: third-party code is pinned by the
  environment, not by this hash;
- a stage that imports a module by a name read from a registry (``prepare-pnd`` runs the loader
  each PND set names, :mod:`embtune.core.pnd_sets`) has those modules as entries too
  (:func:`loaded_by_name`): no import statement shows them.

**Cached on disk** (:func:`cache_dir`): every Snakemake process computes these hashes while it
parses the workflow: the controller, each dry run, and each SLURM job, which starts a Snakemake
of its own. Parsing the ~140 modules is most of the cost. A module's imports and its units are
kept under the hash of its bytes, and a set of stages' hash under the hash of every module's
path and bytes, so a changed byte misses the cache and nothing stale is ever read. The digests
are the same with or without the cache.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from embtune.core import code_reach, code_units

PACKAGE = "embtune"
ROOT = Path(__file__).resolve().parents[1]   # src/embtune
DIGEST_CHARS = 16
CACHE_ENV = "EMBTUNE_CACHE_DIR"
# Bumped whenever what is cached changes meaning (a new normalisation, a new import rule)
CACHE_FORMAT = "2"
_NAME = re.compile(rf"^{PACKAGE}(\.\w+)*$")
_DIGEST = re.compile(rf"^[0-9a-f]{{{DIGEST_CHARS}}}$")


def cache_dir() -> Path:
    """Where the hashes are cached: ``$EMBTUNE_CACHE_DIR``, else ``$XDG_CACHE_HOME/embtune``,
    else ``~/.cache/embtune``; then ``codeversion/``. Shared by every checkout of the project
    (entries are keyed by content), and by a cluster's login and compute nodes where ``$HOME``
    is shared. Unwritable: nothing is cached, the hashes are computed."""
    base = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / PACKAGE
    return Path(base) / "codeversion"


def _cache_key(*parts: str) -> str:
    """Also keyed by the analysers' own bytes: an edit of the rules here, in code_reach.py or in
    code_units.py misses every entry, even where CACHE_FORMAT was not bumped."""
    return hashlib.sha256("\0".join((CACHE_FORMAT, _analysers_hash(), *parts)).encode()).hexdigest()


def _analysers_hash() -> str:
    return "".join(_content_hash(Path(m.__file__)) for m in (code_reach, code_units, sys.modules[__name__]))


def _cache_read(key: str, valid: re.Pattern[str]) -> list[str] | None:
    """The cached lines of ``key``, or None when absent, unreadable or not all ``valid``."""
    try:
        lines = (cache_dir() / key).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return lines if all(valid.match(line) for line in lines) else None


def _cache_write(key: str, lines: Iterable[str]) -> None:
    """Atomically (temp + rename: concurrent SLURM jobs may write the same entry), or not at all."""
    from embtune.core.errors import DataError
    from embtune.core.io import write_text

    try:
        write_text(cache_dir() / key, "".join(f"{line}\n" for line in lines))
    except (OSError, DataError):
        pass


def stage_modules(root: Path = ROOT) -> dict[str, str]:
    """``embtune <stage>`` name -> the module it dispatches to, read from cli.py's ``STAGES``
    literal (no import, so a temp copy of the package can be analysed as well)."""
    return dict(_stage_modules(Path(root)))


def _stage_modules(root: Path) -> tuple[tuple[str, str], ...]:
    stat = (root / "cli.py").stat()
    return _stage_modules_cached(root, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _stage_modules_cached(root: Path, _mtime_ns: int, _size: int) -> tuple[tuple[str, str], ...]:
    tree = ast.parse((root / "cli.py").read_text(), filename=str(root / "cli.py"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "STAGES" and node.value is not None:
            stages = ast.literal_eval(node.value)
            return tuple((name, module) for name, (module, _help) in stages.items())
    raise ValueError(f"{root / 'cli.py'}: no STAGES = {{...}} literal")


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The file of module ``embtune.x.y`` under ``root`` (a module or a package's __init__)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = Path(root).joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py") if parts[1:] else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def _content_hash(path: Path) -> str:
    """sha256 of the file's bytes, read once per process while its mtime and size stay."""
    stat = path.stat()
    return _content_hash_cached(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4096)
def _content_hash_cached(path: Path, _mtime_ns: int, _size: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _imported_names(path: Path, root: Path) -> set[str]:
    """Absolute names of every ``embtune`` module (or name inside one) ``path`` imports."""
    stat = path.stat()
    return set(_imported_names_cached(path, root, stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=1024)
def _imported_names_cached(path: Path, root: Path, _mtime_ns: int, _size: int) -> frozenset[str]:
    """Each file is parsed once per process (Snakemake asks for ~25 overlapping closures);
    the key includes mtime and size so an edited file is parsed again. On disk: under the hash
    of the module's name (relative imports resolve against it) and bytes."""
    name = _module_name(path, root)
    key = _cache_key("imports", name, _content_hash(path))
    cached = _cache_read(key, _NAME)
    if cached is not None:
        return frozenset(cached)
    names = _parse_imports(path, name)
    _cache_write(key, sorted(names))
    return names


def _parse_imports(path: Path, name: str) -> frozenset[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            # `from embtune.models import flops`: flops may be a sub-module
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return frozenset(n for n in names if n == PACKAGE or n.startswith(PACKAGE + "."))


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def closure(modules: Iterable[str], root: Path = ROOT) -> list[str]:
    """Paths (relative to ``root``, posix, sorted) of every file the modules import, transitively,
    within the package; parent packages' ``__init__.py`` included."""
    root = Path(root)
    seen: set[Path] = set()
    todo = [n for m in modules for n in _with_parents(m)]
    while todo:
        name = todo.pop()
        path = module_file(name, root)
        if path is None:
            # `from embtune.x import some_function`: not a module; its module is handled as base
            continue
        if path in seen:
            continue
        seen.add(path)
        for imported in _imported_names(path, root):
            todo.extend(_with_parents(imported))
    return sorted(p.relative_to(root).as_posix() for p in seen)


#: What the generic PND stage calls in a loader module (embtune.data.pnd_loader)
LOADER_ENTRIES = ("FILES_HELP", "OPTIONS", "prepare")


def loaded_by_name(stage: str) -> tuple[str, ...]:
    """The modules ``embtune <stage>`` imports by a name its registry holds (``importlib``): the
    PND loaders for ``prepare-pnd``, none for any other stage."""
    from embtune.core import pnd_sets

    return tuple(sorted(set(pnd_sets.sources().values()))) if stage == pnd_sets.PREPARE_PND else ()


def stage_closure(stage: str, root: Path = ROOT) -> list[str]:
    """The files ``embtune <stage>`` runs: cli.py plus the import closure of the stage module (and
    of the modules it loads by name)."""
    modules = stage_modules(root)
    if stage not in modules:
        raise KeyError(f"unknown embtune stage {stage!r} (cli.STAGES has: {', '.join(sorted(modules))})")
    return closure([f"{PACKAGE}.cli", modules[stage], *loaded_by_name(stage)], root)


def normalised_source(path: Path) -> bytes:
    """What of a module can change a result: its AST without docstrings, as ``ast.dump`` writes it
    (no line or column numbers), so comments, docstrings and formatting do not count (a
    comment in io.py once re-planned every training run). Not Python: the raw bytes."""
    stat = path.stat()
    return _normalised_cached(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=1024)
def _normalised_cached(path: Path, _mtime_ns: int, _size: int) -> bytes:
    if path.suffix != ".py":
        return path.read_bytes()
    tree = code_units.strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
    return ast.dump(tree, include_attributes=False).encode()


def code_version(*stages: str, root: Path = ROOT) -> str:
    """The rerun hash of one or more CLI stages (a Snakemake rule's ``code`` param): the paths
    and normalised sources of the definitions they can run (:func:`reach_digest`). On disk:
    under the stages and the hash of every module of the package (~30 overlapping walks were
    ~0.5 s of each workflow parse)."""
    if not stages:
        raise ValueError("code_version needs at least one embtune stage name")
    loaded = [m for s in sorted(set(stages)) for m in loaded_by_name(s)]
    key = _cache_key("stages", *sorted(set(stages)), *loaded, _package_hash(Path(root)))
    cached = _cache_read(key, _DIGEST)
    if cached and len(cached) == 1:
        return cached[0]
    value = reach_digest(stages, root)
    _cache_write(key, [value])
    return value


# What `embtune <stage>` calls in the stage module: cli.main parses with `_parser()` or
# `_parse(argv)` (the stage's own arguments, checked before any work), then runs `main(argv)`.
STAGE_ENTRIES = ("main", "_parser", "_parse")


def stage_units(*stages: str, root: Path = ROOT) -> dict[str, list[code_units.Unit]]:
    """File (relative to ``root``) -> the units (embtune.core.code_units) ``embtune <stage>`` can run,
    from ``cli.main`` and the stage module's entries."""
    root = Path(root)
    modules = stage_modules(root)
    unknown = sorted(set(stages) - set(modules))
    if unknown:
        raise KeyError(f"unknown embtune stage {unknown[0]!r} (cli.STAGES has: {', '.join(sorted(modules))})")
    entries = [(f"{PACKAGE}.cli", ("main",)), *((modules[s], STAGE_ENTRIES) for s in sorted(set(stages))),
               *((m, LOADER_ENTRIES) for s in sorted(set(stages)) for m in loaded_by_name(s))]
    found = code_reach.reachable(entries, lambda name: _units(name, root))
    return {module_file(m, root).relative_to(root).as_posix(): units for m, units in found.items()}


def reach_digest(stages: Iterable[str], root: Path = ROOT) -> str:
    """Hash of the reachable units' files and normalised ASTs, file by file in sorted order and
    in source order within a file: a new unused definition leaves it, an edit of one that runs
    changes it."""
    h = hashlib.sha256()
    for rel, units in sorted(stage_units(*stages, root=root).items()):
        for unit in units:
            h.update(f"{rel}\0{unit.digest}\0".encode())
    return h.hexdigest()[:DIGEST_CHARS]


def _units(name: str, root: Path) -> list[code_units.Unit] | None:
    path = module_file(name, root)
    if path is None:
        return None
    stat = path.stat()
    return _units_cached(path, name, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=1024)
def _units_cached(path: Path, name: str, _mtime_ns: int, _size: int) -> list[code_units.Unit]:
    """A module's units, parsed once per process; on disk as JSON under the hash of the
    module's name (relative imports resolve against it) and bytes."""
    key = _cache_key("units", name, _content_hash(path))
    try:
        raw = json.loads((cache_dir() / key).read_text())
        return [code_units.Unit.from_json(u) for u in raw]
    except (OSError, UnicodeDecodeError, ValueError, TypeError):
        pass
    units = code_units.analyse(path.read_text(), name, path.name == "__init__.py", filename=str(path))
    _cache_write(key, [json.dumps([u.to_json() for u in units], separators=(",", ":"))])
    return units


def _package_hash(root: Path) -> str:
    """Hash of the paths and bytes of every module under ``root``: any edit, new or removed file
    changes it."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(f"{path.relative_to(root).as_posix()}\0{_content_hash(path)}\0".encode())
    return h.hexdigest()


def missing_modules(declared: Mapping[str, Iterable[str]],
                    required: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """(rule or stage, module) pairs that ``required`` needs and ``declared`` lacks; a rule that is
    not declared at all misses every module it needs. Empty when every rule covers its imports."""
    return sorted((key, mod) for key, mods in required.items()
                  for mod in set(mods) - set(declared.get(key, ())))
