"""build-arxiv-negatives: exact JS, neighbours vs brute force, padding, randomness, I/O contract."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import chisquare

from embtune.data import arxiv_negatives as an
from embtune.data import arxiv_records as ar
from embtune.data import jensen_shannon as js
from embtune.stages import build_arxiv_negatives as stage

WORDS = ("graph quantum field theory neural network manifold curvature prime modular form "
         "flow turbulence laser cavity spin lattice galaxy star estimator sample proof bound "
         "energy random walk tensor code channel photon entropy algebra group").split()
CATS = ["math.AG", "math.NT", "math.CO", "math-ph", "physics.optics", "physics.flu-dyn",
        "cs.LG", "cs.CL", "hep-th", "q-bio.NC", "big.A", "big.B"]


def _record(i: int, rng: random.Random) -> dict[str, object]:
    n_cat = rng.choice([1, 1, 2, 2, 3])
    cats = rng.sample(CATS[:10], n_cat) + (["big.A"] if rng.random() < 0.7 else ["big.B"])
    sents = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))).capitalize() + "."
             for _ in range(rng.randint(1, 4))]
    return {"id": f"2401.{i:05d}", "title": f"Paper {i} on {rng.choice(WORDS)}",
            "abstract": "  " + "\n".join(sents), "categories": " ".join(cats),
            "submitter": "X", "versions": []}


def _snapshot(tmp: Path, n: int = 160, seed: int = 1, extra: list[str] | None = None) -> Path:
    rng = random.Random(seed)
    lines = [json.dumps(_record(i, rng)) for i in range(n)] + (extra or [])
    path = tmp / "snap.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def _papers(path: Path) -> list[ar.Paper]:
    lines = enumerate(path.read_text().splitlines(), start=1)
    return list(ar.parse_lines(lines, str(path)))


# ---------------------------------------------------------------- brute force reference

def _brute_force(papers: list[ar.Paper], max_size: int, k: int, match: str = "all",
                 ties: str = "listed", distances: list[dict[str, float]] | None = None
                 ) -> tuple[list[str], list[list[str]]]:
    """Literal App. B.2 with scipy's jensenshannon (natural log) over Counter word distributions:
    each selected paper against every other selected paper, no blocks, no memo. ``distances``
    receives each paper's candidates with their JSD."""
    sizes = Counter(c for p in papers for c in set(p.categories.split()))
    kept = {c for c, n in sizes.items() if n <= max_size}
    sel = [p for p in papers if kept & set(p.categories.split())]
    cats = [set(p.categories.split()) for p in sel]
    vocab = sorted({w for p in sel for w in re.findall(r"[^\W_]+", p.abstract.lower())})
    col = {w: j for j, w in enumerate(vocab)}
    dense = np.zeros((len(sel), len(vocab)))
    for i, p in enumerate(sel):
        for w, c in Counter(re.findall(r"[^\W_]+", p.abstract.lower())).items():
            dense[i, col[w]] = c
    dense /= dense.sum(1, keepdims=True)
    out = []
    for i, paper in enumerate(sel):
        listed = []
        for c in paper.categories.split():
            if c not in listed and (match == "all" or c in kept):
                listed.append(c)
        # (1) sort by size (Python's sort is stable: equal sizes stay as listed)
        order = sorted(listed, key=(lambda c: (sizes[c], c)) if ties == "name" else sizes.get)
        # (2) matched length of every other paper: consecutive categories from the first one
        matched = {}
        for m in range(len(sel)):
            if m != i:
                n = 0
                while n < len(order) and order[n] in cats[m]:
                    n += 1
                matched[m] = n
        best = max(matched.values())
        cands = [m for m, n in matched.items() if n == best]
        # (3) 20 closest by Jensen-Shannon, ties by snapshot order, filled by the last
        d = [(jensenshannon(dense[i], dense[m]) ** 2, m) for m in cands]
        ranked = [m for _, m in sorted(d)][:k]
        ranked += [ranked[-1]] * (k - len(ranked))
        out.append([sel[m].id for m in ranked])
        if distances is not None:
            distances.append({sel[m].id: v for v, m in d})
    return [p.id for p in sel], out


