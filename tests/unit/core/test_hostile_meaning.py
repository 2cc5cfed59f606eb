"""Data that is wrong in meaning, or of the wrong shape, is refused where it is read: one line
naming the file, the row and what was expected (exit 2), every input byte-identical. The right
data passes (each refusal has a passing twin, so a check that refuses everything would fail).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.core.errors import DataError


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def refused(argv: list[str], capsys, inputs: Path, *wants: str) -> str:
    before = tree(inputs)
    rc = cli_main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"embtune {argv[0]}: error: "), lines[0]
    for want in wants:
        assert want in lines[0], lines[0]
    assert tree(inputs) == before
    return lines[0]


# ------------------------------------------------------------------------- MSMARCO
def _msmarco(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return path


def _ms_rows(n: int) -> list[dict]:
    return [{"query": f"question number {i}", "pos": [f"answer {i}"], "neg": [f"wrong {i}", f"other {i}"]}
            for i in range(n)]


def _split(src: Path, out: Path) -> list[str]:
    return ["split-msmarco", "--file", str(src), "--train-size", "3", "--val-size", "1", "--eval-size", "2",
            "--hard-negatives", "1", "--out", str(out)]


@pytest.mark.parametrize("case", ["case", "whitespace", "both"])
def test_eval_query_equal_to_a_train_query_up_to_case_or_whitespace(tmp_path, capsys, case):
    rows = _ms_rows(6)
    rows[5]["query"] = {"case": "QUESTION number 1", "whitespace": "question   number 1 ",
                        "both": " Question\tNumber  1"}[case]
    src = _msmarco(tmp_path / "in" / "ms.jsonl.gz", rows)
    refused(_split(src, tmp_path / "out"), capsys, tmp_path / "in", f"{src}: sample 5 (eval)",
            "same query as sample 1 (train) up to case and whitespace")
    assert not (tmp_path / "out").exists()


def test_a_positive_equal_to_its_negative_is_refused(tmp_path, capsys):
    rows = _ms_rows(6)
    rows[2]["neg"] = ["wrong 2", "  ANSWER 2"]
    src = _msmarco(tmp_path / "in" / "ms.jsonl.gz", rows)
    refused(_split(src, tmp_path / "out"), capsys, tmp_path / "in", f"{src}:3:", "a positive is also a negative")


def test_clean_msmarco_passes(tmp_path):
    src = _msmarco(tmp_path / "in" / "ms.jsonl.gz", _ms_rows(6))
    assert cli_main(_split(src, tmp_path / "out")) == 0


# ------------------------------------------------------------------------- XNLI
def _xnli_language(n_premises: int, seed: int, words: list[str]) -> pl.DataFrame:
    """Premises with three hypotheses each, lengths drawn at random: a "translation" keeps each
    hypothesis' length up to small noise (as real translations roughly do)."""
    rng = random.Random(0)
    noise = random.Random(seed)
    rows = []
    for i in range(n_premises):
        premise = " ".join(words[(i + k) % len(words)] for k in range(6)) + f" {i}"
        for label in (0, 1, 2):
            n = rng.randint(2, 25)
            n = max(1, n + noise.randint(-1, 1))
            rows.append({"premise": premise, "hypothesis": " ".join(words[(i * 3 + label + k) % len(words)]
                                                                    for k in range(n)), "label": label})
    return pl.DataFrame(rows, schema={"premise": pl.String, "hypothesis": pl.String, "label": pl.Int64})


def _xnli(root: Path, frames: dict[str, pl.DataFrame]) -> Path:
    for lang, frame in frames.items():
        (root / lang).mkdir(parents=True, exist_ok=True)
        frame.write_parquet(root / lang / "test-00000-of-00001.parquet")
    return root


def _rotate_within_label(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("hypothesis").shift(1).over("label").fill_null(pl.col("hypothesis")))


def _swap_entailment_contradiction(frame: pl.DataFrame) -> pl.DataFrame:
    hyp = frame["hypothesis"].to_list()
    for i in range(0, len(hyp), 3):
        hyp[i], hyp[i + 2] = hyp[i + 2], hyp[i]
    return frame.with_columns(pl.Series("hypothesis", hyp))


def _swap_labels(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("label").replace({0: 2, 2: 0}))


EN = ["the", "a", "man", "woman", "plays", "sleeps", "guitar", "house", "street", "music", "dog", "runs"]
DE = ["der", "ein", "Mann", "Frau", "spielt", "schläft", "Gitarre", "Haus", "Straße", "Musik", "Hund", "läuft"]


