"""Evaluation cost at paper 2's full sizes: PND counting time and the texts actually embedded.

Run: ``.venv/bin/python benchmarks/bench_eval_fullsize.py [--threads 2] [--dim 384]``
(on a shared machine, ``taskset -c 0,1`` pins it to two cores). ``--scale 0.05`` shrinks every
size for a quick check; the target (<= 60 s of counting in all, on 2 cores) is for ``--scale 1``.

Sizes (paper 2): MSMARCO 7,000 samples giving 357,642 triplets (App. A); arxiv 253,140 triplets
x 21 levels x 2 flavours (App. B, H); XNLI 15 x 15 languages with 1,670 pairs per label (App. F);
SQuAD 1.3 positives and 4.2 negatives per query (App. C) over 92,749 queries; HotpotQA 10
passages of which 2 positive (App. D) over 97,852 queries. The paper gives no query counts for
SQuAD and HotpotQA: 92,749 is SQuAD v2's answerable train + validation questions and 97,852
HotpotQA's train + dev questions (all assumed to pass the filters).

Part 1 (counting). Synthetic float32 embeddings at those sizes go through the evaluation's
counting code exactly as evaluate-pnd runs it after embedding: triplet sets through
``triplet_set_pnd`` + ranking metrics, arxiv levels through ``score_levels``, XNLI through
``xnli_pnd``; both measures. Baseline, measured in the same run: the literal definition per query
(score the query's positives and negatives, compare every positive-negative pair as a matrix), in
a loop over a sample of queries (XNLI: a sample of language pairs), extrapolated to the full
size; on the sample its counts must equal the fast path's.

Part 2 (texts embedded). The real evaluate-pnd data path (level files written as parquet and read
back through ``TextCodes``, ``EmbedCache``) at full size with a counting fake encoder (dimension
8, so only text handling is timed), against the naive count: every text of every evaluation file,
per dataset, flavour, level and language pair, embedded where it occurs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

MSMARCO = {"samples": 7000, "triplets": 357_642}
ARXIV = {"papers": 253_140, "levels": 21, "flavours": ("first", "title")}
XNLI = {"languages": 15, "per_label": 1670}
SQUAD = {"queries": 92_749, "pos": 1.3, "neg": 4.2}
HOTPOT = {"queries": 97_852, "pos": 2, "neg": 8}
TARGET_S = 60.0


class Clock:
    """Wall and CPU seconds of a block (CPU shows the work when the machine is shared)."""

    def __enter__(self) -> "Clock":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def _set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS"):
        os.environ[var] = str(n)


def _n(x: float, scale: float) -> int:
    return max(2, round(x * scale))


# ---------------------------------------------------------------- shapes
def msmarco_negatives(scale: float, rng) -> "np.ndarray":  # noqa: F821
    """Negatives per sample (one positive each) summing to the paper's 357,642 comparisons:
    about half the samples have the maximal 65 negatives (App. A)."""
    import numpy as np

    n, total = _n(MSMARCO["samples"], scale), _n(MSMARCO["triplets"], scale)
    counts = np.where(rng.random(n) < 0.5, 65, rng.integers(1, 65, n))
    while counts.sum() != total:              # nudge single samples until the sum is exact
        i = rng.integers(n)
        step = 1 if counts.sum() < total else -1
        if 1 <= counts[i] + step <= 65:
            counts[i] += step
    return counts


def triplet_shape(scale: float, rng) -> dict[str, tuple]:
    """(n_pos per query, n_neg per query) for MSMARCO, SQuAD, HotpotQA."""
    import numpy as np

    nq = _n(SQUAD["queries"], scale)
    squad = (1 + (rng.random(nq) < SQUAD["pos"] - 1), 1 + rng.poisson(SQUAD["neg"] - 1, nq))
    nh = _n(HOTPOT["queries"], scale)
    hotpot = (np.full(nh, HOTPOT["pos"]), np.full(nh, HOTPOT["neg"]))
    neg = msmarco_negatives(scale, rng)
    return {"msmarco": (np.ones(neg.size, np.int64), neg), "squad": squad, "hotpotqa": hotpot}


# ---------------------------------------------------------------- part 1: counting
def _emb(rng, n: int, dim: int):
    import numpy as np

    return rng.standard_normal((n, dim), dtype=np.float32)


def count_triplets(name: str, n_pos, n_neg, dim: int, rng) -> tuple["Clock", "Clock", float]:
    """(counting clock, counting + ranking metrics clock, extrapolated naive counting seconds)."""
    import numpy as np

    from embtune.evaluate.pnd import triplet_set_pnd
    from embtune.evaluate.pnd_eval import score_triplets

    nq = n_pos.size
    q = _emb(rng, nq, dim)
    pos_query, neg_query = np.repeat(np.arange(nq), n_pos), np.repeat(np.arange(nq), n_neg)
    p, n = q[pos_query] + _emb(rng, pos_query.size, dim), 1.2 * _emb(rng, neg_query.size, dim)
    with Clock() as count:
        counts = {m: triplet_set_pnd(q, p, pos_query, n, neg_query, m).errors for m in ("cos", "dist")}
    with Clock() as full:
        got = score_triplets(q, p, pos_query, n, neg_query, ("cos", "dist"))
    assert counts == {m: got[m]["errors"] for m in got}
    sample = rng.choice(nq, size=min(nq, 2000), replace=False)
    naive, ref = naive_triplets(q, p, pos_query, n, neg_query, sample)
    sub_q = np.isin(pos_query, sample), np.isin(neg_query, sample)
    remap = np.full(nq, -1)
    remap[np.sort(sample)] = np.arange(sample.size)
    for m in ("cos", "dist"):
        got = triplet_set_pnd(q[np.sort(sample)], p[sub_q[0]], remap[pos_query[sub_q[0]]],
                              n[sub_q[1]], remap[neg_query[sub_q[1]]], m).errors
        assert got == ref[m], (name, m, got, ref[m])
    return count, full, naive * nq / sample.size


def naive_triplets(q, p, pos_query, n, neg_query, sample) -> tuple[float, dict]:
    """The definition per query: its scores, then the full positive x negative matrix."""
    import numpy as np

    from embtune.evaluate.pnd import closeness

    order_p, order_n = np.argsort(pos_query, kind="stable"), np.argsort(neg_query, kind="stable")
    sp, sn = np.searchsorted(pos_query[order_p], np.arange(q.shape[0] + 1)), \
        np.searchsorted(neg_query[order_n], np.arange(q.shape[0] + 1))
    t0 = time.perf_counter()
    errors = {"cos": 0, "dist": 0}
    for i in sample:
        ps, ns = p[order_p[sp[i]:sp[i + 1]]], n[order_n[sn[i]:sn[i + 1]]]
        for m in errors:
            a = closeness(np.repeat(q[i:i + 1], len(ps), 0), ps, m)
            b = closeness(np.repeat(q[i:i + 1], len(ns), 0), ns, m)
            errors[m] += int(np.count_nonzero(a[:, None] <= b[None, :]))
    return time.perf_counter() - t0, errors


def count_arxiv(flavour: str, papers: int, levels: int, dim: int, rng) -> tuple[float, float]:
    """(fast seconds for all levels of one flavour, extrapolated naive seconds)."""
    import numpy as np

    from embtune.evaluate.pnd_arxiv import CodedTriplets, score_levels

    q, d = _emb(rng, papers, dim), _emb(rng, papers, dim)
    d += q                                            # a paper's own text is closer (mostly)
    rows = np.arange(papers)
    coded = {f"L{k}": CodedTriplets(rows, rows, (rows + k) % papers if k < levels
                                    else rng.permutation(papers)) for k in range(1, levels + 1)}
    with Clock() as fast:
        got = score_levels(q, d, coded, ("cos", "dist"))
    sample = rng.choice(papers, size=min(papers, 2000), replace=False)
    c = coded[f"L{levels}"]
    naive, ref = naive_triplets(q[c.anchor[sample]], d[c.positive[sample]], np.arange(sample.size),
                                d[c.negative[sample]], np.arange(sample.size), np.arange(sample.size))
    sub = score_levels(q, d, {"s": CodedTriplets(c.anchor[sample], c.positive[sample],
                                                 c.negative[sample])}, ("cos", "dist"))
    assert {m: sub["s"][m]["errors"] for m in ref} == ref, (flavour, ref)
    assert all(got[k]["cos"]["total"] == papers for k in got)
    return fast, naive * papers * levels / sample.size


def count_xnli(languages: int, per_label: int, dim: int, brute_pairs: int = 4) -> tuple[float, float]:
    """(fast seconds, extrapolated naive seconds) for all language pairs and both relations."""
    import numpy as np

    from embtune.evaluate.pnd import closeness, xnli_pnd

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pnd import xnli_embeddings

    prem, hyp, labels = xnli_embeddings(per_label, dim, languages)
    with Clock() as fast:
        rows = xnli_pnd(prem, hyp, labels)
    langs = sorted(prem)
    t0, fast_rows = time.perf_counter(), {(r["query_lang"], r["text_lang"], r["relation"], r["measure"]): r["errors"] for r in rows}
    for k in range(brute_pairs):
        a, b = langs[k % len(langs)], langs[(3 * k + 1) % len(langs)]
        for m in ("cos", "dist"):
            score = closeness(prem[a], hyp[b], m)
            ent = score[labels == "entailment"]
            for rel in ("neutral", "contradiction"):
                errors = int(np.count_nonzero(ent[:, None] <= score[labels == rel][None, :]))
                assert errors == fast_rows[(a, b, rel, m)]
    naive = (time.perf_counter() - t0) * languages ** 2 / brute_pairs
    return fast, naive


def part1(scale: float, dim: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    shapes = triplet_shape(scale, rng)
    rows, fast_total, naive_total = [], 0.0, 0.0
    for name, (n_pos, n_neg) in shapes.items():
        count, full, naive = count_triplets(name, n_pos, n_neg, dim, rng)
        rows.append((name, f"{n_pos.size:,} queries, {int((n_pos * n_neg).sum()):,} comparisons", count,
                     full, naive))
    papers = _n(ARXIV["papers"], scale)
    for flavour in ARXIV["flavours"]:
        fast, naive = count_arxiv(flavour, papers, ARXIV["levels"], dim, rng)
        rows.append((f"arxiv-{flavour}", f"{papers:,} triplets x {ARXIV['levels']} levels", fast, fast, naive))
    per_label = _n(XNLI["per_label"], scale)
    fast, naive = count_xnli(XNLI["languages"], per_label, dim)
    rows.append(("xnli", f"{XNLI['languages']}x{XNLI['languages']} pairs x {per_label}^2 x 2 relations",
                 fast, fast, naive))
    print(f"[count] dim {dim}, both measures, scale {scale:g}, {os.environ['OMP_NUM_THREADS']} threads, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs:")
    cpu_total = count_total = 0.0
    print(f"  {'':12s} {'':52s} {'counting':>8s} {'+ranking':>9s} {'(CPU)':>8s} {'naive':>9s}")
    for name, size, count, full, naive in rows:
        fast_total, cpu_total = fast_total + full.wall, cpu_total + full.cpu
        count_total, naive_total = count_total + count.wall, naive_total + naive
        print(f"  {name:12s} {size:52s} {count.wall:7.2f}s {full.wall:8.2f}s {full.cpu:7.2f}s "
              f"{naive:8.1f}s  (naive / counting {naive / count.wall:5.1f}x)")
    verdict = "within" if fast_total <= TARGET_S else "OVER"
    print(f"[count] evaluation scoring in all: {fast_total:.1f} s wall, {cpu_total:.1f} s CPU ({verdict} the "
          f"{TARGET_S:.0f} s target); counting alone {count_total:.1f} s vs the naive per-query "
          f"baseline {naive_total:.0f} s: {naive_total / count_total:.1f}x")


# ---------------------------------------------------------------- part 2: texts embedded
class CountingEncoder:
    """Fake encoder: a small fixed vector per text; counts the texts it is asked to encode."""

    precision = "fp32"

    def __init__(self) -> None:
        self.texts = 0

    def encode(self, texts: list[str], batch_size: int):
        import numpy as np

        self.texts += len(texts)
        return np.ones((len(texts), 8), dtype=np.float32)


def write_arxiv(root: Path, papers: int, levels: int, rng) -> None:
    """build-arxiv-negatives' level files: level k's negative is another paper's positive."""
    import numpy as np
    import polars as pl

    ids = np.arange(papers)
    text = {"title": (pl.Series([f"title {i}" for i in ids]), pl.Series([f"abstract {i}" for i in ids])),
            "first": (pl.Series([f"first sentence {i}" for i in ids]), pl.Series([f"rest of abstract {i}" for i in ids]))}
    (root / "arxiv").mkdir(parents=True)
    for flavour, (anchor, positive) in text.items():
        for k in range(1, levels + 1):
            neg = (ids + k) % papers if k < levels else rng.permutation(papers)
            pl.DataFrame({"anchor": anchor, "positive": positive, "negative": positive.gather(neg),
                          "categories": pl.repeat("math.NT", papers, eager=True)}).write_parquet(
                root / f"arxiv/triplets_{flavour}_L{k}.parquet")


