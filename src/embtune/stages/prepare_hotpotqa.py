"""Stage ``prepare-hotpotqa``: HotpotQA -> one row per question with its context passages as
positive / negative candidates, split by HotpotQA's difficulty level (paper 2, App. D, Table 2).

Why a driver apart from :mod:`embtune.data.hotpotqa` (which documents the readings and the
formats): the library reads questions and splits their passages; the arguments, combining the
files, the output directory (``eval_<level>.parquet`` and the manifest, renamed into place
together) and the one-line summary live here.
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
from embtune.data.hotpotqa import FRAME_SCHEMA, LEVELS, build_rows, read_samples
from embtune.data.jsonl import drop_summary

STAGE = "prepare-hotpotqa"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True,
                    help="HotpotQA train and distractor-dev files (official JSON or hub parquet)")
    ap.add_argument("--min-passages", type=int, default=10,
                    help="drop questions with fewer passages (App. D: 10)")
    ap.add_argument("--levels", nargs="+", choices=LEVELS, default=list(LEVELS))
    ap.add_argument("--passage-title", action="store_true",
                    help="prefix each passage with its title (default: the paragraph text only)")
    ap.add_argument("--out", required=True, help="output directory")
    return ap


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.min_passages < 2:
        raise DataError(f"--min-passages {args.min_passages}: a question needs at least 2 passages")
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    hist: Counter[int] = Counter()
    inputs = []
    for path in args.files:
        built = build_rows(read_samples(path), Path(path).name, args.min_passages, args.levels,
                           args.passage_title)
        rows += built.rows
        drops.update(built.drops)
        hist.update(built.positives_histogram)
        for reason, where in built.examples.items():
            examples.setdefault(reason, []).extend(where)
        inputs.append({"path": path, "sha256": sha256_file(path), "questions": built.read,
                       "kept": len(built.rows)})
    frame = pl.DataFrame(rows, schema=FRAME_SCHEMA)
    by_level = {lvl: frame.filter(pl.col("level") == lvl) for lvl in args.levels}
    empty = [lvl for lvl, f in by_level.items() if not f.height]
    if empty:
        raise DataError(f"{', '.join(args.files)}: no question of level(s) {empty} is left "
                        f"({drop_summary(drops, examples)}); expected every requested level "
                        "(dev questions are all 'hard': easy and medium need the train file)")
    with atomic_dir(args.out) as out:
        for lvl, f in by_level.items():
            write_parquet(out / pnd_file_name(f"hotpotqa-{lvl}"), f)
        manifest = provenance(
            stable=True, stage=STAGE, inputs=inputs, min_passages=args.min_passages,
            levels=list(args.levels), passage_title=args.passage_title,
            questions_read=sum(i["questions"] for i in inputs), dropped=dict(sorted(drops.items())),
            rows={lvl: f.height for lvl, f in by_level.items()},
            positives_per_query={str(k): v for k, v in sorted(hist.items())},
            mean_passages=float(frame["positives"].list.len().mean()  # type: ignore[arg-type]
                                + frame["negatives"].list.len().mean()),  # type: ignore[operator]
        )
        write_json(out / MANIFEST_JSON, manifest)
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    """Bad input raises :class:`~embtune.core.errors.DataError` (``embtune`` prints it, exits 2)."""
    m = run(_parser().parse_args(argv))
    print(f"{STAGE}: {m['questions_read']} questions -> {m['rows']} by level "
          f"(positives per query {m['positives_per_query']}); dropped {m['dropped']}")
    return 0
