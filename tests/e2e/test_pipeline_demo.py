"""The demo pipeline end to end through Snakemake (reduced: presets/test.yaml over the demo).

Runs the real workflow on a copy of the repo: tokenizer training, tiny-suite pre-training, data
prep of every shipped source, the FLOP-budgeted training grid, MTEB (through mteb) and PND
evaluation, query-tower tuning, scaling fits, recipe and figures — and checks what it produced.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers_pipeline import snakemake

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
_snakemake = snakemake          # demo_run: the session's finished demo (conftest.py)


def test_every_planned_run_trained_within_budget(demo_run: Path) -> None:
    from huggingface_hub import ModelCard

    from embtune.plan.config import load_params
    from embtune.plan.sweep import mteb_run_ids, training_plan

    params = load_params([demo_run / "params.yaml", demo_run / "presets/demo.yaml",
                          demo_run / "presets/test.yaml"])
    runs, _, members = training_plan(params)
    scored = set(mteb_run_ids(params, runs, members))   # App. F / LR studies report losses only
    table = pl.read_parquet(demo_run / "results/demo/analysis/runs.parquet")
    assert set(table["run_id"]) >= {r["run_id"] for r in runs}
    for run in runs:
        metrics = json.loads((demo_run / f"results/demo/runs/{run['run_id']}/metrics.json").read_text())
        if metrics["status"] != "ok":
            assert metrics.get("skip_reason"), run["run_id"]
            continue
        assert 0 < metrics["flops"] <= run["budget"]
        assert metrics["steps"] >= params["train"]["min_steps"]
        manifest = json.loads((demo_run / f"results/demo/runs/{run['run_id']}/manifest.json").read_text())
        assert manifest["packages"]["torch"].startswith("2.")
        if run["run_id"] not in scored:
            continue
        mteb = json.loads((demo_run / f"results/demo/runs/{run['run_id']}/mteb.json").read_text())
        assert len(mteb["tasks"]) == len(params["evaluate"]["mteb"]["tasks"])
        # the run's model/ (what a user loads and uploads): its card carries the scores as
        # model-index, flagged as a subsample
        card = ModelCard.load(demo_run / f"results/demo/runs/{run['run_id']}/model/README.md")
        assert {r.dataset_name.split(" (")[0] for r in card.data.eval_results} == set(mteb["tasks"])
        assert all(r.dataset_split.endswith("-subsample") for r in card.data.eval_results)
    assert (table["status"] == "ok").sum() >= len(runs) // 2


def test_query_tuning_pnd_counts_are_integers(demo_run: Path) -> None:
    base = json.loads((demo_run / "results/demo/query_runs/all-minilm-l6-v2/base/pnd.json").read_text())
    counts = base["msmarco"]["cos"]
    assert isinstance(counts["errors"], int) and isinstance(counts["total"], int)
    assert 0 <= counts["errors"] <= counts["total"] and counts["total"] > 0
    assert any((demo_run / "results/demo/analysis/query_tuning").iterdir())


def test_fits_recipe_figures_and_metrics(demo_run: Path) -> None:
    from embtune.plan.config import load_params
    from embtune.plan.sweep import training_plan

    analysis = demo_run / "results/demo/analysis"
    fits = json.loads((analysis / "fits.json").read_text())
    assert fits
    recipe = json.loads((analysis / "recipes/recipe_c3e17.json").read_text())
    params = load_params([demo_run / "params.yaml", demo_run / "presets/demo.yaml", demo_run / "presets/test.yaml"])
    assert recipe["method"] in {r["method"] for r in training_plan(params)[0]}     # one the stack trained
    assert recipe["model"] in {m["name"] for m in params["models"]}
    assert recipe["extrapolated"] is True  # 3e17 is far beyond the demo budgets
    # presets/test.yaml runs the "any method" option; an extrapolated recipe fails paper 1's tests
    assert recipe["method_set"] == "any" and recipe["trustworthy"] is False
    assert "fraction" in recipe["bootstrap_agreement"] and recipe["trust"]["in_fitted_range"] is False
    pngs = sorted((analysis / "figures").glob("*.png"))
    assert len(pngs) >= 5
    assert (analysis / "report.md").read_text().count("![") >= 5
    assert json.loads((demo_run / "results/demo/metrics.json").read_text())


REPORT_CATEGORIES = ("Paper 1: compute-optimal embedding fine-tuning", "Paper 2: query-tower tuning (PND)",
                     "Study: plan, cost, summary")


def test_snakemake_report_holds_every_figure_and_table(demo_run: Path) -> None:
    """`snakemake --report report.html` on the finished demo: one self-contained HTML file with
    every PNG of the figures directory (>= 20 for this preset; presets/ci.yaml gives 16) embedded
    as data, grouped by paper, and the study's tables; ~10 s."""
    proc = _snakemake(demo_run, "--report", "report.html", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (demo_run / "report.html").read_text()
    pngs = sorted(p.name for p in (demo_run / "results/demo/analysis/figures").glob("*.png"))
    print(f"report: {len(pngs)} figures, {len(html) / 2**20:.1f} MiB")
    assert len(pngs) >= 20
    assert html.count('"mime_type": "image/png"') == len(pngs)
    embedded = re.findall(r"data:image/png;[^,]*filename=([^;,]+);base64,", html)   # data, not links
    assert sorted(embedded) == pngs
    for text in (*REPORT_CATEGORIES, "planned_cost.csv", "skipped.csv", "fits.json", "recipe_c3e17.json",
                 "report.md", "metrics.json", "table1.csv", "Paper 1, Fig. 1."):
        assert text in html, text


def test_dvc_plots_show_draws_every_curve_kind_of_the_demo_without_a_warning(demo_run: Path) -> None:
    """`dvc plots show` on the finished demo: every folder dvc.yaml names holds the demo's file
    (and no other study's), each drawn as one chart with data, the training-loss chart a line
    per trained run; DVC reports no error and prints nothing on stderr (the paper-scale study,
    which did not run here, adds no missing path)."""
    import yaml

    (demo_run / ".dvc" / "config.local").write_text("[core]\n    no_scm = true\n")   # the copy has no git
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), "plots", "show", "--json"], cwd=demo_run,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr[-1500:]
    shown = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert not shown.get("errors"), shown["errors"]
    folders = [next(iter(p)) for p in yaml.safe_load((demo_run / "dvc.yaml").read_text())["plots"]]
    assert len(folders) >= 5
    for folder in folders:
        assert sorted(f.name for f in (demo_run / folder).iterdir()) == ["demo.csv"], folder
        charts = shown["data"][f"{folder}/demo.csv"]
        assert len(charts) == 1 and charts[0]["content"]["data"]["values"], folder
    values = shown["data"]["results/plots/train_loss/demo.csv"][0]["content"]["data"]["values"]
    trained = pl.read_parquet(demo_run / "results/demo/analysis/runs.parquet").filter(pl.col("status") == "ok")
    assert set(trained["run_id"]) <= {row["run"] for row in values}      # a line for every trained run