def part2(scale: float) -> None:
    import numpy as np

    from embtune.evaluate.pnd_eval import (
        Towers,
        XnliTable,
        evaluate_arxiv_levels,
        evaluate_triplets,
        evaluate_xnli,
    )
    from embtune.models.embed_cache import EmbedCache

    rng = np.random.default_rng(1)
    enc = CountingEncoder()
    towers = Towers(enc, "query-tower", enc, "doc-tower", "query: ", "passage: ")
    naive: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbedCache(Path(tmp) / "cache", progress=False)
        papers, levels = _n(ARXIV["papers"], scale), ARXIV["levels"]
        t0 = time.perf_counter()
        write_arxiv(Path(tmp), papers, levels, rng)
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for flavour in ARXIV["flavours"]:
            paths = {f"L{k}": Path(tmp) / f"arxiv/triplets_{flavour}_L{k}.parquet" for k in range(1, levels + 1)}
            evaluate_arxiv_levels(paths, cache, towers, 4096, ("cos", "dist"))
            naive[f"arxiv-{flavour}"] = 3 * papers * levels
        arxiv_s = time.perf_counter() - t0
        arxiv_encoded = enc.texts
        shapes = triplet_shape(scale, rng)
        for name, (n_pos, n_neg) in shapes.items():
            ts = synthetic_triplet_texts(name, n_pos, n_neg, rng)
            evaluate_triplets(ts, cache, towers, 4096, ("cos",))
            naive[name] = len(ts.queries) + len(ts.positives) + len(ts.negatives)
        langs, per_label = [f"l{k:02d}" for k in range(XNLI["languages"])], _n(XNLI["per_label"], scale)
        n_pairs = 3 * per_label
        labels = np.repeat(np.array(["entailment", "neutral", "contradiction"]), per_label)
        premise = [f"premise {i % per_label}" for i in range(n_pairs)]   # one premise, 3 hypotheses
        table = XnliTable(np.arange(n_pairs), labels, {lg: [f"{p} {lg}" for p in premise] for lg in langs},
                          {lg: [f"hypothesis {i} {lg}" for i in range(n_pairs)] for lg in langs})
        evaluate_xnli(table, cache, towers, 4096, ("cos",))
        naive["xnli"] = len(langs) ** 2 * 2 * n_pairs
    total_naive = sum(naive.values())
    print(f"[texts] scale {scale:g}: naive {total_naive:,} texts embedded (every text of every file, "
          f"per dataset / flavour / level / language pair) vs {enc.texts:,} unique texts through the "
          f"cache: {total_naive / enc.texts:.1f}x fewer")
    for name, n in naive.items():
        print(f"  naive {name:12s} {n:>12,}")
    print(f"[texts] arxiv: {arxiv_encoded:,} unique texts for 2 x {levels} level files "
          f"({naive['arxiv-first'] + naive['arxiv-title']:,} naive); reading + coding + cache "
          f"lookups {arxiv_s:.1f} s (writing the synthetic files took {write_s:.1f} s)")


