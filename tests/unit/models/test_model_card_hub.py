"""Hub-ready model cards (issue 27): a trained run's card, read back by huggingface_hub's own
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
    from embtune.layout import METRICS_JSON, MODEL_DIR
    from embtune.stages import evaluate_mteb
    from embtune.stages.train import write_outputs
    from embtune.train.loop import train_run

    root = tmp_path_factory.mktemp("card")
    base, data = make_base_model(root), make_shards(root / "bge", 48, 8, 190, 12)
    run = run_config(base, data, budget=4e8, min_steps=2)
    run = dataclasses.replace(run, model={**run.model, "source": "hub", "id": "EleutherAI/pythia-14m"})
    result = train_run(run, root / "ck", log_with="none")
    out = root / "runs" / run.run_id
    write_outputs(out, result, run)
    assert evaluate_mteb.main(["--model-dir", str(out / MODEL_DIR), "--run-metrics", str(out / METRICS_JSON),
                               "--tasks", *TASKS, "--data-dir", str(DEMO_MTEB), "--device", "cpu",
                               "--out", str(out / "mteb.json")]) == 0
    return out, run


def test_training_card_has_the_hub_metadata(trained_run) -> None:
    from huggingface_hub import ModelCard

    out, run = trained_run
    card = ModelCard.load(out / "model" / "README.md")
    data = card.data
    assert data.library_name == "sentence-transformers" and data.pipeline_tag == "sentence-similarity"
    assert data.base_model == "EleutherAI/pythia-14m" and data.license == "apache-2.0"
    assert {"sentence-transformers", "embtune", "method-full"} <= set(data.tags)
    assert not data.eval_results                     # written before any evaluation
    assert f"# {run.run_id}" in card.text


def test_published_card_round_trips_mteb_results_as_model_index(trained_run, tmp_path) -> None:
    """`embtune model-card` after evaluate-mteb: ModelCard.load gives the base model and one
    model-index result per task with mteb's task type, dataset and the same main score as
    mteb.json (the evaluation's own record, not the card's input)."""
    from huggingface_hub import ModelCard

    from embtune.stages import model_card

    out, run = trained_run
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