def test_dvc_metrics_show_has_a_row_per_run(demo_run: Path) -> None:
    """`dvc metrics show`: the demo's headline metrics.json and one row per run of the runs table
    (dvc.yaml's run_metrics directory), with the run's final values."""
    shown = {k: v for rev in _dvc_json(demo_run, "metrics", "show").values() for k, v in rev["data"].items()}
    table = pl.read_parquet(demo_run / "results/demo/analysis/runs.parquet")
    rows = {Path(k).stem: v["data"] for k, v in shown.items() if k.startswith("results/demo/analysis/run_metrics/")}
    assert set(rows) == set(table["run_id"]) and "results/demo/metrics.json" in shown
    for run in table.filter(pl.col("final_train_loss").is_not_null()).iter_rows(named=True):
        assert rows[run["run_id"]]["final_train_loss"] == pytest.approx(run["final_train_loss"]), run["run_id"]


def test_appendix_studies_and_query_grids_at_micro_scale(demo_run: Path) -> None:
    """presets/test.yaml's micro studies (App. D, F) and grids (one crossed, one random)."""
    analysis = demo_run / "results/demo/analysis"
    runs = pl.read_parquet(analysis / "runs.parquet")
    assert {"appD-temperature", "appD-pooling", "appD-lora-lr", "appD-bias-lr", "appF"} <= set(runs["study"])
    for study in ("appD-temperature", "appD-pooling", "appD-lora-lr", "appD-bias-lr", "appF"):
        table = pl.read_csv(analysis / f"appendix/{study}.csv")
        assert table.height and (table["n_finished"] >= 1).any(), study
    assert (analysis / "appendix/appF_predicted.png").exists()
    index = pl.read_csv(analysis / "query_tuning/groups/index.csv")
    assert {"cross-micro", "random-micro"} <= set(index["group"])
    assert (analysis / "query_tuning/groups/grid-cross-micro_pivot.csv").exists()


