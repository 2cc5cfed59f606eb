"""prepare-pnd squad / hotpotqa (paper 2, App. C and D) and the sentence splitter.

Expected candidates are written out by hand for tiny files built here; the shipped demo files are
checked against a brute force over the raw JSON written in this test."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.data import hotpotqa, squad
from embtune.data.jsonl import DataError
from embtune.data.sentences import sentence_spans, split_sentences

REPO = Path(__file__).resolve().parents[3]
DEMO_SQUAD = [REPO / "data/demo/squad/train-v2.0.json", REPO / "data/demo/squad/dev-v2.0.json"]
DEMO_HOTPOT = [REPO / "data/demo/hotpotqa/hotpot_train_v1.1.json",
               REPO / "data/demo/hotpotqa/hotpot_dev_distractor_v1.json"]


# ---------------------------------------------------------------- sentences
@pytest.mark.parametrize("text, expected", [
    ("Dr. Smith met Mr. J. R. R. Tolkien in Washington, D.C. on Jan. 5. They talked.",
     ["Dr. Smith met Mr. J. R. R. Tolkien in Washington, D.C. on Jan. 5.", "They talked."]),
    ("It cost 3.5 million. Was it 5 p.m.? \"Yes,\" he said. See No. 5. No. It was not.",
     ["It cost 3.5 million.", "Was it 5 p.m.?", "\"Yes,\" he said.", "See No. 5.", "No.",
      "It was not."]),
    ("Founded in 1990. (It grew.) the end is lower case! 1999 came.\nNext line",
     ["Founded in 1990.", "(It grew.) the end is lower case!", "1999 came.", "Next line"]),
    ("  One sentence without a full stop  ", ["One sentence without a full stop"]),
    ("", []),
])
def test_sentence_splitter_by_hand(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected
    for (a, b), sent in zip(sentence_spans(text), expected):
        assert text[a:b] == sent  # offsets point into the original text


# ---------------------------------------------------------------- SQuAD
CTX_A = ("Paris is the capital of France. It has 2,100,000 inhabitants. The Seine flows through "
         "Paris. In 1900 Paris hosted the Olympics. The city hosted them again in 2024.")
SENT_A = ["Paris is the capital of France.", "It has 2,100,000 inhabitants.",
          "The Seine flows through Paris.", "In 1900 Paris hosted the Olympics.",
          "The city hosted them again in 2024."]
CTX_B = "Bees make honey. Bees live in hives."


def _tiny_squad() -> dict:
    def qa(qid, question, answers, ctx, impossible=False):
        """answer_start = the first occurrence in ``ctx`` (a suffix of the context for q4)."""
        offset = len(CTX_A) - len(ctx) if ctx not in (CTX_A, CTX_B) else 0
        return {"id": qid, "question": question, "is_impossible": impossible,
                "answers": [{"text": t, "answer_start": offset + ctx.index(t)} for t in answers]}
    return {"version": "v2.0", "data": [
        {"title": "Paris", "paragraphs": [{"context": CTX_A, "qas": [
            qa("q1", "Which river flows through Paris?", ["The Seine", "Seine"], CTX_A),
            qa("q2", "Where is Paris the capital?", ["France"], CTX_A),
            # "Paris" is in sentences 1, 3 and 4: the text rule makes all three positive
            qa("q3", "Which city hosted the 1900 Olympics?", ["Paris"], CTX_A),
            # "20" is only inside "2024": not a whole word, so no positive by text (by span: 5th)
            qa("q4", "When did the century start?", ["20"], CTX_A[CTX_A.index("2024"):]),
            qa("q5", "What is the population of Rome?", [], CTX_A, impossible=True),
        ]}]},
        {"title": "Bees", "paragraphs": [{"context": CTX_B, "qas": [
            qa("q6", "Who makes honey?", ["Bees"], CTX_B),   # in both sentences: no negative
        ]}]},
    ]}


# hand-made: q1 -> sentence 3; q2 -> sentence 1; q3 -> sentences 1, 3, 4
EXPECTED_TEXT = {
    "q1": ([SENT_A[2]], [SENT_A[0], SENT_A[1], SENT_A[3], SENT_A[4]]),
    "q2": ([SENT_A[0]], SENT_A[1:]),
    "q3": ([SENT_A[0], SENT_A[2], SENT_A[3]], [SENT_A[1], SENT_A[4]]),
}


def _prepare_squad(files: list[Path], out: Path, *extra: str) -> int:
    return cli_main(["prepare-pnd", "squad", "--files", *map(str, files), *extra, "--out", str(out)])


def test_squad_candidates_by_hand(tmp_path: Path) -> None:
    src = tmp_path / "train-v2.0.json"
    src.write_text(json.dumps(_tiny_squad()))
    assert _prepare_squad([src], tmp_path / "out") == 0
    frame = pl.read_parquet(tmp_path / "out" / "eval.parquet")
    got = {r["sample_id"]: (r["positives"], r["negatives"]) for r in frame.iter_rows(named=True)}
    assert got == EXPECTED_TEXT
    assert set(frame["source"]) == {"train-v2.0.json"} and set(frame["title"]) == {"Paris"}
    # "min 5": questions with at least 5 candidate sentences (all three have 5 here)
    min5 = pl.read_parquet(tmp_path / "out" / "eval_min5.parquet")
    assert sorted(min5["sample_id"]) == ["q1", "q2", "q3"]
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["questions_read"] == 6 and m["eval_rows"] == 3
    assert m["dropped"] == {"no sentence contains an answer": 1, "no sentence without an answer": 1,
                            "unanswerable (no answers)": 1}
    assert m["eval_comparisons"] == 1 * 4 + 1 * 4 + 3 * 2
    assert m["mean_positives"] == pytest.approx(5 / 3)


def test_squad_span_rule_counts_only_the_marked_span(tmp_path: Path) -> None:
    src = tmp_path / "train-v2.0.json"
    src.write_text(json.dumps(_tiny_squad()))
    assert _prepare_squad([src], tmp_path / "out", "--positive-rule", "span") == 0
    got = {r["sample_id"]: r["positives"] for r in pl.read_parquet(
        tmp_path / "out" / "eval.parquet").iter_rows(named=True)}
    # q3's answer_start is the first "Paris" (sentence 1); q4's is inside "2024" (sentence 5);
    # q6's "Bees" is marked in the first sentence only, so the second is a negative
    assert got == {"q1": [SENT_A[2]], "q2": [SENT_A[0]], "q3": [SENT_A[0]], "q4": [SENT_A[4]],
                   "q6": ["Bees make honey."]}


def _hub_parquet(squad_json: dict, path: Path) -> None:
    """The same questions in rajpurkar/squad_v2's parquet layout (built here, independently)."""
    rows = [{"id": qa["id"], "title": art["title"], "context": para["context"],
             "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for art in squad_json["data"] for para in art["paragraphs"] for qa in para["qas"]]
    pl.DataFrame(rows, schema={"id": pl.String, "title": pl.String, "context": pl.String,
                               "question": pl.String,
                               "answers": pl.Struct({"text": pl.List(pl.String),
                                                     "answer_start": pl.List(pl.Int32)})}
                 ).write_parquet(path)


def test_squad_hub_parquet_reads_like_the_json(tmp_path: Path) -> None:
    src = tmp_path / "train-00000-of-00001.parquet"
    _hub_parquet(_tiny_squad(), src)
    assert _prepare_squad([src], tmp_path / "out") == 0
    frame = pl.read_parquet(tmp_path / "out" / "eval.parquet")
    assert {r["sample_id"]: (r["positives"], r["negatives"])
            for r in frame.iter_rows(named=True)} == EXPECTED_TEXT


def _whole_word(answer: str, sentence: str) -> bool:
    """Brute force: some occurrence of ``answer`` not glued to a letter or digit on either side."""
    start = sentence.find(answer)
    while start >= 0:
        before = sentence[start - 1] if start else " "
        after = sentence[start + len(answer)] if start + len(answer) < len(sentence) else " "
        if not (answer[0].isalnum() and before.isalnum() or answer[-1].isalnum() and after.isalnum()
                or before == "_" or after == "_"):
            return True
        start = sentence.find(answer, start + 1)
    return False


def test_squad_demo_files_match_a_brute_force(tmp_path: Path) -> None:
    assert _prepare_squad(DEMO_SQUAD, tmp_path / "out") == 0
    frame = pl.read_parquet(tmp_path / "out" / "eval.parquet")
    got = {r["sample_id"]: r for r in frame.iter_rows(named=True)}
    expected, read = {}, 0
    for path in DEMO_SQUAD:
        for art in json.loads(path.read_text())["data"]:
            for para in art["paragraphs"]:
                sents = split_sentences(para["context"])
                assert re.sub(r"\s", "", "".join(sents)) == re.sub(r"\s", "", para["context"])
                for qa in para["qas"]:
                    read += 1
                    answers = {a["text"] for a in qa["answers"]}
                    labels = [any(_whole_word(a, s) for a in answers) for s in sents]
                    if any(labels) and not all(labels):
                        expected[qa["id"]] = ([s for s, y in zip(sents, labels) if y],
                                              [s for s, y in zip(sents, labels) if not y], path.name)
    assert {k: (r["positives"], r["negatives"], r["source"]) for k, r in got.items()} == expected
    assert read == 42 and len(expected) == 37  # 4 unanswerable, 1 answer in every sentence
    n_min5 = sum(len(p) + len(n) >= 5 for p, n, _ in expected.values())
    assert pl.read_parquet(tmp_path / "out" / "eval_min5.parquet").height == n_min5 == 27
    assert max(len(p) for p, _, _ in expected.values()) == 2   # "Jupiter" is in two sentences


def test_squad_bad_input_names_the_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _tiny_squad()
    del bad["data"][0]["paragraphs"][0]["qas"][1]["question"]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(bad))
    assert _prepare_squad([src], tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "data[0].paragraphs[0].qas[1]: missing key 'question'" in err and str(src) in err
    assert not (tmp_path / "out").exists()
    src.write_text('{"data": [}')
    assert _prepare_squad([src], tmp_path / "out") == 2
    assert f"{src}:1: invalid JSON" in capsys.readouterr().err
    with pytest.raises(DataError, match="no question has both"):
        src.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [
            {"context": "One. Two.", "qas": [{"id": "a", "question": "?", "answers": []}]}]}]}))
        squad.prepare([str(src)], argparse.Namespace(positive_rule="text"))


