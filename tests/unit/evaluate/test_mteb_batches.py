"""MTEB in batches: the grouping of runs into jobs, one process evaluating a batch, the
reuse of a member whose mteb.json is still up to date, and the links that put each run's outputs
where every reader expects them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embtune.core.io import link_tree  # noqa: E402
from embtune.plan.sweep import run_batches  # noqa: E402
from embtune.stages import evaluate_mteb  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "data" / "demo" / "mteb"


def test_batches_by_hand() -> None:
    ids = ["b-m__full__c1e11__s0", "a-m__lora-r8__c1e11__s0", "a-m__full__c3e11__s0",
           "a-m__full__c1e11__s0", "b-m__bias__c1e11__s0", "a-m__bias__c1e11__s0"]
    # per model, in run-id order, chunks of 2: a-m has 4 runs (2 batches), b-m 2 (1 batch)
    assert run_batches(ids, 2) == {
        "a-m__b0": ["a-m__bias__c1e11__s0", "a-m__full__c1e11__s0"],
        "a-m__b1": ["a-m__full__c3e11__s0", "a-m__lora-r8__c1e11__s0"],
        "b-m__b0": ["b-m__bias__c1e11__s0", "b-m__full__c1e11__s0"]}
    assert run_batches(ids, 8) == {"a-m__b0": sorted(ids)[:4], "b-m__b0": sorted(ids)[4:]}
    assert list(run_batches(ids, 1)) == ["a-m__b0", "a-m__b1", "a-m__b2", "a-m__b3", "b-m__b0", "b-m__b1"]
    # another model's runs never move a batch: b-m's change leaves a-m's batches as they were
    changed = [i for i in ids if i.startswith("a-m")] + ["b-m__full__c1e12__s0"]
    assert {k: v for k, v in run_batches(changed, 2).items()
            if k.startswith("a-m")} == {k: v for k, v in run_batches(ids, 2).items() if k.startswith("a-m")}
    with pytest.raises(ValueError, match="runs_per_job"):
        run_batches(ids, 0, key="evaluate.mteb.runs_per_job")


def test_link_tree_links_files_and_folders_in_order(tmp_path: Path) -> None:
    src = tmp_path / "staged"
    (src / "mteb_results" / "x").mkdir(parents=True)
    (src / "mteb_results" / "x" / "T.json").write_text("{}")
    (src / "mteb.parquet").write_text("p")
    (src / "mteb.json").write_text("{\"a\": 1}")
    run = tmp_path / "runs" / "r"
    outs = [run / "mteb.parquet", run / "mteb_results", run / "mteb.json"]
    link_tree(src, outs)
    assert (run / "mteb.json").read_text() == "{\"a\": 1}"
    assert os.path.samefile(run / "mteb_results" / "x" / "T.json", src / "mteb_results" / "x" / "T.json")
    assert os.path.samefile(run / "mteb.parquet", src / "mteb.parquet")
    (run / "mteb.json").unlink()                     # a stale file of its own is replaced
    (run / "mteb.json").write_text("old")
    link_tree(src, outs)
    assert (run / "mteb.json").read_text() == "{\"a\": 1}"
    with pytest.raises(FileNotFoundError, match="missing"):
        link_tree(src, [run / "absent.json"])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-NeoX checkpoint as training writes it (weights, tokenizer, embedding config)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoModel, GPTNeoXConfig, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["the cat sat on a mat while dogs ran in the park"] * 3, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|pad|>")
    cfg = GPTNeoXConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=1, intermediate_size=64,
                        vocab_size=len(fast), rotary_pct=0.25, max_position_embeddings=64,
                        pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id)
    out = tmp_path_factory.mktemp("ckpt") / "model"
    AutoModel.from_config(cfg).save_pretrained(out)
    fast.save_pretrained(out)
    (out / "embedding_config.json").write_text(json.dumps({"pooling": "mean", "max_length": 16}))
    return out


def _batch(tmp: Path, model: Path, stage: str, previous: str | None) -> list[dict]:
    runs = []
    for run in ("r1", "r2", "skip"):
        metrics = tmp / "runs" / run / "metrics.json"
        metrics.parent.mkdir(parents=True, exist_ok=True)
        metrics.write_text(json.dumps({"status": "skipped", "skip_reason": "too few steps"} if run == "skip"
                                      else {"status": "ok", "run_id": run}))
        runs.append({"model_dir": str(model), "run_metrics": str(metrics),
                     "out": str(tmp / stage / run / "mteb.json"),
                     "previous": str(tmp / previous / run / "mteb.json") if previous else None})
    return runs


def _main(runs: list[dict], code: str = "c1") -> int:
    return evaluate_mteb.main(["--runs-json", json.dumps(runs), "--code-version", code, "--tasks", "STS15",
                               "--data-dir", str(DEMO), "--device", "cpu", "--batch-size", "16"])


@pytest.mark.slow          # a batch of MTEB evaluations, twice: ~4 s on 2 cores
def test_batch_evaluates_once_then_reuses_up_to_date_members(checkpoint: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    assert _main(_batch(tmp_path, checkpoint, "first", None)) == 0
    assert "2 evaluated, 0 reused, 1 skipped" in capsys.readouterr().out
    first = json.loads((tmp_path / "first/r1/mteb.json").read_text())
    assert first["status"] == "ok" and set(first["tasks"]) == {"STS15"} and len(first["eval_key"]) == 64
    assert (tmp_path / "first/r1/mteb.parquet").is_file() and (tmp_path / "first/r1/mteb_results").is_dir()
    assert json.loads((tmp_path / "first/skip/mteb.json").read_text())["status"] == "skipped"

    # the same weights, settings, code and data: nothing is evaluated again, the outputs are copies
    assert _main(_batch(tmp_path, checkpoint, "second", "first")) == 0
    assert "0 evaluated, 2 reused, 1 skipped" in capsys.readouterr().out
    assert json.loads((tmp_path / "second/r1/mteb.json").read_text()) == first
    assert (tmp_path / "second/r1/mteb.parquet").read_bytes() == (tmp_path / "first/r1/mteb.parquet").read_bytes()

    # a new code version (or new weights, settings, data) changes the key: evaluated again
    assert _main(_batch(tmp_path, checkpoint, "third", "second"), code="c2") == 0
    assert "2 evaluated, 0 reused, 1 skipped" in capsys.readouterr().out
    third = json.loads((tmp_path / "third/r1/mteb.json").read_text())
    assert third["eval_key"] != first["eval_key"] and third["tasks"] == pytest.approx(first["tasks"])


def test_batch_argument_errors(tmp_path: Path) -> None:
    from embtune.core.errors import DataError

    with pytest.raises(DataError, match="--runs-json"):
        evaluate_mteb.main(["--runs-json", "{", "--tasks", "STS15", "--data-dir", str(DEMO)])
    with pytest.raises(DataError, match=r"--runs-json\[0\]: expected an object with model_dir and out"):
        evaluate_mteb.main(["--runs-json", "[{\"out\": \"x\"}]", "--tasks", "STS15", "--data-dir", str(DEMO)])
    with pytest.raises(DataError, match="--model-dir and --out"):
        evaluate_mteb.main(["--tasks", "STS15", "--data-dir", str(DEMO)])


def test_batch_output_over_an_input_is_refused(checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The stage path checks (embtune.core.stage_paths) see every run of --runs-json: an out inside a
    run's checkpoint is refused before any work, naming the run's entry."""
    from embtune.cli import main as cli_main

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    runs = [{"model_dir": str(model), "out": str(model / "mteb.json")}]
    rc = cli_main(["evaluate-mteb", "--runs-json", json.dumps(runs), "--tasks", "STS15", "--data-dir", str(DEMO)])
    err = capsys.readouterr().err
    assert rc == 2 and "--runs-json[0]" in err and "model_dir" in err and not (model / "mteb.json").exists()