def _assert_same_ranking(got: list[str], expected: list[str], dist: dict[str, float]) -> None:
    """Equal lists, except that candidates whose distances differ by float rounding only (two
    word distributions at the same distance, computed in a different order) may swap."""
    assert set(got) <= set(dist), "a neighbour outside the closest category match"
    assert len(set(got)) == len(set(expected)), "padding differs"
    for g, e in zip(got, expected):
        assert g == e or abs(dist[g] - dist[e]) < 1e-12, (got, expected)


SMALL = [f"s.{c}" for c in "ABCDEFG"]            # kept under the cap used below
LARGE = [f"L.{c}" for c in "PQRST"]              # never kept


def _mixed_record(i: int, rng: random.Random) -> dict[str, object]:
    """A paper in 0-2 small and 0-3 large categories (listed in random order), sometimes a
    category of its own (nobody else matches its first category)."""
    cats = rng.sample(SMALL, rng.choice([0, 1, 1, 1, 2, 2])) + rng.sample(
        LARGE, rng.choice([0, 1, 2, 2, 3]))
    if rng.random() < 0.04 or not cats:
        cats.append(f"solo.{i}")
    rng.shuffle(cats)
    sents = [" ".join(rng.choices(WORDS, k=rng.randint(3, 14))).capitalize() + "."
             for _ in range(rng.randint(1, 3))]
    return {"id": f"m{i:04d}", "title": f"T{i}", "abstract": " ".join(sents),
            "categories": " ".join(cats)}


def _mixed_papers(seed: int, n: int = 150) -> list[ar.Paper]:
    rng = random.Random(seed)
    papers = [ar.parse_record(_mixed_record(i, rng)) for i in range(n)]
    assert all(isinstance(p, ar.Paper) for p in papers)
    return papers  # type: ignore[return-value]


# ---------------------------------------------------------------- tests

def test_jsd_matches_scipy_natural_log() -> None:
    rng = random.Random(0)
    texts = [" ".join(rng.choices(WORDS[: rng.randint(3, len(WORDS))], k=rng.randint(1, 60)))
             for _ in range(40)]
    texts[5] = texts[6]  # identical distributions -> exactly 0
    dist = js.word_distributions(texts)
    block = js.make_block(dist, np.arange(len(texts)))
    ours = np.sqrt(js.block_jsd(block, np.arange(len(texts))))
    dense = dist.toarray()
    ref = np.array([[jensenshannon(a, b) for b in dense] for a in dense])
    np.testing.assert_allclose(ours, np.nan_to_num(ref), atol=1e-7)
    assert ours[5, 6] == pytest.approx(0.0, abs=1e-7)
    assert ours.max() <= np.sqrt(np.log(2)) + 1e-12


@pytest.mark.parametrize("work", [50, an.DEFAULT_WORK])
def test_neighbours_match_brute_force(tmp_path: Path, work: int) -> None:
    papers = _papers(_snapshot(tmp_path))
    selected, negs, info = an.build_negatives(papers, max_category_size=40, n_negatives=5,
                                              seed=3, work=work)
    ids, expected = _brute_force(papers, 40, 5)
    assert [p.id for p in selected] == ids
    got = [[selected[j].id for j in row[:5]] for row in negs]
    assert got == expected
    assert info["n_selected"] == len(ids) and info["n_kept_categories"] >= 5


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
@pytest.mark.parametrize(("match", "ties"), [("all", "listed"), ("all", "name"),
                                             ("kept", "listed")])
