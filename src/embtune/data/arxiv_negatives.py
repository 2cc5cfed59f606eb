"""arxiv-negatives (paper 2, App. B) and the arxiv-first / arxiv-title / narrow-domain triplets.

Why this stage exists: paper 2 evaluates (and, in App. K, tunes) query encoders on arXiv triplets
whose negatives come in 21 difficulty levels. Level k uses the k-th negative of a paper: levels
1-20 are the papers closest to it (same category niche, smallest Jensen-Shannon distance between
the abstracts' word distributions, hardest first) and level 21 is a random paper (the easiest
level, used throughout the paper).

Construction (App. B.2), from the arXiv metadata snapshot (Kaggle ``arxiv-metadata-oai-snapshot``):

1. Category sizes are counted over all valid papers of the snapshot; categories with at most
   ``max_category_size`` papers are *kept*.
2. Papers with at least one kept category are *selected*: they are the anchors and the only
   papers that can be negatives ("the subset of arxiv to deal with"). The cap does nothing else.
3. For each selected paper **all** its categories are sorted by size, smallest first ("Sort its
   categories by size, from smaller to larger"); equal sizes keep the snapshot's listed order
   (a stable sort; primary category first), or go by name with ``category_ties="name"``. Its
   candidates are the other selected papers that contain the longest possible prefix ``c1..cj``
   of that list ("the closest match is the longest consecutive list of matched categories,
   starting from the first one"). A kept category is smaller than any unkept one, so the list
   is the kept categories followed by the big ones: big categories only split the candidates of
   papers matching all the small ones. ``category_match="kept"`` matches on the kept categories
   only (an earlier reading). Papers whose prefix is the same set share one candidate block,
   which is what makes the search cheap. If no other paper shares even ``c1`` (a category of
   size 1), every paper matches zero categories and all selected papers are candidates; such
   papers are counted in the manifest (``no_category_match``).
4. Of the candidates the ``n_negatives`` closest by Jensen-Shannon distance
   (:mod:`embtune.data.jensen_shannon`, natural log, exact) are kept, sorted by distance (ties by
   snapshot order, so the result is well defined); fewer are padded by repeating the last; a
   uniformly random other selected paper (seeded) is appended. The manifest reports the share of
   papers whose ``n_negatives`` are all different (paper: 84.2% of 253,140).

Triplets (App. B.1): flavour ``title`` = (title, abstract, negative's abstract); flavour
``first`` = (abstract's first sentence, the rest of it, the negative's abstract without its first
sentence). Narrow domains (App. K) are ``first`` triplets of papers with at least one category
starting with ``<domain>.`` (so ``math-ph`` is not ``math``), split by paper into train/val.
Evaluation after narrow tuning must drop samples having a category of that domain: use
:func:`exclude_domain` on the evaluation triplets.

The stage driver (argument parsing, the two passes over the file, the atomic output directory)
is :mod:`embtune.stages.build_arxiv_negatives`; this module only computes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from embtune.data.arxiv_records import Drops, Paper
from embtune.data.jensen_shannon import (
    DEFAULT_WORK,
    block_jsd,
    make_block,
    query_batches,
    top_k,
    word_distributions,
)
from embtune.data.jsonl import DataError

CATEGORY_MATCH = ("all", "kept")   # which of a paper's categories the prefix match uses
CATEGORY_TIES = ("listed", "name")  # order of equal-size categories
PAPER_ALL_DISTINCT = (213_156, 253_140)  # App. B.2: samples whose first 20 negatives all differ


def category_sizes(papers: Iterable[Paper]) -> Counter[str]:
    """Papers per category over the whole (valid) snapshot."""
    sizes: Counter[str] = Counter()
    for p in papers:
        sizes.update(set(p.categories.split()))
    return sizes


def kept_categories(sizes: Mapping[str, int], max_size: int) -> set[str]:
    """Categories with at most ``max_size`` papers (App. B.2 step 1)."""
    return {c for c, n in sizes.items() if n <= max_size}


def select_papers(papers: Iterable[Paper], kept: Collection[str]) -> list[Paper]:
    """Papers with at least one kept category (App. B.2 step 2): the anchors and candidates."""
    return [p for p in papers if any(c in kept for c in p.categories.split())]


def category_ids(sizes: Mapping[str, int]) -> dict[str, int]:
    """Every category -> an integer id, in (size, name) order (so sorting ids sorts by size)."""
    return {c: i for i, c in enumerate(sorted(sizes, key=lambda c: (sizes[c], c)))}


def category_key(categories: str, sizes: Mapping[str, int], ids: Mapping[str, int],
                 kept: Collection[str] | None = None, ties: str = "listed") -> tuple[int, ...]:
    """The paper's categories as ids, smallest category first (App. B.2 step 3.1).

    ``ties="listed"`` keeps the snapshot's order among equal sizes (a stable sort of the listed
    categories: the text's plain "sort by size"); ``"name"`` orders them by name. ``kept`` (the
    ``category_match="kept"`` reading) drops the categories that are not kept."""
    listed = [c for c in dict.fromkeys(categories.split()) if kept is None or c in kept]
    if ties == "name":
        return tuple(sorted(ids[c] for c in listed))
    return tuple(ids[c] for c in sorted(listed, key=lambda c: sizes[c]))


def category_keys(papers: Sequence[Paper], sizes: Mapping[str, int], kept: Collection[str],
                  match: str = "all", ties: str = "listed") -> list[tuple[int, ...]]:
    """:func:`category_key` of each selected paper under one reading (see CATEGORY_MATCH/TIES)."""
    if match not in CATEGORY_MATCH or ties not in CATEGORY_TIES:
        raise ValueError(f"category match/ties must be in {CATEGORY_MATCH}/{CATEGORY_TIES}; "
                         f"got {match!r}/{ties!r}")
    ids = category_ids(sizes)
    only = kept if match == "kept" else None
    return [category_key(p.categories, sizes, ids, only, ties) for p in papers]


# --------------------------------------------------------------------------------------------
# Candidate blocks from category prefixes
# --------------------------------------------------------------------------------------------

Prefix = tuple[int, ...]  # a matched prefix as a set: its category ids, sorted


def candidate_groups(keys: Sequence[tuple[int, ...]]
                     ) -> tuple[list[Prefix], list[np.ndarray], np.ndarray]:
    """Map each paper to the longest prefix of its key that another paper also contains.

    Returns ``(prefixes, members, group_of)``: candidate block ``g`` is the sorted row indices
    ``members[g]`` of papers containing all categories of ``prefixes[g]``; ``group_of[i]`` is
    paper ``i``'s block. The empty prefix (nobody else has the paper's smallest category) means
    "all papers". Work stays inside the universe of papers having the first category (at most
    ``max_category_size`` papers, since that category is kept) one universe at a time."""
    post: dict[int, list[int]] = {}
    by_first: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if not key:
            raise ValueError(f"paper {i} has no category to match")
        by_first.setdefault(key[0], []).append(i)
        for c in key:
            post.setdefault(c, []).append(i)
    members_by: dict[Prefix, np.ndarray] = {}
    prefix_of: list[Prefix] = [()] * len(keys)
    for c1 in sorted(by_first):
        universe = np.asarray(post[c1], dtype=np.int64)
        if len(universe) < 2:
            continue  # prefix () for its only paper
        for i, (prefix, local) in zip(by_first[c1], _universe_prefixes(universe, by_first[c1],
                                                                        keys)):
            prefix_of[i] = prefix
            if prefix not in members_by:
                members_by[prefix] = universe[local]
    if any(not p for p in prefix_of):
        members_by[()] = np.arange(len(keys), dtype=np.int64)
    prefixes = sorted(members_by, key=lambda p: (not p, p))
    index = {p: g for g, p in enumerate(prefixes)}
    return (prefixes, [members_by[p] for p in prefixes],
            np.asarray([index[p] for p in prefix_of], dtype=np.int64))


def _universe_prefixes(universe: np.ndarray, queries: Sequence[int],
                       keys: Sequence[tuple[int, ...]]) -> Iterator[tuple[Prefix, np.ndarray]]:
    """Per query (all sharing first category ``c1``, whose papers are ``universe``): its longest
    prefix held by at least one other paper, and those papers' positions in ``universe``.

    Why positions and memo by set: each extension filters the previous prefix's papers by one
    category's membership mask (work proportional to the shrinking block, not the universe),
    and papers with the same prefix set reuse it."""
    at: dict[int, list[int]] = {}
    for t, m in enumerate(universe.tolist()):
        for c in keys[m]:
            at.setdefault(c, []).append(t)
    masks: dict[int, np.ndarray] = {}

    def has(c: int) -> np.ndarray:
        if c not in masks:
            masks[c] = np.zeros(len(universe), dtype=bool)
            masks[c][at.get(c, [])] = True
        return masks[c]

    first = keys[queries[0]][0]
    found: dict[Prefix, np.ndarray] = {(first,): np.arange(len(universe))}
    for i in queries:
        best: Prefix = (first,)
        for c in keys[i][1:]:
            cand = tuple(sorted(best + (c,)))
            if cand not in found:
                inside = found[best]
                found[cand] = inside[has(c)[inside]]
            if len(found[cand]) < 2:  # the paper itself only: no other paper matches further
                break
            best = cand
        yield best, found[best]


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
                    work: int = DEFAULT_WORK, *, match: str = "all", ties: str = "listed"
                    ) -> tuple[list[Paper], np.ndarray, dict[str, Any]]:
    """Select papers and compute their ``n_negatives + 1`` negatives as row indices."""
    sizes = category_sizes(papers)
    kept = kept_categories(sizes, max_category_size)
    selected = select_papers(papers, kept)
    check_selection(len(selected), sizes, max_category_size)
    negs, info = negatives_for(selected, sizes, kept, n_negatives, seed, work,
                               match=match, ties=ties)
    return selected, negs, {"n_valid_papers": len(papers), "n_categories": len(sizes), **info}


def check_selection(n_selected: int, sizes: Mapping[str, int], max_category_size: int) -> None:
    """Fail with the numbers that explain an empty selection (the cap vs the smallest category)."""
    if n_selected >= 2:
        return
    smallest = min(sizes.values(), default=0)
    raise DataError(f"only {n_selected} paper(s) have a category with at most "
                    f"max_category_size={max_category_size} papers (the smallest of the "
                    f"{len(sizes)} categories has {smallest}); nothing to build")


def negatives_for(selected: Sequence[Paper], sizes: Mapping[str, int], kept: Collection[str],
                  n_negatives: int, seed: int, work: int = DEFAULT_WORK, *, match: str = "all",
                  ties: str = "listed") -> tuple[np.ndarray, dict[str, Any]]:
    """Negatives (row indices) of already selected papers, ``sizes`` counted over the whole
    snapshot (the CLI streams the snapshot twice, so only the selected ~12% of a 2M-paper
    snapshot is ever held in memory)."""
    keys = category_keys(selected, sizes, kept, match, ties)
    dist = word_distributions([p.abstract for p in selected])
    near, stats = nearest_negatives(dist, keys, n_negatives, work)
    negs = np.concatenate([near, random_negatives(len(selected), seed)[:, None]], axis=1)
    info = {"n_kept_categories": len(kept), "n_selected": len(selected),
            "vocabulary_size": int(dist.shape[1]), **stats,
            **distinct_share(negs, n_negatives)}
    return negs, info


def distinct_share(negs: np.ndarray, n_negatives: int) -> dict[str, Any]:
    """Papers whose first ``n_negatives`` negatives are all different, as App. B.2 reports it
    ("in 213156 samples (84.2%) all the first 20 negatives are different")."""
    first = np.sort(negs[:, :n_negatives], axis=1)
    count = int((first[:, 1:] != first[:, :-1]).all(axis=1).sum())
    return {"all_distinct": count, "padded": len(negs) - count,
            "all_distinct_share": count / max(len(negs), 1),
            "all_distinct_share_paper": PAPER_ALL_DISTINCT[0] / PAPER_ALL_DISTINCT[1]}


def negatives_table(papers: Sequence[Paper], negs: np.ndarray) -> dict[str, list[Any]]:
    ids = [p.id for p in papers]
    return {"id": ids, "title": [p.title for p in papers],
            "abstract": [p.abstract for p in papers],
            "categories": [p.categories for p in papers],
            "negatives": [[ids[j] if j >= 0 else None for j in row] for row in negs.tolist()]}


