"""The shipped demo MTEB stand-ins (data/demo/mteb) load through embtune.data.mteb_data, their
real-text tasks (docstrings, WordNet) share no text with the demo's training pairs (data/demo/bge)
or with each other, and the generator (workflow/scripts/make_demo_mteb.py) follows its rules and
rewrites them byte for byte."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import polars as pl
import pytest

from embtune.data.mteb_data import PINNED_TYPES, local_splits, read_task_dir, validate_frames

ROOT = Path(__file__).resolve().parents[3]
MTEB = ROOT / "data/demo/mteb"
BGE = ROOT / "data/demo/bge"
#: The tasks whose text is real docstrings and WordNet synsets (the other three are templates).
DOCSTRING_TASKS = ("SciFact", "AskUbuntuDupQuestions", "SprintDuplicateQuestions",
                   "TwentyNewsgroupsClustering", "EmotionClassification")


def _script():
    sys.path.insert(0, str(ROOT / "workflow/scripts"))
    spec = importlib.util.spec_from_file_location("make_demo_mteb", ROOT / "workflow/scripts/make_demo_mteb.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _frames(name: str):
    return read_task_dir(MTEB / name, PINNED_TYPES[name] in ("Retrieval", "Reranking"))


def _texts(name: str) -> list[str]:
    """Every text the task makes a model encode."""
    out = []
    for tables in _frames(name).values():
        for stem, frame in tables.items():
            for col in ("text", "sentence1", "sentence2", "sentences"):
                if col in frame.columns and stem != "qrels":
                    values = frame[col].to_list()
                    out += [t for v in values for t in (v if isinstance(v, list) else [v])]
    return out


@pytest.mark.parametrize("name", sorted(PINNED_TYPES))
def test_shipped_tasks_load_in_the_layout_the_evaluator_reads(name: str) -> None:
    kind = PINNED_TYPES[name]
    frames = _frames(name)
    assert validate_frames(name, kind, frames, local_splits(kind)) == []


def test_docstring_tasks_share_no_text_with_training_pairs() -> None:
    """Independent of the generator: fold every query, positive and negative of data/demo/bge."""
    train: set[str] = set()
    for path in sorted(BGE.glob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                obj = json.loads(line)
                train.update(_fold(t) for t in [obj["query"], *obj["pos"], *obj.get("neg", [])])
    assert len(train) > 300_000
    for name in DOCSTRING_TASKS:
        texts = _texts(name)
        assert len(texts) >= 150, name
        leaked = [t for t in texts if _fold(t) in train]
        assert not leaked, f"{name}: {len(leaked)} texts are training texts, e.g. {leaked[0][:80]!r}"


def test_each_docstring_serves_one_task() -> None:
    owner: dict[str, str] = {}
    for name in DOCSTRING_TASKS:
        for text in set(map(_fold, _texts(name))):
            assert text not in owner, f"{text[:60]!r} in {owner.get(text)} and {name}"
            owner[text] = name


def test_task_structure_and_labels() -> None:
    """Counts and labels the generator promises: retrieval 60 queries over 200 bodies with one
    relevant body each; reranking 8 candidates with one relevant; pairs half positive; 6 WordNet
    lexnames as classes (16 train + 16 test each) and as clusters (3 sets of 12 per lexname)."""
    sci = _frames("SciFact")[("default", "test")]
    assert (sci["queries"].height, sci["corpus"].height, sci["qrels"].height) == (60, 200, 60)
    assert set(sci["qrels"]["corpus-id"]) <= set(sci["corpus"]["id"])
    ask = _frames("AskUbuntuDupQuestions")[("default", "test")]
    per_query = ask["qrels"].group_by("query-id").agg(pl.len(), pl.col("score").sum())
    assert per_query["len"].to_list() == [8] * ask["queries"].height and set(per_query["score"]) == {1}
    pairs = _frames("SprintDuplicateQuestions")[("default", "test")][""]
    assert pairs["labels"].sum() * 2 == pairs.height
    emo = _frames("EmotionClassification")
    for split, n in (("train", 16), ("test", 16)):
        counts = emo[("default", split)][""]["label"].value_counts().sort("label")
        assert counts["label"].to_list() == list(range(6)) and set(counts["count"]) == {n}
    ng = _frames("TwentyNewsgroupsClustering")[("default", "test")][""]
    for labels in ng["labels"].to_list():
        assert len(set(labels)) == 6 and len(labels) == 72


def test_unique_docs_drops_training_and_repeated_texts() -> None:
    mod = _script()
    doc = mod.Doc
    docs = [doc("p", "p.a", "Fit the model to data.", "Fits it."),
            doc("p", "p.b", "fit  the MODEL to data.", "Another body."),           # folded summary repeats
            doc("p", "p.c", "Plot the curve nicely.", "Training body text."),        # body is a training text
            doc("p", "p.d", "Read the file header.", "Read the file header. More."),  # summary opens body
            doc("q", "q.e", "Open a git repository.", "Opens it on disk.")]
    kept = mod.unique_docs(docs, {"training body text."})
    assert {d.name for d in kept} <= {"p.a", "p.b", "q.e"}
    assert len(kept) == 2 and "q.e" in {d.name for d in kept}
    assert {_fold(d.summary) for d in kept} == {"fit the model to data.", "open a git repository."}
    assert mod.unique_docs(list(reversed(docs)), {"training body text."}) == kept   # order-independent


def test_pool_hands_out_each_doc_once() -> None:
    mod = _script()
    docs = {p: [mod.Doc(p, f"{p}.{i}", f"summary {p} {i} words", f"body {p} {i}") for i in range(5)] for p in "ab"}
    pool = mod.Pool(docs)
    first, mixed = pool.take("a", 2), pool.take_mixed(4)
    assert [d.name for d in first] == ["a.0", "a.1"]
    assert [d.name for d in mixed] == ["a.2", "b.0", "a.3", "b.1"]
    with pytest.raises(SystemExit, match="a: 1 unused texts left, 2 needed"):
        pool.take("a", 2)


def test_wordnet_reader_keeps_short_glosses_of_the_chosen_lexnames(tmp_path: Path) -> None:
    """Only noun synsets of LEXNAMES whose gloss has 3-5 words: the training pairs take >= 6."""
    mod = _script()
    data = tmp_path / "data.noun"
    data.write_text(
        "  1 This software and database is being provided to you, the LICENSEE, by  \n"
        "01464700 05 n 02 adult 0 grownup_animal 0 000 | any mature animal  \n"
        "02084071 05 n 01 dog 0 001 @ 02083346 n 0000 | a member of the genus Canis  \n"
        "00037396 04 n 01 kindness 0 000 | a kind act  \n"
        "00037397 04 n 01 deed 0 000 | an act  \n"
        "09999999 09 n 01 ego 0 000 | the conscious mind  \n")
    docs = mod.wordnet_docs(data)
    assert docs["noun.animal"] == [mod.Doc("noun.animal", "wordnet:noun:01464700", "adult, grownup animal",
                                           "any mature animal")]
    assert [d.summary for d in docs["noun.act"]] == ["kindness"]
    assert sum(map(len, docs.values())) == 2 and set(docs) == set(mod.LEXNAMES.values())


@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/share/wordnet/data.noun").is_file(), reason="needs Debian wordnet-base")
def test_generator_rewrites_the_shipped_files(tmp_path: Path) -> None:
    """Deterministic: the pinned packages (constraints.txt) give the shipped files byte for byte."""
    out = tmp_path / "mteb"
    mod = _script()
    for name, frames in mod.all_frames(0, BGE).items():
        mod.write_task(frames, out / name)
    shipped = sorted(p.relative_to(MTEB) for p in MTEB.rglob("*.parquet"))
    assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == shipped
    for rel in shipped:
        assert (out / rel).read_bytes() == (MTEB / rel).read_bytes(), rel