def test_small_and_large_categories_match_brute_force(seed: int, match: str, ties: str) -> None:
    """App. B.2 with papers in small (kept) and large categories: the 20 nearest, the padding
    and the all-different share equal the brute force; the 21st is another selected paper."""
    papers = _mixed_papers(seed)
    sizes = Counter(c for p in papers for c in p.categories.split())
    cap = max(sizes[c] for c in SMALL)
    assert all(sizes[c] > cap for c in LARGE)
    selected, negs, info = an.build_negatives(papers, cap, n_negatives=20, seed=seed, work=300,
                                              match=match, ties=ties)
    dist: list[dict[str, float]] = []
    ids, expected = _brute_force(papers, cap, 20, match, ties, dist)
    assert [p.id for p in selected] == ids
    for row, exp, d in zip(negs, expected, dist):
        _assert_same_ranking([ids[j] for j in row[:20]], exp, d)
    n_distinct = sum(len(set(row)) == 20 for row in expected)
    assert 0 < n_distinct < len(ids)  # the snapshot exercises both the full and the padded case
    assert info["all_distinct"] == n_distinct
    assert info["all_distinct_share"] == pytest.approx(n_distinct / len(ids))
    assert info["no_category_match"] > 0
    assert ((negs[:, 20] >= 0) & (negs[:, 20] < len(ids))).all()
    assert (negs[:, 20] != np.arange(len(ids))).all()


def test_all_categories_decide_the_match_not_only_kept_ones() -> None:
    """Papers 0, 1 in q-bio.X1 cs.LG and 2 in q-bio.X1 math.AG; the cap keeps q-bio.X1 only.
    Sorted by size paper 0's list is [q-bio.X1, cs.LG]: paper 1 matches both, paper 2 one."""
    cats = ["q-bio.X1 cs.LG", "cs.LG q-bio.X1", "q-bio.X1 math.AG"] + ["cs.LG math.AG"] * 4
    papers = [ar.Paper(f"p{i}", "t", f"word{i} shared text", c) for i, c in enumerate(cats)]
    selected, negs, _ = an.build_negatives(papers, 3, n_negatives=2, seed=0)
    assert [p.id for p in selected] == ["p0", "p1", "p2"]
    assert negs[0, :2].tolist() == [1, 1] and negs[1, :2].tolist() == [0, 0]
    assert sorted(negs[2, :2].tolist()) == [0, 1]  # shares q-bio.X1 only: both others
    _, old, _ = an.build_negatives(papers, 3, n_negatives=2, seed=0, match="kept")
    assert sorted(old[0, :2].tolist()) == [1, 2]


def test_equal_sizes_keep_listed_order_or_go_by_name() -> None:
    """t.A and t.B both have 3 papers. Paper 0 lists t.B first: the stable sort tries t.B
    (papers 1, 2) first; by name t.A (papers 3, 4) comes first."""
    cats = ["t.B t.A", "t.B", "t.B", "t.A", "t.A"]
    papers = [ar.Paper(f"p{i}", "t", f"word{i} shared text", c) for i, c in enumerate(cats)]
    _, listed, _ = an.build_negatives(papers, 3, n_negatives=2, seed=0)
    _, named, _ = an.build_negatives(papers, 3, n_negatives=2, seed=0, ties="name")
    assert sorted(listed[0, :2].tolist()) == [1, 2]
    assert sorted(named[0, :2].tolist()) == [3, 4]
    with pytest.raises(ValueError, match="category match/ties"):
        an.build_negatives(papers, 3, n_negatives=2, seed=0, ties="size")


def test_random_negative_is_uniform_over_the_other_papers() -> None:
    """The 21st negative: never the paper itself, equally likely to be any other paper (the
    known law checked by a chi-square test over many seeds), and a pure function of the seed."""
    n, draws = 6, 3000
    counts = np.zeros((n, n), dtype=np.int64)
    for seed in range(draws):
        r = an.random_negatives(n, seed)
        counts[np.arange(n), r] += 1
    assert (np.diag(counts) == 0).all()
    for i in range(n):
        others = np.delete(counts[i], i)
        assert chisquare(others).pvalue > 1e-3, others
    assert (an.random_negatives(50, 4) == an.random_negatives(50, 4)).all()
    assert not (an.random_negatives(50, 4) == an.random_negatives(50, 5)).all()


