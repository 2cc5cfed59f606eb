"""Stage ``prepare-bge-part``: ``embtune prepare-bge`` as N scattered jobs (spill | sort | shards PART, then gather).

Why a driver apart from :mod:`embtune.data.bge_scatter`: the steps there take typed arguments
(:class:`~embtune.data.bge_partition.PartArgs`, one field per flag); the sub-command parser, the
one-line summary and the exit code live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from embtune.data.bge_partition import PartArgs
from embtune.data.bge_scatter import run
from embtune.data.jsonl import run_stage

STAGE = "prepare-bge-part"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)

    def common(p: argparse.ArgumentParser, part: bool = True) -> None:
        p.add_argument("--parts", type=int, required=True, help="number of parts N")
        if part:
            p.add_argument("--part", type=int, required=True, help="this part, 0..N-1")
        p.add_argument("--out", required=True, help="output directory")

    def inputs(p: argparse.ArgumentParser) -> None:
        p.add_argument("--files", nargs="+", required=True, help="JSONL(.gz) files or globs")
        p.add_argument("--seed", type=int, required=True)
        p.add_argument("--no-english-filter", action="store_true")

    def output(p: argparse.ArgumentParser) -> None:
        p.add_argument("--tokenizer", required=True, help="HF tokenizer directory")
        p.add_argument("--context-length", type=int, required=True)
        p.add_argument("--val-pairs", type=int, required=True)
        p.add_argument("--max-pairs", type=int, default=None)
        p.add_argument("--shard-rows", type=int, required=True)

    p = sub.add_parser("spill", help="filter and key byte range PART of the input")
    inputs(p)
    common(p)
    p = sub.add_parser("sort", help="sort and deduplicate key range PART")
    p.add_argument("--inputs", nargs="+", required=True, help="the N spill part directories, in order")
    p.add_argument("--no-dedup", action="store_true")
    common(p)
    p = sub.add_parser("shards", help="tokenise and write the output files of row range PART")
    p.add_argument("--inputs", nargs="+", required=True, help="the N sort part directories, in order")
    output(p)
    p.add_argument("--threads", type=int, default=None, help="tokenizer threads")
    common(p)
    p = sub.add_parser("gather", help="the output directory of embtune prepare-bge, from the parts")
    inputs(p)
    output(p)
    p.add_argument("--no-dedup", action="store_true")
    p.add_argument("--spill", nargs="+", required=True)
    p.add_argument("--sorted", nargs="+", required=True)
    p.add_argument("--shards", nargs="+", required=True)
    common(p, part=False)
    return ap


def _summary(m: dict[str, Any]) -> str:
    if m.get("stage") == "prepare-bge":
        return (f"prepare-bge-part gather: {m['rows_in']} rows in, {m['rows_out']} pairs out "
                f"({m['val_rows']} val, {len(m['train_shards'])} train shards), duplicates "
                f"{m['duplicates_removed']}")
    return f"prepare-bge-part {m['step']} {m['part'] + 1}/{m['parts']}: done"


def main(argv: Sequence[str] | None = None) -> int:
    return run_stage(STAGE, run, PartArgs(**vars(_parser().parse_args(argv))), _summary)
