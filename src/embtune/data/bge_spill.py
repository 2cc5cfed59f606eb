"""Step ``spill I/N`` of the scattered ``prepare-bge`` (:mod:`embtune.data.bge_scatter`): byte
range ``I`` of the input, filtered exactly as the one-process stage and routed by key range.

Why a module of its own: the spill reads the raw input (byte ranges, gzip files whole, records
and their line numbers); the later steps read only parts, :mod:`embtune.data.bge_scatter`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from embtune.core.io import atomic_dir, sha256_file, write_json
from embtune.data import bge, bge_records
from embtune.data.bge_partition import (
    PAIR_SCHEMA,
    PartArgs,
    Segment,
    file_owner,
    plan_segments,
)
from embtune.data.jsonl import DataError, is_gzip, iter_jsonl, iter_jsonl_range
from embtune.data.sources import expand_files


def input_facts(files: Sequence[str]) -> tuple[list[int], list[bool]]:
    sizes, gz = [], []
    for f in files:
        if not os.path.isfile(f):
            raise DataError(f"{f}: file not found")
        sizes.append(os.path.getsize(f))
        gz.append(is_gzip(f))
    return sizes, gz


def _records(segments: Sequence[Segment], lines: list[int]) -> Iterator[tuple[list[int], Any]]:
    """``([segment, line], record)``: the line counts from 1 in its segment (fixed in gather).
    Appends each segment's line count (blank lines included) to ``lines`` once it is read."""
    for s, seg in enumerate(segments):
        if seg.gz:  # whole file: its line numbers are already the file's
            for line_no, obj in iter_jsonl(seg.path):
                yield [s, line_no], obj
            lines.append(0)
            continue
        reader = iter_jsonl_range(seg.path, seg.start, seg.end)
        while True:
            try:
                line_no, obj = next(reader)
            except StopIteration as stop:
                lines.append(stop.value)
                break
            yield [s, line_no], obj


def spill(args: PartArgs) -> dict[str, Any]:
    files = expand_files(args.files)
    sizes, gz = input_facts(files)
    segments = plan_segments(files, sizes, gz, args.parts)[args.part]
    owners = file_owner(files, sizes, args.parts)
    english = not args.no_english_filter
    stats = bge_records.Stats()
    out = Path(args.out)
    with atomic_dir(out) as tmp:
        writers = [pa.ipc.new_file(str(tmp / f"to-{j}.arrow"), PAIR_SCHEMA) for j in range(args.parts)]
        buffers: list[tuple[list[int], list[str], list[str]]] = [([], [], []) for _ in range(args.parts)]

        def flush(j: int) -> None:
            keys, queries, positives = buffers[j]
            if keys:
                writers[j].write_batch(pa.record_batch(
                    [pa.array(keys, pa.uint64()), pa.array(queries, pa.string()),
                     pa.array(positives, pa.string())], schema=PAIR_SCHEMA))
                buffers[j] = ([], [], [])

        buffered = 0
        lines: list[int] = []
        for query, pos in bge_records.filter_pairs(_records(segments, lines), english, stats):
            key = bge.pair_key(args.seed, query, pos)
            buf = buffers[bge.bucket_of(key, args.parts)]
            buf[0].append(key)
            buf[1].append(query)
            buf[2].append(pos)
            buffered += 1
            if buffered >= bge.SPILL_BUFFER_PAIRS:  # memory bounded whatever N is
                for j in range(args.parts):
                    flush(j)
                buffered = 0
        for j, writer in enumerate(writers):
            flush(j)
            writer.close()
        record = {
            "step": "spill", "part": args.part, "parts": args.parts,
            "settings": spill_settings(files, sizes, args),
            "n_buckets": bge.n_buckets_for(sum(sizes)),
            "segments": [{"path": s.path, "start": s.start, "end": s.end, "gz": s.gz, "lines": n}
                         for s, n in zip(segments, lines, strict=True)],
            "sha256": {f: sha256_file(f) for f, o in zip(files, owners) if o == args.part},
            "rows_in": stats.rows_in, "pairs_kept": stats.pairs_kept,
            "drops": dict(stats.drops), "drop_examples": stats.drop_examples,
        }
        write_json(tmp / "stats.json", record)
    return record


def spill_settings(files: Sequence[str], sizes: Sequence[int], args: PartArgs) -> dict[str, Any]:
    return {"files": list(files), "bytes": list(sizes), "seed": args.seed,
            "english_filter": not args.no_english_filter}
