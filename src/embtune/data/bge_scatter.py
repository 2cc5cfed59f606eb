"""``embtune prepare-bge`` scattered over N parts, one job each (``embtune prepare-bge-part``; its
driver is :mod:`embtune.stages.prepare_bge_part`).

The one-process stage (:mod:`embtune.data.bge`) reads the whole dump, sorts it by the seeded
keyed hash of each pair, drops exact duplicates and tokenises in that order: about 9 hours for
the 200M-pair dump while the cluster sits idle. Here the same work is done by ``3N + 1`` jobs
(Snakemake rules ``bge_spill``, ``bge_sort``, ``bge_shards`` and ``prepare_bge``, each part a
SLURM job under ``--profile slurm``), and the output directory is byte-identical to the
one-process result (tested for several N and for duplicates across files):

``spill I/N``
    Byte range ``I`` of the concatenated input files (a gzip file cannot be split and goes whole
    to the part holding its first byte; a line belongs to the range holding its first byte).
    Filters each record exactly as the one-process stage, keys each pair with ``pair_key`` and
    routes it to the sort part owning that key's range (``bucket_of(key, N)``): one Arrow IPC
    file per sort part, plus the drop counts and the sha256 of the files it starts.
``sort J/N``
    Key range ``J``: the pairs routed there by every spill part, sorted by (key, query, pos) and
    exact duplicates dropped; in slices of the key range of bounded size (memory stays bounded).
    A duplicate pair has one key wherever it was read, so it always meets its twin here: the
    dedup is exact across files and parts. Writes the sorted pairs and, per one-process spill
    bucket, how many rows and duplicates it holds (the one-process stage stops counting
    duplicates at the bucket where ``--max-pairs`` is reached; the gather repeats that count).
``shards J/N``
    The sorted parts concatenated in ``J`` order *are* the one-process global order. Each output
    file (``val.parquet``, ``train-NNNNN.parquet``; its rows follow from the row counts alone)
    is tokenised and written by the part whose row range holds the file's first row.
``gather``
    Links the shards into the output directory and writes the manifest from the parts' counts
    (``embtune.data.bge.build_manifest``, shared with the one-process stage).

Intermediate parts live under ``<processed>/bge_parts/`` (Snakemake ``temp()``: removed once the
gather is done); every part directory is written atomically and records the arguments it was
built with, which the next step checks, so parts of different settings never mix.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embtune.core.io import atomic_dir, read_json, write_json, write_parquet
from embtune.data import bge, bge_records, bge_tokens
from embtune.data.bge_partition import (
    KEY_SPACE,
    PAIR_SCHEMA,
    PartArgs,
    bucket_ids,
    dedup_sorted,
    duplicates_counted,
    key_bound,
    layout,
    merged_buckets,
    shard_owner,
)
from embtune.data.bge_spill import input_facts, spill, spill_settings
from embtune.data.jsonl import DataError
from embtune.data.sources import expand_files

SPILL_BATCH_PAIRS = 50_000          # rows per Arrow batch of a sort part's output
SORT_SLICE_BYTES = 256 << 20        # Arrow bytes sorted at once by a sort part (a slice of its key range)


# ---------------------------------------------------------------- sort: key ranges
def _read_table(path: Path) -> pa.Table:
    """An Arrow IPC file, memory-mapped (no copy until a slice is used)."""
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected a part of the scattered prepare-bge "
                        "(run the earlier step first)")
    try:
        return pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (pa.ArrowInvalid, OSError) as err:
        raise DataError(f"{path}: not a readable Arrow IPC file ({err})") from None


def _part_record(directory: Path, step: str, part: int, parts: int) -> dict[str, Any]:
    path = directory / "stats.json"
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected the {step} part {part} of {parts}")
    rec = read_json(path)
    if rec.get("step") != step or rec.get("part") != part or rec.get("parts") != parts:
        raise DataError(f"{path}: holds {rec.get('step')} part {rec.get('part')} of {rec.get('parts')}, "
                        f"expected {step} part {part} of {parts}")
    return rec


def _same(records: Sequence[dict[str, Any]], dirs: Sequence[Path], key: str, expected: Any) -> None:
    for rec, d in zip(records, dirs):
        if rec[key] != expected:
            raise DataError(f"{d}: built with {key} {json.dumps(rec[key], sort_keys=True)[:300]}, "
                            f"expected {json.dumps(expected, sort_keys=True)[:300]} (a stale part: "
                            "delete it and run again)")


def sort(args: PartArgs) -> dict[str, Any]:
    spill_dirs = [Path(d) for d in args.inputs]
    if len(spill_dirs) != args.parts:
        raise DataError(f"sort part {args.part}: got {len(spill_dirs)} spill parts, expected {args.parts}")
    records = [_part_record(d, "spill", i, args.parts) for i, d in enumerate(spill_dirs)]
    _same(records, spill_dirs, "settings", records[0]["settings"])
    n_buckets = records[0]["n_buckets"]
    tables = [_read_table(d / f"to-{args.part}.arrow") for d in spill_dirs]
    table = pa.concat_tables(tables)
    lo, hi = key_bound(args.part, args.parts), key_bound(args.part + 1, args.parts)
    slices = max(1, math.ceil(table.nbytes / SORT_SLICE_BYTES))
    rows: Counter = Counter()
    dups: Counter = Counter()
    kept_rows = 0
    out = Path(args.out)
    with atomic_dir(out) as tmp:
        with pa.ipc.new_file(str(tmp / "pairs.arrow"), PAIR_SCHEMA.remove(0)) as writer:
            keys_all = table.column("key")
            for s in range(slices):
                a, b = lo + (hi - lo) * s // slices, lo + (hi - lo) * (s + 1) // slices
                mask = pc.greater_equal(keys_all, pa.scalar(a, pa.uint64()))
                if b < KEY_SPACE:
                    mask = pc.and_(mask, pc.less(keys_all, pa.scalar(b, pa.uint64())))
                part = table.filter(mask).sort_by([("key", "ascending"), ("query", "ascending"),
                                                   ("pos", "ascending")])
                keys = part.column("key").to_numpy()
                if args.no_dedup:
                    kept, keep = part, np.ones(part.num_rows, dtype=bool)
                else:
                    kept, keep = dedup_sorted(part)
                ids = bucket_ids(keys, n_buckets)
                all_counts = np.bincount(ids, minlength=n_buckets)
                kept_counts = np.bincount(ids[keep], minlength=n_buckets)
                for bkt in np.flatnonzero(all_counts):
                    rows[int(bkt)] += int(kept_counts[bkt])
                    dups[int(bkt)] += int(all_counts[bkt] - kept_counts[bkt])
                kept_rows += kept.num_rows
                for batch in kept.select(["query", "pos"]).to_batches(max_chunksize=SPILL_BATCH_PAIRS):
                    writer.write_batch(batch)
        record = {"step": "sort", "part": args.part, "parts": args.parts,
                  "settings": {**records[0]["settings"], "dedup": not args.no_dedup},
                  "rows": kept_rows,
                  "buckets": {str(b): [rows[b], dups[b]] for b in sorted(rows)}}
        write_json(tmp / "stats.json", record)
    return record


# ---------------------------------------------------------------- shards: output files by row range


def _sorted_parts(dirs: Sequence[Path], parts: int) -> list[dict[str, Any]]:
    if len(dirs) != parts:
        raise DataError(f"got {len(dirs)} sort parts, expected {parts}")
    records = [_part_record(d, "sort", j, parts) for j, d in enumerate(dirs)]
    _same(records, dirs, "settings", records[0]["settings"])
    return records


def _rows(dirs: Sequence[Path], counts: Sequence[int], start: int, end: int) -> list[tuple[str, str]]:
    """Global rows ``[start, end)`` of the sorted parts concatenated in order."""
    out: list[tuple[str, str]] = []
    offset = 0
    for d, n in zip(dirs, counts):
        a, b = max(start, offset), min(end, offset + n)
        if a < b:
            t = _read_table(d / "pairs.arrow").slice(a - offset, b - a)
            out.extend(zip(t.column("query").to_pylist(), t.column("pos").to_pylist()))
        offset += n
    return out


def shards(args: PartArgs) -> dict[str, Any]:
    sort_dirs = [Path(d) for d in args.inputs]
    records = _sorted_parts(sort_dirs, args.parts)
    counts = [rec["rows"] for rec in records]
    total, _ = duplicates_counted(merged_buckets(records), args.max_pairs)
    mine = [f for f in layout(total, args.val_pairs, args.shard_rows)
            if shard_owner(f[1], total, args.parts) == args.part]
    written = []
    with bge_tokens.tokenizer_threads(args.threads):
        tokenizer = bge_tokens.load_tokenizer(args.tokenizer) if mine else None
        with atomic_dir(Path(args.out)) as tmp:
            for name, start, end in mine:
                frame, cuts = bge_tokens.pairs_frame(tokenizer, _rows(sort_dirs, counts, start, end),
                                              args.context_length)
                write_parquet(tmp / name, frame)
                written.append({"name": name, "rows": end - start,
                                "query_tokens": dict(Counter(frame["query_tokens"].to_list())),
                                "pos_tokens": dict(Counter(frame["pos_tokens"].to_list())), **cuts})
            record = {"step": "shards", "part": args.part, "parts": args.parts,
                      "settings": {**records[0]["settings"], **shard_settings(args)}, "files": written}
            write_json(tmp / "stats.json", record)
    return record


def shard_settings(args: PartArgs) -> dict[str, Any]:
    return {"tokenizer": args.tokenizer, "context_length": args.context_length,
            "val_pairs": args.val_pairs, "shard_rows": args.shard_rows, "max_pairs": args.max_pairs}


# ---------------------------------------------------------------- gather
def _drop_where(segments: list[dict[str, Any]], line_base: list[int], where: list[int]) -> str:
    seg, line = where
    return f"{segments[seg]['path']}:{line_base[seg] + line}"


def merged_stats(records: Sequence[dict[str, Any]]) -> bge_records.Stats:
    """The spill parts' counts merged in input order, drop examples as ``file:line`` (a part's
    line numbers count from its byte range's first line; the lines of the earlier ranges of the
    same file are added)."""
    stats = bge_records.Stats()
    lines_before: Counter = Counter()
    for rec in records:
        base = []
        for seg in rec["segments"]:
            base.append(lines_before[seg["path"]])
            lines_before[seg["path"]] += seg["lines"]
        part = bge_records.Stats(rows_in=rec["rows_in"], pairs_kept=rec["pairs_kept"], drops=Counter(rec["drops"]),
                         drop_examples={reason: [_drop_where(rec["segments"], base, w) for w in where]
                                        for reason, where in rec["drop_examples"].items()})
        stats.merge(part)
    return stats


def _link(src: Path, dst: Path) -> None:
    """Hard link (no copy of gigabytes) where the filesystem allows it, else copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def gather(args: PartArgs) -> dict[str, Any]:
    bge._check_args(args.settings())
    files = expand_files(args.files)
    sizes, _ = input_facts(files)
    spill_dirs, sort_dirs, shard_dirs = ([Path(d) for d in ds] for ds in (args.spill, args.sorted, args.shards))
    n = args.parts
    if not len(spill_dirs) == len(sort_dirs) == len(shard_dirs) == n:
        raise DataError(f"gather: expected {n} spill, sort and shards parts, got "
                        f"{len(spill_dirs)}, {len(sort_dirs)}, {len(shard_dirs)}")
    spills = [_part_record(d, "spill", i, n) for i, d in enumerate(spill_dirs)]
    settings = spill_settings(files, sizes, args)
    _same(spills, spill_dirs, "settings", settings)
    sorts = _sorted_parts(sort_dirs, n)
    settings = {**settings, "dedup": not args.no_dedup}
    _same(sorts, sort_dirs, "settings", settings)
    shard_recs = [_part_record(d, "shards", j, n) for j, d in enumerate(shard_dirs)]
    _same(shard_recs, shard_dirs, "settings", {**settings, **shard_settings(args)})

    stats = merged_stats(spills)
    if stats.pairs_kept == 0:
        raise DataError(bge.no_pairs_message(files, stats))
    total, removed = duplicates_counted(merged_buckets(sorts), args.max_pairs)
    plan = layout(total, args.val_pairs, args.shard_rows)
    written = {f["name"]: (d, f) for d, rec in zip(shard_dirs, shard_recs) for f in rec["files"]}
    done = bge.Written()
    out = Path(args.out)
    with atomic_dir(out) as final:
        for name, start, end in plan:
            if name not in written or written[name][1]["rows"] != end - start:
                raise DataError(f"{name}: no shards part wrote it with {end - start} rows (parts of "
                                "different runs? delete data/processed/.../bge_parts and run again)")
            src, rec = written[name]
            _link(src / name, final / name)
            if name == "val.parquet":
                done.val_rows = end - start
            else:
                done.train_rows += end - start
                done.shards.append(name)
            done.hist["query"].update({int(k): v for k, v in rec["query_tokens"].items()})
            done.hist["pos"].update({int(k): v for k, v in rec["pos_tokens"].items()})
            done.cut.update({k: rec[k] for k in ("query_truncated", "pos_truncated")})
        try:
            bge.check_split(done.val_rows, args.val_pairs, len(done.shards))
        except DataError as err:
            raise bge.too_few_pairs(err, files, stats) from None
        missing = [f for f in files if not any(f in rec["sha256"] for rec in spills)]
        if missing:
            raise DataError(f"{missing[0]}: no spill part recorded its sha256")
        sha = {f: h for rec in spills for f, h in rec["sha256"].items()}
        inputs = [{"path": f, "bytes": size, "sha256": sha[f]} for f, size in zip(files, sizes)]
        manifest = bge.build_manifest(args.settings(), inputs, stats, removed, done)
        write_json(final / "manifest.json", manifest)
    return manifest


def _check(args: PartArgs) -> None:
    if args.parts < 1:
        raise DataError("--parts must be >= 1")
    if args.step != "gather" and not 0 <= args.part < args.parts:
        raise DataError(f"--part must be in 0..{args.parts - 1}")
    if args.step in ("shards", "gather"):
        bge._check_args(args.settings())


STEPS = {"spill": spill, "sort": sort, "shards": shards, "gather": gather}


def run(args: PartArgs) -> dict[str, Any]:
    _check(args)
    return STEPS[args.step](args)