@pytest.mark.parametrize("damage,want", [
    (_rotate_within_label, "hypothesis lengths correlate"),
    (_swap_entailment_contradiction, "hypothesis lengths correlate"),
    (_swap_labels, "has label"),
])
def test_xnli_rows_must_be_translations_of_each_other(tmp_path, capsys, damage, want):
    en, de = _xnli_language(40, 1, EN), _xnli_language(40, 2, DE)
    src = _xnli(tmp_path / "in", {"en": en, "de": damage(de)})
    argv = ["prepare-xnli", "--source", str(src), "--languages", "en", "de", "--out", str(tmp_path / "x.parquet")]
    refused(argv, capsys, tmp_path / "in", "language 'de'", want)


def test_aligned_xnli_passes(tmp_path):
    src = _xnli(tmp_path / "in", {"en": _xnli_language(40, 1, EN), "de": _xnli_language(40, 2, DE)})
    assert cli_main(["prepare-xnli", "--source", str(src), "--languages", "en", "de",
                     "--out", str(tmp_path / "x.parquet")]) == 0


# ------------------------------------------------------------------------- arXiv
def _paper(i: int, cat: str = "math.AG") -> dict:
    return {"id": f"{i:04d}.0001", "title": f"On topic {i}", "abstract": f"words about topic {i} and more",
            "categories": cat}


def test_a_paper_listed_as_its_own_negative(tmp_path, capsys):
    papers = [_paper(i) for i in range(4)]
    lines = [json.dumps([p, [papers[(j + k + 1) % 4]["id"] for k in range(2)]]) for j, p in enumerate(papers)]
    lines[2] = json.dumps([papers[2], [papers[0]["id"], papers[2]["id"]]])
    src = tmp_path / "in" / "published.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(lines) + "\n")
    refused(["build-arxiv-negatives", "--source", "published", "--published", str(src), "--n-negatives", "1",
             "--levels", "1", "2", "--out", str(tmp_path / "out")], capsys, tmp_path / "in",
            f"{src}:3: paper '0002.0001' is listed as its own negative")


def test_more_negatives_asked_than_papers_exist(tmp_path, capsys):
    src = tmp_path / "in" / "snapshot.json"
    src.parent.mkdir()
    src.write_text("".join(json.dumps(_paper(i)) + "\n" for i in range(5)))
    refused(["build-arxiv-negatives", "--snapshot", str(src), "--n-negatives", "20", "--levels", "1",
             "--max-category-size", "10", "--out", str(tmp_path / "out")], capsys, tmp_path / "in",
            "5 papers selected", "expected at least --n-negatives 20")


# ------------------------------------------------------------------------- runs and scores
def _run(root: Path, run_id: str, metrics: dict, mteb: dict | None = None) -> Path:
    d = root / run_id
    d.mkdir(parents=True)
    base = {"status": "ok", "method": "full", "model": "tiny", "budget": 1e12, "final_train_loss": 2.0,
            "flops": 1e12, "tokens": 1e6, "steps": 10, "n_total": 1e6, "n_forward": 1e6, "n_backward": 1e6,
            "n_update": 1e6}
    (d / "metrics.json").write_text(json.dumps({**base, **metrics}))
    if mteb is not None:
        (d / "mteb.json").write_text(json.dumps(mteb))
    return d / "metrics.json"


@pytest.mark.parametrize("metrics,mteb,want", [
    ({"steps": -10}, None, "field 'steps' is -10; expected a count >= 0"),
    ({"tokens": -1.0}, None, "field 'tokens' is -1.0; expected a count >= 0"),
    ({"n_total": -5}, None, "field 'n_total' is -5; expected a count >= 0"),
    ({"trainable_fraction": 1.5}, None, "field 'trainable_fraction' is 1.5; expected a fraction in [0, 1]"),
    ({"budget": 0}, None, "field 'budget' is 0; expected a FLOP budget > 0"),
    ({}, {"average": 5.0, "tasks": {"STS15": 5.0}}, "field 'average' is 5.0; expected a score in [0, 1]"),
    ({}, {"average": 0.5, "tasks": {"STS15": -0.2}}, "field 'tasks.STS15' is -0.2; expected a score in [0, 1]"),
    ({}, {"average": 0.5, "tasks": ["STS15"]}, "field 'tasks' is list"),
])
def test_impossible_run_values_are_refused_by_collect_runs(tmp_path, capsys, metrics, mteb, want):
    path = _run(tmp_path / "in" / "runs", "r1", metrics, mteb)
    line = refused(["collect-runs", "--runs-dir", str(tmp_path / "in" / "runs"), "--out",
                    str(tmp_path / "runs.parquet")], capsys, tmp_path / "in", want)
    assert str(path.parent) in line


