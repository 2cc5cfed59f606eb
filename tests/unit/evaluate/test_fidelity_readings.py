"""The reading options of docs/fidelity.md, each against a reference written here.

Logit scale (P1-LOGIT-SCALE), peak-LR clipping (P1-LR-PEAK), PND ties (P2-PND-TIES), the XNLI
text prefix (P2-XNLI-PREFIX), and that params.yaml's defaults are the ledger's defaults.
"""

from __future__ import annotations

import copy
import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from embtune.evaluate.pnd import count_not_closer, grouped_errors, triplet_set_pnd, xnli_pnd
from embtune.evaluate.pnd_eval import Towers, XnliTable, evaluate_xnli
from embtune.models.embed_cache import EmbedCache
from embtune.plan.config import ParamsError, validate
from embtune.plan.sweep import peak_lr, training_runs
from embtune.train.losses import logit_scale, symmetric_infonce

REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ P1-LOGIT-SCALE
def _infonce_by_hand(q: list[list[float]], p: list[list[float]], scale: float) -> float:
    """Symmetric InfoNCE with plain floats: logits[i][j] = cos(q_i, p_j) * scale."""
    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))

    n = len(q)
    s = [[cos(q[i], p[j]) * scale for j in range(n)] for i in range(n)]
    rows = sum(math.log(sum(math.exp(v) for v in s[i])) - s[i][i] for i in range(n)) / n
    cols = sum(math.log(sum(math.exp(s[k][j]) for k in range(n))) - s[j][j] for j in range(n)) / n
    return (rows + cols) / 2


def test_logit_scale_forms_by_hand() -> None:
    q = [[1.0, 0.10, 0.10], [1.0, 0.15, 0.05], [1.0, 0.05, 0.12]]   # cosines 0.99-1: loss O(1)
    p = [[1.0, 0.12, 0.08], [1.0, 0.13, 0.06], [1.0, 0.07, 0.10]]
    tq, tp = torch.tensor(q), torch.tensor(p)
    # App. D: tau = 0.025 -> logits = 40 cos
    assert symmetric_infonce(tq, tp, 0.025).item() == pytest.approx(_infonce_by_hand(q, p, 40.0), rel=1e-5)
    # §3.3 as printed: logits = cos * exp(tau); exp(0.025) = 1.0253...: an almost flat softmax
    got = symmetric_infonce(tq, tp, 0.025, "exp").item()
    assert got == pytest.approx(_infonce_by_hand(q, p, math.exp(0.025)), rel=1e-6)
    assert abs(got - math.log(3)) < 0.01    # ~ the uniform-guess loss ln n: nothing to learn from
    assert logit_scale(math.log(40.0), "exp") == pytest.approx(40.0)
    with pytest.raises(ValueError, match="logit_scale form"):
        logit_scale(0.025, "log")


# ------------------------------------------------------------------ P1-LR-PEAK
def test_peak_lr_divisor_rule_and_optional_clip(paper: dict) -> None:
    models = {m["name"]: m for m in paper["models"]}
    train = copy.deepcopy(paper["train"])
    # App. D.1 and the authors' MODEL_TO_LR / 10: 14M-70M 1e-3 -> 1e-4, 2.8B 1.6e-4 -> 1.6e-5
    assert peak_lr(models["pythia-14m"], "full", train) == pytest.approx(1.0e-4)
    assert peak_lr(models["pythia-2.8b"], "freeze", train) == pytest.approx(1.6e-5)
    assert peak_lr(models["pythia-2.8b"], "lora", train) == pytest.approx(1.0e-3)    # Table 3
    assert peak_lr(models["pythia-2.8b"], "bias", train) == pytest.approx(1.0e-2)    # Table 4
    train["peak_lr_range"] = [1.2e-5, 6.0e-5]                                       # §4.1 as printed
    assert peak_lr(models["pythia-14m"], "full", train) == pytest.approx(6.0e-5)
    assert peak_lr(models["pythia-160m"], "full", train) == pytest.approx(6.0e-5)
    assert peak_lr(models["pythia-2.8b"], "freeze", train) == pytest.approx(1.6e-5)  # inside: unchanged
    assert peak_lr(models["pythia-2.8b"], "lora", train) == pytest.approx(1.0e-3)    # overrides not clipped
    train["peak_lr_range"] = [6.0e-5, 1.2e-5]
    with pytest.raises(ValueError, match="peak_lr_range"):
        peak_lr(models["pythia-14m"], "full", train)


def test_ledger_defaults_are_the_params_defaults(paper: dict) -> None:
    t, e = paper["train"], paper["evaluate"]
    assert (t["logit_scale"], t["temperature"], t["final_lr_fraction"], t["warmup_fraction"]) == \
        ("inverse", 0.025, 0.0, 0.1)
    assert t["peak_lr_range"] is None and t["lr_divisor"] == 10
    assert e["mteb"]["max_length"] is None
    assert (e["pnd"]["ties"], e["pnd"]["xnli_text_prefix"]) == ("error", "doc")
    run = next(r for r in training_runs(paper)[0] if r["method"] == "full")
    assert run["train"]["logit_scale"] == "inverse" and run["train"]["final_lr_fraction"] == 0.0


