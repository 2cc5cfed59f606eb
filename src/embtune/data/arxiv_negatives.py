"""arxiv-negatives (paper 2, App. B) and the arxiv-first / arxiv-title / narrow-domain triplets.

Why this stage exists: paper 2 evaluates (and, in App. K, tunes) query encoders on arXiv triplets
whose negatives come in 21 difficulty levels. Level k uses the k-th negative of a paper: levels
1-20 are the papers closest to it (same category niche, smallest Jensen-Shannon distance between
the abstracts' word distributions, hardest first) and level 21 is a random paper (the easiest
level, used throughout the paper).

Construction (App. B.2), from the arXiv metadata snapshot (Kaggle ``arxiv-metadata-oai-snapshot``):

1. Category sizes are counted over all valid papers; categories with at most
   ``max_category_size`` papers are *kept*.
2. Papers with at least one kept category are *selected*.
3. For each selected paper its kept categories are sorted by size (smallest first; ties by
   name). Its candidates are the other selected papers that contain the longest possible prefix
   ``c1..cj`` of that list ("the closest match by categories, the longest consecutive list of
   matched categories, starting from the first one"). Papers whose resulting prefix is equal
   share one candidate block, which is what makes the search cheap. Only kept categories take
   part (the brief's reading; unkept categories are huge and say little). If no other paper
   shares even ``c1`` (a category of size 1, never the case in the real snapshot), the whole
   selected set is the candidate pool; such papers are counted in the manifest.
4. Of the candidates the ``n_negatives`` closest by Jensen-Shannon distance are kept, sorted by
   distance (ties by snapshot order, so the result is well defined); fewer are padded by
   repeating the last; a uniformly random other selected paper (seeded) is appended.

Jensen-Shannon distance uses the **natural log** (scipy's ``jensenshannon`` default), i.e.
``sqrt(JSD)`` with ``JSD <= ln 2``. Words are lower-cased runs of letters/digits. Over sparse
supports only shared words need work: with ``f(x) = x ln x``,

    JSD(p, q) = ln 2 - 1/2 * sum_{w: p_w > 0, q_w > 0} [f(p_w + q_w) - f(p_w) - f(q_w)]

(a word only in ``p`` contributes ``p_w/2 ln 2`` and the shared words' ``m``-terms collect the
rest, so the probability masses add up to the constant ``ln 2``). This is exact; it is evaluated
as a sparse "product" of a batch of query rows against the candidate block's column-major
(CSC) copy, accumulated with ``np.bincount``.

Triplets (App. B.1): flavour ``title`` = (title, abstract, negative's abstract); flavour
``first`` = (abstract's first sentence, the rest of it, the negative's abstract without its first
sentence). Narrow domains (App. K) are ``first`` triplets of papers with at least one category
starting with ``<domain>.`` (so ``math-ph`` is not ``math``), split by paper into train/val.
Evaluation after narrow tuning must drop samples having a category of that domain: use
:func:`exclude_domain` on the evaluation triplets.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from embtune.data.jsonl import DataError, open_text

STAGE = "build-arxiv-negatives"
LN2 = math.log(2.0)
REQUIRED_FIELDS = ("id", "title", "abstract", "categories")
MAX_EXAMPLES = 5
DEFAULT_WORK = 1_000_000  # expanded (query word x candidate) entries per batch: bounds memory
_WORD = re.compile(r"[^\W_]+")


# --------------------------------------------------------------------------------------------
# Parsing (bad input is counted with file:line examples, never silently skipped)
# --------------------------------------------------------------------------------------------

@dataclass
class Drops:
    """Counted reasons for dropped input, with the first few ``file:line`` examples each."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < MAX_EXAMPLES:
            ex.append(where)

    def as_dict(self) -> dict[str, Any]:
        return {"counts": dict(sorted(self.counts.items())),
                "examples": dict(sorted(self.examples.items()))}


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    abstract: str
    categories: str  # space-separated, as in the snapshot (whitespace normalised)


def clean_text(text: str) -> str:
    """Collapse the snapshot's hard line breaks and indentation into single spaces."""
    return " ".join(text.split())