def test_a_run_given_twice_is_refused(tmp_path, capsys):
    path = _run(tmp_path / "in" / "runs", "r1", {})
    refused(["collect-runs", "--metrics", str(path), str(path), "--out", str(tmp_path / "runs.parquet")], capsys,
            tmp_path / "in", "run 'r1' is given twice")


@pytest.fixture(scope="module")
def runs_table(tmp_path_factory) -> pl.DataFrame:
    from embtune.scaling.synthetic import synthetic_runs

    return synthetic_runs(models=[("tiny-d128-l2", 128, 2)], budgets=[1e11, 2e11, 4e11])


@pytest.mark.parametrize("damage,want", [
    (lambda t: pl.concat([t, t.head(1)]), "appears in rows 0 and"),
    (lambda t: t.with_columns(pl.when(pl.int_range(pl.len()) == 1).then(-5.0).otherwise(pl.col("D")).alias("D")),
     "row 1 (run"),
    (lambda t: t.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(0.0).otherwise(pl.col("D")).alias("D")),
     "is ok with D = 0.0 tokens"),
    (lambda t: t.with_columns(pl.lit(-3.0).alias("N")), "column 'N' is -3.0; expected a count >= 0"),
])
def test_a_runs_table_that_cannot_be_is_refused_by_the_analysis(tmp_path, capsys, runs_table, damage, want):
    src = tmp_path / "in" / "runs.parquet"
    src.parent.mkdir()
    damage(runs_table).write_parquet(src)
    for argv in (["fit-scaling", "--runs", str(src), "--bootstrap", "0", "--out", str(tmp_path / "fits.json")],
                 ["appendix-tables", "--runs", str(src), "--params-json", "{}", "--out", str(tmp_path / "app")]):
        refused(argv, capsys, tmp_path / "in", str(src), want)


# ------------------------------------------------------------------------- token ids
def _shard(path: Path, query: list[list[int]], pos: list[list[int]]) -> None:
    pl.DataFrame({"query_ids": query, "pos_ids": pos, "query_tokens": [len(q) for q in query],
                  "pos_tokens": [len(p) for p in pos]},
                 schema={"query_ids": pl.List(pl.Int64), "pos_ids": pl.List(pl.Int64),
                         "query_tokens": pl.Int32, "pos_tokens": pl.Int32}).write_parquet(path)


@pytest.mark.parametrize("bad,want", [(2**40, "holds token id 1099511627776"), (-3, "holds token id -3")])
def test_token_ids_that_would_wrap_or_are_negative(tmp_path, capsys, bad, want):
    bge = tmp_path / "in" / "bge"
    bge.mkdir(parents=True)
    _shard(bge / "train-00000.parquet", [[1, 2], [3, 4, 5], [6]], [[7], [8, bad], [9]])
    _shard(bge / "val.parquet", [[1]], [[2]])
    refused(["pack-pairs", "--bge-dir", str(bge), "--out", str(tmp_path / "packed")], capsys, tmp_path / "in",
            f"{bge / 'train-00000.parquet'}: column 'pos_ids': row 1 {want}", "expected ids in [0, 2147483648)")
    assert not (tmp_path / "packed").exists()


def test_token_ids_beyond_the_vocabulary_are_named_before_training():
    from embtune.train.pairs import Pairs

    pairs = Pairs.from_lists([[1, 2], [3]], [[4], [5, 99]])
    pairs.check_vocab(100, "train_dir")
    with pytest.raises(DataError, match=r"train_dir \(pos tokens\): row 1 holds token id 99; expected ids in "
                                        r"\[0, 50\)"):
        pairs.check_vocab(50, "train_dir")


# ------------------------------------------------------------------------- evaluation tables
def test_positives_stored_as_one_string_are_refused():
    from embtune.data.meaning import check_grouped

    frame = pl.DataFrame({"query": ["q"], "positives": ["one long passage"], "negatives": [["n"]]})
    with pytest.raises(DataError, match=r"eval.parquet: column 'positives' has type String; expected a list"):
        check_grouped("eval.parquet", frame)