def test_never_self_padding_and_random_last(tmp_path: Path) -> None:
    papers = _papers(_snapshot(tmp_path))
    _, negs, info = an.build_negatives(papers, 40, n_negatives=20, seed=7)
    n = len(negs)
    assert negs.shape == (n, 21)
    assert not (negs == np.arange(n)[:, None]).any(), "a paper is never its own negative"
    padded = [row for row in negs[:, :20] if len(set(row)) < 20]
    assert padded and info["padded"] == len(padded)
    for row in padded:  # padding repeats the last distinct neighbour
        first_repeat = next(i for i in range(1, 20) if row[i] == row[i - 1])
        assert (row[first_repeat:] == row[first_repeat - 1]).all()
    _, negs2, _ = an.build_negatives(papers, 40, n_negatives=20, seed=7)
    _, negs3, _ = an.build_negatives(papers, 40, n_negatives=20, seed=8)
    assert (negs2 == negs).all() and not (negs3[:, 20] == negs[:, 20]).all()
    assert (negs3[:, :20] == negs[:, :20]).all(), "only the 21st depends on the seed"


def test_singleton_first_category_falls_back_to_all(tmp_path: Path) -> None:
    recs = [{"id": f"p{i}", "title": "t", "abstract": f"alpha beta {w}. Gamma {w}.",
             "categories": c} for i, (w, c) in
            enumerate([("x", "solo.A big"), ("y", "pair.B big"), ("z", "pair.B big"), ("x", "big")])]
    papers = [ar.parse_record(r) for r in recs]
    selected, negs, info = an.build_negatives(papers, 2, n_negatives=3, seed=0)  # type: ignore[arg-type]
    assert [p.id for p in selected] == ["p0", "p1", "p2"]
    assert info["no_category_match"] == 1
    assert set(negs[0, :3]) <= {1, 2} and negs[1, 0] == 2 and negs[2, 0] == 1


def test_first_sentence_split() -> None:
    s = an.split_first_sentence
    assert s("We study e.g. graphs. Then more.") == ("We study e.g. graphs.", "Then more.")
    assert s("As in Fig. 2 of J. Smith et al. Tests follow. X") == (
        "As in Fig. 2 of J. Smith et al. Tests follow.", "X")
    assert s("Value is 3.5 here? Yes 2 times.") == ("Value is 3.5 here?", "Yes 2 times.")
    assert s("Only one sentence.") == ("Only one sentence.", "")


def test_domain_prefix_and_exclusion() -> None:
    assert an.has_domain("math-ph math.AG", "math")
    assert not an.has_domain("math-ph hep-th", "math")
    assert not an.has_domain("astro-ph.GA", "physics")
    frame = pl.DataFrame({"categories": ["math.AG cs.LG", "math-ph", "cs.CL"], "x": [1, 2, 3]})
    assert an.exclude_domain(frame, "math")["x"].to_list() == [2, 3]
    assert an.exclude_domain(frame, "cs")["x"].to_list() == [2]


def _run(snap: Path, out: Path, *extra: str, via_cli: bool = False) -> int:
    from embtune import cli

    run = (lambda argv: cli.main(["build-arxiv-negatives", *argv])) if via_cli else stage.main
    return run(["--snapshot", str(snap), "--max-category-size", "40", "--n-negatives", "20",
                    "--levels", "1", "21", "--flavours", "first", "title", "--narrow-domains",
                    "math", "physics", "cs", "--seed", "0", "--out", str(out), *extra])


