"""BGE records -> (query, positive) pairs: the record checks, the English filter and the drop
counts of ``prepare-bge`` (paper 1; docs/architecture.md).

Why a module apart from :mod:`embtune.data.bge`: the one-process stage and the scattered one
(:mod:`embtune.data.bge_scatter`) filter with exactly these functions, so their outputs agree
byte for byte; the spilling, ordering and writing are theirs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from embtune.data.jsonl import iter_jsonl

MAX_DROP_EXAMPLES = 20


# Why this heuristic: the BGE dump mixes English with Chinese and other languages; a dependency-free
# check of (a) letters being mostly ASCII and (b) enough common English function words is cheap and
# good enough to separate English from non-English at corpus scale (it is not a language-ID model).
ENGLISH_STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it "
    "its this that these those what which who whom whose when where why how not no do does did "
    "have has had can could will would should may might must shall i you he she we they me him "
    "her us them my your his our their there here than then so such all any each some about into "
    "over after before between under also more most other only very just".split()
)


MIN_ASCII_LETTER_RATIO = 0.9


MIN_STOPWORD_RATIO = 0.15


MIN_WORDS_FOR_STOPWORD_TEST = 8


_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


_ASCII_WORD = re.compile(r"[a-z]+")


def is_english(text: str) -> bool:
    """True when ``text`` looks English: >=90% of letters ASCII and, for texts of >=8 words,
    >=15% of words English stop words (English prose has ~40%, docstrings ~25%, German, Spanish
    or French ~5%; short texts cannot be judged by stop words, so only the letter test applies)."""
    if text.isascii():  # fast path (most of the corpus): every letter is ASCII
        # For ASCII text, lowering first and matching [a-z]+ finds exactly the lowered words of
        # _WORD (its letters are [A-Za-z] there), without a Python-level lower() per word.
        words = _ASCII_WORD.findall(text.lower())
        if not words:
            return False
    else:
        letters = [c for c in text if c.isalpha()]
        if not letters or sum(c.isascii() for c in letters) / len(letters) < MIN_ASCII_LETTER_RATIO:
            return False
        words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < MIN_WORDS_FOR_STOPWORD_TEST:
        return True
    return sum(map(ENGLISH_STOPWORDS.__contains__, words)) / len(words) >= MIN_STOPWORD_RATIO


def extract_pair(obj: Any) -> tuple[str, str] | str:
    """Return (query, first positive) or a drop reason (a short, countable string)."""
    if not isinstance(obj, dict):
        return "record is not a JSON object"
    if "query" not in obj:
        return "missing field 'query'"
    if "pos" not in obj:
        return "missing field 'pos'"
    query, pos = obj["query"], obj["pos"]
    if not isinstance(query, str):
        return "'query' is not a string"
    if not isinstance(pos, list):
        return "'pos' is not a list"
    if not pos:
        return "'pos' is empty"
    if not isinstance(pos[0], str):
        return "'pos[0]' is not a string"
    if not query.strip():
        return "empty query"
    if not pos[0].strip():
        return "empty pos"
    return query, pos[0]


@dataclass
class Stats:
    """Counts for the manifest; drops are counted by reason with a few file:line examples."""

    rows_in: int = 0
    pairs_kept: int = 0
    drops: Counter = field(default_factory=Counter)
    drop_examples: dict[str, list[str]] = field(default_factory=dict)
    fixes: Counter = field(default_factory=Counter)     # lone surrogates replaced (kept rows)

    def drop(self, reason: str, where: str) -> None:
        self.drops[reason] += 1
        examples = self.drop_examples.setdefault(reason, [])
        if len(examples) < MAX_DROP_EXAMPLES:
            examples.append(where)

    def merge(self, other: Stats) -> None:
        """Add the counts of a later part of the input (the examples stay the first ones seen)."""
        self.rows_in += other.rows_in
        self.pairs_kept += other.pairs_kept
        self.drops.update(other.drops)
        self.fixes.update(other.fixes)
        for reason, where in other.drop_examples.items():
            examples = self.drop_examples.setdefault(reason, [])
            examples.extend(where[:MAX_DROP_EXAMPLES - len(examples)])


def iter_pairs(files: Sequence[str], english_filter: bool, stats: Stats) -> Iterator[tuple[str, str]]:
    """Stream (query, pos) over all files, counting every dropped record with its reason.

    The English test judges query and positive as one text: short queries alone have too few
    words for the stop-word test, and a non-English side pulls the joint ratios below threshold."""
    for path in files:
        yield from filter_pairs(((f"{path}:{line_no}", obj) for line_no, obj in iter_jsonl(path, stats.fixes)),
                                english_filter, stats)


def filter_pairs(records: Iterable[tuple[Any, Any]], english_filter: bool,
                 stats: Stats) -> Iterator[tuple[str, str]]:
    """The filters of :func:`iter_pairs` over ``(where, record)``; ``where`` is what a drop
    example records (``file:line`` here; the scattered stage's byte-range parts record their
    own position and turn it into ``file:line`` when gathered, see embtune.data.bge_scatter)."""
    for where, obj in records:
        stats.rows_in += 1
        pair = extract_pair(obj)
        if isinstance(pair, str):
            stats.drop(pair, where)
            continue
        if english_filter and not is_english(pair[0] + "\n" + pair[1]):
            stats.drop("not English", where)
            continue
        stats.pairs_kept += 1
        yield pair
