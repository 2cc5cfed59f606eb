"""Stage ``prepare-squad``: SQuAD v2 -> one row per question with its paragraph's sentences as
positive / negative candidates (paper 2, App. C and Table 2).

Why a driver apart from :mod:`embtune.data.squad` (which documents the readings and the
formats): the library reads questions and labels sentences; the arguments, combining the files,
the output directory (``eval.parquet``, ``eval_min5.parquet`` and the manifest, renamed into
place together) and the one-line summary live here.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.errors import DataError
from embtune.core.io import atomic_dir, provenance, sha256_file, write_json, write_parquet
from embtune.core.layout import MANIFEST_JSON, pnd_file_name
from embtune.data.jsonl import drop_summary
from embtune.data.squad import (
    FRAME_SCHEMA,
    MIN_CANDIDATES,
    POSITIVE_RULES,
    build_rows,
    mean_len,
    min_candidates,
    read_questions,
)

STAGE = "prepare-squad"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True,
                    help="SQuAD v2 train and validation files (official JSON or hub parquet)")
    ap.add_argument("--positive-rule", choices=POSITIVE_RULES, default="text",
                    help="a sentence is positive if it contains an answer string (text) or "
                         "overlaps an answer span (span); default text")
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    inputs = []
    for path in args.files:
        built = build_rows(read_questions(path), Path(path).name, args.positive_rule)
        rows += built.rows
        drops.update(built.drops)
        for reason, where in built.examples.items():
            examples.setdefault(reason, []).extend(where)
        inputs.append({"path": path, "sha256": sha256_file(path), "questions": built.read,
                       "kept": len(built.rows)})
    if not rows:
        raise DataError(f"{', '.join(args.files)}: no question has both a sentence with an answer and "
                        f"one without ({drop_summary(drops, examples)})")
    frame = pl.DataFrame(rows, schema=FRAME_SCHEMA)
    min5 = min_candidates(frame)
    with atomic_dir(args.out) as out:
        write_parquet(out / pnd_file_name("squad"), frame)
        write_parquet(out / pnd_file_name("squad-min5"), min5)
        manifest = provenance(
            stable=True, stage=STAGE, inputs=inputs, positive_rule=args.positive_rule,
            sentence_splitter="embtune.data.sentences (rule-based)",
            questions_read=sum(i["questions"] for i in inputs), dropped=dict(sorted(drops.items())),
            eval_rows=frame.height, eval_min5_rows=min5.height, min_candidates=MIN_CANDIDATES,
            mean_positives=mean_len(frame, "positives"), mean_negatives=mean_len(frame, "negatives"),
            eval_comparisons=int((frame["positives"].list.len() * frame["negatives"].list.len()).sum()),
        )
        write_json(out / MANIFEST_JSON, manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    """Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` prints it, exits 2)."""
    m = run(_parser().parse_args(argv))
    print(f"{STAGE}: {m['questions_read']} questions -> {m['eval_rows']} with positives and "
          f"negatives ({m['mean_positives']:.2f} / {m['mean_negatives']:.2f} per query), "
          f"{m['eval_min5_rows']} with >= {m['min_candidates']} sentences; dropped {m['dropped']}")
    return 0