def parse_record(obj: Any) -> Paper | str:
    """One snapshot object -> :class:`Paper`, or the drop reason (a short stable string)."""
    if not isinstance(obj, dict):
        return "not_an_object"
    for name in REQUIRED_FIELDS:
        if name not in obj or obj[name] is None:
            return f"missing_field:{name}"
        if not isinstance(obj[name], str):
            return f"wrong_type:{name}"
    paper = Paper(obj["id"].strip(), clean_text(obj["title"]), clean_text(obj["abstract"]),
                  " ".join(obj["categories"].split()))
    for name in REQUIRED_FIELDS:
        if not getattr(paper, name):
            return f"empty:{name}"
    if not _WORD.search(paper.abstract):
        return "no_words:abstract"  # no word distribution, so no Jensen-Shannon distance
    return paper


def json_objects(lines: Iterable[tuple[int, str]], source: str,
                 drops: Drops) -> Iterator[tuple[str, Any]]:
    """(``file:line``, parsed object) per non-blank line; a bad JSON line is counted, not fatal."""
    for line_no, line in lines:
        if not line.strip():
            continue
        where = f"{source}:{line_no}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError:
            drops.add("bad_json", where)


def parse_lines(lines: Iterable[tuple[int, str]], source: str,
                drops: Drops | None = None) -> Iterator[Paper]:
    """Parse JSONL lines; bad JSON, wrong types, empty fields and repeated ids go to ``drops``.

    Why not :func:`embtune.data.jsonl.iter_jsonl`: a 4 GB crawl snapshot with one broken line
    should still build, with the line reported, rather than stop."""
    drops = drops if drops is not None else Drops()
    seen: set[str] = set()
    for where, obj in json_objects(lines, source, drops):
        rec = parse_record(obj)
        if isinstance(rec, str):
            drops.add(rec, where)
        elif rec.id in seen:
            drops.add("duplicate_id", where)
        else:
            seen.add(rec.id)
            yield rec


def category_sizes(papers: Iterable[Paper]) -> Counter[str]:
    """Papers per category over the whole (valid) snapshot."""
    sizes: Counter[str] = Counter()
    for p in papers:
        sizes.update(set(p.categories.split()))
    return sizes


def kept_categories(sizes: Counter[str], max_size: int) -> dict[str, int]:
    """Kept categories -> rank by (size, name): comparing ranks = sorting by size, smallest first."""
    kept = sorted((n, c) for c, n in sizes.items() if n <= max_size)
    return {c: i for i, (_, c) in enumerate(kept)}


def select_papers(papers: Iterable[Paper], kept: dict[str, int]) -> list[Paper]:
    return [p for p in papers if any(c in kept for c in p.categories.split())]


def category_key(categories: str, kept: dict[str, int]) -> tuple[int, ...]:
    """The paper's kept categories as ranks, smallest category first."""
    return tuple(sorted({kept[c] for c in categories.split() if c in kept}))


# --------------------------------------------------------------------------------------------
# Word distributions and exact Jensen-Shannon
# --------------------------------------------------------------------------------------------

def word_distributions(texts: Sequence[str]) -> sp.csr_matrix:
    """Row-normalised word counts (float64 CSR, sorted indices); vocabulary in first-seen order."""
    vocab: dict[str, int] = {}
    cols: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        toks = _WORD.findall(text.lower())
        cols.extend(vocab.setdefault(t, len(vocab)) for t in toks)
        lengths[i] = len(toks)
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    counts = sp.csr_matrix((np.ones(len(cols)), (rows, np.asarray(cols, dtype=np.int64))),
                           shape=(len(texts), max(len(vocab), 1)))
    counts.sum_duplicates()
    counts.sort_indices()
    totals = np.maximum(lengths, 1).astype(np.float64)
    counts.data /= np.repeat(totals, np.diff(counts.indptr))
    return counts


def xlogx(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.where(x > 0, x, 1.0))


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)


@dataclass
class Block:
    """A candidate block: rows ``members`` of the distribution matrix, column-major, local vocab."""

    members: np.ndarray          # global row indices, sorted
    csr: sp.csr_matrix           # members x local vocab
    csc: sp.csc_matrix           # same, column-major (who has word w)
    csc_xlogx: np.ndarray        # f(q) for every stored q of csc


