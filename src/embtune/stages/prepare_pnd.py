"""Stage ``prepare-pnd``: a PND source's raw files -> its evaluation sets, by their loader.

Paper 2, App. C, D and Table 2: the loader is the module the sets name in the registry
(:mod:`embtune.core.pnd_sets`).

``embtune prepare-pnd <source> --files F... [the loader's options] --out DIR``: ``<source>`` is a
folder of loader sets (:func:`embtune.core.pnd_sets.sources`); the options are the loader's ``OPTIONS``
(:mod:`embtune.data.pnd_loader`). Why one driver for every loader: the arguments, combining the
files, the output directory (each set's file and the manifest, renamed into place together) and
the one-line summary are the same for each; what differs (reading the files, choosing positives
and negatives, the sets' filters) is the loader's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.io import atomic_dir, provenance, write_json, write_parquet
from embtune.core.layout import MANIFEST_JSON, pnd_file_name
from embtune.data.pnd_loader import load

STAGE = pnd_sets.PREPARE_PND


def _build_parser(loader: ModuleType | None = None) -> argparse.ArgumentParser:
    sources = list(pnd_sets.sources())
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("source", choices=sources, help="the folder of sets one loader writes")
    ap.add_argument("--files", nargs="+", required=True,
                    help=loader.FILES_HELP if loader else "the source's raw files, combined in order")
    for opt in loader.OPTIONS if loader else ():
        if opt.type is bool:
            ap.add_argument(opt.flag, action="store_true", help=opt.help)
        else:
            ap.add_argument(opt.flag, type=opt.type, default=opt.default, help=opt.help, choices=opt.choices,
                            nargs="+" if opt.many else None)
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def _loader(argv: Sequence[str]) -> ModuleType | None:
    """The loader of the source named first (None when there is none: the parser says why)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return load(pnd_sets.loader_of(first)) if first in pnd_sets.sources() else None


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    return _build_parser(_loader(argv)).parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    loader = load(pnd_sets.loader_of(args.source))
    prepared = loader.prepare(args.files, args)
    expected = set(pnd_sets.source_sets(args.source))
    if not set(prepared.frames) <= expected:
        raise DataError(f"PND loader {loader.__name__}: wrote set(s) {sorted(set(prepared.frames) - expected)}; "
                        f"expected only {sorted(expected)} (the registry's sets of source {args.source!r})")
    with atomic_dir(args.out) as out:
        for name, frame in prepared.frames.items():
            write_parquet(out / pnd_file_name(name), frame)
        manifest = provenance(stable=True, stage=STAGE, source=args.source, **prepared.manifest)
        write_json(out / MANIFEST_JSON, manifest)
    return {**manifest, "summary": prepared.summary}


def main(argv: Sequence[str] | None = None) -> int:
    """Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` prints it, exits 2)."""
    m = run(_parse(sys.argv[1:] if argv is None else list(argv)))
    print(f"{STAGE} {m['source']}: {m['summary']}")
    return 0
