"""Benchmark ``embtune build-arxiv-negatives`` on a synthetic snapshot with realistic statistics.

Why synthetic: the real snapshot is 4 GB and offline runs cannot fetch it. What drives the cost
is kept: ~150-token abstracts over a Zipfian vocabulary (stop-words in nearly every abstract,
long tail) plus per-category topical words; kept-category sizes spread log-uniformly between
16 and ``max_category_size`` (so candidate blocks are as large as at full scale, up to 10K);
1-3 kept categories per paper, most papers also in a big (unkept) category, some only in big
ones. Because block sizes match full scale, per-paper cost transfers and the time for the
~250K selected papers of the real snapshot is projected linearly (plus parsing the ~2M lines).

    .venv/bin/python benchmarks/bench_arxiv_negatives.py --papers 50000

Prints papers/s, peak RSS of the stage (a child process), the projected full-scale time and the
speed-up over a brute-force baseline (scipy ``jensenshannon`` of each paper against each of its
candidates, dense over the pair's word union) measured on a subset, whose neighbours are also checked to be identical.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FULL_SELECTED = 253_140      # paper 2, App. B.1
FULL_SNAPSHOT_LINES = 2_000_000


def synthetic_snapshot(path: Path, papers: int, max_size: int, seed: int, vocab: int = 60_000,
                       words: int = 150) -> None:
    """Write a Kaggle-format JSONL snapshot with the statistics described in the module doc."""
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    while sum(sizes) < 1.6 * 0.85 * papers:  # ~1.6 kept memberships for 85% of papers
        sizes.append(int(np.exp(rng.uniform(np.log(16), np.log(max_size)))))
    weights = np.asarray(sizes, dtype=float) / sum(sizes)
    n_big = max(1, int(0.6 * papers / (1.2 * max_size + 1)))
    zipf = 1.0 / np.arange(1, vocab + 1) ** 1.07
    zipf /= zipf.sum()
    topical = rng.integers(200, vocab, size=(len(sizes), 300))
    with open(path, "w") as fh:
        for i in range(papers):
            cats: list[int] = []
            if rng.random() < 0.85:
                k = rng.choice([1, 2, 3], p=[0.55, 0.3, 0.15])
                cats = list(rng.choice(len(sizes), size=k, replace=False, p=weights))
            names = [f"k{c}.x" for c in cats]
            if not names or rng.random() < 0.6:
                names.append(f"big{rng.integers(n_big)}.x")
            n_words = max(20, int(rng.normal(words, 40)))
            n_topic = int(0.3 * n_words) if cats else 0
            toks = rng.choice(vocab, size=n_words - n_topic, p=zipf)
            if n_topic:
                toks = np.concatenate([toks, topical[rng.choice(cats, size=n_topic),
                                                     rng.integers(300, size=n_topic)]])
            text = " ".join(f"w{t}" for t in rng.permutation(toks))
            half = len(text) // 2
            cut = text.index(" ", half)
            abstract = text[:cut] + ". W" + text[cut + 2:] + "."
            fh.write(json.dumps({"id": f"{i:07d}", "title": f"Paper {i}", "abstract": abstract,
                                 "categories": " ".join(names)}) + "\n")


def run_stage(snapshot: Path, out: Path, max_size: int) -> tuple[float, float, dict[str, float], str]:
    """Run the stage in a child process: (wall seconds, child peak RSS GiB, phase times, log)."""
    cmd = [sys.executable, "-m", "embtune.cli", "build-arxiv-negatives", "--snapshot",
           str(snapshot), "--max-category-size", str(max_size), "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    phases = {m.group(2): float(m.group(1)) for m in
              re.finditer(r"\[\s*([\d.]+)s\] (read|\d+ papers with negatives|wrote)", proc.stderr)}
    return wall, rss, phases, proc.stderr


def brute_force(snapshot: Path, max_size: int, n_queries: int, seed: int) -> tuple[float, bool]:
    """(seconds per paper of the scipy brute force, its neighbours equal the stage kernel's)."""
    from scipy.spatial.distance import jensenshannon

    from embtune.data import arxiv_negatives as an

    lines = enumerate(snapshot.read_text().splitlines(), start=1)
    papers = list(an.parse_lines(lines, str(snapshot)))
    kept = an.kept_categories(an.category_sizes(papers), max_size)
    sel = an.select_papers(papers, kept)
    keys = [an.category_key(p.categories, kept) for p in sel]
    dist = an.word_distributions([p.abstract for p in sel])
    prefixes, members, group_of = an.candidate_groups(keys)
    rng = np.random.default_rng(seed)
    queries = np.sort(rng.choice(len(sel), size=min(n_queries, len(sel)), replace=False))
    t_brute = 0.0
    same = True
    for q in queries:
        block = an.make_block(dist, members[group_of[q]])
        local = np.searchsorted(block.members, [q])
        ours = an.top_k(an.block_jsd(block, local), block.members, local, 20)[0]
        t1 = time.perf_counter()
        rows = [dist[i] for i in block.members]  # pairwise: dense over each pair's union
        p = rows[local[0]]
        d = np.empty(len(rows))
        for j, r in enumerate(rows):
            union = np.union1d(p.indices, r.indices)
            d[j] = jensenshannon(p[:, union].toarray()[0], r[:, union].toarray()[0]) ** 2
        d[local[0]] = np.inf
        order = np.lexsort((block.members, d))[: min(20, len(d) - 1)]
        t2 = time.perf_counter()
        ref = block.members[order]
        same &= bool((ours[: len(ref)] == ref).all())
        t_brute += t2 - t1
    return t_brute / len(queries), same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=20_000)
    ap.add_argument("--max-category-size", type=int, default=10_000)
    ap.add_argument("--brute-queries", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snapshot.json"
        t0 = time.perf_counter()
        synthetic_snapshot(snap, args.papers, args.max_category_size, args.seed)
        print(f"synthetic snapshot: {args.papers} papers, {snap.stat().st_size / 2**20:.0f} MiB, "
              f"{time.perf_counter() - t0:.0f}s to generate")
        wall, rss, phases, log = run_stage(snap, Path(tmp) / "out", args.max_category_size)
        man = json.loads((Path(tmp) / "out" / "manifest.json").read_text())
        st = man["stats"]
        n_sel = st["n_selected"]
        read = phases.get("read", 0.0)
        neg_key = next((k for k in phases if "papers with negatives" in k), None)
        t_neg = (phases[neg_key] - read) if neg_key else wall
        t_write = wall - (phases[neg_key] if neg_key else 0.0)
        per_line = read / args.papers
        projected = (per_line * FULL_SNAPSHOT_LINES
                     + (t_neg + t_write) * FULL_SELECTED / n_sel)
        print(log.strip())
        print(f"selected {n_sel} of {args.papers} papers; {st['groups']} candidate blocks; "
              f"{st['pairs'] / n_sel:.0f} candidates/paper; padded {st['padded']}")
        print(f"phases: read+select {read:.1f}s, negatives {t_neg:.1f}s, triplets+write "
              f"{t_write:.1f}s, total {wall:.1f}s")
        print(f"throughput: {n_sel / t_neg:.0f} selected papers/s (negatives), "
              f"{n_sel / wall:.0f} papers/s end to end")
        print(f"peak RSS of the stage: {rss:.2f} GiB")
        print(f"projected full build ({FULL_SNAPSHOT_LINES:,} lines, {FULL_SELECTED:,} selected): "
              f"{projected / 60:.1f} min (1 process)")
        brute, same = brute_force(snap, args.max_category_size, args.brute_queries, args.seed)
        ours = t_neg / n_sel
        print(f"brute force (scipy jensenshannon per candidate pair), {args.brute_queries} "
              f"papers: {brute * 1e3:.1f} ms/paper vs ours {ours * 1e3:.2f} ms/paper -> "
              f"{brute / ours:.0f}x; identical neighbours: {same}; brute-force projected full "
              f"negatives phase: {brute * FULL_SELECTED / 3600:.1f} h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
