"""Stage ``pack-pairs``: prepare-bge shards -> memory-mapped token arrays for training.

Why a driver apart from :mod:`embtune.train.pairs`: the library packs and reads the arrays (its
docstring gives the layout); the arguments and the per-split summary live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from embtune.train.pairs import pack_pairs

STAGE = "pack-pairs"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--bge-dir", required=True, help="output directory of prepare-bge")
    ap.add_argument("--out", required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    meta = pack_pairs(args.bge_dir, args.out)
    for split, info in meta["splits"].items():
        print(f"{STAGE}: {split}: {info['pairs']} pairs, {info['query_tokens'] + info['pos_tokens']} tokens")
    return 0
