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

How one module is cut into units is :mod:`embtune.core.code_units`; this module is the walk over them.

Over-approximation by name is deliberate: a local variable that shares a module-level name pulls
that definition in (a needless re-run at worst, never a missed one). What stays out is code
nothing reachable names, e.g. a new unused function or constant. Third-party code is not
followed (the environment pins it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from embtune.core.code_units import Unit


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
