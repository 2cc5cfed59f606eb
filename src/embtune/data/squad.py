"""SQuAD v2 -> one row per question with its paragraph's sentences as positive / negative
candidates (paper 2, App. C and Table 2): the loader of the ``squad`` and ``squad-min5`` sets
(``embtune prepare-pnd squad``, :mod:`embtune.data.pnd_loader`).

App. C: "we identified (for each query) the given paragraph sentences containing an answer to the
query as positives, and the rest of the sentences as negatives. We left samples having at least
1 positive and 1 negative. [...] we combined train, validation and test subsets. [...] 'SQUAD
min 5', in which we have filtered out queries that had less than 5 candidate sentences."

* Splits: SQuAD v2 publishes train and dev (validation) only; its test set is hidden, so the
  combination is train + validation, in the order of ``--files``.
* "Containing an answer" (``--positive-rule``): ``text`` (default) — the sentence contains one of
  the question's answer strings as a whole-word substring (any annotator's answer); ``span`` —
  the sentence overlaps an answer's character span (``answer_start``). The text rule is the
  closer reading of "containing an answer", and it also finds a short answer repeated in another
  sentence (paper: 1.3 positives per query on average, more than one span gives).
* Unanswerable questions (``is_impossible``, empty ``answers``) have no positive and drop out
  under App. C's own filter; their ``plausible_answers`` are not answers.
* Sentences: :mod:`embtune.data.sentences` (rule-based, offsets kept).

Sources (read by magic bytes, any mix): the official JSON (``train-v2.0.json``,
``dev-v2.0.json``: ``data`` -> ``paragraphs`` -> ``context``, ``qas`` with ``id``, ``question``,
``answers`` [{``text``, ``answer_start``}], ``is_impossible``), gzip allowed; or the hub's parquet
(``rajpurkar/squad_v2``: columns ``id``, ``title``, ``context``, ``question``, ``answers`` {``text``,
``answer_start``}).

Outputs (the stage's ``--out DIR``): ``eval.parquet`` and ``eval_min5.parquet`` with ``sample_id``, ``source``
(file name), ``title``, ``query``, ``positives``, ``negatives`` (list[str]); ``manifest.json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.io import read_parquet, sha256_file
from embtune.data.jsonl import DataError, drop_summary, open_text
from embtune.data.pnd_loader import PARQUET_MAGIC, Option, Prepared, note_example
from embtune.data.sentences import sentence_spans

MIN_CANDIDATES = 5          # "SQUAD min 5"
POSITIVE_RULES = ("text", "span")
FILES_HELP = "SQuAD v2 train and validation files (official JSON or hub parquet)"
OPTIONS = (
    Option(key="positive_rule", type=str, default="text", choices=POSITIVE_RULES,
           help="a sentence is positive if it contains an answer string (text) or overlaps an "
                "answer span (span); default text"),
)
FRAME_SCHEMA = {"sample_id": pl.String, "source": pl.String, "title": pl.String, "query": pl.String,
                "positives": pl.List(pl.String), "negatives": pl.List(pl.String)}


@dataclass(frozen=True)
class Question:
    """One SQuAD question with its paragraph and answers ``(text, answer_start)``."""

    qid: str
    title: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]
    where: str                       # file and position, for messages


# ---------------------------------------------------------------- readers
def read_questions(path: str | Path) -> Iterator[Question]:
    """Questions of one official JSON or hub parquet file (detected by the parquet magic bytes)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found; expected a SQuAD v2 JSON or parquet file")
    with open(p, "rb") as fh:
        is_parquet = fh.read(4) == PARQUET_MAGIC
    return _from_parquet(p) if is_parquet else _from_json(p)


def _load_json(path: Path) -> Any:
    with open_text(path) as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(f"{where}: missing key {key!r}")
    if not isinstance(obj[key], kind):
        raise DataError(f"{where}.{key}: expected {_kind_name(kind)}, got {type(obj[key]).__name__}")
    return obj[key]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({"str": "a string", "list": "a list", "dict": "an object", "int": "an integer",
                        "bool": "a boolean"}.get(k.__name__, k.__name__) for k in kinds)


def _from_json(path: Path) -> Iterator[Question]:
    """The official layout; messages name the JSON path (``data[3].paragraphs[0].qas[2]``)."""
    articles = _need(_load_json(path), "data", list, str(path))
    for a, article in enumerate(articles):
        where_a = f"{path}: data[{a}]"
        title = article.get("title", "") if isinstance(article, dict) else ""
        for g, para in enumerate(_need(article, "paragraphs", list, where_a)):
            where_p = f"{where_a}.paragraphs[{g}]"
            context = _need(para, "context", str, where_p)
            for k, qa in enumerate(_need(para, "qas", list, where_p)):
                where = f"{where_p}.qas[{k}]"
                answers = []
                for n, ans in enumerate(_need(qa, "answers", list, where)):
                    text = _need(ans, "text", str, f"{where}.answers[{n}]")
                    start = _need(ans, "answer_start", int, f"{where}.answers[{n}]")
                    answers.append((text, start))
                if qa.get("is_impossible") and answers:
                    raise DataError(f"{where}: is_impossible is true but 'answers' is not empty")
                yield Question(str(_need(qa, "id", str, where)), str(title),
                               _need(qa, "question", str, where), context, tuple(answers), where)


HUB_COLUMNS = ("id", "title", "context", "question", "answers")


