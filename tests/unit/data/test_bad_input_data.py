"""Data integrity where the papers' numbers depend on it: MSMARCO train/eval overlap,
XNLI languages whose rows do not align, an arXiv snapshot with unparsable lines, a byte-order
mark, lone surrogates. Each refusal is one line with exit 2, no traceback, no output, and the
inputs byte-identical; each repair (BOM stripped, surrogates replaced) is counted in the manifest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from helpers_cli import one_error  # noqa: E402

from embtune.cli import main as cli_main

LONG = "and the answer is in this part of the text " * 3
ENGLISH = "This is the answer to the question, and it is written in plain English for the test."


def digest(*paths: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


# --------------------------------------------------------------------------- MSMARCO
def ms_line(i: int, query: str | None = None) -> str:
    return json.dumps({"query": query or f"query {i} {LONG}", "pos": [f"passage {i}"], "neg": [f"neg {i}"]})


def split_msmarco(src: Path, out: Path) -> int:
    return cli_main(["split-msmarco", "--file", str(src), "--train-size", "6", "--val-size", "2",
                     "--eval-size", "3", "--hard-negatives", "1", "--out", str(out)])


@pytest.mark.parametrize("leak_from,leak_to", [(0, 8), (5, 10), (7, 9)], ids=["train0-eval", "train5-eval", "val-eval"])
def test_msmarco_train_or_val_query_in_eval_is_an_error(tmp_path, capsys, leak_from, leak_to):
    lines = [ms_line(i) for i in range(11)]
    lines[leak_to] = ms_line(leak_to, f"query {leak_from} {LONG}")      # eval sample repeats a query
    src = tmp_path / "ms.jsonl"
    src.write_text("\n".join(lines) + "\n")
    before = digest(src)
    msg = one_error(split_msmarco(src, tmp_path / "out"), capsys.readouterr().err, "split-msmarco")
    part = "val" if leak_from >= 6 else "train"
    assert f"{src}: sample {leak_to} (eval) has the same query as sample {leak_from} ({part})" in msg
    assert "expected eval queries apart from train and val" in msg
    assert not (tmp_path / "out").exists() and digest(src) == before


def test_msmarco_disjoint_splits_pass(tmp_path, capsys):
    src = tmp_path / "ms.jsonl"
    src.write_text("\n".join(ms_line(i) for i in range(11)) + "\n")
    assert split_msmarco(src, tmp_path / "out") == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["eval_rows"] == 3 and manifest["lone_surrogates_replaced"] == 0


# --------------------------------------------------------------------------- BOM, surrogates
def test_bom_is_stripped_for_msmarco(tmp_path):
    src = tmp_path / "ms.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + ("\n".join(ms_line(i) for i in range(11)) + "\n").encode())
    assert split_msmarco(src, tmp_path / "out") == 0
    train = pl.read_parquet(tmp_path / "out" / "train.parquet")
    assert train["query"][0] == f"query 0 {LONG}"          # no U+FEFF kept in the first query


@pytest.mark.parametrize("where", ["query", "pos", "neg"])
def test_lone_surrogates_in_msmarco_are_replaced_and_counted(tmp_path, where):
    lines = [ms_line(i) for i in range(11)]
    obj = json.loads(lines[2])
    value = "half a pair \ud800 here"   # json.dumps writes it as the escape \\ud800
    obj[where] = value if where == "query" else [value]
    lines[2] = json.dumps(obj)
    lines[9] = lines[9].replace('"neg 9"', '"x \\udfff y \\ud83d"')     # two more, in eval
    src = tmp_path / "ms.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert split_msmarco(src, tmp_path / "out") == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["lone_surrogates_replaced"] == 3
    if where in ("query", "pos"):   # train keeps query and first positive
        train = pl.read_parquet(tmp_path / "out" / "train.parquet")
        assert "half a pair \ufffd here" in train[where][2]


def test_lone_surrogates_in_bge_are_replaced_and_counted(tmp_path, tokenizer_dir):
    lines = [json.dumps({"query": f"what is the question number {i} about {LONG}",
                         "pos": [f"{ENGLISH} Case {i}."], "neg": ["Nothing."]}) for i in range(20)]
    lines[3] = lines[3].replace("Case 3.", "Case \\udc80 3.")
    src = tmp_path / "bge.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())    # and a BOM
    out = tmp_path / "bge"
    rc = cli_main(["prepare-bge", "--files", str(src), "--tokenizer", str(tokenizer_dir), "--context-length", "16",
                   "--val-pairs", "2", "--shard-rows", "8", "--seed", "0", "--out", str(out)])
    assert rc == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["lone_surrogates_replaced"] == 1
    assert manifest["rows_in"] == 20 and manifest["pairs_after_filters"] == 20   # the BOM line kept


def test_scrub_surrogates_counts_against_a_hand_count():
    from embtune.data.jsonl import scrub_surrogates

    obj = {"a": "x\ud800y", "b": ["\udfff", "ok \U0001F600", {"c": "\ud83d\ud83d"}], "d": 3}
    fixed, n = scrub_surrogates(obj)
    assert n == 4            # 1 + 1 + 2 lone halves; the emoji is a whole code point
    assert fixed == {"a": "x\ufffdy", "b": ["\ufffd", "ok \U0001F600", {"c": "\ufffd\ufffd"}], "d": 3}
    json.dumps(fixed).encode("utf-8")


# --------------------------------------------------------------------------- XNLI
def xnli_source(root: Path, rotate: str | None) -> Path:
    """en and de with three hypotheses per premise (as XNLI); ``rotate`` moves de rows within a
    label: labels still match row by row, premises do not."""
    premises = [f"premise {k}" for k in range(4)]
    rows = [(p, f"hyp {k}-{lab}", lab) for k, p in enumerate(premises) for lab in (0, 1, 2)]
    for lang in ("en", "de"):
        r = list(rows)
        if lang == "de" and rotate:
            lab = int(rotate)
            idx = [i for i, x in enumerate(r) if x[2] == lab]
            moved = [r[i] for i in idx[1:] + idx[:1]]
            for i, x in zip(idx, moved):
                r[i] = x
        path = root / lang / "test-00000-of-00001.parquet"
        path.parent.mkdir(parents=True)
        pl.DataFrame({"premise": [x[0] for x in r], "hypothesis": [x[1] for x in r],
                      "label": [x[2] for x in r]}).write_parquet(path)
    return root


@pytest.mark.parametrize("label", ["0", "1", "2"])
def test_xnli_rows_rotated_within_a_label_are_refused(tmp_path, capsys, label):
    src = xnli_source(tmp_path / "src", label)
    files = sorted(src.rglob("*.parquet"))
    before = digest(*files)
    out = tmp_path / "xnli" / "test.parquet"
    rc = cli_main(["prepare-xnli", "--source", str(src), "--languages", "en", "de", "--out", str(out)])
    msg = one_error(rc, capsys.readouterr().err, "prepare-xnli")
    # premise ids by hand: each row's first row with the same premise, per language
    ids = {}
    for lang in ("en", "de"):
        prem = pl.read_parquet(src / lang / "test-00000-of-00001.parquet")["premise"].to_list()
        ids[lang] = [prem.index(p) for p in prem]
    diff = [i for i in range(len(ids["en"])) if ids["en"][i] != ids["de"][i]]
    i = diff[0]
    assert f"language 'de': pair {i} has the premise first seen at pair {ids['de'][i]}, 'en' at pair " \
           f"{ids['en'][i]} ({len(diff)} pairs differ)" in msg
    assert "expected the languages' rows aligned" in msg
    assert not out.exists() and digest(*files) == before


def test_xnli_aligned_languages_pass(tmp_path):
    src = xnli_source(tmp_path / "src", None)
    out = tmp_path / "xnli" / "test.parquet"
    assert cli_main(["prepare-xnli", "--source", str(src), "--languages", "en", "de", "--out", str(out)]) == 0


# --------------------------------------------------------------------------- arXiv snapshot
CATS = ["math.CO", "math.AG", "cs.LG", "physics.optics", "cs.CL", "math.PR"]


def arxiv_line(i: int) -> str:
    return json.dumps({"id": f"0704.{i:04d}", "title": f"Title {i}", "categories": CATS[i % len(CATS)],
                       "abstract": f"We study problem {i} with method {i % 7}. {LONG}"})


def build_arxiv(src: Path, out: Path, *extra: str) -> int:
    return cli_main(["build-arxiv-negatives", "--snapshot", str(src), "--n-negatives", "2", "--levels", "1",
                     "--narrow-domains", *extra, "--out", str(out)])


@pytest.mark.parametrize("damage", ["truncated-last", "garbage-middle", "two-bad"])
def test_arxiv_snapshot_with_unparsable_lines_fails(tmp_path, capsys, damage):
    lines = [arxiv_line(i) for i in range(60)]
    if damage == "truncated-last":
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    elif damage == "garbage-middle":
        lines[30] = "{not json"
    else:
        lines[10], lines[20] = "[1, 2", '{"id": '
    src = tmp_path / "snap.json"
    src.write_text("\n".join(lines) + "\n")
    before = digest(src)
    msg = one_error(build_arxiv(src, tmp_path / "out"), capsys.readouterr().err, "build-arxiv-negatives")
    n = 2 if damage == "two-bad" else 1
    assert f"{src}: {n} unparsable line(s)" in msg and "expected at most 0 (data.arxiv.allow_bad_lines)" in msg
    assert not (tmp_path / "out").exists() and digest(src) == before


def test_arxiv_allow_bad_lines_tolerates_and_counts(tmp_path, capsys):
    lines = [arxiv_line(i) for i in range(60)]
    lines[-1] = lines[-1][:40]
    src = tmp_path / "snap.json"
    src.write_text("\n".join(lines) + "\n")
    assert build_arxiv(src, tmp_path / "out", "--allow-bad-lines", "1") == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["bad_lines"] == 1 and manifest["allow_bad_lines"] == 1
    capsys.readouterr()
    one_error(build_arxiv(src, tmp_path / "out2", "--allow-bad-lines", "0"), capsys.readouterr().err,
              "build-arxiv-negatives")