def test_paper_scale_paths_run_at_micro_scale(demo_run: Path) -> None:
    """The paths only params.yaml selected before run here (presets/test.yaml): every
    narrow domain is compared on arxiv without its own rows (App. K) through the query table, both
    towers tuned, every freeze-spec family, the held-out model; then figures and summary."""
    from embtune.plan.config import load_params
    from embtune.plan.query_sweep import query_runs

    params = load_params([demo_run / "params.yaml", demo_run / "presets/demo.yaml",
                          demo_run / "presets/test.yaml"])
    planned = {(r["model"]["name"], r["qrun_id"]): r for r in query_runs(params)}
    analysis = demo_run / "results/demo/analysis"
    long = pl.read_csv(analysis / "query_tuning/pnd_long.csv")
    arxiv = long.filter(pl.col("dataset").str.starts_with("arxiv-"))
    narrow = {}
    for (model, qrun), run in planned.items():
        rows = arxiv.filter((pl.col("model") == model) & (pl.col("qrun_id") == qrun))
        assert rows.height, (model, qrun)
        domain = run["train_data"].removeprefix("arxiv-") if run["train_data"] != "msmarco" else None
        expected = {f"{d}!{domain}" if domain else d for d in rows["dataset"]}
        assert set(rows["eval_set"]) == expected, (model, qrun)
        narrow[domain] = narrow.get(domain, 0) + 1
    assert {"math", "physics", "cs"} <= set(narrow)
    table = pl.read_csv(analysis / "query_tuning/table1.csv")
    assert table.height == len(planned)
    doc_tower = [k for k, r in planned.items() if r["tune_doc_tower"]]
    from embtune.models.st_export import is_dual_encoder

    assert doc_tower
    for m, q in doc_tower:   # both towers trained and saved as one Router model/ (query + document routes)
        out = demo_run / f"results/demo/query_runs/{m}/{q}"
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["tune_doc_tower"] and metrics["n_trainable_doc_tensors"] > 0, (m, q)
        assert is_dual_encoder(out / "model") and (out / "layer_changes_doc.csv").is_file(), (m, q)
    fits = json.loads((analysis / "fits.json").read_text())
    assert fits["settings"]["holdout"] == "largest_model"
    held = {law["holdout_model"] for law in fits["laws"].values() if "holdout_model" in law}
    assert held == {"tiny-d128-l2"}, held   # the largest of the three sizes
    assert json.loads((demo_run / "results/demo/metrics.json").read_text())
    assert sorted((analysis / "figures").glob("p2_*.png"))


def test_issue24_figures_and_distances(demo_run: Path) -> None:
    """Paper 2's Figs 3, 11a, 12, 13, 14 (grids fig<N>) and 7-8 are drawn; E5's dist
    counts are computed on the raw vectors, so they differ from its cos counts."""
    figures = {p.stem for p in (demo_run / "results/demo/analysis/figures").glob("p2_*.png")}
    for fig in ("fig03", "fig11a", "fig12", "fig13", "fig14", "fig07", "fig08"):
        assert any(name.startswith(f"p2_{fig}_") for name in figures), fig
    pnd = json.loads((demo_run / "results/demo/query_runs/multilingual-e5-small-q4/base/pnd.json").read_text())
    assert pnd["model"]["dist_embeddings"] == "raw" and pnd["model"]["max_seq_length"] == 512
    assert "over_length" in pnd
    xnli = pnd["xnli"]
    assert any(xnli["cos"][rel]["errors"] != xnli["dist"][rel]["errors"] for rel in xnli["cos"])


def test_rerun_has_nothing_to_do(demo_run: Path) -> None:
    proc = _snakemake(demo_run, "-n", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _dvc_json(workdir: Path, *args: str) -> dict:
    (workdir / ".dvc" / "config.local").write_text("[core]\n    no_scm = true\n")   # the copy has no git
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), *args, "--json"], cwd=workdir,
                          capture_output=True, text=True, timeout=300)
    return json.loads(proc.stdout[proc.stdout.index("{"):])


