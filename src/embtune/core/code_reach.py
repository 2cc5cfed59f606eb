"""What a stage's code computes: the definitions reachable from its entry points, found by name.

Why: a rerun hash over whole modules (every file a stage imports) re-runs a stage for an edit
that changes nothing it computes: an unused helper added to io.py, which nearly every stage
imports, re-planned every training job of a study. The hash (:func:`embtune.core.codeversion.code_version`)
covers instead the module-level statements a stage can execute, found statically:

- a module is split into *units*, one per top-level statement (a function, a class with all
  its methods, an assignment, an import); the statements inside a top-level ``if``/``try`` are
  units of their own, beside one for the test and handler clauses;
- the entry units (``cli.main``, the stage module's ``main``, ``_parser``, ``_parse``) are
  reachable; a reachable unit reaches every unit that binds a name it reads: its module's
  definitions, what an ``import`` binds (``from embtune.x import y``: ``y`` of ``embtune.x``, or
  the sub-module), attribute chains on modules (``io.write_json``), a ``from x import *``.
  Decorators, default arguments, base classes and annotations are names like any other; a module
  used as a value (``getattr(mod, name)``) is reached whole;
- a module runs its other statements (``register(...)``, a loop filling a table,
  ``matplotlib.use``) when it is loaded (by an entry, a loaded module's import, or an import in
  reached code); so does a definition whose decorator may register it (not in
  :data:`PURE_DECORATORS`). Such an *effect* counts when it can change a result
  (:meth:`Reach._counts`).

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
    """One module-level statement: the names it binds; its kind (``def``, counted when named;
    ``import``; ``effect``, run on load); the hash of its AST; the dotted names it reads; its
    imports as (bound name, module ``""`` if third-party, attribute); the modules they load."""

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
        names = None if None in parts else tuple(n for p in parts for n in p)
        units.append(_unit(stmt, names or (), "effect" if names is None else "def", package))
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
    return module.split(".")[0] == PACKAGE


def _imports_of(node: ast.Import | ast.ImportFrom, package: str) -> list[tuple[str, str, str]]:
    """(bound name, module, attribute) per alias; module "" for third-party imports."""
    if isinstance(node, ast.Import):   # `import a.b` binds a; `import a.b as c` binds c to a.b
        bound = [(a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2 for a in node.names]
        return [(name, module if _ours(module) else "", "") for name, module in bound]
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


Target = tuple[str, int]   # (module, index of one of its units)


class Reach:
    """The walk: ``units_of(module)`` gives a module's units, or None when it is not a module
    of the package (a name inside one, or a missing file)."""

    def __init__(self, units_of: Callable[[str], list[Unit] | None]) -> None:
        self._units_of = units_of
        self._memo: dict[str, list[Unit] | None] = {}
        self._binds: dict[str, dict[str, list[int]]] = {}
        self._lookups: dict[tuple[str, tuple[str, ...]], tuple[frozenset[Target], frozenset[str], bool]] = {}
        self.reached: dict[str, set[int]] = {}
        self.loaded: set[str] = set()
        self._named: set[str] = set()           # modules something reached names a definition of
        self._pending: set[Target] = set()      # effects of loaded modules, not yet known to count
        self._todo: list[Target] = []

    def units(self, module: str) -> list[Unit] | None:
        return self._memo[module] if module in self._memo else self._memo.setdefault(module, self._units_of(module))

    def entry(self, module: str, names: Iterable[str]) -> None:
        """Load ``module`` and reach its definitions of ``names`` (absent ones are skipped)."""
        self._named.add(module)
        self.load(module)
        for name in names:
            self._resolve(module, (name,), {})

    def settle(self) -> None:
        """Walk until nothing more is reached: pending effects join when they count (:meth:`_counts`)."""
        while True:
            self._run()
            ready = sorted(e for e in self._pending if self._counts(*e))
            self._pending -= {e for e in self._pending if e[1] in self.reached.get(e[0], ())}
            if not ready:
                return
            for module, index in ready:
                self._pending.discard((module, index))
                self._reach(module, index)

    def load(self, module: str) -> None:
        for name in _with_parents(module):
            units = self.units(name)
            if name in self.loaded or units is None:
                continue
            self.loaded.add(name)
            for i, unit in enumerate(units):
                if unit.kind == "effect":
                    self._pending.add((name, i))
                elif unit.kind == "import":
                    for target in unit.loads:
                        self.load(target)

    def _counts(self, module: str, index: int) -> bool:
        """Whether an effect of a loaded module can change what the stage computes: its module
        is named by reached code; or it touches third-party state (``matplotlib.use``,
        ``torch.set_...``); or it touches a reached definition, directly or through the
        module-level names of a definition it calls (``register(x)`` fills the ``_TABLE`` that a
        reached ``get`` reads). A table-filling loop of a module the stage imports but never
        reads (pnd_sets.py's for paper 1's training) does not count."""
        if module in self._named:
            return True
        unit = self.units(module)[index]
        local = _local(unit)
        direct: set[Target] = set()
        for chain in unit.refs:
            targets, _, third_party = self._lookup(module, chain, local)
            if third_party:
                return True
            direct |= {t for t in targets if self.units(t[0])[t[1]].kind != "import"}
        touched = set(direct)
        for mod, i in direct:
            inner = self.units(mod)[i]
            for chain in inner.refs:
                touched |= {t for t in self._lookup(mod, chain, _local(inner))[0]
                            if t[0] == mod and self.units(mod)[t[1]].kind != "import"}
        return any(i in self.reached.get(mod, ()) for mod, i in touched)

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
            local = _local(unit)
            for chain in unit.refs:
                self._resolve(module, chain, local)

    def _resolve(self, module: str, chain: tuple[str, ...], local: dict[str, tuple[str, str]]) -> None:
        """Reach what ``chain`` (``name.attr...``, read in ``module``) names, and load the
        modules on the way."""
        targets, modules, _ = self._lookup(module, chain, local)
        for name in modules:
            self.load(name)
        for mod, i in targets:
            if self.units(mod)[i].kind != "import":
                self._named.add(mod)
            self._reach(mod, i)

    def _binds_of(self, module: str) -> dict[str, list[int]]:
        if module not in self._binds:
            table: dict[str, list[int]] = {}
            for i, unit in enumerate(self.units(module) or ()):
                for name in unit.binds:
                    table.setdefault(name, []).append(i)
            self._binds[module] = table
        return self._binds[module]

    def _lookup(self, module: str, chain: tuple[str, ...], local: dict[str, tuple[str, str]]
                ) -> tuple[frozenset[Target], frozenset[str], bool]:
        """What ``chain`` read in ``module`` names: the units (the imports on the way included),
        the modules it goes through, and whether it ends in third-party code."""
        if local and chain[0] in local:
            return self._find(module, chain, local)
        key = (module, chain)
        if key not in self._lookups:
            self._lookups[key] = self._find(module, chain, {})
        return self._lookups[key]

    def _find(self, module: str, chain: tuple[str, ...], local: dict[str, tuple[str, str]]
              ) -> tuple[frozenset[Target], frozenset[str], bool]:
        found = _Lookup(self)
        found.name_in(module, chain, local)
        return frozenset(found.units), frozenset(found.modules), found.third_party


class _Lookup:
    """One name chain's resolution (:meth:`Reach._lookup`), through imports and sub-modules."""

    def __init__(self, walk: Reach) -> None:
        self.walk = walk
        self.units: set[Target] = set()
        self.modules: set[str] = set()
        self.third_party = False
        self.seen: set[tuple[str, tuple[str, ...]]] = set()

    def name_in(self, mod: str, chain: tuple[str, ...], local: dict[str, tuple[str, str]]) -> None:
        name, rest = chain[0], chain[1:]
        if name in local:
            self.follow(*local[name], rest)
            return
        if (mod, chain) in self.seen:
            return
        self.seen.add((mod, chain))
        binds = self.walk._binds_of(mod)
        # a name no statement binds may come from a `from x import *`
        for i in binds.get(name) or binds.get("*", ()):
            self.units.add((mod, i))
            unit = self.walk.units(mod)[i]
            for bound, target, attr in unit.imports if unit.kind == "import" else ():
                if bound == name:
                    self.follow(target, attr, rest)
                elif bound == "*" and name not in binds:
                    self.follow(target, name, rest)

    def follow(self, mod: str, attr: str, rest: tuple[str, ...]) -> None:
        if not mod:
            self.third_party = True
            return
        self.modules.add(mod)
        if not attr and not rest:   # the module used as a value: all of it
            self.units.update((mod, i) for i in range(len(self.walk.units(mod) or ())))
            return
        head, tail = (attr, rest) if attr else (rest[0], rest[1:])
        if self.walk.units(f"{mod}.{head}") is not None:
            self.follow(f"{mod}.{head}", "", tail)
        if self.walk.units(mod) is not None:
            self.name_in(mod, (head, *tail), {})


def _local(unit: Unit) -> dict[str, tuple[str, str]]:
    """Names a definition's own (function-level) imports bind."""
    return {} if unit.kind == "import" else {name: (mod, attr) for name, mod, attr in unit.imports}


def reachable(entries: Iterable[tuple[str, Iterable[str]]],
              units_of: Callable[[str], list[Unit] | None]) -> dict[str, list[Unit]]:
    """Module -> its reachable units, in source order, from ``entries`` (module, entry names)."""
    walk = Reach(units_of)
    for module, names in entries:
        walk.entry(module, names)
    walk.settle()
    return {m: [walk.units(m)[i] for i in sorted(idx)] for m, idx in walk.reached.items()}
