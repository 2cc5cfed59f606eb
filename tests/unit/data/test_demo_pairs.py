"""The shipped demo pairs (data/demo/bge) are the FlagEmbedding format the BGE loader reads, their
provenance is recorded, and the generator's parsers (workflow/scripts/make_demo_pairs.py) turn
hand-written Debian control and roff snippets into the text a reader sees."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

from embtune.data.bge_records import extract_pair, is_english
from embtune.data.jsonl import iter_jsonl

ROOT = Path(__file__).resolve().parents[3]
BGE = ROOT / "data/demo/bge"
GENERATED = ("debian-descriptions", "man-pages", "pydoc-packages", "wordnet-glosses")
#: Fewest query words per source (a WordNet query is a lemma list: "eraser").
MIN_QUERY_WORDS = {"debian-descriptions": 3, "man-pages": 3, "pydoc-packages": 3, "wordnet-glosses": 1}


def _script():
    sys.path.insert(0, str(ROOT / "workflow/scripts"))
    spec = importlib.util.spec_from_file_location("make_demo_pairs", ROOT / "workflow/scripts/make_demo_pairs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", GENERATED)
def test_shipped_pairs_are_bge_records_of_real_prose(name: str) -> None:
    path = BGE / f"{name}.jsonl.gz"
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    rows = [obj for _, obj in iter_jsonl(str(path))]
    assert len(rows) >= 500
    mod = _script()
    english = 0
    for obj in rows:
        assert set(obj) == {"query", "pos", "neg"}
        pair = extract_pair(obj)                      # the loader's own record check
        assert isinstance(pair, tuple), pair
        assert len(obj["pos"]) == 1 and len(obj["neg"]) == 1
        assert obj["neg"][0] != obj["pos"][0]
        assert len(obj["pos"][0]) <= 480 and mod.words(obj["query"]) >= MIN_QUERY_WORDS[name]
        english += is_english(pair[0] + "\n" + pair[1])
    assert english >= 0.9 * len(rows)                 # prepare-bge's English filter keeps them
    assert len({(r["query"], r["pos"][0]) for r in rows}) == len(rows)   # no exact duplicates


def test_gzip_is_reproducible_and_headerless() -> None:
    mod = _script()
    rows = [{"query": "list directory contents", "pos": ["List information about the FILEs."], "neg": ["x"]}]
    a, b = mod.gzip_jsonl(rows), mod.gzip_jsonl(rows)
    assert a == b
    assert a[4:8] == b"\x00\x00\x00\x00"              # gzip MTIME field is zero
    assert json.loads(gzip.decompress(a).decode()) == rows[0]


def test_provenance_names_every_shipped_file() -> None:
    text = (BGE / "PROVENANCE.md").read_text()
    for path in sorted(BGE.glob("*.jsonl*")):
        assert f"`{path.name}`" in text
    assert "make_demo_pairs.py" in text and "Translation-en" in text
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in text   # its licence travels with it


def test_shipped_texts_are_unique_across_files_and_enough() -> None:
    """No query or positive (case and whitespace folded) of the generated files occurs twice in all
    shipped files, so the validation slice prepare-bge cuts shares no text with them, and there are
    enough unique pairs that the demo grid's fitted runs stay within one pass. (make_demo_data.py's
    pairs.jsonl repeats 325 of its own texts, mostly a docstring inherited by several classes under
    different queries: 0.2 % of all pairs, counted here so that it cannot grow unnoticed.)"""
    seen: dict[str, str] = {}
    pairs = stdlib_repeats = 0
    for path in [BGE / "pairs.jsonl"] + [BGE / f"{name}.jsonl.gz" for name in GENERATED]:
        for where, obj in iter_jsonl(str(path)):
            pairs += 1
            for text in (obj["query"], obj["pos"][0]):
                key = " ".join(text.lower().split())
                if key in seen and path.name == "pairs.jsonl":
                    stdlib_repeats += 1
                    continue
                assert key not in seen, f"{path.name}:{where} repeats {seen[key]}: {text[:80]!r}"
                seen[key] = f"{path.name}:{where}"
    assert stdlib_repeats == 325 and pairs >= 150_000
    assert sorted(p.name for p in BGE.glob("*.jsonl*")) == sorted(["pairs.jsonl"] + [f"{n}.jsonl.gz" for n in GENERATED])


def test_translation_index_parser_reads_description_en() -> None:
    mod = _script()
    text = ("Package: 0ad\nDescription-md5: d943\nDescription-en: Real-time strategy game of ancient warfare\n"
            " 0 A.D. is a free, open-source, cross-platform real-time strategy game\n of ancient warfare.\n\n"
            "Package: nolong\nDescription-md5: 1\nDescription-en: only a short one\n")
    assert list(mod.control_records(text, "Description-en")) == [
        ("0ad", "", "Real-time strategy game of ancient warfare",
         "0 A.D. is a free, open-source, cross-platform real-time strategy game of ancient warfare."),
        ("nolong", "", "only a short one", "")]


def test_wordnet_parser_reads_lemmas_and_gloss(tmp_path: Path) -> None:
    mod = _script()
    data = tmp_path / "data.adj"
    data.write_text(
        "  1 This software and database is being provided to you, the LICENSEE, by  \n"
        "00001740 00 a 01 able 0 005 = 05207437 n 0000 | (usually followed by `to') having the necessary "
        "means; \"able to swim\"  \n"
        "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 023 @ 02083346 n 0000 | a member of the "
        "genus Canis  \n"
        "01383582 00 s 02 bigger(a) 0 larger(p) 0 001 & 01382086 a 0000 | large or big relative to something "
        "else  \n")
    assert list(mod.wordnet_records(data)) == [
        ("00001740", ["able"], "(usually followed by `to') having the necessary means; \"able to swim\""),
        ("02084071", ["dog", "domestic dog", "Canis familiaris"], "a member of the genus Canis"),
        ("01383582", ["bigger", "larger"], "large or big relative to something else")]


def test_dpkg_parser_reads_short_and_long_description(tmp_path: Path) -> None:
    mod = _script()
    status = tmp_path / "status"
    status.write_text(
        "Package: adduser\nStatus: install ok installed\nVersion: 3.134\n"
        "Description: add and remove users and groups\n"
        " This package includes the 'adduser' and 'deluser' commands for creating\n"
        " and removing users.\n .\n  - 'adduser' creates new users;\n .\n"
        " Adding users with 'adduser' is much easier than adding them manually.\n"
        "\n"
        "Package: nodesc\nVersion: 1\n")
    records = list(mod.dpkg_records(status))
    assert records == [("adduser", "3.134", "add and remove users and groups",
                        "This package includes the 'adduser' and 'deluser' commands for creating and removing "
                        "users. Adding users with 'adduser' is much easier than adding them manually.")]


def test_man_parser_keeps_prose_and_drops_markup(tmp_path: Path) -> None:
    mod = _script()
    page = tmp_path / "ls.1.gz"
    page.write_bytes(gzip.compress(
        b'.TH LS "1"\n.SH NAME\nls \\- list directory contents\n.SH SYNOPSIS\n.B ls\n[\\fIOPTION\\fR]...\n'
        b'.SH DESCRIPTION\n.\\" a comment\n.PP\nList information about the \\fBFILEs\\fR (the current\n'
        b'directory by default), sorted alphabetically by name unless told otherwise.\n'
        b'.TP\n\\fB\\-a\\fR, \\fB\\-\\-all\\fR\ndo not ignore entries starting with a dot\n'
        b'.SH AUTHOR\nWritten by someone.\n'))
    pair = mod.man_pair(page)
    assert pair["query"] == "list directory contents"
    assert pair["pos"] == ["List information about the FILEs (the current directory by default), sorted "
                           "alphabetically by name unless told otherwise. do not ignore entries starting with a dot"]
    alias = tmp_path / "dir.1.gz"
    alias.write_bytes(gzip.compress(b".so man1/ls.1\n"))
    assert mod.man_pair(alias) is None


def test_select_dedups_caps_and_draws_a_foreign_negative() -> None:
    mod = _script()
    pairs = [{"query": f"query number {i} here", "pos": [f"positive passage {i}"]} for i in range(10)]
    pairs.append(dict(pairs[0]))                                    # an exact duplicate
    pairs.append({"query": "echo the text", "pos": ["echo the text back to the caller"]})  # query is its positive
    pairs.append({"query": "Query Number 3  HERE", "pos": ["another passage"]})   # query repeats, folded
    pairs.append({"query": "a fresh query", "pos": ["POSITIVE passage 4"]})          # positive repeats, folded
    out = mod.select(pairs, 5, random.Random(0))
    assert len(out) == 5
    assert all(r["neg"][0] != r["pos"][0] for r in out)
    assert {r["neg"][0] for r in out} <= {r["pos"][0] for r in out}               # another kept pair's positive
    assert len({r["query"] for r in out}) == 5
    assert "echo the text" not in {r["query"] for r in out}
    assert out == mod.select(list(reversed(pairs)), 5, random.Random(0))   # independent of input order
    every = mod.select(pairs, None, random.Random(0))
    folded = [" ".join(t.lower().split()) for r in every for t in (r["query"], r["pos"][0])]
    assert len(every) == 10 and len(set(folded)) == len(folded)           # 13 candidates, 3 repeat a text
    seen = {"query number 0 here"}                                        # claimed by an earlier source
    later = mod.select(pairs, None, random.Random(0), seen)
    assert "query number 0 here" not in {r["query"] for r in later} and "positive passage 1" in seen