# ---------------------------------------------------------------- HotpotQA
def _hotpot_item(qid: str, level: str, titles: list[str], support: list[str]) -> dict:
    return {"_id": qid, "question": f"question {qid}?", "answer": "a", "type": "bridge",
            "level": level, "supporting_facts": [[t, 0] for t in support],
            "context": [[t, [f"{t} first.", f" {t} second."]] for t in titles]}


def _tiny_hotpot() -> list[dict]:
    ten = [f"T{i}" for i in range(10)]
    return [_hotpot_item("h1", "easy", ten, ["T3", "T7"]),
            _hotpot_item("h2", "medium", ten[:9], ["T0", "T1"]),          # 9 passages: dropped
            _hotpot_item("h3", "hard", [*ten, "T10"], ["T10", "T2"]),
            _hotpot_item("h4", "hard", ten, ["missing title"]),           # no gold passage: dropped
            _hotpot_item("h5", "medium", ten, ["T9", "T0"])]


def _prepare_hotpot(files: list[Path], out: Path, *extra: str) -> int:
    return cli_main(["prepare-pnd", "hotpotqa", "--files", *map(str, files), *extra, "--out", str(out)])


def test_hotpotqa_candidates_by_hand(tmp_path: Path) -> None:
    src = tmp_path / "hotpot_train_v1.1.json"
    src.write_text(json.dumps(_tiny_hotpot()))
    assert _prepare_hotpot([src], tmp_path / "out") == 0
    out = {lvl: pl.read_parquet(tmp_path / "out" / f"eval_{lvl}.parquet") for lvl in hotpotqa.LEVELS}
    text = lambda t: f"{t} first. {t} second."  # noqa: E731 - sentences joined by one space
    easy = out["easy"].row(0, named=True)
    assert (easy["sample_id"], easy["positives"]) == ("h1", [text("T3"), text("T7")])
    assert easy["negatives"] == [text(f"T{i}") for i in range(10) if i not in (3, 7)]
    assert out["hard"]["sample_id"].to_list() == ["h3"]
    assert out["hard"].row(0, named=True)["positives"] == [text("T2"), text("T10")]
    assert out["medium"]["sample_id"].to_list() == ["h5"]
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["dropped"] == {"fewer than 10 passages": 1, "no supporting-fact passage": 1}
    assert m["rows"] == {"easy": 1, "medium": 1, "hard": 1} and m["positives_per_query"] == {"2": 3}
    # --passage-title prepends the title; --min-passages 9 keeps h2
    assert _prepare_hotpot([src], tmp_path / "t", "--passage-title", "--min-passages", "9") == 0
    med = pl.read_parquet(tmp_path / "t" / "eval_medium.parquet")
    assert med["sample_id"].to_list() == ["h2", "h5"]
    assert med.row(0, named=True)["positives"] == [f"T0: {text('T0')}", f"T1: {text('T1')}"]


