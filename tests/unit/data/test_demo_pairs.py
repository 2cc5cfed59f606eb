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
GENERATED = ("dpkg-descriptions", "man-pages", "pydoc-packages")


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
        assert len(obj["pos"][0]) <= 480 and mod.words(obj["query"]) >= 3
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
    assert "make_demo_pairs.py" in text and "/var/lib/dpkg/status" in text


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
    out = mod.select(pairs, 5, random.Random(0))
    assert len(out) == 5
    assert all(r["neg"][0] != r["pos"][0] for r in out)
    assert len({r["query"] for r in out}) == 5
    assert "echo the text" not in {r["query"] for r in out}
    assert out == mod.select(list(reversed(pairs)), 5, random.Random(0))   # independent of input order
