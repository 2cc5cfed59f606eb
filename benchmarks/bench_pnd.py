"""Benchmark of PND counting at full XNLI size, and of the embedding cache's encoder savings.

Run: ``.venv/bin/python benchmarks/bench_pnd.py [--dim 384] [--brute-pairs 10] [--threads 2]``
and ``... --paper-eval [--scale 1.0]`` (``make gpu-check``; see 3.)

1. Synthetic float32 embeddings at full XNLI test size (15 languages, 1,670 pairs per label):
   times all 225 language pairs x 2 relations x 2 measures with the O(n log n) sort+searchsorted
   counter, then brute force (the materialised 1,670 x 1,670 comparison matrix) on a subset of
   language pairs, checks the counts are identical, and prints the time ratio.
2. Encoder forward passes of a demo-like evaluation (base model + several tuned query towers on
   msmarco / arxiv-first / arxiv-title / xnli) through :class:`EmbedCache` with a counting fake
   encoder, against naive per-dataset encoding.
3. ``--paper-eval``: one encoder's whole paper-2 evaluation at the paper's sizes, timed: MSMARCO
   (7,000 samples, 357,642 triplets), arxiv-first and arxiv-title (253,140 triplets each) and XNLI
   (15 x 15 languages, 1,670 pairs per label x 3 labels), through the pipeline's own
   ``evaluate_triplets`` / ``evaluate_xnli`` and :class:`EmbedCache`, with a randomly initialised
   multilingual-e5-small-shaped encoder (BERT, d 384, 12 layers, 12 heads, vocabulary 250,037;
   speed does not depend on the weights) behind sentence-transformers, and synthetic texts of
   typical token lengths (each word one token). Target (printed, not asserted): <= 3 min on one
   H100; paper 2 (section on execution time): "about 1.2-1.3 hours" on an A100. ``--scale``
   shrinks every count (e.g. 0.001 for a CPU smoke run).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def xnli_embeddings(n_per_label: int, dim: int, languages: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.array(["entailment", "neutral", "contradiction"]), n_per_label)
    base = rng.normal(size=(labels.size, dim)).astype(np.float32)
    prem, hyp = {}, {}
    for k in range(languages):
        lang = f"l{k:02d}"
        prem[lang] = base + 0.5 * rng.normal(size=base.shape).astype(np.float32)
        noise = np.where((labels == "entailment")[:, None], 0.8, 1.0).astype(np.float32)
        hyp[lang] = base + noise * rng.normal(size=base.shape).astype(np.float32)
    return prem, hyp, labels


def brute_counts(prem, hyp, labels, pairs, measures=("cos", "dist")) -> tuple[list[dict], float]:
    """Reference: the full n_ent x n_other boolean matrix per pair (what searchsorted avoids)."""
    import numpy as np

    from embtune.evaluate.pnd import closeness

    rows, start = [], time.perf_counter()
    for measure in measures:
        for a, b in pairs:
            score = closeness(prem[a], hyp[b], measure)
            ent = score[labels == "entailment"]
            for rel in ("neutral", "contradiction"):
                other = score[labels == rel]
                errors = int(np.count_nonzero(ent[:, None] <= other[None, :]))
                rows.append({"query_lang": a, "text_lang": b, "relation": rel, "measure": measure,
                             "errors": errors, "total": ent.size * other.size})
    return rows, time.perf_counter() - start


def bench_xnli(dim: int, brute_pairs: int) -> None:
    from embtune.evaluate.pnd import xnli_pnd

    prem, hyp, labels = xnli_embeddings(1670, dim, 15)
    start, cpu = time.perf_counter(), time.process_time()
    rows = xnli_pnd(prem, hyp, labels)
    fast, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"[xnli] 15 languages x 1,670 pairs/label, dim {dim}: {len(rows)} counts "
          f"(225 pairs x 2 relations x 2 measures) in {fast:.2f} s wall, {cpu:.2f} s CPU")
    langs = sorted(prem)
    subset = [(langs[i % 15], langs[(3 * i + 1) % 15]) for i in range(brute_pairs)]
    ref, brute = brute_counts(prem, hyp, labels, subset)
    fast_sub = {(r["query_lang"], r["text_lang"], r["relation"], r["measure"]): r for r in rows}
    for r in ref:
        got = fast_sub[(r["query_lang"], r["text_lang"], r["relation"], r["measure"])]
        assert (got["errors"], got["total"]) == (r["errors"], r["total"]), (got, r)
    per_pair_fast, per_pair_brute = fast / 225, brute / brute_pairs
    print(f"[xnli] brute force on {brute_pairs} language pairs: {brute:.2f} s; counts identical. "
          f"Per language pair (2 relations x 2 measures, scores included): fast "
          f"{per_pair_fast * 1e3:.1f} ms, brute {per_pair_brute * 1e3:.1f} ms "
          f"(brute/fast = {per_pair_brute / per_pair_fast:.2f}x); extrapolated brute for 225 pairs: "
          f"{per_pair_brute * 225:.1f} s")
    bench_counting_only()


def bench_counting_only() -> None:
    """The comparison step alone (scores given), where sorting replaces the n^2 matrix."""
    import numpy as np

    from embtune.evaluate.pnd import count_not_closer

    rng = np.random.default_rng(1)
    ent, other = rng.normal(size=1670), rng.normal(size=1670)
    reps = 200
    t0 = time.perf_counter()
    for _ in range(reps):
        fast = count_not_closer(ent, other)
    t1 = time.perf_counter()
    for _ in range(reps):
        brute = int(np.count_nonzero(ent[:, None] <= other[None, :]))
    t2 = time.perf_counter()
    assert fast == brute
    print(f"[xnli] counting only, 1,670 x 1,670: searchsorted {(t1 - t0) / reps * 1e3:.3f} ms vs "
          f"matrix {(t2 - t1) / reps * 1e3:.3f} ms ({(t2 - t1) / (t1 - t0):.1f}x)")


class CountingEncoder:
    """Fake encoder: deterministic vectors, counts calls (= forward passes)."""

    precision = "fp32"

    def __init__(self) -> None:
        self.passes = 0

    def encode(self, texts: list[str], batch_size: int):
        import numpy as np

        self.passes += 1
        return np.ones((len(texts), 8), dtype=np.float32)


def demo_like_data(seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Text occurrences per dataset and tower, shaped like the demo preset's evaluation.

    msmarco: 150 samples, 1-2 positives, 8-20 negatives from a shared passage pool;
    arxiv: 300 papers, negatives are other papers' abstracts (first/title share abstracts);
    xnli: 15 languages, 50 pairs per label, each premise shared by its 3 hypotheses."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = [f"passage {i}" for i in range(1500)]
    q, d = [], []
    for s in range(150):
        q.append(f"query {s}")
        d += [pool[i] for i in rng.integers(0, len(pool), rng.integers(1, 3) + rng.integers(8, 21))]
    data = {"msmarco": {"query": q, "doc": d}}
    abstracts = [f"abstract {i}" for i in range(300)]
    rest = [f"rest of abstract {i}" for i in range(300)]
    neg = rng.integers(0, 300, 300)
    data["arxiv-first"] = {"query": [f"first sentence {i}" for i in range(300)],
                           "doc": rest + [rest[j] for j in neg]}
    data["arxiv-title"] = {"query": [f"title {i}" for i in range(300)],
                           "doc": abstracts + [abstracts[j] for j in neg]}
    langs = [f"l{k}" for k in range(15)]
    data["xnli"] = {"query": [f"premise {p // 3} {lang}" for lang in langs for p in range(150)],
                    "doc": [f"hypothesis {p} {lang}" for lang in langs for p in range(150)]}
    return data


def naive_passes(data: dict[str, dict[str, list[str]]], batch_size: int) -> tuple[int, int]:
    """(per-dataset, no dedup; XNLI re-encoded per language pair) and (per-dataset dedup)."""
    ceil = lambda n: -(-n // batch_size)  # noqa: E731
    plain = dedup = 0
    for name, towers in data.items():
        for texts in towers.values():
            dedup += ceil(len(set(texts)))
            per_lang = len(texts) // 15 if name == "xnli" else len(texts)
            plain += (225 * ceil(per_lang)) if name == "xnli" else ceil(per_lang)
    return plain, dedup


def bench_cache(batch_size: int, query_runs: int) -> None:
    from embtune.models.embed_cache import EmbedCache

    data = demo_like_data()
    plain, dedup = naive_passes(data, batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        passes = []
        for run in range(query_runs + 2):  # base, tuned query towers, then a re-run of the last
            cache, enc = EmbedCache(tmp, progress=False), CountingEncoder()
            qfp = "base" if run == 0 else f"query-{min(run, query_runs)}"
            for towers in data.values():
                cache.embed(enc, qfp, "query", "", towers["query"], batch_size)
                cache.embed(enc, "base", "doc", "", towers["doc"], batch_size)
            assert enc.passes == cache.stats.forward_passes
            passes.append(cache.stats.forward_passes)
    n_evals = query_runs + 1
    print(f"[cache] demo-like evaluation (batch {batch_size}), forward passes per evaluation: "
          f"naive per-dataset {plain} (XNLI per language pair), naive with per-dataset dedup "
          f"{dedup}; cached: base model {passes[0]}, each tuned query tower {passes[1]}, "
          f"re-run {passes[-1]}")
    print(f"[cache] base + {query_runs} query towers: naive {plain * n_evals}, "
          f"dedup {dedup * n_evals}, cached {sum(passes[:-1])} forward passes")


# Paper sizes (paper 2, App. A/B; Table 3) and typical token lengths (mean; uniform +-50 %).
PAPER = {"msmarco_samples": 7000, "msmarco_triplets": 357_642, "arxiv_triplets": 253_140,
         "xnli_languages": 15, "xnli_per_label": 1670}
TOKENS = {"msmarco_query": 10, "msmarco_passage": 80, "arxiv_first": 35, "arxiv_title": 15,
          "arxiv_rest": 200, "arxiv_abstract": 230, "xnli_premise": 30, "xnli_hypothesis": 15}
E5_SMALL = {"vocab_size": 250_037, "hidden_size": 384, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 1536, "max_position_embeddings": 512}


class TextMaker:
    """Unique synthetic texts of ~n tokens: a serial-number word, then single-token words."""

    def __init__(self, words: list[str], seed: int = 0) -> None:
        import numpy as np

        self.words, self.rng, self.serial = np.asarray(words), np.random.default_rng(seed), 0

    def __call__(self, count: int, mean_tokens: int) -> list[str]:
        lengths = self.rng.integers(max(1, mean_tokens // 2), mean_tokens * 3 // 2 + 1, count)
        flat = self.words[self.rng.integers(0, len(self.words), int(lengths.sum()))].tolist()
        out, pos = [], 0
        for n in lengths.tolist():
            out.append(f"t{self.serial} " + " ".join(flat[pos:pos + n - 1]))
            pos += n - 1
            self.serial += 1
        return out


def paper_eval_data(make: TextMaker, scale: float):
    """TripletSets for msmarco / arxiv-first / arxiv-title and an XnliTable at ``scale`` x paper size.

    MSMARCO: one positive and ~51 negatives per sample (all pairs = the triplet count); arxiv: one
    anchor, positive and negative per row, negatives drawn from the other rows' positives; XNLI:
    each premise shared by its 3 hypotheses (one per label), as in the XNLI test set."""
    import numpy as np

    from embtune.evaluate.pnd_eval import TripletSet, XnliTable

    rng = np.random.default_rng(1)
    n_s = max(1, round(PAPER["msmarco_samples"] * scale))
    n_neg = max(1, round(PAPER["msmarco_triplets"] * scale))
    data = {"msmarco": TripletSet(make(n_s, TOKENS["msmarco_query"]), make(n_s, TOKENS["msmarco_passage"]),
                                  np.arange(n_s), make(n_neg, TOKENS["msmarco_passage"]),
                                  np.sort(rng.integers(0, n_s, n_neg)))}
    n_a = max(2, round(PAPER["arxiv_triplets"] * scale))
    for flavour, anchor, doc in (("first", "arxiv_first", "arxiv_rest"), ("title", "arxiv_title", "arxiv_abstract")):
        pos = make(n_a, TOKENS[doc])
        other = (np.arange(n_a) + rng.integers(1, n_a, n_a)) % n_a            # never the row itself
        data[f"arxiv-{flavour}"] = TripletSet(make(n_a, TOKENS[anchor]), pos, np.arange(n_a),
                                              [pos[j] for j in other], np.arange(n_a))
    per = max(2, round(PAPER["xnli_per_label"] * scale))
    langs = [f"l{k:02d}" for k in range(PAPER["xnli_languages"])]
    labels = np.tile(np.array(["entailment", "neutral", "contradiction"]), per)
    premises = {lang: [p for p in make(per, TOKENS["xnli_premise"]) for _ in range(3)] for lang in langs}
    hypotheses = {lang: make(3 * per, TOKENS["xnli_hypothesis"]) for lang in langs}
    data["xnli"] = XnliTable(np.arange(3 * per), labels, premises, hypotheses)
    return data


def e5_small_shaped(folder: str):
    """A randomly initialised multilingual-e5-small-shaped sentence-transformers folder (mean
    pooling, max_seq_length 512) with a byte-level BPE trained in memory; returns the path."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_train import _tokenizer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:                                  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer

    tok = _tokenizer(None)
    torch.manual_seed(0)
    model = BertModel(BertConfig(**E5_SMALL, pad_token_id=tok.pad_token_id), add_pooling_layer=False)
    hf_dir, st_dir = os.path.join(folder, "hf"), os.path.join(folder, "st")
    model.save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    st = SentenceTransformer(modules=[Transformer(hf_dir, max_seq_length=512),
                                      Pooling(E5_SMALL["hidden_size"], "mean")], device="cpu")
    st.save(st_dir)
    return st_dir, tok