def make_block(dist: sp.csr_matrix, members: np.ndarray) -> Block:
    """Slice the candidate rows and compress the vocabulary to the words they use.

    Why compress: a CSC over the full vocabulary (millions of words) would cost an indptr of that
    length per block, and there are many small blocks."""
    sub = dist[members]
    words, local = np.unique(sub.indices, return_inverse=True)
    csr = sp.csr_matrix((sub.data, local.ravel(), sub.indptr), shape=(len(members), len(words)))
    csc = csr.tocsc()
    csc.sort_indices()
    return Block(members, csr, csc, xlogx(csc.data))


def block_jsd(block: Block, rows: np.ndarray) -> np.ndarray:
    """Exact JSD (nats) of block rows ``rows`` against every block member: (len(rows), n) array."""
    n = len(block.members)
    csr, csc = block.csr, block.csc
    starts, ends = csr.indptr[rows], csr.indptr[rows + 1]
    nz = _ranges(starts, ends - starts)
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), ends - starts)
    words, p = csr.indices[nz], csr.data[nz]
    df = (csc.indptr[words + 1] - csc.indptr[words]).astype(np.int64)
    pos = _ranges(csc.indptr[words].astype(np.int64), df)
    # g = f(p + q) - f(p) - f(q) over the shared words, in place (this loop is the hot spot)
    s = np.repeat(p, df)
    s += csc.data[pos]
    g = np.log(s)  # p + q > 0 on shared words: no guard needed
    g *= s
    del s
    fpq = np.repeat(xlogx(p), df)
    fpq += block.csc_xlogx[pos]
    g -= fpq
    del fpq
    flat = np.repeat(owner * n, df)
    flat += csc.indices[pos]
    shared = np.bincount(flat, weights=g, minlength=len(rows) * n).reshape(len(rows), n)
    return np.maximum(LN2 - 0.5 * shared, 0.0)


def query_batches(block: Block, rows: np.ndarray, work: int) -> Iterator[np.ndarray]:
    """Split ``rows`` so each batch expands to about ``work`` entries (bounded memory).

    A row costs the summed document frequencies of its words (entries of the sparse product)
    plus the block size (its row of the dense accumulator)."""
    csr, csc = block.csr, block.csc
    df = np.diff(csc.indptr)
    row_cost = np.add.reduceat(df[csr.indices], csr.indptr[:-1])  # rows are never empty
    cum = np.cumsum(row_cost[rows] + len(block.members))
    cuts = np.searchsorted(cum, np.arange(work, int(cum[-1]), work), side="right")
    edges = np.unique(np.concatenate([[0], cuts, [len(rows)]]))
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            yield rows[a:b]


def top_k(jsd: np.ndarray, members: np.ndarray, self_cols: np.ndarray, k: int) -> np.ndarray:
    """Per row, the ``k`` nearest members (excluding self) by (JSD, global index), padded.

    Why the explicit tie rule: ``argpartition`` alone picks arbitrarily among equal distances at
    the cut; sorting the tied boundary by global index makes the answer unique."""
    jsd = jsd.copy()
    jsd[np.arange(len(jsd)), self_cols] = np.inf
    avail = jsd.shape[1] - 1
    out = np.empty((len(jsd), k), dtype=np.int64)
    if avail <= 0:
        raise ValueError("a candidate block needs at least one member besides the paper itself")
    kk = min(k, avail)
    for i, row in enumerate(jsd):
        cut = np.partition(row, kk - 1)[kk - 1] if kk < len(row) else np.inf
        near = np.flatnonzero(row <= cut)
        near = near[np.isfinite(row[near])]
        order = np.lexsort((members[near], row[near]))[:kk]
        chosen = members[near[order]]
        out[i, :kk] = chosen
        out[i, kk:] = chosen[-1]
    return out


# --------------------------------------------------------------------------------------------
# Candidate blocks from category prefixes
# --------------------------------------------------------------------------------------------

