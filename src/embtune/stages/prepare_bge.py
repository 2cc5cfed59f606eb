"""Stage ``prepare-bge``: FlagEmbedding BGE pairs -> tokenised, deduplicated parquet shards (paper 1).

Why a driver apart from :mod:`embtune.data.bge`: the library takes typed settings
(:class:`~embtune.data.bge.BgeSettings`, one field per flag) and writes the output directory;
parsing the flags, the one-line summary and the exit code live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from embtune.data.bge import BgeSettings, run
from embtune.data.jsonl import run_stage

STAGE = "prepare-bge"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True, help="JSONL(.gz) files or globs")
    ap.add_argument("--tokenizer", required=True, help="HF tokenizer directory")
    ap.add_argument("--context-length", type=int, required=True)
    ap.add_argument("--val-pairs", type=int, required=True)
    ap.add_argument("--max-pairs", type=int, default=None,
                    help="keep at most N pairs (val + train), a uniform sample of the shuffled set")
    ap.add_argument("--shard-rows", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--no-english-filter", action="store_true")
    ap.add_argument("--no-dedup", action="store_true")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--threads", type=int, default=None,
                    help="processes reading/filtering the input files and threads of the tokenizer "
                         "(the output does not depend on it; default: one reader, tokenizer "
                         "threads as TOKENIZERS_PARALLELISM says)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    return run_stage(STAGE, run, BgeSettings(**vars(_parser().parse_args(argv))), lambda m: (
        f"prepare-bge: {m['rows_in']} rows in, {m['rows_out']} pairs out "
        f"({m['val_rows']} val, {len(m['train_shards'])} train shards), "
        f"drops {m['drops']}, duplicates {m['duplicates_removed']}"))