@pytest.mark.parametrize("rows,want", [
    ({"query": ["q", "r"], "positives": [["p"], ["Same  Text"]], "negatives": [["n"], ["x", "same text"]]},
     "row 1: a positive is also a negative"),
    ({"query": ["q"], "positives": [[]], "negatives": [["n"]]}, "row 0: positives is empty"),
    ({"sample_id": [3, 3], "query": ["q", "r"], "positives": [["p"], ["p2"]], "negatives": [["n"], ["n2"]]},
     "sample_id 3 appears in rows 0 and 1"),
])
def test_grouped_evaluation_rows_must_mean_something(rows, want):
    from embtune.data.meaning import check_grouped

    with pytest.raises(DataError, match=want):
        check_grouped("eval.parquet", pl.DataFrame(rows))
    ok = {k: v[:1] for k, v in rows.items()} | {"positives": [["p"]], "negatives": [["n"]]}
    check_grouped("eval.parquet", pl.DataFrame(ok))


def test_an_arxiv_paper_as_its_own_negative_in_the_evaluation_triplets():
    from embtune.data.meaning import check_triplets

    frame = pl.DataFrame({"anchor": ["paper A", "paper B"], "positive": ["A'", "B'"], "negative": ["C", "Paper  b"]})
    with pytest.raises(DataError, match="row 1: anchor and negative are the same text"):
        check_triplets("arxiv.parquet", frame, ("anchor", "positive", "negative"))


# ------------------------------------------------------------------------- embedding cache
class _Fake:
    precision = "fp32"

    def __init__(self, width: int) -> None:
        self.width = width

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.ones((len(texts), self.width), dtype=np.float32)


def test_cached_vectors_of_another_width_are_refused(tmp_path):
    from embtune.models.embed_cache import EmbedCache

    cache = EmbedCache(tmp_path / "cache", progress=False)
    assert cache.embed(_Fake(8), "fp", "query", "", ["a", "b"], 4).shape == (2, 8)
    cache = EmbedCache(tmp_path / "cache", progress=False)           # a new process, the same store
    with pytest.raises(DataError, match=r"cached embeddings of width\(s\) \[4, 8\]; expected one width"):
        cache.embed(_Fake(4), "fp", "query", "", ["a", "c"], 4)


# ------------------------------------------------------------------------- error counts
def _query_runs(root: Path, base_errors: int, tuned_xnli_errors: int) -> Path:
    runs = root / "query_runs" / "m"
    for run, errors in (("base", base_errors), ("default", 3)):
        (runs / run).mkdir(parents=True)
        (runs / run / "pnd.json").write_text(json.dumps({"msmarco": {"pnd": {"errors": errors, "total": 10,
                                                                              "rate": errors / 10}}}))
    (runs / "default" / "metrics.json").write_text(json.dumps({"status": "ok"}))
    pl.DataFrame({"query_lang": ["en"], "text_lang": ["de"], "relation": ["entailment"], "measure": ["pnd"],
                  "errors": [tuned_xnli_errors], "total": [10]}).write_parquet(runs / "default" / "xnli_counts.parquet")
    return root / "query_runs"


@pytest.mark.parametrize("base_errors,xnli_errors,want", [
    (12, 1, "field msmarco.pnd: errors 12 of total 10; expected 0 <= errors <= total"),
    (-1, 1, "errors -1 of total 10"),
    (2, 11, "xnli_counts.parquet: row 0: errors 11 of total 10"),
])
def test_error_counts_above_the_total_are_refused(tmp_path, capsys, base_errors, xnli_errors, want):
    runs = _query_runs(tmp_path / "in", base_errors, xnli_errors)
    refused(["query-table", "--query-runs-dir", str(runs), "--out", str(tmp_path / "qt")], capsys,
            tmp_path / "in", want)


@pytest.mark.parametrize("frame,want", [
    (pl.DataFrame({"query": [1, 2], "pos": ["a", "b"], "neg": ["c", "d"]}), "column 'query' has type Int64"),
    (pl.DataFrame({"query": ["q", None], "pos": ["a", "b"], "neg": ["c", "d"]}), "with 1 nulls"),
    (pl.DataFrame({"query": ["q", "r"], "pos": ["a", "B "], "neg": ["c", "b"]}), "row 1: pos and neg are the same"),
])
def test_query_tuning_triplets_are_read_as_text_and_must_differ(tmp_path, frame, want):
    from embtune.train.triplets import read_triplets

    path = tmp_path / "train.parquet"
    frame.write_parquet(path)
    with pytest.raises(DataError, match=want):
        read_triplets(path, ("query", "pos", "neg"))
    frame.head(1).with_columns(pl.lit("q").alias("query")).write_parquet(path)
    assert read_triplets(path, ("query", "pos", "neg")) == [("q", "a", "c")]
