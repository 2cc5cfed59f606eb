"""Stage ``fetch``: download an ``hf://datasets/...`` source file into ``data/raw``; file globs.

Why a driver apart from :mod:`embtune.data.sources`: the library parses URIs and resolves one to
the hub's local cache; the arguments, the copy into ``--out`` (temp + rename) and the printed
``<path>\\t<sha256>`` line live here. With ``--record`` it also writes the file's store record
(repo id, revision, the commit it resolved to, sha256; :mod:`embtune.data.store`), which the
store's manifest gathers. A malformed URI raises :class:`~embtune.core.errors.DataError` (``embtune``
prints it as one line and exits 2).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence

from embtune.core.io import atomic_path, sha256_file, write_json
from embtune.data.sources import parse_hf_uri
from embtune.data.store import dataset_file, go_online

STAGE = "fetch"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--uri", required=True, help="hf://datasets/<org>/<name>/<file>")
    ap.add_argument("--out", required=True, help="destination file")
    ap.add_argument("--revision", default="main", help="branch, tag or commit of the dataset repo")
    ap.add_argument("--record", help="also write the file's store record (JSON) here")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    go_online()
    ref = parse_hf_uri(args.uri)
    src, record = dataset_file(ref.repo_id, ref.filename, args.revision)
    with atomic_path(args.out) as tmp:
        shutil.copyfile(src, tmp)
    digest = sha256_file(args.out)
    if args.record:
        write_json(args.record, {**record, "path": args.out, "sha256": digest})
    print(f"{args.out}\t{digest}")
    return 0
