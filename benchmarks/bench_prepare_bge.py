"""Benchmark ``embtune prepare-bge``: the current implementation against the one it replaced.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_prepare_bge.py [--pairs 50000] [--threads 2]

Synthetic input in FlagEmbedding form (``{query, pos: [..], neg: [..]}``) built from the shipped
demo pairs (data/demo/bge/pairs.jsonl), spread over ``--files`` JSONL files: every pair made
unique by a case number, a quarter of the positives several demo passages long (so truncation to
the context length happens), ~1% non-English records, ~0.5% exact duplicates and ~0.2% malformed
records (the filters and dedup have work to do). The tokenizer is a 4096-token byte-level BPE
trained on the demo pairs (the kind ``embtune build-tokenizer`` makes), unless ``--tokenizer``.

In one process, on the same input, it runs the BASELINE (a copy, below, of the stage's code as it
was before the speed-up, with ``TOKENIZERS_PARALLELISM=false`` as the Makefile sets it) and the
current ``embtune.data.bge.run`` with ``--threads 1`` and ``--threads N`` (default: all CPUs);
each variant loads its own tokenizer (no warm tokenizer cache carried over). It prints pairs/s
(input records over the stage's wall time, imports excluded), the CPU seconds used (reader
processes included) and the speed-up over the baseline, and checks that all variants wrote
byte-identical parquet shards and equal manifests (exit status 1 otherwise). ``--repeats``
alternates the order of the variants and keeps each one's best time: other work on a shared
machine slows single runs down (a ``--threads N`` run whose CPU seconds are close to its wall
time did not get N cores).

Where the time goes (cProfile): the Rust ``encode_batch`` of the tokenizer is ~75% of the new
single-thread run, so more speed comes from ``--threads``: parallel tokenizer batches and one
reader process per input file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.io import atomic_path, provenance, sha256_file, write_json, write_parquet
from embtune.data import bge
from embtune.data.bge import Written, _check_args, _sizes, bucket_of, chunk_rows, n_buckets_for
from embtune.data.bge_records import (
    ENGLISH_STOPWORDS,
    MIN_ASCII_LETTER_RATIO,
    MIN_STOPWORD_RATIO,
    MIN_WORDS_FOR_STOPWORD_TEST,
    Stats,
    extract_pair,
)
from embtune.data.bge_tokens import TOKENIZE_BATCH, histogram_stats, load_tokenizer
from embtune.data.jsonl import DataError, iter_jsonl
from embtune.data.sources import expand_files

REPO = Path(__file__).resolve().parents[1]
DEMO_PAIRS = REPO / "data" / "demo" / "bge" / "pairs.jsonl"
NON_ENGLISH = [
    ("Wo ist der nächste Bahnhof in der Stadt?",
     "Der Bahnhof liegt in der Mitte der Stadt, nicht weit von dem großen Platz und der Kirche."),
    ("¿Cuál es la capital de España y dónde está?",
     "Madrid es la capital de España y está en el centro del país, con muchos museos y parques."),
    ("如何在Python中读取文件", "使用open函数打开文件，然后调用read方法读取全部内容。"),
    ("Как открыть файл для чтения?", "Используйте функцию open с режимом r и прочитайте файл."),
]


# =================================================================================================
# BASELINE: copy of the functions of src/embtune/data/bge.py that the speed-up changed, as they
# were before it (code verbatim, names prefixed old_, docstrings dropped), plus write_shards and
# run (unchanged code, but they must call the old functions). The helpers that did not change are
# imported from embtune.data.bge above.
# =================================================================================================

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def old_is_english(text: str) -> bool:
    if text.isascii():  # fast path (most of the corpus): every letter is ASCII
        if _ASCII_LETTER.search(text) is None:
            return False
    else:
        letters = [c for c in text if c.isalpha()]
        if not letters or sum(c.isascii() for c in letters) / len(letters) < MIN_ASCII_LETTER_RATIO:
            return False
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < MIN_WORDS_FOR_STOPWORD_TEST:
        return True
    return sum(w in ENGLISH_STOPWORDS for w in words) / len(words) >= MIN_STOPWORD_RATIO


def old_pair_key(seed: int, query: str, pos: str) -> int:
    h = hashlib.blake2b(digest_size=8, key=str(seed).encode())
    h.update(query.encode("utf-8"))
    h.update(b"\x00")
    h.update(pos.encode("utf-8"))
    return int.from_bytes(h.digest(), "big")


def old_iter_pairs(files: Sequence[str], english_filter: bool, stats: Stats) -> Iterator[tuple[str, str]]:
    for path in files:
        for line_no, obj in iter_jsonl(path):
            stats.rows_in += 1
            pair = extract_pair(obj)
            if isinstance(pair, str):
                stats.drop(pair, f"{path}:{line_no}")
                continue
            if english_filter and not old_is_english(pair[0] + "\n" + pair[1]):
                stats.drop("not English", f"{path}:{line_no}")
                continue
            stats.pairs_kept += 1
            yield pair


def old_spill(pairs: Iterable[tuple[str, str]], seed: int, n_buckets: int, tmpdir: Path) -> list[Path]:
    paths = [tmpdir / f"bucket-{i:05d}.jsonl" for i in range(n_buckets)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]  # noqa: SIM115
    try:
        for query, pos in pairs:
            key = old_pair_key(seed, query, pos)
            handles[bucket_of(key, n_buckets)].write(json.dumps([key, query, pos]) + "\n")
    finally:
        for fh in handles:
            fh.close()
    return paths


def old_read_bucket(path: Path, dedup: bool) -> tuple[list[tuple[str, str]], int]:
    with open(path, encoding="utf-8") as fh:
        rows = sorted(tuple(json.loads(line)) for line in fh)
    if not dedup:
        return [(q, p) for _, q, p in rows], 0
    out: list[tuple[str, str]] = []
    prev: tuple[str, str] | None = None
    for _, q, p in rows:
        if (q, p) != prev:
            out.append((q, p))
        prev = (q, p)
    return out, len(rows) - len(out)


def old_tokenize(tokenizer: Any, texts: list[str], context_length: int) -> tuple[list[list[int]], int]:
    ids: list[list[int]] = []
    cut = 0
    for start in range(0, len(texts), TOKENIZE_BATCH):
        batch = tokenizer(texts[start:start + TOKENIZE_BATCH], truncation=True,
                          max_length=context_length + 1, padding=False,
                          return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        for row in batch:
            cut += len(row) > context_length
            ids.append(list(row[:context_length]))
    return ids, cut


def old_pairs_frame(tokenizer: Any, rows: list[tuple[str, str]], context_length: int) -> tuple[pl.DataFrame, dict[str, int]]:
    queries = [q for q, _ in rows]
    positives = [p for _, p in rows]
    q_ids, q_cut = old_tokenize(tokenizer, queries, context_length)
    p_ids, p_cut = old_tokenize(tokenizer, positives, context_length)
    frame = pl.DataFrame(
        {
            "query": queries,
            "pos": positives,
            "query_ids": q_ids,
            "pos_ids": p_ids,
            "query_tokens": [len(x) for x in q_ids],
            "pos_tokens": [len(x) for x in p_ids],
        },
        schema={"query": pl.String, "pos": pl.String, "query_ids": pl.List(pl.Int32),
                "pos_ids": pl.List(pl.Int32), "query_tokens": pl.Int32, "pos_tokens": pl.Int32},
    )
    return frame, {"query_truncated": q_cut, "pos_truncated": p_cut}


def old_ordered_pairs(buckets: list[Path], dedup: bool, max_pairs: int | None) -> Iterator[tuple[list[tuple[str, str]], int]]:
    remaining = max_pairs
    for path in buckets:
        rows, dups = old_read_bucket(path, dedup)
        path.unlink()
        if remaining is not None:
            rows = rows[:remaining]
            remaining -= len(rows)
        yield rows, dups
        if remaining == 0:
            return


def old_write_shards(out: Path, tokenizer: Any, rows: Iterable[list[tuple[str, str]]],
                     val_pairs: int, shard_rows: int, context_length: int) -> Written:
    done = Written()
    if val_pairs == 0:
        write_parquet(out / "val.parquet", old_pairs_frame(tokenizer, [], context_length)[0])
    for i, chunk in enumerate(chunk_rows(rows, _sizes(val_pairs, shard_rows))):
        frame, cuts = old_pairs_frame(tokenizer, chunk, context_length)
        done.cut.update(cuts)
        done.hist["query"].update(frame["query_tokens"].to_list())
        done.hist["pos"].update(frame["pos_tokens"].to_list())
        if i == 0 and val_pairs > 0:
            name, done.val_rows = "val.parquet", len(chunk)
        else:
            name = f"train-{len(done.shards):05d}.parquet"
            done.train_rows += len(chunk)
            done.shards.append(name)
        write_parquet(out / name, frame)
    if done.val_rows < val_pairs:
        raise DataError(f"only {done.val_rows} pairs left after filtering; --val-pairs {val_pairs} "
                        "needs more (and train needs at least one)")
    if not done.shards:
        raise DataError(f"no training pairs left after the {done.val_rows} validation pairs")
    return done


def old_run(args: argparse.Namespace) -> dict[str, Any]:
    _check_args(args)
    files = expand_files(args.files)
    tokenizer = load_tokenizer(args.tokenizer)
    english, dedup = not args.no_english_filter, not args.no_dedup
    stats, duplicates = Stats(), Counter()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bge-spill.", dir=out.parent) as tmp, \
            atomic_path(out) as final:
        final.mkdir()
        n_buckets = n_buckets_for(sum(os.path.getsize(f) for f in files))
        buckets = old_spill(old_iter_pairs(files, english, stats), args.seed, n_buckets, Path(tmp))

        def ordered() -> Iterator[list[tuple[str, str]]]:
            for rows, dups in old_ordered_pairs(buckets, dedup, args.max_pairs):
                duplicates["removed"] += dups
                yield rows

        done = old_write_shards(final, tokenizer, ordered(), args.val_pairs, args.shard_rows, args.context_length)
        manifest = provenance(
            stable=True, stage="prepare-bge",
            inputs=[{"path": f, "bytes": os.path.getsize(f), "sha256": sha256_file(f)} for f in files],
            tokenizer=args.tokenizer, context_length=args.context_length, seed=args.seed,
            english_filter=english, dedup=dedup, max_pairs=args.max_pairs,
            val_pairs=args.val_pairs, shard_rows=args.shard_rows,
            rows_in=stats.rows_in, pairs_after_filters=stats.pairs_kept,
            duplicates_removed=duplicates["removed"], rows_out=done.val_rows + done.train_rows,
            val_rows=done.val_rows, train_rows=done.train_rows, train_shards=done.shards,
            drops=dict(sorted(stats.drops.items())), drop_examples=stats.drop_examples,
            tokens={"query": histogram_stats(done.hist["query"], done.cut["query_truncated"]),
                    "pos": histogram_stats(done.hist["pos"], done.cut["pos_truncated"])},
        )
        write_json(final / "manifest.json", manifest)
    return manifest


# =================================================================================================
# END OF BASELINE
# =================================================================================================


def synthetic_files(out_dir: Path, pairs: int, n_files: int, seed: int) -> list[Path]:
    """Write ``pairs`` records over ``n_files`` JSONL files (see the module doc)."""
    demo = [json.loads(line) for line in DEMO_PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    passages = [r["pos"][0] for r in demo]
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(pairs):
        r = rng.random()
        if r < 0.002:
            lines.append(json.dumps({"query": f"broken record {i}"}))
            continue
        if r < 0.007 and lines:
            lines.append(lines[rng.randrange(len(lines))])  # exact duplicate of an earlier record
            continue
        if r < 0.017:
            q, p = rng.choice(NON_ENGLISH)
        else:
            rec = demo[rng.randrange(len(demo))]
            q, p = rec["query"], rec["pos"][0]
            if rng.random() < 0.25:
                p = " ".join([p] + rng.sample(passages, rng.randint(2, 5)))
        neg = rng.sample(passages, rng.randint(1, 3))
        lines.append(json.dumps({"query": f"{q} (case {i})", "pos": [f"{p} This is case {i}."], "neg": neg},
                                ensure_ascii=False))
    paths = [out_dir / f"pairs-{k:02d}.jsonl" for k in range(n_files)]
    for k, path in enumerate(paths):
        path.write_text("".join(line + "\n" for line in lines[k::n_files]), encoding="utf-8")
    return paths


def train_tokenizer(out_dir: Path, vocab_size: int = 4096) -> Path:
    """A byte-level BPE trained on the demo pairs, saved as a fast HF tokenizer directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = []
    for line in DEMO_PAIRS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            texts += [rec["query"], rec["pos"][0]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|pad|>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|endoftext|>")
    fast.save_pretrained(str(out_dir))
    return out_dir


def stage_args(files: list[Path], tokenizer: Path, out: Path, a: argparse.Namespace, threads: int) -> bge.BgeSettings:
    from embtune.stages.prepare_bge import _parser

    return bge.BgeSettings(**vars(_parser().parse_args([
        "--files", *map(str, files), "--tokenizer", str(tokenizer),
        "--context-length", str(a.context_length), "--val-pairs", str(a.val_pairs),
        "--shard-rows", str(a.shard_rows), "--seed", "0", "--out", str(out), "--threads", str(threads)])))


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the reader processes)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def outputs(out: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix == ".parquet"}
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("git_commit")  # other work may commit to the repository between the runs
    files["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=50_000, help="input records")
    ap.add_argument("--files", type=int, default=8, help="input files (workers take one file each)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--context-length", type=int, default=75)
    ap.add_argument("--val-pairs", type=int, default=1000)
    ap.add_argument("--shard-rows", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=2, help="runs of each variant (best kept)")
    ap.add_argument("--tokenizer", default=None, help="HF tokenizer dir (default: train one on the demo pairs)")
    a = ap.parse_args()

    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the baseline's setting (Makefile)
    with tempfile.TemporaryDirectory(prefix="bench-bge-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "in").mkdir()
        files = synthetic_files(tmp / "in", a.pairs, a.files, seed=0)
        tokenizer = Path(a.tokenizer) if a.tokenizer else train_tokenizer(tmp / "tokenizer")
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        print(f"input: {a.pairs} records in {a.files} files ({size_mb:.1f} MB), tokenizer {tokenizer.name}, "
              f"context {a.context_length}, {os.cpu_count()} CPUs")
        load_tokenizer(str(tokenizer))  # import transformers once, outside the timings
        variants = {"baseline (old)": (old_run, 1), "new --threads 1": (bge.run, 1),
                    f"new --threads {a.threads}": (bge.run, a.threads)}
        best: dict[str, tuple[float, float]] = {}  # name -> (wall s, CPU s of that run)
        results: dict[str, dict[str, bytes]] = {}
        for rep in range(a.repeats):
            order = list(variants) if rep % 2 == 0 else list(variants)[::-1]
            for k, name in enumerate(order):
                fn, threads = variants[name]
                out = tmp / f"out-{rep}-{k}"
                os.environ["TOKENIZERS_PARALLELISM"] = "false"
                cpu, start = cpu_seconds(), time.perf_counter()
                manifest = fn(stage_args(files, tokenizer, out, a, threads))
                elapsed, cpu = time.perf_counter() - start, cpu_seconds() - cpu
                best[name] = min((elapsed, cpu), best.get(name, (math.inf, math.inf)))
                results.setdefault(name, outputs(out))
                assert outputs(out) == results[name], f"{name}: rerun differs"
        rows = manifest["rows_out"]
        base = best["baseline (old)"][0]
        print(f"{rows} pairs out ({manifest['drops']}, {manifest['duplicates_removed']} duplicates, "
              f"{manifest['tokens']['pos']['truncated']} positives truncated)")
        for name, (secs, cpu) in best.items():
            print(f"  {name:<22} {secs:7.2f} s wall ({cpu:6.2f} s CPU)  {a.pairs / secs:8.0f} pairs/s  "
                  f"x{base / secs:.2f}")
        ref = results["baseline (old)"]
        same = all(r == ref for r in results.values())
        print("outputs identical (parquet bytes, manifest):", same)
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
