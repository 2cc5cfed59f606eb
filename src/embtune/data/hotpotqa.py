"""HotpotQA -> one row per question with its context passages as positive / negative candidates,
split by HotpotQA's difficulty level (paper 2, App. D, Table 2): the loader of the
``hotpotqa-<level>`` sets (``embtune prepare-pnd hotpotqa``, :mod:`embtune.data.pnd_loader`).

App. D: "we combined its train and dev subsets. For each query ('question') both train and dev
subsets contain on average 9.95 passages, of which 2 are always positives. [...] we filtered out
queries that had less than 10 passages, and split the dataset into 'easy', 'medium' and 'hard'
subsets accordingly to the HotpotQA labels of the difficulty of the samples."

* Passages are the ``context`` paragraphs (distractor setting: the 2 gold paragraphs and up to 8
  retrieved distractors). A passage's text is its sentences joined by single spaces;
  ``--passage-title`` prepends ``"<title>: "`` (not in the paper, which says "passages").
* Positives are the paragraphs whose title appears in ``supporting_facts`` (the gold paragraphs);
  the other paragraphs are negatives. Questions without a positive or a negative are dropped
  (PND needs both; counted in the manifest), as are those with fewer than ``--min-passages``.
* The dev set is the distractor dev set (``hotpot_dev_distractor_v1.json``; the fullwiki dev set's
  retrieved paragraphs need not contain the gold ones). HotpotQA labels all dev questions
  ``hard``, so easy and medium come from train only.

Sources (by magic bytes, any mix): the official JSON (a list of {``_id``, ``question``, ``answer``,
``supporting_facts`` [[title, sent_id]], ``context`` [[title, [sentences]]], ``type``, ``level``}),
gzip allowed; or the hub's parquet (``hotpotqa/hotpot_qa`` ``distractor``: ``id``,
``supporting_facts`` {``title``, ``sent_id``}, ``context`` {``title``, ``sentences``}).

Outputs (the stage's ``--out DIR``): ``eval_<level>.parquet`` per level with ``sample_id``, ``source``,
``level``, ``type``, ``query``, ``positives``, ``negatives`` (list[str]); ``manifest.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.io import read_parquet, sha256_file
from embtune.data.jsonl import DataError, drop_summary, open_text
from embtune.data.pnd_loader import PARQUET_MAGIC, Option, Prepared, note_example

LEVELS = ("easy", "medium", "hard")
FILES_HELP = "HotpotQA train and distractor-dev files (official JSON or hub parquet)"
OPTIONS = (
    Option(key="min_passages", type=int, default=10, help="drop questions with fewer passages (App. D: 10)"),
    Option(key="levels", type=str, default=LEVELS, choices=LEVELS, many=True,
           help="difficulty levels to write, one evaluation set each"),
    Option(key="passage_title", type=bool, default=False,
           help="prefix each passage with its title (default: the paragraph text only)"),
)
FRAME_SCHEMA = {"sample_id": pl.String, "source": pl.String, "level": pl.String, "type": pl.String,
                "query": pl.String, "positives": pl.List(pl.String), "negatives": pl.List(pl.String)}


@dataclass(frozen=True)
class Sample:
    """One HotpotQA question: its paragraphs ``(title, sentences)`` and supporting titles."""

    qid: str
    question: str
    level: str
    qtype: str
    paragraphs: tuple[tuple[str, tuple[str, ...]], ...]
    support_titles: frozenset[str]
    where: str


# ---------------------------------------------------------------- readers
def read_samples(path: str | Path) -> Iterator[Sample]:
    """Samples of one official JSON or hub parquet file (detected by the parquet magic bytes)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found; expected a HotpotQA JSON or parquet file")
    with open(p, "rb") as fh:
        is_parquet = fh.read(4) == PARQUET_MAGIC
    return _from_parquet(p) if is_parquet else _from_json(p)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise DataError(f"{where}: expected a list of strings")
    return tuple(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _from_json(path: Path) -> Iterator[Sample]:
    """The official layout; messages name the entry (``[12].context[3]``)."""
    with open_text(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    for i, item in enumerate(data):
        where = f"{path}: [{i}]"
        if not isinstance(item, dict):
            raise DataError(f"{where}: expected an object")
        missing = [k for k in ("_id", "question", "supporting_facts", "context") if k not in item]
        if missing:
            raise DataError(f"{where}: missing key(s) {missing}")
        paragraphs = []
        for k, para in enumerate(_list(item["context"], f"{where}.context")):
            if not (isinstance(para, list) and len(para) == 2):
                raise DataError(f"{where}.context[{k}]: expected [title, [sentences]]")
            paragraphs.append((_text(para[0], f"{where}.context[{k}][0]"),
                               _strings(para[1], f"{where}.context[{k}][1]")))
        titles = []
        for k, fact in enumerate(_list(item["supporting_facts"], f"{where}.supporting_facts")):
            if not (isinstance(fact, list) and len(fact) == 2):
                raise DataError(f"{where}.supporting_facts[{k}]: expected [title, sent_id]")
            titles.append(_text(fact[0], f"{where}.supporting_facts[{k}][0]"))
        yield Sample(str(item["_id"]), _text(item["question"], f"{where}.question"),
                     str(item.get("level", "")), str(item.get("type", "")), tuple(paragraphs),
                     frozenset(titles), where)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise DataError(f"{where}: expected a list, got {type(value).__name__}")
    return value


HUB_COLUMNS = ("id", "question", "type", "level", "supporting_facts", "context")


def _from_parquet(path: Path) -> Iterator[Sample]:
    """The hub layout: ``context`` / ``supporting_facts`` are structs of parallel lists."""
    frame = read_parquet(path, f"a HotpotQA parquet file with columns {list(HUB_COLUMNS)}")
    missing = [c for c in HUB_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; expected {list(HUB_COLUMNS)}")
    for row_no, row in enumerate(frame.select(HUB_COLUMNS).iter_rows(named=True)):
        where = f"{path}: row {row_no}"
        ctx, facts = row["context"] or {}, row["supporting_facts"] or {}
        titles, sentences = ctx.get("title") or [], ctx.get("sentences") or []
        if len(titles) != len(sentences):
            raise DataError(f"{where}: context has {len(titles)} titles but "
                            f"{len(sentences)} sentence lists")
        paragraphs = tuple((_text(t, f"{where}: context.title"),
                            _strings(list(s), f"{where}: context.sentences"))
                           for t, s in zip(titles, sentences))
        yield Sample(_text(row["id"], f"{where}: id"), _text(row["question"], f"{where}: question"),
                     row["level"] or "", row["type"] or "", paragraphs,
                     frozenset(facts.get("title") or []), where)


# ---------------------------------------------------------------- candidates (pure)
def passage_text(title: str, sentences: Sequence[str], with_title: bool = False) -> str:
    """A paragraph as one passage: its sentences joined by single spaces (HotpotQA sentences carry
    their own leading spaces, inconsistently), optionally after ``"<title>: "``."""
    body = " ".join(s.strip() for s in sentences if s.strip())
    return f"{title}: {body}" if with_title else body


def candidates(sample: Sample, with_title: bool = False) -> tuple[list[str], list[str]]:
    """(positives, negatives): the supporting-fact paragraphs and the others."""
    pos, neg = [], []
    for title, sentences in sample.paragraphs:
        text = passage_text(title, sentences, with_title)
        (pos if title in sample.support_titles else neg).append(text)
    return pos, neg


@dataclass
class Built:
    rows: list[dict[str, Any]]
    drops: Counter[str]
    examples: dict[str, list[str]]
    read: int
    positives_histogram: Counter[int]


def build_rows(samples: Iterator[Sample], source: str, min_passages: int, levels: Sequence[str],
               with_title: bool = False) -> Built:
    """Rows of the requested levels with >= ``min_passages`` passages, >= 1 positive and >= 1
    negative; the others counted by reason."""
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    hist: Counter[int] = Counter()
    read = 0
    for s in samples:
        read += 1
        pos, neg = candidates(s, with_title)
        reason = (f"level {s.level!r} not requested" if s.level not in levels else
                  f"fewer than {min_passages} passages" if len(pos) + len(neg) < min_passages else
                  "no supporting-fact passage" if not pos else
                  "no passage without a supporting fact" if not neg else None)
        if reason:
            drops[reason] += 1
            note_example(examples, reason, s.where)
            continue
        hist[len(pos)] += 1
        rows.append({"sample_id": s.qid, "source": source, "level": s.level, "type": s.qtype,
                     "query": s.question, "positives": pos, "negatives": neg})
    return Built(rows, drops, examples, read, hist)


def prepare(files: Sequence[str], settings: Any) -> Prepared:
    """The ``hotpotqa-<level>`` frames of the combined files, and the manifest's counts."""
    if settings.min_passages < 2:
        raise DataError(f"--min-passages {settings.min_passages}: a question needs at least 2 passages")
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    hist: Counter[int] = Counter()
    inputs = []
    for path in files:
        built = build_rows(read_samples(path), Path(path).name, settings.min_passages, settings.levels,
                           settings.passage_title)
        rows += built.rows
        drops.update(built.drops)
        hist.update(built.positives_histogram)
        for reason, where in built.examples.items():
            examples.setdefault(reason, []).extend(where)
        inputs.append({"path": path, "sha256": sha256_file(path), "questions": built.read,
                       "kept": len(built.rows)})
    frame = pl.DataFrame(rows, schema=FRAME_SCHEMA)
    by_level = {lvl: frame.filter(pl.col("level") == lvl) for lvl in settings.levels}
    empty = [lvl for lvl, f in by_level.items() if not f.height]
    if empty:
        raise DataError(f"{', '.join(files)}: no question of level(s) {empty} is left "
                        f"({drop_summary(drops, examples)}); expected every requested level "
                        "(dev questions are all 'hard': easy and medium need the train file)")
    read = sum(i["questions"] for i in inputs)
    positives = {str(k): v for k, v in sorted(hist.items())}
    manifest = dict(
        inputs=inputs, min_passages=settings.min_passages, levels=list(settings.levels),
        passage_title=settings.passage_title, questions_read=read, dropped=dict(sorted(drops.items())),
        rows={lvl: f.height for lvl, f in by_level.items()}, positives_per_query=positives,
        mean_passages=float(frame["positives"].list.len().mean()  # type: ignore[arg-type]
                            + frame["negatives"].list.len().mean()),  # type: ignore[operator]
    )
    summary = (f"{read} questions -> {manifest['rows']} by level (positives per query {positives}); "
               f"dropped {manifest['dropped']}")
    return Prepared({f"hotpotqa-{lvl}": f for lvl, f in by_level.items()}, manifest, summary)