def synthetic_triplet_texts(name: str, n_pos, n_neg, rng):
    """Texts of a triplet set. SQuAD: a paragraph's sentences are shared by its ~5 questions
    (positives and negatives come from the same sentences); MSMARCO and HotpotQA: every passage
    distinct (no sharing assumed, the conservative case for the cache)."""
    import numpy as np

    from embtune.evaluate.pnd_eval import TripletSet

    nq = n_pos.size
    if name == "squad":
        para = rng.integers(0, max(1, nq // 5), nq)
        pos = [f"squad p{para[i]} s{j}" for i in range(nq) for j in range(n_pos[i])]
        neg = [f"squad p{para[i]} s{n_pos[i] + j}" for i in range(nq) for j in range(n_neg[i])]
    else:
        pos = [f"{name} pos {k}" for k in range(int(n_pos.sum()))]
        neg = [f"{name} neg {k}" for k in range(int(n_neg.sum()))]
    return TripletSet([f"{name} query {i}" for i in range(nq)], pos, np.repeat(np.arange(nq), n_pos),
                      neg, np.repeat(np.arange(nq), n_neg))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--scale", type=float, default=1.0, help="shrink every size (quick check)")
    ap.add_argument("--part", choices=("1", "2", "both"), default="both")
    args = ap.parse_args(argv)
    _set_threads(args.threads)
    if args.part in ("1", "both"):
        part1(args.scale, args.dim)
    if args.part in ("2", "both"):
        part2(args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
