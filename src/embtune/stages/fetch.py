"""Stage ``fetch``: download an ``hf://datasets/...`` source file into ``data/raw``; file globs.

Why a driver apart from :mod:`embtune.data.sources`: the library parses URIs and resolves one to
the hub's local cache; the arguments, the copy into ``--out`` (temp + rename) and the printed
``<path>\\t<sha256>`` line live here. A malformed URI raises
:class:`~embtune.errors.DataError` (``embtune`` prints it as one line and exits 2).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence

from embtune.data.sources import hub_download
from embtune.io import atomic_path, sha256_file

STAGE = "fetch"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--uri", required=True, help="hf://datasets/<org>/<name>/<file>")
    ap.add_argument("--out", required=True, help="destination file")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    src = hub_download(args.uri)
    with atomic_path(args.out) as tmp:
        shutil.copyfile(src, tmp)
    print(f"{args.out}\t{sha256_file(args.out)}")
    return 0