def test_cli_outputs_contract_and_determinism(tmp_path: Path) -> None:
    bad = ['{"id": "b1", "title": "t"', '[1, 2]',
           json.dumps({"id": "b2", "title": "t", "categories": "math.AG"}),
           json.dumps({"id": "b3", "title": "t", "abstract": "  ", "categories": "math.AG"}),
           json.dumps({"id": 4, "title": "t", "abstract": "a b.", "categories": "math.AG"}),
           json.dumps({"id": "2401.00000", "title": "dup", "abstract": "a. b.",
                       "categories": "math.AG"})]
    snap = _snapshot(tmp_path, extra=bad)
    tolerate = ("--allow-bad-lines", "1")      # the one unparsable line (else an error)
    assert _run(snap, tmp_path / "a", *tolerate) == 0 and _run(snap, tmp_path / "b", *tolerate, via_cli=True) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(["manifest.json", "negatives.parquet"]
                           + [f"triplets_{f}_L{lv}.parquet" for f in ("first", "title") for lv in (1, 21)]
                           + [f"narrow_{d}_{s}.parquet" for d in ("math", "physics", "cs")
                              for s in ("train", "val")])
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    counts, examples = man["input_drops"]["counts"], man["input_drops"]["examples"]
    assert counts == {"bad_json": 1, "not_an_object": 1, "missing_field:abstract": 1,
                      "empty:abstract": 1, "wrong_type:id": 1, "duplicate_id": 1}
    assert examples["bad_json"] == [f"{snap}:161"] and examples["duplicate_id"] == [f"{snap}:166"]
    assert "created_utc" not in man

    neg = pl.read_parquet(tmp_path / "a" / "negatives.parquet")
    assert neg.columns == ["id", "title", "abstract", "categories", "negatives"]
    assert neg.schema["negatives"] == pl.List(pl.Utf8)
    assert neg["negatives"].list.len().unique().to_list() == [21]
    by_id = {r["id"]: r for r in neg.iter_rows(named=True)}
    title = pl.read_parquet(tmp_path / "a" / "triplets_title_L1.parquet")
    assert title.columns == ["anchor", "positive", "negative", "paper_id", "categories"]
    row = title.row(0, named=True)
    paper = by_id[row["paper_id"]]
    assert row["anchor"] == paper["title"] and row["positive"] == paper["abstract"]
    assert row["negative"] == by_id[paper["negatives"][0]]["abstract"]
    first = pl.read_parquet(tmp_path / "a" / "triplets_first_L21.parquet")
    for row in first.iter_rows(named=True):
        paper = by_id[row["paper_id"]]
        assert row["anchor"] + " " + row["positive"] == paper["abstract"]
        assert row["negative"] == an.split_first_sentence(by_id[paper["negatives"][20]]["abstract"])[1]
    dropped = man["triplet_drops"]["triplets_first_L21.parquet"]["counts"]
    assert len(first) + dropped.get("single_sentence_abstract", 0) + dropped.get(
        "single_sentence_negative", 0) == len(neg)
    for d in ("math", "physics", "cs"):
        tr = pl.read_parquet(tmp_path / "a" / f"narrow_{d}_train.parquet")
        va = pl.read_parquet(tmp_path / "a" / f"narrow_{d}_val.parquet")
        assert len(tr) > 0 and len(va) > 0
        assert not set(tr["paper_id"]) & set(va["paper_id"])
        assert all(an.has_domain(c, d) for c in tr["categories"].to_list() + va["categories"].to_list())


