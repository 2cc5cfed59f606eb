"""Stage ``prepare-xnli``: XNLI (15 languages) -> one long table, every pair checked in every language.

Why a driver apart from :mod:`embtune.data.xnli`: the library reads and checks the language
tables it is pointed at and stacks them; the arguments, the choice of source (hub or a local
directory), the output table and its manifest live here.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError
from embtune.core.io import provenance, sha256_file, write_json, write_parquet
from embtune.data.xnli import (
    LABELS,
    check_aligned,
    check_translations,
    first_premises,
    long_table,
    read_language,
    relative_file,
    resolver,
)

STAGE = "prepare-xnli"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="hf://datasets/facebook/xnli or a local directory")
    ap.add_argument("--split", default="test")
    ap.add_argument("--languages", nargs="+", required=True)
    ap.add_argument("--max-premises", type=int, default=None,
                    help="keep the first N premises with their hypotheses (the same rows in every language)")
    ap.add_argument("--out", required=True, help="output parquet (manifest.json is written beside it)")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    if len(set(args.languages)) != len(args.languages):
        raise DataError(f"--languages has duplicates: {args.languages}")
    resolve = resolver(args.source)
    paths = {lang: resolve(relative_file(lang, args.split)) for lang in args.languages}
    frames = {lang: read_language(path, lang) for lang, path in paths.items()}
    check_aligned(frames)
    check_translations(frames)
    if args.max_premises is not None:
        if args.max_premises < 1:
            raise DataError(f"--max-premises must be >= 1, got {args.max_premises}")
        frames = first_premises(frames, args.max_premises)
    table = long_table(frames)
    out = Path(args.out)
    write_parquet(out, table)
    first = next(iter(frames.values()))
    manifest = provenance(
        stable=True, stage=STAGE, source=args.source, split=args.split,
        languages=list(args.languages),
        inputs={lang: {"file": relative_file(lang, args.split), "sha256": sha256_file(p)} for lang, p in paths.items()},
        max_premises=args.max_premises, pairs_per_language=first.height, rows_out=table.height,
        label_counts={LABELS[k]: v for k, v in sorted(Counter(first["label"].to_list()).items())},
        output=out.name,
    )
    write_json(out.parent / "manifest.json", manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    """Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` prints it, exits 2)."""
    m = run(_parser().parse_args(argv))
    print(f"{STAGE}: {len(m['languages'])} languages x {m['pairs_per_language']} pairs "
          f"= {m['rows_out']} rows, labels {m['label_counts']}")
    return 0
