"""Stage ``stage-in``: download a hub model / encoder at a pinned revision into the project store,
or gather the store's records into its manifest (login node; see :mod:`embtune.data.store`).

Why a driver apart from the library: the arguments, the atomic folder (the record is written
last, so a half-finished download is never taken for a staged one) and the printed line live
here. Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` exits 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.core.io import atomic_dir, sha256_file, write_json
from embtune.data.store import STAGE_RECORD, go_online, manifest, snapshot

STAGE = "stage-in"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    snap = sub.add_parser("snapshot", help="one hub repo at one revision -> a store folder")
    snap.add_argument("--repo-id", required=True)
    snap.add_argument("--revision", required=True, help="branch, tag or commit (recorded with its commit)")
    snap.add_argument("--repo-type", choices=("model", "dataset"), default="model")
    snap.add_argument("--out", required=True, type=Path)
    man = sub.add_parser("manifest", help="gather the records of the staged artifacts into one JSON")
    man.add_argument("--snapshots", nargs="*", default=[], type=Path)
    man.add_argument("--records", nargs="*", default=[], type=Path)
    man.add_argument("--extra-files", nargs="*", default=[], type=Path,
                     help="other staged files to list with their sha256 (e.g. the MTEB data's manifest)")
    man.add_argument("--out", required=True, type=Path)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    go_online()
    if args.action == "snapshot":
        with atomic_dir(args.out) as tmp:
            record = snapshot(args.repo_id, args.revision, tmp, repo_type=args.repo_type)
            write_json(tmp / STAGE_RECORD, record)
        converted = f", {len(record['converted'])} converted from pickle" if record.get("converted") else ""
        print(f"{STAGE}: {args.repo_id}@{args.revision} = {record['commit']} -> {args.out} "
              f"({len(record['files'])} files{converted})")
        return 0
    extra = {"files": {p.as_posix(): sha256_file(p) for p in args.extra_files}}
    doc = manifest(args.snapshots, args.records, extra)
    write_json(args.out, doc)
    print(f"{STAGE}: {len(doc['artifacts'])} artifacts -> {args.out}")
    return 0