def test_hotpotqa_hub_parquet_reads_like_the_json(tmp_path: Path) -> None:
    items = _tiny_hotpot()
    rows = [{"id": it["_id"], "question": it["question"], "answer": it["answer"], "type": it["type"],
             "level": it["level"],
             "supporting_facts": {"title": [t for t, _ in it["supporting_facts"]],
                                  "sent_id": [i for _, i in it["supporting_facts"]]},
             "context": {"title": [t for t, _ in it["context"]],
                         "sentences": [s for _, s in it["context"]]}} for it in items]
    pq = tmp_path / "train-00000-of-00002.parquet"
    pl.DataFrame(rows).write_parquet(pq)
    js = tmp_path / "hotpot_train_v1.1.json"
    js.write_text(json.dumps(items))
    assert _prepare_hotpot([pq], tmp_path / "a") == 0 and _prepare_hotpot([js], tmp_path / "b") == 0
    for lvl in hotpotqa.LEVELS:
        a, b = (pl.read_parquet(tmp_path / d / f"eval_{lvl}.parquet").drop("source") for d in "ab")
        assert a.equals(b)


def test_hotpotqa_demo_files_match_a_brute_force(tmp_path: Path) -> None:
    assert _prepare_hotpot(DEMO_HOTPOT, tmp_path / "out") == 0
    expected: dict[str, dict[str, tuple]] = {lvl: {} for lvl in hotpotqa.LEVELS}
    n_short = 0
    for path in DEMO_HOTPOT:
        for it in json.loads(path.read_text()):
            gold = {t for t, _ in it["supporting_facts"]}
            paras = [(t, " ".join(s.strip() for s in sents)) for t, sents in it["context"]]
            if len(paras) < 10:
                n_short += 1
                continue
            expected[it["level"]][it["_id"]] = ([p for t, p in paras if t in gold],
                                                [p for t, p in paras if t not in gold])
    for lvl in hotpotqa.LEVELS:
        frame = pl.read_parquet(tmp_path / "out" / f"eval_{lvl}.parquet")
        assert {r["sample_id"]: (r["positives"], r["negatives"])
                for r in frame.iter_rows(named=True)} == expected[lvl]
        assert all(len(p) == 2 and len(n) == 8 for p, n in expected[lvl].values())
    assert n_short == 3 and [len(expected[lvl]) for lvl in hotpotqa.LEVELS] == [7, 8, 12]
    assert set(pl.read_parquet(tmp_path / "out" / "eval_easy.parquet")["source"]) == {
        "hotpot_train_v1.1.json"}  # the dev set is all "hard"


def test_hotpotqa_missing_level_and_bad_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev = DEMO_HOTPOT[1]
    assert _prepare_hotpot([dev], tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "no question of level(s) ['easy', 'medium']" in err and "need the train file" in err
    assert _prepare_hotpot([dev], tmp_path / "out", "--levels", "hard") == 0
    items = _tiny_hotpot()
    items[2]["context"][4] = ["T4"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(items))
    assert _prepare_hotpot([bad], tmp_path / "out2") == 2
    assert "[2].context[4]: expected [title, [sentences]]" in capsys.readouterr().err