def candidate_groups(keys: Sequence[tuple[int, ...]]
                     ) -> tuple[list[tuple[int, ...]], list[np.ndarray], np.ndarray]:
    """Map each paper to the longest prefix of its key that another paper also contains.

    Returns ``(prefixes, members, group_of)``: candidate block ``g`` is the sorted row indices
    ``members[g]`` of papers containing all categories of ``prefixes[g]``; ``group_of[i]`` is
    paper ``i``'s block. The empty prefix (paper alone in its smallest category) means "all
    papers". Work stays inside one first-category universe (at most ``max_category_size``
    papers) at a time, with the prefix masks memoised."""
    post: dict[int, list[int]] = {}
    by_first: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        by_first.setdefault(key[0], []).append(i)
        for c in key:
            post.setdefault(c, []).append(i)
    members_by: dict[tuple[int, ...], np.ndarray] = {}
    prefix_of: list[tuple[int, ...]] = [()] * len(keys)
    for c1 in sorted(by_first):
        universe = np.asarray(post[c1], dtype=np.int64)
        cols: dict[int, np.ndarray] = {}
        masks: dict[tuple[int, ...], np.ndarray] = {(c1,): np.ones(len(universe), dtype=bool)}
        for i in by_first[c1]:
            best: tuple[int, ...] = (c1,) if len(universe) >= 2 else ()
            for c in keys[i][1:] if best else ():
                cand = best + (c,)
                if cand not in masks:
                    if c not in cols:
                        cols[c] = np.isin(universe, np.asarray(post[c]), assume_unique=True)
                    masks[cand] = masks[best] & cols[c]
                if masks[cand].sum() < 2:
                    break
                best = cand
            prefix_of[i] = best
            if best and best not in members_by:
                members_by[best] = universe[masks[best]]
    if any(not p for p in prefix_of):
        members_by[()] = np.arange(len(keys), dtype=np.int64)
    prefixes = sorted(members_by, key=lambda p: (not p, p))
    ids = {p: g for g, p in enumerate(prefixes)}
    return (prefixes, [members_by[p] for p in prefixes],
            np.asarray([ids[p] for p in prefix_of], dtype=np.int64))


def nearest_negatives(dist: sp.csr_matrix, keys: Sequence[tuple[int, ...]], k: int,
                      work: int = DEFAULT_WORK) -> tuple[np.ndarray, dict[str, int]]:
    """(n_papers, k) row indices of each paper's k closest candidates, plus counters."""
    prefixes, members, group_of = candidate_groups(keys)
    out = np.empty((len(keys), k), dtype=np.int64)
    order = np.argsort(group_of, kind="stable")
    bounds = np.searchsorted(group_of[order], np.arange(len(prefixes) + 1))
    stats = Counter(groups=len(prefixes), pairs=0)
    for g, prefix in enumerate(prefixes):
        papers = order[bounds[g]:bounds[g + 1]]
        if not len(papers):
            continue
        block = make_block(dist, members[g])
        local = np.searchsorted(block.members, papers)
        stats["pairs"] += len(papers) * (len(block.members) - 1)
        if not prefix:
            stats["no_category_match"] += len(papers)
        for batch in query_batches(block, local, work):
            jsd = block_jsd(block, batch)
            out[block.members[batch]] = top_k(jsd, block.members, batch, k)
    stats["padded"] = int(sum(len(set(r)) < k for r in out.tolist()))
    return out, dict(stats)


def random_negatives(n: int, seed: int) -> np.ndarray:
    """One uniformly random other paper per paper (never itself); needs n >= 2."""
    if n < 2:
        raise DataError("need at least two selected papers to pick a random negative")
    r = np.random.default_rng(seed).integers(0, n - 1, size=n)
    return r + (r >= np.arange(n))


# --------------------------------------------------------------------------------------------
# Triplets
# --------------------------------------------------------------------------------------------

_ABBREV = {"e.g", "i.e", "al", "fig", "figs", "eq", "eqs", "ref", "refs", "sec", "vs", "cf",
           "resp", "etc", "approx", "no", "dr", "prof", "viz", "ca", "thm", "prop", "lem", "ch"}
_BOUNDARY = re.compile(r"[.!?](?=\s+[\"'(\[$\\]?[A-Z0-9])")


def split_first_sentence(text: str) -> tuple[str, str]:
    """(first sentence, rest). A boundary is ``.!?`` + space + capital/digit, except after
    common abbreviations (e.g., et al., Fig., Eq.) and single-letter initials."""
    for m in _BOUNDARY.finditer(text):
        before = text[:m.start()].split()
        word = before[-1].lstrip("([") if before else ""
        if m.group() == "." and (word.lower() in _ABBREV or (len(word) == 1 and word.isalpha())):
            continue
        return text[:m.end()].strip(), text[m.end():].strip()
    return text.strip(), ""


def has_domain(categories: str, domain: str) -> bool:
    """True if any category starts with ``<domain>.`` (App. K: "math." excludes math-ph)."""
    prefix = domain + "."
    return any(c.startswith(prefix) for c in categories.split())


