"""What a stage's code computes: the definitions reachable from its entry points, found by name.

Why: a rerun hash over whole modules (every file a stage imports) re-runs the stage for an edit
that changes nothing it computes: an unused helper added to io.py, which nearly every stage
imports, re-planned every training job of a study. The hash (:func:`embtune.codeversion.code_version`)
covers instead the module-level statements a stage can execute, found statically:

- a module is split into *units*, one per top-level statement (a function, a class with all
  its methods, an assignment, an import); the statements inside a top-level ``if``/``try`` are
  units of their own, beside a unit for the test and handler clauses;
- the entry units (``cli.main``, the stage module's ``main``, ``_parser`` and ``_parse``) are
  reachable; a reachable unit makes reachable every unit that binds a name it reads: its own
  module's definitions, what an ``import`` binds (``from embtune.x import y`` is ``y`` of
  ``embtune.x``, or the sub-module), attribute chains on modules (``io.write_json``), names a
  ``from x import *`` brings in. Decorators, default arguments, base classes and annotations
  are read like any other name; a module used as a value (``getattr(mod, name)``) makes all of
  it reachable;
- a module runs its non-definition statements (``register(...)``, a ``for`` loop filling a
  table, ``matplotlib.use``) when imported, so those *effects* are reachable once the module is
  loaded: by an entry, by a module-level import of a loaded module, or by an import inside a
  reachable function. So is a definition with a decorator that may register it (not one of
  :data:`PURE_DECORATORS`).

Over-approximation by name is deliberate: a local variable that shares a module-level name pulls
that definition in (a needless re-run at worst, never a missed one). What stays out is code
nothing reachable names, e.g. a new unused function or constant. Third-party code is not
followed (the environment pins it).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

PACKAGE = "embtune"
# Decorators that only wrap or describe what they decorate: a definition they decorate runs
# nothing at import time, so it counts only when something names it.
PURE_DECORATORS = frozenset({
    "dataclass", "dataclasses.dataclass", "property", "classmethod", "staticmethod",
    "contextmanager", "contextlib.contextmanager", "lru_cache", "functools.lru_cache", "cache",
    "functools.cache", "cached_property", "functools.cached_property", "wraps", "functools.wraps",
    "abstractmethod", "abc.abstractmethod", "overload", "typing.overload", "torch.no_grad",
})
_DOCSTRING_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_FLATTENED = (ast.If, ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


@dataclass(frozen=True)
class Unit:
    """One module-level statement: the names it binds, its kind (``def``: a definition or an
    assignment, counted when named; ``import``; ``effect``: runs when the module loads), the
    hash of its normalised AST, the dotted names it reads, and its imports as (bound name,
    module, attribute) with module ``""`` for third-party ones, plus the modules they load."""

    binds: tuple[str, ...]
    kind: str
    digest: str
    refs: tuple[tuple[str, ...], ...]
    imports: tuple[tuple[str, str, str], ...]
    loads: tuple[str, ...]

    def to_json(self) -> list:
        return [list(self.binds), self.kind, self.digest, [list(r) for r in self.refs],
                [list(i) for i in self.imports], list(self.loads)]

    @classmethod
    def from_json(cls, raw: list) -> Unit:
        binds, kind, digest, refs, imports, loads = raw
        if kind not in ("def", "import", "effect") or not isinstance(digest, str):
            raise ValueError(f"not a unit: {raw!r}")
        return cls(tuple(map(str, binds)), kind, digest, tuple(tuple(map(str, r)) for r in refs),
                   tuple((str(n), str(m), str(a)) for n, m, a in imports), tuple(map(str, loads)))


def strip_docstrings(tree: ast.AST) -> ast.AST:
    """The tree without docstrings (a docstring edit computes nothing new)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None) if isinstance(node, _DOCSTRING_OWNERS) else None
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def analyse(source: str, module: str, is_package: bool, filename: str = "<module>") -> list[Unit]:
    """The units of one module's source (``module``: its dotted name, for relative imports)."""
    tree = strip_docstrings(ast.parse(source, filename=filename))
    package = module if is_package else module.rpartition(".")[0]
    units: list[Unit] = []
    for stmt in tree.body:
        _add_units(stmt, package, units)
    return units


