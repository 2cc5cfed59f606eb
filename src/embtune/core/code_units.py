"""One module's source cut into *units*, the pieces a rerun hash counts (:mod:`embtune.core.code_reach`
has the rules of which units a stage reaches).

Why apart from the walk: cutting a file into units reads one module's AST and nothing else, so
its result is cached per file (:mod:`embtune.core.codeversion`'s unit cache, keyed by the file's
content hash), while the walk over the units of every module a stage reaches runs on each hash.

A unit is one top-level statement (a function, a class with all its methods, an assignment, an
import); the statements inside a top-level ``if``/``try`` are units of their own, beside one for
the test and handler clauses. Each records the names it binds, its kind, the hash of its AST
(docstrings stripped: a docstring edit computes nothing new), the dotted names it reads and its
imports.
"""

from __future__ import annotations

import ast
import hashlib
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