def exclude_domain(frame: Any, domain: str) -> Any:
    """Evaluation rows without any category of ``domain`` (App. K evaluation exclusion)."""
    import polars as pl

    pattern = r"(^|\s)" + re.escape(domain + ".")
    return frame.filter(~pl.col("categories").str.contains(pattern))


def make_triplets(papers: Sequence[Paper], negatives: np.ndarray, flavour: str, level: int,
                  drops: Drops) -> dict[str, list[Any]]:
    """Columns ``anchor, positive, negative, paper_id, categories`` for one flavour and level.

    ``negatives`` holds row indices into ``papers`` (-1 = unknown id, published source).
    Rows that cannot be made (one-sentence abstract in 'first') are counted in ``drops``."""
    cols: dict[str, list[Any]] = {c: [] for c in ("anchor", "positive", "negative", "paper_id",
                                                   "categories")}
    split = [split_first_sentence(p.abstract) for p in papers] if flavour == "first" else None
    for i, p in enumerate(papers):
        j = int(negatives[i, level - 1])
        if j < 0:
            drops.add("negative_id_not_found", f"{flavour}_L{level}:{p.id}")
            continue
        if split is None:
            anchor, positive, negative = p.title, p.abstract, papers[j].abstract
        else:
            (anchor, positive), negative = split[i], split[j][1]
            if not positive or not negative:
                reason = "single_sentence_abstract" if not positive else "single_sentence_negative"
                drops.add(reason, f"{flavour}_L{level}:{p.id}")
                continue
        for c, v in zip(cols, (anchor, positive, negative, p.id, p.categories)):
            cols[c].append(v)
    return cols


