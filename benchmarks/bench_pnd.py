"""Benchmark of PND counting at full XNLI size, and of the embedding cache's encoder savings.

Run: ``.venv/bin/python benchmarks/bench_pnd.py [--dim 384] [--brute-pairs 10] [--threads 2]``

1. Synthetic float32 embeddings at full XNLI test size (15 languages, 1,670 pairs per label):
   times all 225 language pairs x 2 relations x 2 measures with the O(n log n) sort+searchsorted
   counter, then brute force (the materialised 1,670 x 1,670 comparison matrix) on a subset of
   language pairs, checks the counts are identical, and prints the time ratio.
2. Encoder forward passes of a demo-like evaluation (base model + several tuned query towers on
   msmarco / arxiv-first / arxiv-title / xnli) through :class:`EmbedCache` with a counting fake
   encoder, against naive per-dataset encoding.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def xnli_embeddings(n_per_label: int, dim: int, languages: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.array(["entailment", "neutral", "contradiction"]), n_per_label)
    base = rng.normal(size=(labels.size, dim)).astype(np.float32)
    prem, hyp = {}, {}
    for k in range(languages):
        lang = f"l{k:02d}"
        prem[lang] = base + 0.5 * rng.normal(size=base.shape).astype(np.float32)
        noise = np.where((labels == "entailment")[:, None], 0.8, 1.0).astype(np.float32)
        hyp[lang] = base + noise * rng.normal(size=base.shape).astype(np.float32)
    return prem, hyp, labels


def brute_counts(prem, hyp, labels, pairs, measures=("cos", "dist")) -> tuple[list[dict], float]:
    """Reference: the full n_ent x n_other boolean matrix per pair (what searchsorted avoids)."""
    import numpy as np

    from embtune.evaluate.pnd import closeness

    rows, start = [], time.perf_counter()
    for measure in measures:
        for a, b in pairs:
            score = closeness(prem[a], hyp[b], measure)
            ent = score[labels == "entailment"]
            for rel in ("neutral", "contradiction"):
                other = score[labels == rel]
                errors = int(np.count_nonzero(ent[:, None] <= other[None, :]))
                rows.append({"query_lang": a, "text_lang": b, "relation": rel, "measure": measure,
                             "errors": errors, "total": ent.size * other.size})
    return rows, time.perf_counter() - start


def bench_xnli(dim: int, brute_pairs: int) -> None:
    from embtune.evaluate.pnd import xnli_pnd

    prem, hyp, labels = xnli_embeddings(1670, dim, 15)
    start, cpu = time.perf_counter(), time.process_time()
    rows = xnli_pnd(prem, hyp, labels)
    fast, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"[xnli] 15 languages x 1,670 pairs/label, dim {dim}: {len(rows)} counts "
          f"(225 pairs x 2 relations x 2 measures) in {fast:.2f} s wall, {cpu:.2f} s CPU")
    langs = sorted(prem)
    subset = [(langs[i % 15], langs[(3 * i + 1) % 15]) for i in range(brute_pairs)]
    ref, brute = brute_counts(prem, hyp, labels, subset)
    fast_sub = {(r["query_lang"], r["text_lang"], r["relation"], r["measure"]): r for r in rows}
    for r in ref:
        got = fast_sub[(r["query_lang"], r["text_lang"], r["relation"], r["measure"])]
        assert (got["errors"], got["total"]) == (r["errors"], r["total"]), (got, r)
    per_pair_fast, per_pair_brute = fast / 225, brute / brute_pairs
    print(f"[xnli] brute force on {brute_pairs} language pairs: {brute:.2f} s; counts identical. "
          f"Per language pair (2 relations x 2 measures, scores included): fast "
          f"{per_pair_fast * 1e3:.1f} ms, brute {per_pair_brute * 1e3:.1f} ms "
          f"(brute/fast = {per_pair_brute / per_pair_fast:.2f}x); extrapolated brute for 225 pairs: "
          f"{per_pair_brute * 225:.1f} s")
    bench_counting_only()


def bench_counting_only() -> None:
    """The comparison step alone (scores given), where sorting replaces the n^2 matrix."""
    import numpy as np

    from embtune.evaluate.pnd import count_not_closer

    rng = np.random.default_rng(1)
    ent, other = rng.normal(size=1670), rng.normal(size=1670)
    reps = 200
    t0 = time.perf_counter()
    for _ in range(reps):
        fast = count_not_closer(ent, other)
    t1 = time.perf_counter()
    for _ in range(reps):
        brute = int(np.count_nonzero(ent[:, None] <= other[None, :]))
    t2 = time.perf_counter()
    assert fast == brute
    print(f"[xnli] counting only, 1,670 x 1,670: searchsorted {(t1 - t0) / reps * 1e3:.3f} ms vs "
          f"matrix {(t2 - t1) / reps * 1e3:.3f} ms ({(t2 - t1) / (t1 - t0):.1f}x)")


class CountingEncoder:
    """Fake encoder: deterministic vectors, counts calls (= forward passes)."""

    precision = "fp32"

    def __init__(self) -> None:
        self.passes = 0

    def encode(self, texts: list[str], batch_size: int):
        import numpy as np

        self.passes += 1
        return np.ones((len(texts), 8), dtype=np.float32)


def demo_like_data(seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Text occurrences per dataset and tower, shaped like the demo preset's evaluation.

    msmarco: 150 samples, 1-2 positives, 8-20 negatives from a shared passage pool;
    arxiv: 300 papers, negatives are other papers' abstracts (first/title share abstracts);
    xnli: 15 languages, 50 pairs per label, each premise shared by its 3 hypotheses."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = [f"passage {i}" for i in range(1500)]
    q, d = [], []
    for s in range(150):
        q.append(f"query {s}")
        d += [pool[i] for i in rng.integers(0, len(pool), rng.integers(1, 3) + rng.integers(8, 21))]
    data = {"msmarco": {"query": q, "doc": d}}
    abstracts = [f"abstract {i}" for i in range(300)]
    rest = [f"rest of abstract {i}" for i in range(300)]
    neg = rng.integers(0, 300, 300)
    data["arxiv-first"] = {"query": [f"first sentence {i}" for i in range(300)],
                           "doc": rest + [rest[j] for j in neg]}
    data["arxiv-title"] = {"query": [f"title {i}" for i in range(300)],
                           "doc": abstracts + [abstracts[j] for j in neg]}
    langs = [f"l{k}" for k in range(15)]
    data["xnli"] = {"query": [f"premise {p // 3} {lang}" for lang in langs for p in range(150)],
                    "doc": [f"hypothesis {p} {lang}" for lang in langs for p in range(150)]}
    return data


def naive_passes(data: dict[str, dict[str, list[str]]], batch_size: int) -> tuple[int, int]:
    """(per-dataset, no dedup; XNLI re-encoded per language pair) and (per-dataset dedup)."""
    ceil = lambda n: -(-n // batch_size)  # noqa: E731
    plain = dedup = 0
    for name, towers in data.items():
        for texts in towers.values():
            dedup += ceil(len(set(texts)))
            per_lang = len(texts) // 15 if name == "xnli" else len(texts)
            plain += (225 * ceil(per_lang)) if name == "xnli" else ceil(per_lang)
    return plain, dedup


def bench_cache(batch_size: int, query_runs: int) -> None:
    from embtune.evaluate.embed_cache import EmbedCache

    data = demo_like_data()
    plain, dedup = naive_passes(data, batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        passes = []
        for run in range(query_runs + 2):  # base, tuned query towers, then a re-run of the last
            cache, enc = EmbedCache(tmp, progress=False), CountingEncoder()
            qfp = "base" if run == 0 else f"query-{min(run, query_runs)}"
            for towers in data.values():
                cache.embed(enc, qfp, "query", "", towers["query"], batch_size)
                cache.embed(enc, "base", "doc", "", towers["doc"], batch_size)
            assert enc.passes == cache.stats.forward_passes
            passes.append(cache.stats.forward_passes)
    n_evals = query_runs + 1
    print(f"[cache] demo-like evaluation (batch {batch_size}), forward passes per evaluation: "
          f"naive per-dataset {plain} (XNLI per language pair), naive with per-dataset dedup "
          f"{dedup}; cached: base model {passes[0]}, each tuned query tower {passes[1]}, "
          f"re-run {passes[-1]}")
    print(f"[cache] base + {query_runs} query towers: naive {plain * n_evals}, "
          f"dedup {dedup * n_evals}, cached {sum(passes[:-1])} forward passes")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--brute-pairs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--query-runs", type=int, default=4)
    args = ap.parse_args(argv)
    _set_threads(args.threads)
    bench_xnli(args.dim, args.brute_pairs)
    bench_cache(args.batch_size, args.query_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