def test_published_source_round_trip(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    assert _run(snap, tmp_path / "built") == 0
    neg = pl.read_parquet(tmp_path / "built" / "negatives.parquet")
    pub = tmp_path / "published.jsonl"
    rows = [json.dumps([{k: r[k] for k in ("id", "title", "abstract", "categories")}, r["negatives"]])
            for r in neg.iter_rows(named=True)]
    pub.write_text("\n".join(rows + ['{"broken"', json.dumps([{"id": "z"}, []])]) + "\n")
    assert stage.main(["--source", "published", "--published", str(pub), "--levels", "1", "21",
                    "--narrow-domains", "math", "--allow-bad-lines", "1", "--out", str(tmp_path / "pub")]) == 0
    for name in ("negatives.parquet", "triplets_first_L1.parquet", "triplets_title_L21.parquet",
                 "narrow_math_train.parquet"):
        assert pl.read_parquet(tmp_path / "pub" / name).equals(
            pl.read_parquet(tmp_path / "built" / name)), name
    man = json.loads((tmp_path / "pub" / "manifest.json").read_text())
    assert man["input_drops"]["counts"] == {"bad_json": 1, "missing_field:title": 1}
    whole = tmp_path / "published.json"  # one JSON array instead of JSONL
    whole.write_text("[\n" + ",\n".join(rows) + "\n]\n")
    assert stage.main(["--source", "published", "--published", str(whole), "--levels", "1",
                    "--flavours", "title", "--narrow-domains", "--out", str(tmp_path / "arr")]) == 0
    assert pl.read_parquet(tmp_path / "arr" / "triplets_title_L1.parquet").equals(
        pl.read_parquet(tmp_path / "built" / "triplets_title_L1.parquet"))


def test_cli_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = _snapshot(tmp_path, n=10)
    with pytest.raises(SystemExit):
        _run(snap, tmp_path / "o", "--levels", "22")
    with pytest.raises(SystemExit):
        stage.main(["--out", str(tmp_path / "o")])
    assert stage.main(["--snapshot", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert "file not found" in capsys.readouterr().err
    same = tmp_path / "same.json"
    same.write_text("".join(json.dumps({"id": f"s{i}", "title": "t", "abstract": "a b. c d.",
                                        "categories": "big"}) + "\n" for i in range(3)))
    assert stage.main(["--snapshot", str(same), "--max-category-size", "2",
                    "--out", str(tmp_path / "o")]) == 2
    assert "nothing to build" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_snapshot_without_categories_names_the_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "nocat.json"
    snap.write_text("".join(json.dumps({"id": f"n{i}", "title": "t", "abstract": "a b. c d."})
                            + "\n" for i in range(4)))
    assert stage.main(["--snapshot", str(snap), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{snap}: every record lacks a usable 'categories' field" in err
    assert f"4 missing_field:categories (e.g. {snap}:1)" in err
    assert "max_category_size" not in err and not (tmp_path / "o").exists()
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    assert stage.main(["--snapshot", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert f"{empty}: no record is a usable paper" in capsys.readouterr().err


def test_output_directory_is_replaced_whole_or_not_at_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after negatives.parquet of a new run is written leaves the previous complete
    output (manifest, negatives and triplets of the old seed) and no temporary files."""
    import embtune.core.io as eio

    snap = _snapshot(tmp_path)
    out = tmp_path / "arxiv"
    assert _run(snap, out) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real, written = eio.write_parquet, []

    def fail_third(path: Path, frame: pl.DataFrame) -> None:
        if len(written) == 2:
            raise OSError("disk full (simulated)")
        real(path, frame)
        written.append(Path(path).name)

    monkeypatch.setattr(eio, "write_parquet", fail_third)
    with pytest.raises(OSError, match="simulated"):
        _run(snap, out, "--seed", "5")
    assert written[0] == "negatives.parquet"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arxiv", "snap.json"]

    monkeypatch.setattr(eio, "write_parquet", real)
    (out / "stale.parquet").write_bytes(b"old")
    assert _run(snap, out, "--seed", "5") == 0
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(after) == set(before), "the new directory replaces the old one whole"
    assert after["negatives.parquet"] != before["negatives.parquet"]  # the seed's 21st changed
    assert json.loads(after["manifest.json"])["params"]["seed"] == 5


def test_the_demo_snapshot_has_no_single_sentence_abstract() -> None:
    """docs/fidelity.md#P2-ARXIV-SINGLE-SENTENCE: on the shipped demo snapshot no arxiv-first row is
    dropped, so arxiv-first and arxiv-title have the same N, as Table 3's 253,140 for both. Every
    abstract holds a sentence end followed by more text, and the split keeps all of it."""
    snap = Path(__file__).resolve().parents[3] / "data/demo/arxiv/arxiv-metadata-oai-snapshot.json"
    abstracts = [" ".join(json.loads(line)["abstract"].split()) for line in snap.open()]
    assert len(abstracts) == 2400
    assert all(re.search(r"[.!?] \S", a) for a in abstracts)        # more than one sentence, by eye's rule
    for a in abstracts:
        first, rest = an.split_first_sentence(a)
        assert first and rest and f"{first} {rest}" == a
