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

The output directory is written whole into a temporary sibling and renamed into place, so a
killed run leaves either the previous complete output or none, never a mix.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from embtune.data.jensen_shannon import (DEFAULT_WORK, WORD, block_jsd, make_block,
                                         query_batches, top_k, word_distributions)
from embtune.data.jsonl import DataError, open_text

STAGE = "build-arxiv-negatives"
REQUIRED_FIELDS = ("id", "title", "abstract", "categories")
MAX_EXAMPLES = 5
CATEGORY_MATCH = ("all", "kept")   # which of a paper's categories the prefix match uses
CATEGORY_TIES = ("listed", "name")  # order of equal-size categories
PAPER_ALL_DISTINCT = (213_156, 253_140)  # App. B.2: samples whose first 20 negatives all differ


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
    if not WORD.search(paper.abstract):
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


def no_valid_papers(source: str, drops: Drops) -> DataError:
    """The error for a snapshot without one usable record, naming the file and the reasons.

    Why not let the selection fail: "no kept category" would blame ``max_category_size`` when the
    records themselves are unusable (e.g. a dump without the ``categories`` field)."""
    reasons = ", ".join(f"{n} {r} (e.g. {drops.examples[r][0]})"
                        for r, n in drops.counts.most_common())
    by_field = {r: n for r, n in drops.counts.items()
                if r.split(":")[0] in ("missing_field", "wrong_type", "empty")}
    fields = {r.split(":", 1)[1] for r in by_field}
    one_field = len(fields) == 1 and by_field == dict(drops.counts)
    what = (f"every record lacks a usable '{next(iter(fields))}' field" if one_field
            else "no record is a usable paper")
    return DataError(f"{source}: {what}; need non-empty string fields "
                     f"{', '.join(REQUIRED_FIELDS)} in each JSON line; dropped: "
                     f"{reasons or 'nothing (the file has no records)'}")


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