def narrow_split(cols: dict[str, list[Any]], domain: str, val_fraction: float,
                 seed: int) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Rows of ``domain`` split by paper into (train, val), seeded, order kept within each."""
    rows = [i for i, c in enumerate(cols["categories"]) if has_domain(c, domain)]
    n_val = min(len(rows) - 1, max(1, round(val_fraction * len(rows)))) if len(rows) > 1 else 0
    rng = np.random.default_rng([seed, sum(map(ord, domain))])
    val_rows = set(rng.permutation(rows)[:n_val].tolist()) if n_val else set()

    def take(sel: list[int]) -> dict[str, list[Any]]:
        return {c: [v[i] for i in sel] for c, v in cols.items()}

    return take([i for i in rows if i not in val_rows]), take([i for i in rows if i in val_rows])


# --------------------------------------------------------------------------------------------
# Whole build (pure: papers in, tables out)
# --------------------------------------------------------------------------------------------

def build_negatives(papers: Sequence[Paper], max_category_size: int, n_negatives: int, seed: int,
                    work: int = DEFAULT_WORK) -> tuple[list[Paper], np.ndarray, dict[str, Any]]:
    """Select papers and compute their ``n_negatives + 1`` negatives as row indices."""
    sizes = category_sizes(papers)
    kept = kept_categories(sizes, max_category_size)
    selected, negs, info = negatives_for(select_papers(papers, kept), kept, n_negatives, seed, work)
    return selected, negs, {"n_valid_papers": len(papers), "n_categories": len(sizes), **info}


def negatives_for(selected: list[Paper], kept: dict[str, int], n_negatives: int, seed: int,
                  work: int = DEFAULT_WORK) -> tuple[list[Paper], np.ndarray, dict[str, Any]]:
    """Negatives of already selected papers (the CLI streams the snapshot twice, so only the
    selected ~12% of a 2M-paper snapshot is ever held in memory)."""
    if len(selected) < 2:
        raise DataError(f"only {len(selected)} paper(s) have a kept category (size at most "
                        f"max_category_size); nothing to build")
    keys = [category_key(p.categories, kept) for p in selected]
    dist = word_distributions([p.abstract for p in selected])
    near, stats = nearest_negatives(dist, keys, n_negatives, work)
    negs = np.concatenate([near, random_negatives(len(selected), seed)[:, None]], axis=1)
    info = {"n_kept_categories": len(kept), "n_selected": len(selected),
            "vocabulary_size": int(dist.shape[1]), **stats,
            "all_distinct": int(sum(len(set(r)) == n_negatives for r in near.tolist()))}
    return selected, negs, info


def negatives_table(papers: Sequence[Paper], negs: np.ndarray) -> dict[str, list[Any]]:
    ids = [p.id for p in papers]
    return {"id": ids, "title": [p.title for p in papers],
            "abstract": [p.abstract for p in papers],
            "categories": [p.categories for p in papers],
            "negatives": [[ids[j] if j >= 0 else None for j in row] for row in negs.tolist()]}


def parse_published(lines: Iterable[tuple[int, str]], source: str, n_total: int,
                    drops: Drops) -> tuple[list[Paper], list[list[str]]]:
    """Published ``primer-ai/arxiv-negatives`` rows: ``[metadata, [ids]]`` pairs or objects with a
    ``negatives`` list. Rows with the wrong number of ids are dropped and counted."""
    papers: list[Paper] = []
    neg_ids: list[list[str]] = []
    seen: set[str] = set()
    for where, obj in json_objects(lines, source, drops):
        if isinstance(obj, list) and len(obj) == 2:
            meta, ids = obj
        elif isinstance(obj, dict):
            meta, ids = obj, obj.get("negatives")
        else:
            drops.add("not_a_pair", where)
            continue
        rec = parse_record(meta)
        if isinstance(rec, str):
            drops.add(rec, where)
            continue
        if not isinstance(ids, list) or len(ids) != n_total or not all(isinstance(x, str)
                                                                       for x in ids):
            drops.add("bad_negatives", where)
            continue
        if rec.id in seen:
            drops.add("duplicate_id", where)
            continue
        seen.add(rec.id)
        papers.append(rec)
        neg_ids.append(ids)
    return papers, neg_ids


def resolve_ids(papers: Sequence[Paper], neg_ids: Sequence[Sequence[str]]) -> np.ndarray:
    index = {p.id: i for i, p in enumerate(papers)}
    return np.asarray([[index.get(x, -1) for x in row] for row in neg_ids], dtype=np.int64)


# --------------------------------------------------------------------------------------------
# CLI (all I/O here)
# --------------------------------------------------------------------------------------------

def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    with open_text(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            yield line_no, line


def _published_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Lines of the published file: JSONL as is, or the items of one JSON array (the hub file
    ``arxiv_10K_jsclosest.json`` may be either), numbered from 1."""
    with open_text(path) as fh:
        head = fh.read(1 << 16).lstrip()
    first = head.split("\n", 1)[0]
    try:
        json.loads(first)
        is_jsonl = True
    except json.JSONDecodeError:
        is_jsonl = not head.startswith("[")
    if is_jsonl:
        yield from _numbered_lines(path)
        return
    with open_text(path) as fh:
        try:
            items = json.load(fh)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from None
    for i, item in enumerate(items, start=1):
        yield i, json.dumps(item)


def _log(message: str, t0: float) -> None:
    print(f"{STAGE}: [{time.perf_counter() - t0:7.1f}s] {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=("build", "published"), default="build")
    ap.add_argument("--snapshot", type=Path, help="arxiv-metadata-oai-snapshot JSONL (build)")
    ap.add_argument("--published", type=Path, help="primer-ai/arxiv-negatives JSONL (published)")
    ap.add_argument("--max-category-size", type=int, default=10000)
    ap.add_argument("--n-negatives", type=int, default=20)
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 21])
    ap.add_argument("--flavours", nargs="+", choices=("first", "title"), default=["first", "title"])
    ap.add_argument("--narrow-domains", nargs="*", default=["math", "physics", "cs"])
    ap.add_argument("--narrow-level", type=int, default=None,
                    help="difficulty level of the narrow tuning triplets (default: the random, "
                         "easiest one, n_negatives + 1, as used throughout paper 2)")
    ap.add_argument("--narrow-val-fraction", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=int, default=DEFAULT_WORK, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, required=True)
    return ap


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    total = args.n_negatives + 1
    if args.n_negatives < 1 or args.max_category_size < 1:
        ap.error("--n-negatives and --max-category-size must be >= 1")
    bad = [lv for lv in args.levels if not 1 <= lv <= total]
    if bad:
        ap.error(f"--levels must be within 1..{total}; got {bad}")
    if args.narrow_level is not None and not 1 <= args.narrow_level <= total:
        ap.error(f"--narrow-level must be within 1..{total}")
    if not 0.0 <= args.narrow_val_fraction < 1.0:
        ap.error("--narrow-val-fraction must be in [0, 1)")
    src = args.snapshot if args.source == "build" else args.published
    if src is None:
        ap.error(f"--source {args.source} needs --{'snapshot' if args.source == 'build' else 'published'}")


