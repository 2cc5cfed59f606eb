"""arXiv snapshot records: parsing with counted drops (paper 2, App. B's input).

Why a module of its own: both ways of getting arxiv-negatives (building them from the Kaggle
``arxiv-metadata-oai-snapshot`` and reading the published ``primer-ai/arxiv-negatives`` file)
parse the same records, and bad input must be counted with ``file:line`` examples, never
skipped silently, so that a 4 GB crawl with one broken line still builds and says so.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embtune.data.jensen_shannon import WORD
from embtune.data.jsonl import DataError

REQUIRED_FIELDS = ("id", "title", "abstract", "categories")
MAX_EXAMPLES = 5


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
        if rec.id in ids:
            raise DataError(f"{where}: paper {rec.id!r} is listed as its own negative (position "
                            f"{ids.index(rec.id)}); expected negatives that are other papers")
        seen.add(rec.id)
        papers.append(rec)
        neg_ids.append(ids)
    return papers, neg_ids


def resolve_ids(papers: Sequence[Paper], neg_ids: Sequence[Sequence[str]]) -> np.ndarray:
    index = {p.id: i for i, p in enumerate(papers)}
    return np.asarray([[index.get(x, -1) for x in row] for row in neg_ids], dtype=np.int64)