def _add_units(stmt: ast.stmt, package: str, units: list[Unit]) -> None:
    if isinstance(stmt, _FLATTENED):
        # the clauses (test, handler types) as one effect, then each inner statement
        shell = ast.Try(body=[ast.Pass()], handlers=[ast.ExceptHandler(type=h.type, name=h.name, body=[ast.Pass()])
                                                     for h in getattr(stmt, "handlers", [])],
                        orelse=[], finalbody=[]) if not isinstance(stmt, ast.If) else ast.If(
                            test=stmt.test, body=[ast.Pass()], orelse=[])
        units.append(_unit(shell, (), "effect", package))
        for field in ("body", "orelse", "finalbody"):
            for inner in getattr(stmt, field, []):
                _add_units(inner, package, units)
        for handler in getattr(stmt, "handlers", []):
            for inner in handler.body:
                _add_units(inner, package, units)
        return
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        units.append(_unit(stmt, tuple(n for n, _, _ in _imports_of(stmt, package)), "import", package))
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        pure = all(_dotted(d.func if isinstance(d, ast.Call) else d) in PURE_DECORATORS
                   for d in stmt.decorator_list)
        units.append(_unit(stmt, (stmt.name,), "def" if pure else "effect", package))
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        parts = [_target_names(t) for t in targets]
        plain = all(p is not None for p in parts)
        names = [n for p in parts if p is not None for n in p]
        units.append(_unit(stmt, tuple(names) if plain else (), "def" if plain else "effect", package))
    elif not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
        units.append(_unit(stmt, (), "effect", package))


def _target_names(target: ast.expr) -> list[str] | None:
    """Names an assignment target binds; None when it stores into something (``d[k] = v``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        parts = [_target_names(e.value if isinstance(e, ast.Starred) else e) for e in target.elts]
        return None if any(p is None for p in parts) else [n for p in parts for n in p]
    return None


def _unit(stmt: ast.stmt, binds: tuple[str, ...], kind: str, package: str) -> Unit:
    refs = _Refs()
    if kind != "import":
        refs.visit(stmt)
    imports = [i for node in ast.walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom))
               for i in _imports_of(node, package)]
    loads = {m for node in ast.walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom))
             for m in _loads_of(node, package)}
    digest = hashlib.sha256(ast.dump(stmt, include_attributes=False).encode()).hexdigest()
    return Unit(binds, kind, digest, tuple(sorted(refs.chains)), tuple(imports), tuple(sorted(loads)))


class _Refs(ast.NodeVisitor):
    """Dotted name chains read: ``a.b.c`` once, not ``a`` and ``a.b`` as well."""

    def __init__(self) -> None:
        self.chains: set[tuple[str, ...]] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.chains.add((node.id,))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attrs: list[str] = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            attrs.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name):
            self.chains.add((cur.id, *reversed(attrs)))
        else:
            self.visit(cur)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    anchor = package.split(".")
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def _ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _imports_of(node: ast.Import | ast.ImportFrom, package: str) -> list[tuple[str, str, str]]:
    """(bound name, module, attribute) per alias; module "" for third-party imports."""
    if isinstance(node, ast.Import):
        out = []
        for alias in node.names:
            module = alias.name if alias.asname else alias.name.split(".")[0]
            out.append((alias.asname or module, module if _ours(module) else "", ""))
        return out
    base = _absolute(node, package)
    return [(a.asname or a.name, base if _ours(base) else "", a.name if a.name != "*" else "")
            for a in node.names]


def _loads_of(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """Modules the import statement runs (``from m import x``: m, and m.x if x is a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if _ours(a.name)]
    base = _absolute(node, package)
    return [base, *(f"{base}.{a.name}" for a in node.names if a.name != "*")] if _ours(base) else []


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