def _frame(cols: dict[str, list[Any]], negatives: bool = False) -> Any:
    import polars as pl

    schema: dict[str, Any] = {c: pl.Utf8 for c in cols}
    if negatives:
        schema["negatives"] = pl.List(pl.Utf8)
    return pl.DataFrame(cols, schema=schema)


def main(argv: Sequence[str] | None = None) -> int:
    from embtune.io import provenance, sha256_file, write_json, write_parquet

    ap = _parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    t0 = time.perf_counter()
    drops = Drops()
    triplet_drops: dict[str, dict[str, Any]] = {}
    total = args.n_negatives + 1
    try:
        if args.source == "build":
            src = args.snapshot
            sizes: Counter[str] = Counter()
            n_valid = 0
            for paper in parse_lines(_numbered_lines(src), str(src), drops):  # pass 1: sizes
                sizes.update(set(paper.categories.split()))
                n_valid += 1
            kept = kept_categories(sizes, args.max_category_size)
            selected = select_papers(parse_lines(_numbered_lines(src), str(src)), kept)
            _log(f"read {n_valid} valid papers, selected {len(selected)}", t0)
            selected, negs, info = negatives_for(selected, kept, args.n_negatives, args.seed,
                                                 args.work)
            info = {"n_valid_papers": n_valid, "n_categories": len(sizes), **info}
        else:
            src = args.published
            selected, neg_ids = parse_published(_published_lines(src), str(src), total, drops)
            if not selected:
                raise DataError(f"{src}: no usable rows")
            negs = resolve_ids(selected, neg_ids)
            info = {"n_selected": len(selected),
                    "negative_ids_not_found": int((negs < 0).sum())}
    except DataError as err:
        print(f"embtune {STAGE}: error: {err}", file=sys.stderr)
        return 1
    _log(f"{len(selected)} papers with negatives", t0)
    table = negatives_table(selected, negs)
    if args.source == "published":  # keep the published ids even when they are not in the file
        table["negatives"] = [list(r) for r in neg_ids]
    outputs: dict[str, int] = {}
    write_parquet(args.out / "negatives.parquet", _frame(table, negatives=True))
    outputs["negatives.parquet"] = len(selected)
    for flavour in args.flavours:
        for level in sorted(set(args.levels)):
            name = f"triplets_{flavour}_L{level}.parquet"
            tdrops = Drops()
            cols = make_triplets(selected, negs, flavour, level, tdrops)
            triplet_drops[name] = tdrops.as_dict()
            write_parquet(args.out / name, _frame(cols))
            outputs[name] = len(cols["anchor"])
    narrow_level = args.narrow_level or total
    if args.narrow_domains:
        tdrops = Drops()
        cols = make_triplets(selected, negs, "first", narrow_level, tdrops)
        triplet_drops[f"narrow_* (first, L{narrow_level}, before the domain filter)"] = tdrops.as_dict()
        for domain in args.narrow_domains:
            for split, part in zip(("train", "val"),
                                   narrow_split(cols, domain, args.narrow_val_fraction, args.seed)):
                name = f"narrow_{domain}_{split}.parquet"
                write_parquet(args.out / name, _frame(part))
                outputs[name] = len(part["anchor"])
    src_info = {"path": str(src), "sha256": sha256_file(src)}
    manifest = provenance(
        stable=True, stage=STAGE, source=args.source, input=src_info,
        params={"max_category_size": args.max_category_size, "n_negatives": args.n_negatives,
                "levels": sorted(set(args.levels)), "flavours": list(args.flavours),
                "narrow_domains": list(args.narrow_domains), "narrow_level": narrow_level,
                "narrow_val_fraction": args.narrow_val_fraction, "seed": args.seed,
                "js_log_base": "e", "category_order": "kept categories by (size, name)"},
        input_drops=drops.as_dict(), triplet_drops=triplet_drops, stats=info,
        outputs=outputs)
    write_json(args.out / "manifest.json", manifest)
    _log(f"wrote {args.out} ({sum(drops.counts.values())} input lines dropped)", t0)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
