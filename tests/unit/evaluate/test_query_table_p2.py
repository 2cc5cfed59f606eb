"""Paper 2 App. K and Table 2 through evaluate-pnd's library and query-table, in process.

Encoders are deterministic fakes (an embedding drawn from a seed hashed from the text), so the
expected numbers are recomputed here by brute force: plain loops over every (positive, negative)
pair for PND and a full sort per query for MRR / MAP / P@1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from embtune.core.errors import DataError
from embtune.core.io import write_json
from embtune.core.layout import Processed
from embtune.evaluate import pnd_eval
from embtune.models.embed_cache import EmbedCache
from embtune.stages import query_table

DIM = 6


class FakeEncoder:
    """Embeds a text as a normal vector seeded by (salt, text); records every text it encodes."""

    precision = "fp32"

    def __init__(self, salt: str) -> None:
        self.salt = salt
        self.encoded: list[str] = []

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(f"{self.salt}\0{text}".encode()).digest()[:8], "little")
        return np.random.default_rng(seed).normal(size=DIM).astype(np.float32)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.encoded += texts
        return np.stack([self.vector(t) for t in texts])


CATEGORIES = ["math.NT", "math-ph hep-th", "cs.LG math.OC", "physics.optics", "cs.CL", "quant-ph",
              "math.AG", "astro-ph.GA", "cs.IR stat.ML", "hep-ex"]


def _write_data(root: Path) -> dict[str, pl.DataFrame]:
    """arxiv-first/-title triplets with categories; grouped sets for msmarco and the Table 2 sets."""
    (root / "arxiv").mkdir(parents=True)
    frames = {}
    for flavour in ("first", "title"):
        n = len(CATEGORIES)
        frames[f"arxiv-{flavour}"] = pl.DataFrame({
            "anchor": [f"{flavour} anchor {i}" for i in range(n)],
            "positive": [f"abstract {i}" for i in range(n)],
            "negative": [f"abstract {(i + 3) % n}" for i in range(n)],   # texts repeat: cache hits
            "paper_id": [str(i) for i in range(n)], "categories": CATEGORIES})
        frames[f"arxiv-{flavour}"].write_parquet(root / "arxiv" / f"triplets_{flavour}_L21.parquet")
    rng = np.random.default_rng(0)
    for name in ("msmarco", "msmarco-hard", "squad", "squad-min5", "hotpotqa-easy",
                 "hotpotqa-medium", "hotpotqa-hard"):
        rows = [{"query": f"{name} q{i}",
                 "positives": [f"{name} doc {i}.{j}" for j in range(rng.integers(1, 3))],
                 "negatives": [f"shared doc {k}" for k in rng.choice(12, rng.integers(1, 6), replace=False)]}
                for i in range(8)]
        frames[name] = pl.DataFrame(rows)
        path = Processed(root).pnd_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        frames[name].write_parquet(path)
    return frames


def _towers(query: FakeEncoder, doc: FakeEncoder) -> pnd_eval.Towers:
    return pnd_eval.Towers(query, f"fp-{query.salt}", doc, f"fp-{doc.salt}", "q: ", "d: ")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


def _score(q: np.ndarray, t: np.ndarray, measure: str) -> float:
    q64, t64 = q.astype(np.float64), t.astype(np.float64)
    return float(_unit(q64) @ _unit(t64)) if measure == "cos" else -float(np.linalg.norm(q64 - t64))


def _brute(queries: list[tuple[str, list[str], list[str]]], qenc: FakeEncoder, denc: FakeEncoder,
           measure: str) -> dict[str, float]:
    """Averaged PND, pooled counts, MRR, MAP, P@1 by definition (ties pessimistic)."""
    pnd, errors, total, rr, ap, p1 = [], 0, 0, [], [], []
    for query, pos, neg in queries:
        q = qenc.vector("q: " + query)
        sp = [_score(q, denc.vector("d: " + t), measure) for t in pos]
        sn = [_score(q, denc.vector("d: " + t), measure) for t in neg]
        err = sum(a <= b for a in sp for b in sn)
        errors, total = errors + err, total + len(sp) * len(sn)
        pnd.append(err / (len(sp) * len(sn)))
        ranked = sorted([(s, 0) for s in sp] + [(s, 1) for s in sn], key=lambda x: (-x[0], -x[1]))
        rel = [lab == 0 for _, lab in ranked]
        rr.append(1 / (rel.index(True) + 1))
        hits = np.cumsum(rel)
        ap.append(sum(hits[i] / (i + 1) for i, r in enumerate(rel) if r) / sum(rel))
        p1.append(float(rel[0]))
    return {"pnd": float(np.mean(pnd)), "errors": errors, "total": total, "mrr": float(np.mean(rr)),
            "map": float(np.mean(ap)), "p_at_1": float(np.mean(p1))}


def _rows(frame: pl.DataFrame, arxiv: bool, drop_domain: str | None = None):
    if arxiv:
        keep = [r for r in frame.iter_rows(named=True) if drop_domain is None or not any(
            c.startswith(drop_domain + ".") for c in r["categories"].split())]
        return [(r["anchor"], [r["positive"]], [r["negative"]]) for r in keep]
    return [(r["query"], r["positives"], r["negatives"]) for r in frame.iter_rows(named=True)]


ALL = ["msmarco", "msmarco-hard", "arxiv-first", "arxiv-title", "squad", "squad-min5",
       "hotpotqa-easy", "hotpotqa-medium", "hotpotqa-hard"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory):
    """A base evaluation and two tuned runs (default regime, tuned on arxiv-math) of one model,
    as the workflow runs them: the same --exclude-domains for all three, one shared cache."""
    root = tmp_path_factory.mktemp("p2")
    frames = _write_data(root / "data")
    cache = EmbedCache(root / "cache", progress=False)
    doc = FakeEncoder("doc")
    encoders = {"base": doc, "default": FakeEncoder("tuned-default"),
                "train_data-arxiv-math": FakeEncoder("tuned-math")}
    calls = {}
    for run, query in encoders.items():
        before = cache.stats.texts_encoded
        result, xnli = pnd_eval.evaluate_datasets(
            ALL, root / "data", cache, _towers(query, doc), 4, ["cos", "dist"],
            exclude_domains=["math", "cs"], log=lambda _: None)
        calls[run] = cache.stats.texts_encoded - before
        run_dir = root / "query_runs" / "m1" / run
        write_json(run_dir / "pnd.json", result)
        pl.DataFrame(xnli, schema=pnd_eval.XNLI_COUNT_SCHEMA).write_parquet(run_dir / "xnli_counts.parquet")
        if run != "base":
            write_json(run_dir / "metrics.json", {"status": "ok"})
            train_data = "arxiv-math" if "math" in run else "msmarco"
            write_json(run_dir / "manifest.json", {"run_config": {
                "sweep": "default" if run == "default" else "train_data", "lr_effective": 5e-8,
                "train_data": train_data}})
    out = root / "table"
    assert query_table.main(["--query-runs-dir", str(root / "query_runs"), "--out", str(out)]) == 0
    return {"root": root, "frames": frames, "encoders": encoders, "calls": calls, "out": out,
            "cache": cache}


def test_every_text_is_embedded_once(sweep) -> None:
    enc = sweep["encoders"]
    docs = enc["base"].encoded
    assert len(docs) == len(set(docs))          # the document tower: each text once, for all runs
    for run, e in enc.items():
        if run != "base":
            assert len(e.encoded) == len(set(e.encoded))
    # the base query side (same encoder as the documents): its arxiv anchors once, no re-embedding
    # for the App. K subsets, which only re-score cached embeddings
    n_queries = sum(f.height for n, f in sweep["frames"].items() if not n.startswith("arxiv")) + \
        sum(sweep["frames"][n].height for n in ("arxiv-first", "arxiv-title"))
    assert sweep["calls"]["default"] == n_queries  # a tuned run encodes only its queries
    assert sweep["cache"].stats.texts_requested > sweep["cache"].stats.texts_encoded


def test_subset_entries_come_from_the_cache(tmp_path: Path) -> None:
    """Scoring the App. K variants after the full sets costs no forward pass (cache counters)."""
    _write_data(tmp_path / "data")
    cache, enc = EmbedCache(tmp_path / "cache", progress=False), FakeEncoder("x")
    towers = _towers(enc, enc)
    pnd_eval.evaluate_datasets(["arxiv-first", "arxiv-title"], tmp_path / "data", cache, towers, 4,
                               ["cos"], log=lambda _: None)
    encoded, requested = cache.stats.texts_encoded, cache.stats.texts_requested
    result, _ = pnd_eval.evaluate_datasets(["arxiv-first", "arxiv-title"], tmp_path / "data", cache,
                                           towers, 4, ["cos"], exclude_domains=["math", "physics"],
                                           log=lambda _: None)
    assert cache.stats.texts_encoded == encoded and cache.stats.forward_passes > 0
    assert cache.stats.texts_requested > requested
    assert sorted(result) == ["arxiv-first", "arxiv-first!math", "arxiv-first!physics",
                              "arxiv-title", "arxiv-title!math", "arxiv-title!physics"]
    # math.* rows: 0, 2, 6 (math-ph is not math); physics.*: 3 (astro-ph is not physics)
    assert result["arxiv-first!math"]["cos"]["total"] == 7
    assert result["arxiv-title!physics"]["cos"]["total"] == 9


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_narrow_run_is_compared_without_its_domain(sweep, measure: str) -> None:
    """App. K: the arxiv-math run against the base encoder on the arxiv rows without math.*
    (the crash this fixes: base scored on all of arxiv, the narrow run without its domain)."""
    long = pl.read_csv(sweep["out"] / "pnd_long.csv")
    enc, frames = sweep["encoders"], sweep["frames"]
    for ds in ("arxiv-first", "arxiv-title"):
        rows = _rows(frames[ds], True, "math")
        b = _brute(rows, enc["base"], enc["base"], measure)
        t = _brute(rows, enc["train_data-arxiv-math"], enc["base"], measure)
        got = long.filter((pl.col("qrun_id") == "train_data-arxiv-math") & (pl.col("dataset") == ds)
                          & (pl.col("measure") == measure)).row(0, named=True)
        assert got["eval_set"] == f"{ds}!math"
        assert (got["errors_base"], got["errors_tuned"], got["total"]) == (b["errors"], t["errors"], 7)
        assert got["improvement"] == pytest.approx(-100 * (t["pnd"] - b["pnd"]) / b["pnd"])
        # the default run keeps the full arxiv set
        full = long.filter((pl.col("qrun_id") == "default") & (pl.col("dataset") == ds)
                           & (pl.col("measure") == measure)).row(0, named=True)
        assert (full["eval_set"], full["total"]) == (ds, len(CATEGORIES))
    table1 = pl.read_csv(sweep["out"] / "table1.csv")
    row = table1.filter(pl.col("qrun_id") == "train_data-arxiv-math").row(0, named=True)
    got = long.filter((pl.col("qrun_id") == "train_data-arxiv-math")
                      & (pl.col("dataset") == "arxiv-first") & (pl.col("measure") == measure))
    assert row[f"arxiv-first_{measure[0]}_pct"] == pytest.approx(got["improvement"][0])


@pytest.mark.parametrize("measure", ["cos", "dist"])
def test_table2_matches_brute_force(sweep, measure: str) -> None:
    table2 = pl.read_csv(sweep["out"] / "table2.csv")
    enc, frames, m = sweep["encoders"], sweep["frames"], measure[0]
    assert set(table2["dataset"]) == set(ALL)
    for ds in ALL:
        rows = _rows(frames[ds], ds.startswith("arxiv"))
        b = _brute(rows, enc["base"], enc["base"], measure)
        t = _brute(rows, enc["default"], enc["base"], measure)
        got = table2.filter((pl.col("qrun_id") == "default") & (pl.col("dataset") == ds)).row(0, named=True)
        assert got[f"pnd_{m}_pct"] == pytest.approx(-100 * (t["pnd"] - b["pnd"]) / b["pnd"])
        for metric in ("mrr", "map", "p_at_1"):
            if b[metric] == 0:
                continue
            assert got[f"{metric}_{m}_pct"] == pytest.approx(100 * (t[metric] - b[metric]) / b[metric]), (ds, metric)
    md = (sweep["out"] / "table2.md").read_text()
    assert "## m1 / default" in md and "| squad-min5 |" in md and "MRR c%" in md
    assert "train_data-arxiv-math" not in md   # the markdown shows the default regime only


def test_base_without_the_subset_is_a_clear_error(sweep, tmp_path: Path) -> None:
    """An old base evaluation (no '!math' entries) next to a narrow run: named, not a crash on
    differing totals."""
    import shutil

    runs = tmp_path / "query_runs"
    shutil.copytree(sweep["root"] / "query_runs", runs)
    base = json.loads((runs / "m1" / "base" / "pnd.json").read_text())
    write_json(runs / "m1" / "base" / "pnd.json", {k: v for k, v in base.items() if "!" not in k})
    with pytest.raises(DataError, match=r"m1/base/pnd.json: no 'arxiv-first!math' entry.*"
                                        r"--exclude-domains math"):
        query_table.main(["--query-runs-dir", str(runs), "--out", str(tmp_path / "out")])


def test_report_carries_tables_1_and_2(sweep) -> None:
    from embtune.plots.report import query_table_sections

    text = query_table_sections(sweep["out"])
    assert "## Query-tower tuning: improvement (%) on the Table 2 datasets" in text
    assert "### m1 / default" in text and "| hotpotqa-hard |" in text
    assert "## Query-tower tuning: PND improvement (%) vs the untuned encoder" in text
    assert query_table_sections(None) == "" and query_table_sections(sweep["root"]) == ""
