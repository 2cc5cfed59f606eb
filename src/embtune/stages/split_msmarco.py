"""Stage ``split-msmarco``: MSMARCO triplets -> positional train/val/eval splits (paper 2, App. A).

Why a driver apart from :mod:`embtune.data.msmarco`: the library parses and splits samples it is
given; the arguments, the output directory (four tables and the manifest, built in a temporary
sibling and renamed into place) and the one-line summary live here.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from typing import Any

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, provenance, sha256_file, write_json, write_parquet
from embtune.core.layout import MANIFEST_JSON, pnd_file_name
from embtune.data.msmarco import (
    check_disjoint,
    eval_frame,
    expanded_triplets,
    iter_samples,
    split_samples,
    triplet_frame,
)

STAGE = "split-msmarco"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="msmarco-triplets.jsonl(.gz)")
    ap.add_argument("--train-size", type=int, required=True)
    ap.add_argument("--val-size", type=int, required=True)
    ap.add_argument("--eval-size", type=int, required=True)
    ap.add_argument("--hard-negatives", type=int, required=True,
                    help="eval_hard keeps eval samples with at least this many negatives")
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Split, write the four tables and the manifest into one atomically renamed directory."""
    if min(args.train_size, args.val_size, args.eval_size) < 0 or args.hard_negatives < 1:
        raise DataError("sizes must be >= 0 and --hard-negatives >= 1")
    fixes: Counter = Counter()
    split = split_samples(iter_samples(args.file, fixes), args.train_size, args.val_size, args.eval_size)
    check_disjoint(split, args.file)
    hard = [s for s in split.eval if len(s.negatives) >= args.hard_negatives]
    with atomic_path(args.out) as out:
        out.mkdir()
        write_parquet(out / "train.parquet", triplet_frame(split.train))
        write_parquet(out / "val.parquet", triplet_frame(split.val))
        write_parquet(out / pnd_file_name("msmarco"), eval_frame(split.eval))
        write_parquet(out / pnd_file_name("msmarco-hard"), eval_frame(hard))
        manifest = provenance(
            stable=True, stage=STAGE,
            input={"path": args.file, "sha256": sha256_file(args.file)},
            rows=split.rows, train_rows=len(split.train), val_rows=len(split.val),
            eval_rows=len(split.eval), unused_rows=split.unused,
            eval_first_sample_id=split.eval[0].sample_id if split.eval else None,
            eval_triplets=expanded_triplets(split.eval), hard_negatives=args.hard_negatives,
            eval_hard_rows=len(hard), eval_hard_triplets=expanded_triplets(hard),
            lone_surrogates_replaced=fixes["lone_surrogates_replaced"],
        )
        write_json(out / MANIFEST_JSON, manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    """Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` prints it, exits 2)."""
    m = run(_parser().parse_args(argv))
    print(f"{STAGE}: {m['rows']} samples -> train {m['train_rows']}, val {m['val_rows']}, "
          f"eval {m['eval_rows']} ({m['eval_triplets']} triplets), eval_hard {m['eval_hard_rows']} "
          f"({m['eval_hard_triplets']} triplets), unused {m['unused_rows']}")
    return 0