class Reach:
    """The walk: ``units_of(module)`` gives a module's units, or None when it is not a module
    of the package (a name inside one, or a missing file)."""

    def __init__(self, units_of: Callable[[str], list[Unit] | None]) -> None:
        self._units_of = units_of
        self._memo: dict[str, list[Unit] | None] = {}
        self._binds: dict[str, dict[str, list[int]]] = {}
        self.reached: dict[str, set[int]] = {}
        self.loaded: set[str] = set()
        self._todo: list[tuple[str, int]] = []
        self._seen: set[tuple[str, tuple[str, ...]]] = set()

    def units(self, module: str) -> list[Unit] | None:
        if module not in self._memo:
            self._memo[module] = self._units_of(module)
        return self._memo[module]

    def entry(self, module: str, names: Iterable[str]) -> None:
        """Load ``module`` and reach its definitions of ``names`` (absent ones are skipped)."""
        self.load(module)
        for name in names:
            self._resolve(module, (name,), {})
        self._run()

    def load(self, module: str) -> None:
        for name in _with_parents(module):
            units = self.units(name)
            if name in self.loaded or units is None:
                continue
            self.loaded.add(name)
            for i, unit in enumerate(units):
                if unit.kind == "effect":
                    self._reach(name, i)
                elif unit.kind == "import":
                    for target in unit.loads:
                        self.load(target)

    def _reach(self, module: str, index: int) -> None:
        done = self.reached.setdefault(module, set())
        if index not in done:
            done.add(index)
            self._todo.append((module, index))

    def _run(self) -> None:
        while self._todo:
            module, index = self._todo.pop()
            unit = self.units(module)[index]
            if unit.kind == "import":
                continue
            for target in unit.loads:
                self.load(target)
            local = {name: (mod, attr) for name, mod, attr in unit.imports}
            for chain in unit.refs:
                self._resolve(module, chain, local)

    def _binds_of(self, module: str) -> dict[str, list[int]]:
        if module not in self._binds:
            table: dict[str, list[int]] = {}
            for i, unit in enumerate(self.units(module) or ()):
                for name in unit.binds:
                    table.setdefault(name, []).append(i)
            self._binds[module] = table
        return self._binds[module]

    def _resolve(self, module: str, chain: tuple[str, ...], local: dict[str, tuple[str, str]]) -> None:
        """Reach what ``chain`` (``name.attr...``, read in ``module``) names."""
        name, rest = chain[0], chain[1:]
        if name in local:
            self._follow(*local[name], rest)
            return
        if not local:
            if (module, chain) in self._seen:
                return
            self._seen.add((module, chain))
        binds = self._binds_of(module)
        for i in binds.get(name, ()):
            self._reach(module, i)
            unit = self.units(module)[i]
            for bound, mod, attr in unit.imports if unit.kind == "import" else ():
                if bound == name:
                    self._follow(mod, attr, rest)
        if name not in binds:
            for i in binds.get("*", ()):
                self._reach(module, i)
                for bound, mod, _ in self.units(module)[i].imports:
                    if bound == "*":
                        self._follow(mod, name, rest)

    def _follow(self, module: str, attr: str, rest: tuple[str, ...]) -> None:
        """Reach ``module.attr.rest...`` (``attr`` "": the module itself)."""
        if not module:
            return   # third-party
        self.load(module)
        if attr:
            self._attr(module, attr, rest)
        elif rest:
            self._attr(module, rest[0], rest[1:])
        else:   # the module used as a value: all of it
            for i in range(len(self.units(module) or ())):
                self._reach(module, i)

    def _attr(self, module: str, attr: str, rest: tuple[str, ...]) -> None:
        sub = f"{module}.{attr}"
        if self.units(sub) is not None:
            self._follow(sub, "", rest)
        if self.units(module) is not None:
            self._resolve(module, (attr, *rest), {})


def reachable(entries: Iterable[tuple[str, Iterable[str]]],
              units_of: Callable[[str], list[Unit] | None]) -> dict[str, list[Unit]]:
    """Module -> its reachable units, in source order, from ``entries`` (module, entry names)."""
    walk = Reach(units_of)
    for module, names in entries:
        walk.entry(module, names)
    return {m: [walk.units(m)[i] for i in sorted(idx)] for m, idx in walk.reached.items()}