def bench_paper_eval(scale: float, batch_size: int) -> float:
    """Embed + count one encoder's whole evaluation; prints per-dataset times; returns seconds."""
    import re

    import torch
    import transformers

    transformers.logging.set_verbosity_error()          # "newly initialized" weights are the point here
    transformers.utils.logging.disable_progress_bar()
    from embtune.evaluate.pnd_eval import Towers, evaluate_triplets, evaluate_xnli
    from embtune.models.embed_cache import EmbedCache
    from embtune.models.encoders import SentenceTransformerEncoder

    with tempfile.TemporaryDirectory() as tmp:
        path, tok = e5_small_shaped(tmp)
        words = sorted(t[1:] for t in tok.get_vocab() if re.fullmatch(r"\u0120[a-z]+", t))
        t0 = time.perf_counter()
        data = paper_eval_data(TextMaker(words), scale)
        print(f"[paper-eval] synthetic texts built in {time.perf_counter() - t0:.1f} s (untimed)")
        encoder = SentenceTransformerEncoder(path)
        towers = Towers(encoder, "e5-small-shaped", encoder, "e5-small-shaped", "query: ", "passage: ")
        cache = EmbedCache(os.path.join(tmp, "cache"), progress=False)
        encoder.encode(["warm up"] * 8, 8)
        device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        total = 0.0
        for name, table in data.items():
            start = time.perf_counter()
            if name == "xnli":
                evaluate_xnli(table, cache, towers, batch_size, ("cos", "dist"))
            else:
                evaluate_triplets(table, cache, towers, batch_size, ("cos", "dist"))
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            took = time.perf_counter() - start
            total += took
            print(f"[paper-eval] {name}: {took:.1f} s")
        stats = cache.stats.as_dict()
    print(f"[paper-eval] {device}, scale {scale:g}, batch {batch_size}: one encoder's full evaluation "
          f"(msmarco + arxiv-first + arxiv-title + xnli, embedding + counting) {total:.1f} s "
          f"= {total / 60:.2f} min; encoder calls {stats}")
    print(f"[paper-eval] target <= 3 min on one H100 at scale 1 (paper 2: 1.2-1.3 h on an A100): "
          f"{'met' if total <= 180 else 'NOT met'}" + ("" if scale == 1 else " (scaled run: not comparable)"))
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--brute-pairs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=None,
                    help="encoder batch (default: 64 for the cache count, 256 = evaluate.pnd.batch_size for --paper-eval)")
    ap.add_argument("--query-runs", type=int, default=4)
    ap.add_argument("--paper-eval", action="store_true",
                    help="only time one encoder's whole paper-2 evaluation at paper size (GPU)")
    ap.add_argument("--scale", type=float, default=1.0, help="--paper-eval: fraction of the paper's sizes")
    args = ap.parse_args(argv)
    _set_threads(args.threads)
    if args.paper_eval:
        bench_paper_eval(args.scale, args.batch_size or 256)
        return 0
    bench_xnli(args.dim, args.brute_pairs)
    bench_cache(args.batch_size or 64, args.query_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