def _log(message: str, t0: tuple[float, float]) -> None:
    """Progress with wall and CPU seconds since ``t0 = (perf_counter, process_time)`` (on a
    shared machine only CPU time compares)."""
    wall, cpu = time.perf_counter() - t0[0], time.process_time() - t0[1]
    print(f"{STAGE}: [{wall:7.1f}s wall, {cpu:7.1f}s cpu] {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=("build", "published"), default="build")
    ap.add_argument("--snapshot", type=Path, help="arxiv-metadata-oai-snapshot JSONL (build)")
    ap.add_argument("--published", type=Path, help="primer-ai/arxiv-negatives JSONL (published)")
    ap.add_argument("--max-category-size", type=int, default=10000,
                    help="select papers having a category with at most this many papers")
    ap.add_argument("--category-match", choices=CATEGORY_MATCH, default="all",
                    help="categories the prefix match sorts and matches: all of a paper's "
                         "(App. B.2, default) or only those within --max-category-size")
    ap.add_argument("--category-ties", choices=CATEGORY_TIES, default="listed",
                    help="order of equal-size categories: as listed in the snapshot (a stable "
                         "sort, default) or by name")
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


def _build(args: argparse.Namespace, drops: Drops, t0: tuple[float, float]
           ) -> tuple[list[Paper], np.ndarray, dict[str, Any]]:
    """Two passes over the snapshot: category sizes of every paper, then the selected papers."""
    src = args.snapshot
    sizes: Counter[str] = Counter()
    n_valid = 0
    for paper in parse_lines(_numbered_lines(src), str(src), drops):
        sizes.update(set(paper.categories.split()))
        n_valid += 1
    if not n_valid:
        raise no_valid_papers(str(src), drops)
    kept = kept_categories(sizes, args.max_category_size)
    selected = select_papers(parse_lines(_numbered_lines(src), str(src)), kept)
    check_selection(len(selected), sizes, args.max_category_size)
    _log(f"read {n_valid} valid papers, selected {len(selected)}", t0)
    negs, info = negatives_for(selected, sizes, kept, args.n_negatives, args.seed, args.work,
                               match=args.category_match, ties=args.category_ties)
    return selected, negs, {"n_valid_papers": n_valid, "n_categories": len(sizes), **info}


def _published(args: argparse.Namespace, drops: Drops
               ) -> tuple[list[Paper], np.ndarray, dict[str, Any], list[list[str]]]:
    """Published rows, their negatives as row indices (-1: id not in the file) and the ids."""
    src = args.published
    selected, neg_ids = parse_published(_published_lines(src), str(src), args.n_negatives + 1,
                                        drops)
    if not selected:
        raise DataError(f"{src}: no usable rows")
    negs = resolve_ids(selected, neg_ids)
    code: dict[str, int] = {}  # ids as integers, so ids missing from the file still compare
    codes = np.asarray([[code.setdefault(x, len(code)) for x in row] for row in neg_ids])
    info = {"n_selected": len(selected), "negative_ids_not_found": int((negs < 0).sum()),
            **distinct_share(codes, args.n_negatives)}
    return selected, negs, info, neg_ids


def _write_outputs(out: Path, args: argparse.Namespace, selected: Sequence[Paper],
                   negs: np.ndarray, table: dict[str, list[Any]]
                   ) -> tuple[dict[str, int], dict[str, Any], int]:
    """Every table of the stage under ``out``: (rows per file, triplet drops, narrow level)."""
    from embtune.io import write_parquet

    outputs: dict[str, int] = {}
    triplet_drops: dict[str, Any] = {}
    write_parquet(out / "negatives.parquet", _frame(table, negatives=True))
    outputs["negatives.parquet"] = len(selected)
    for flavour in args.flavours:
        for level in sorted(set(args.levels)):
            name = f"triplets_{flavour}_L{level}.parquet"
            tdrops = Drops()
            cols = make_triplets(selected, negs, flavour, level, tdrops)
            triplet_drops[name] = tdrops.as_dict()
            write_parquet(out / name, _frame(cols))
            outputs[name] = len(cols["anchor"])
    narrow_level = args.narrow_level or args.n_negatives + 1
    if args.narrow_domains:
        tdrops = Drops()
        cols = make_triplets(selected, negs, "first", narrow_level, tdrops)
        triplet_drops[f"narrow_* (first, L{narrow_level}, before the domain filter)"] = \
            tdrops.as_dict()
        for domain in args.narrow_domains:
            for split, part in zip(("train", "val"),
                                   narrow_split(cols, domain, args.narrow_val_fraction, args.seed)):
                name = f"narrow_{domain}_{split}.parquet"
                write_parquet(out / name, _frame(part))
                outputs[name] = len(part["anchor"])
    return outputs, triplet_drops, narrow_level


def main(argv: Sequence[str] | None = None) -> int:
    from embtune.io import atomic_path, provenance, sha256_file, write_json

    ap = _parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    t0 = (time.perf_counter(), time.process_time())
    drops = Drops()
    try:
        if args.source == "build":
            src = args.snapshot
            selected, negs, info = _build(args, drops, t0)
            table = negatives_table(selected, negs)
        else:
            src = args.published
            selected, negs, info, neg_ids = _published(args, drops)
            table = negatives_table(selected, negs)
            table["negatives"] = [list(r) for r in neg_ids]  # keep ids absent from the file
    except DataError as err:
        print(f"embtune {STAGE}: error: {err}", file=sys.stderr)
        return 2   # a data error: one line, exit 2 (the CLI convention, embtune.errors)
    _log(f"{len(selected)} papers with negatives; {info['all_distinct']} "
         f"({info['all_distinct_share']:.1%}) have {args.n_negatives} different nearest "
         f"negatives (paper 2, App. B.2: {PAPER_ALL_DISTINCT[0]} of {PAPER_ALL_DISTINCT[1]}, "
         f"{info['all_distinct_share_paper']:.1%}, on the real snapshot)", t0)
    with atomic_path(args.out) as out:  # the whole directory, renamed into place at the end
        out.mkdir()
        outputs, triplet_drops, narrow_level = _write_outputs(out, args, selected, negs, table)
        manifest = provenance(
            stable=True, stage=STAGE, source=args.source,
            input={"path": str(src), "sha256": sha256_file(src)},
            params={"max_category_size": args.max_category_size, "n_negatives": args.n_negatives,
                    "levels": sorted(set(args.levels)), "flavours": list(args.flavours),
                    "narrow_domains": list(args.narrow_domains), "narrow_level": narrow_level,
                    "narrow_val_fraction": args.narrow_val_fraction, "seed": args.seed,
                    "js_log_base": "e", "category_match": args.category_match,
                    "category_ties": args.category_ties,
                    "category_order": "size over the whole snapshot, smallest first"},
            input_drops=drops.as_dict(), triplet_drops=triplet_drops, stats=info,
            outputs=outputs)
        write_json(out / "manifest.json", manifest)
    _log(f"wrote {args.out} ({sum(drops.counts.values())} input lines dropped)", t0)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