@pytest.mark.parametrize("key,value,needle", [
    (("train", "logit_scale"), "log", "train.logit_scale"),
    (("train", "peak_lr_range"), [1e-5], "train.peak_lr_range"),
    (("evaluate", "pnd", "ties"), "half", "evaluate.pnd.ties"),
    (("evaluate", "mteb", "max_length"), 0, "evaluate.mteb.max_length"),
])
def test_bad_reading_option_names_the_key(paper: dict, key: tuple, value: object, needle: str) -> None:
    params = copy.deepcopy(paper)
    node = params
    for k in key[:-1]:
        node = node[k]
    node[key[-1]] = value
    with pytest.raises(ParamsError, match=needle.replace(".", r"\.")):
        validate(params)


# ------------------------------------------------------------------ P2-PND-TIES
def _brute(pos: list[float], neg: list[float], ties: str) -> int:
    if ties == "error":
        return sum(1 for p in pos for n in neg if not p > n)
    return sum(1 for p in pos for n in neg if p < n)


@pytest.mark.parametrize("ties", ["error", "not_error"])
def test_tie_rule_against_brute_force(ties: str) -> None:
    assert count_not_closer(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.5]), ties) == \
        {"error": 4, "not_error": 2}[ties]          # pos 2.0 ties twice with the two 2.0 negatives
    rng = np.random.default_rng(5)
    pos, neg = rng.integers(0, 5, 300).astype(float), rng.integers(0, 5, 200).astype(float)
    assert count_not_closer(pos, neg, ties) == _brute(list(pos), list(neg), ties)
    pg, ng = rng.integers(0, 6, 300), rng.integers(0, 6, 200)
    errors, totals = grouped_errors(pos, pg, neg, ng, 6, ties)
    for g in range(6):
        assert errors[g] == _brute(list(pos[pg == g]), list(neg[ng == g]), ties)
        assert totals[g] == (pg == g).sum() * (ng == g).sum()


def test_tie_rule_in_triplet_sets_and_xnli() -> None:
    """A negative identical to the positive is a tie; only ``error`` counts it."""
    q = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    pos = np.array([[1.0, 1.0], [0.0, 1.0]], np.float32)
    neg = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], np.float32)   # rows 0 and 2 tie
    pq, nq = np.array([0, 1]), np.array([0, 0, 1])
    # query 0: one tie and one strictly closer negative; query 1: one tie
    for measure in ("cos", "dist"):
        assert triplet_set_pnd(q, pos, pq, neg, nq, measure, "error").errors == 3
        assert triplet_set_pnd(q, pos, pq, neg, nq, measure, "not_error").errors == 1
    prem = {"en": np.array([[1.0, 0.0], [1.0, 0.0]], np.float32)}
    hyp = {"en": np.array([[1.0, 0.2], [1.0, 0.2]], np.float32)}     # entailment pair == neutral pair
    labels = np.array(["entailment", "neutral"])
    rows = {t: xnli_pnd(prem, hyp, labels, ("cos",), ("neutral",), ties=t)[0]["errors"]
            for t in ("error", "not_error")}
    assert rows == {"error": 1, "not_error": 0}
    with pytest.raises(ValueError, match="ties rule"):
        count_not_closer(pos[:, 0], neg[:, 0], "maybe")  # type: ignore[arg-type]


# ------------------------------------------------------------------ P2-XNLI-PREFIX
class HashEncoder:
    """Deterministic fake encoder (text hash -> vector); records the texts it is given."""

    precision = "fp32"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.seen += texts
        return np.stack([_vec(t) for t in texts])


def _vec(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).normal(size=3).astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("text_prefix,expected", [("doc", "passage: "), ("query", "query: ")])
def test_xnli_text_prefix(tmp_path: Path, text_prefix: str, expected: str) -> None:
    labels = np.array(["entailment", "neutral", "contradiction", "entailment", "neutral"])
    premises = {"en": [f"premise {i}" for i in range(5)], "de": [f"Prämisse {i}" for i in range(5)]}
    hypotheses = {"en": [f"hypothesis {i}" for i in range(5)], "de": [f"Hypothese {i}" for i in range(5)]}
    table = XnliTable(np.arange(5), labels, premises, hypotheses)
    qenc, denc = HashEncoder(), HashEncoder()
    towers = Towers(qenc, "q-fp", denc, "d-fp", "query: ", "passage: ")
    rows = evaluate_xnli(table, EmbedCache(tmp_path, progress=False), towers, 8, ["cos"],
                         text_prefix=text_prefix)
    # premises always go to the query tower with "query: "; hypotheses to the document tower
    assert sorted(qenc.seen) == sorted("query: " + t for ts in premises.values() for t in ts)
    assert sorted(denc.seen) == sorted(expected + t for ts in hypotheses.values() for t in ts)
    ent, neu = np.flatnonzero(labels == "entailment"), np.flatnonzero(labels == "neutral")
    for row in rows:
        if row["relation"] != "neutral":
            continue
        a, b = row["query_lang"], row["text_lang"]
        score = [_cos(_vec("query: " + premises[a][k]), _vec(expected + hypotheses[b][k])) for k in range(5)]
        assert row["errors"] == sum(1 for i in ent for j in neu if not score[i] > score[j])
        assert row["total"] == len(ent) * len(neu)
    with pytest.raises(ValueError, match="XNLI text prefix"):
        evaluate_xnli(table, EmbedCache(tmp_path, progress=False), towers, 8, ["cos"], text_prefix="none")