def _from_parquet(path: Path) -> Iterator[Question]:
    """The hub layout: one row per question, ``answers`` a struct of two lists."""
    frame = read_parquet(path, f"a SQuAD v2 parquet file with columns {list(HUB_COLUMNS)}")
    missing = [c for c in HUB_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; expected {list(HUB_COLUMNS)}")
    for row_no, row in enumerate(frame.select(HUB_COLUMNS).iter_rows(named=True)):
        where = f"{path}: row {row_no}"
        for col in ("id", "context", "question"):
            if not isinstance(row[col], str):
                raise DataError(f"{where}: {col!r} is {row[col]!r}, expected a string")
        ans = row["answers"] or {}
        texts, starts = ans.get("text") or [], ans.get("answer_start") or []
        if len(texts) != len(starts):
            raise DataError(f"{where}: answers has {len(texts)} texts but {len(starts)} starts")
        yield Question(row["id"], row["title"] or "", row["question"], row["context"],
                       tuple(zip(texts, starts)), where)


# ---------------------------------------------------------------- candidates (pure)
def answer_pattern(answer: str) -> re.Pattern[str] | None:
    """Whole-word occurrence of ``answer`` ("1990" is not found in "11990"); None for blank."""
    answer = answer.strip()
    if not answer:
        return None
    left = r"(?<!\w)" if answer[0].isalnum() else ""
    right = r"(?!\w)" if answer[-1].isalnum() else ""
    return re.compile(left + re.escape(answer) + right)


def label_sentences(context: str, spans: Sequence[tuple[int, int]],
                    answers: Sequence[tuple[str, int]], rule: str = "text") -> list[bool]:
    """For each sentence span of ``context``: does it contain an answer (see the module doc)?"""
    if rule == "text":
        patterns = [p for p in {answer_pattern(t) for t, _ in answers} if p is not None]
        return [any(p.search(context, a, b) for p in patterns) for a, b in spans]
    if rule == "span":
        ranges = [(s, s + len(t)) for t, s in answers if t.strip()]
        return [any(s < b and e > a for s, e in ranges) for a, b in spans]
    raise ValueError(f"unknown positive rule {rule!r} (expected one of {POSITIVE_RULES})")


@dataclass
class Built:
    rows: list[dict[str, Any]]
    drops: Counter[str]
    examples: dict[str, list[str]]
    read: int


def build_rows(questions: Iterator[Question], source: str, rule: str) -> Built:
    """Rows with >= 1 positive and >= 1 negative sentence; the others counted by reason."""
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    spans_of: dict[str, list[tuple[int, int]]] = {}   # a paragraph is split once for all its questions
    read = 0
    for q in questions:
        read += 1
        spans = spans_of.setdefault(q.context, sentence_spans(q.context))
        labels = label_sentences(q.context, spans, q.answers, rule)
        reason = ("unanswerable (no answers)" if not q.answers else
                  "no sentence contains an answer" if not any(labels) else
                  "no sentence without an answer" if all(labels) else None)
        if reason:
            drops[reason] += 1
            note_example(examples, reason, q.where)
            continue
        sents = [q.context[a:b] for a, b in spans]
        rows.append({"sample_id": q.qid, "source": source, "title": q.title, "query": q.question,
                     "positives": [s for s, y in zip(sents, labels) if y],
                     "negatives": [s for s, y in zip(sents, labels) if not y]})
    return Built(rows, drops, examples, read)


def min_candidates(frame: pl.DataFrame, n: int = MIN_CANDIDATES) -> pl.DataFrame:
    """"SQUAD min 5": questions with at least ``n`` candidate sentences (positives + negatives)."""
    return frame.filter(pl.col("positives").list.len() + pl.col("negatives").list.len() >= n)


def mean_len(frame: pl.DataFrame, col: str) -> float | None:
    """Mean length of a list column (None for an empty frame), for the manifest."""
    return float(frame[col].list.len().mean()) if frame.height else None  # type: ignore[arg-type]


def prepare(files: Sequence[str], settings: Any) -> Prepared:
    """The ``squad`` and ``squad-min5`` frames of the combined files, and the manifest's counts."""
    rows: list[dict[str, Any]] = []
    drops: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    inputs = []
    for path in files:
        built = build_rows(read_questions(path), Path(path).name, settings.positive_rule)
        rows += built.rows
        drops.update(built.drops)
        for reason, where in built.examples.items():
            examples.setdefault(reason, []).extend(where)
        inputs.append({"path": path, "sha256": sha256_file(path), "questions": built.read,
                       "kept": len(built.rows)})
    if not rows:
        raise DataError(f"{', '.join(files)}: no question has both a sentence with an answer and "
                        f"one without ({drop_summary(drops, examples)})")
    frame = pl.DataFrame(rows, schema=FRAME_SCHEMA)
    min5 = min_candidates(frame)
    m = dict(
        inputs=inputs, positive_rule=settings.positive_rule, sentence_splitter="embtune.data.sentences (rule-based)",
        questions_read=sum(i["questions"] for i in inputs), dropped=dict(sorted(drops.items())),
        eval_rows=frame.height, eval_min5_rows=min5.height, min_candidates=MIN_CANDIDATES,
        mean_positives=mean_len(frame, "positives"), mean_negatives=mean_len(frame, "negatives"),
        eval_comparisons=int((frame["positives"].list.len() * frame["negatives"].list.len()).sum()),
    )
    summary = (f"{m['questions_read']} questions -> {m['eval_rows']} with positives and negatives "
               f"({m['mean_positives']:.2f} / {m['mean_negatives']:.2f} per query), {m['eval_min5_rows']} "
               f"with >= {m['min_candidates']} sentences; dropped {m['dropped']}")
    return Prepared({"squad": frame, "squad-min5": min5}, m, summary)