def test_every_run_has_its_tracker_record_in_dvc(demo_run: Path) -> None:
    """Each trained run's DVCLive record is a rule output under results/demo/tracking,
    `dvc plots show` lists its per-step loss and `dvc metrics show` its metrics (DVCLive's own
    dvc.yaml, no glue); query runs record validation loss, errors and the stopping decision."""
    results = demo_run / "results/demo"
    ok = [p.parent.name for p in (results / "runs").glob("*/metrics.json")
          if json.loads(p.read_text())["status"] == "ok"]
    assert ok
    plots = _dvc_json(demo_run, "plots", "show")["data"]
    metrics = {k: v for rev in _dvc_json(demo_run, "metrics", "show").values() for k, v in rev["data"].items()}
    for run in ok:
        steps = json.loads((results / "runs" / run / "metrics.json").read_text())["steps"]
        key = f"results/demo/tracking/runs/{run}/dvclive/plots/metrics/train/loss.tsv"
        # listed by dvc.yaml's tracking/runs folder; where DVC also reads the run's own dvc.yaml
        # (no git: the copy), the same file appears once per definition, prefixed by its file
        key = key if key in plots else f"dvc.yaml::{key}"
        values = plots[key][0]["content"]["data"]["values"]
        assert int(values[-1]["step"]) == steps, run                 # the last step is always logged
        assert metrics[f"results/demo/tracking/runs/{run}/dvclive/metrics.json"]["data"]["step"] == steps
    assert not list((results / "checkpoints").glob("*/tracking")) if (results / "checkpoints").exists() else True
    qruns = sorted((results / "tracking/query_runs").glob("*/*/dvclive"))
    assert qruns
    for live in qruns:
        assert (live / "plots/metrics/val/errors.tsv").is_file() and (live / "plots/metrics/stop/idle.tsv").is_file()


def test_report_renders_in_headless_chromium(demo_run: Path, tmp_path: Path) -> None:
    """The HTML report in real headless Chromium: every figure it embeds decodes
    (naturalWidth > 0), one per PNG of the figures directory; the landing page's screenshot is
    kept (tests/artifacts/report_landing.png)."""
    import helpers_browser as hb

    if hb.chromium() is None:
        pytest.skip("LOUD SKIP: no chromium on this machine (Debian package `chromium`; `make test` "
                    "installs it through .ci/install_chromium.sh) - the report was NOT checked in a browser")
    report = demo_run / "report.html"
    if not report.is_file():
        proc = _snakemake(demo_run, "--report", "report.html", timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    checked = hb.check_images(report, tmp_path)
    pngs = sorted((demo_run / "results/demo/analysis/figures").glob("*.png"))
    figures = [i for i in checked["images"] if "filename=" in i["src"] and "image/png" in i["src"]]
    assert len(figures) >= len(pngs) >= 20, (len(figures), len(pngs))
    assert all(i["w"] > 0 and i["h"] > 0 for i in checked["images"]), [i for i in checked["images"] if not i["w"]]
    assert all(w > 0 for w in checked["shown"])
    shot = hb.screenshot(report, tmp_path / "report_landing.png", tmp_path)
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1280, 900) and len(set(im.convert("L").getdata())) > 5   # not a blank page
    hb.keep_artifact(shot)


def test_status_counts_the_mteb_jobs_with_recorded_times(demo_run: Path) -> None:
    """`embtune status --json` on the finished demo: one MTEB job per run the workflow evaluates
    (embtune.plan.sweep.mteb_run_ids), all settled, each ending when its mteb.json says; the ETA's
    rate comes from recorded end times."""
    from embtune.plan.config import load_params
    from embtune.plan.sweep import mteb_run_ids, training_plan

    stack = [demo_run / "params.yaml", demo_run / "presets/demo.yaml", demo_run / "presets/test.yaml"]
    proc = subprocess.run([sys.executable, "-m", "embtune.cli", "status", *map(str, stack), "--json", "--no-squeue"],
                          cwd=demo_run, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    params = load_params(stack)
    runs, _, members = training_plan(params)
    mteb = [j for j in out["jobs"] if j["kind"] == "mteb"]
    assert sorted(j["id"] for j in mteb) == sorted(mteb_run_ids(params, runs, members)) and mteb
    assert {j["state"] for j in mteb} <= {"done", "skipped", "failed"}
    assert all(j["finished_at"] for j in mteb if j["state"] == "done")
    assert sum(g["done"] for g in out["groups"] if g["method"] == "evaluate-mteb") == \
        sum(j["state"] == "done" for j in mteb) > 0
    assert out["gpu_hours"]["rate_gpu_hours_per_hour"] is not None
