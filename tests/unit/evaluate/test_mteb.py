"""Embedder loading (full and LoRA), MTEB data materialisation, and offline mteb evaluation."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embtune.data import mteb_data  # noqa: E402
from embtune.evaluate import mteb_eval  # noqa: E402
from embtune.models.embedder import length_sorted_batches, load_embedder  # noqa: E402
from embtune.stages import evaluate_mteb  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "data" / "demo" / "mteb"
PINNED = list(mteb_data.PINNED_TYPES)
WORDS = ("the cat sat on a mat while dogs ran in the park and people read books about space "
         "rockets music food weather travel sports science health money work family friends").split()


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))]
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|pad|>")


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny GPT-NeoX saved in full, and a LoRA adapter (non-zero B) on top of it."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel, GPTNeoXConfig

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("models")
    tok = _tokenizer()
    cfg = GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
                        vocab_size=len(tok), rotary_pct=0.25, max_position_embeddings=128,
                        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    base = AutoModel.from_config(cfg)
    full = root / "full"
    base.save_pretrained(full)
    tok.save_pretrained(full)
    (full / "embedding_config.json").write_text(json.dumps({"pooling": "mean", "max_length": 32}))

    lora = get_peft_model(AutoModel.from_pretrained(full), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.2)  # B starts at zero; make the adapter actually do something
    adapter = root / "lora"
    lora.save_pretrained(adapter)
    tok.save_pretrained(adapter)
    (adapter / "embedding_config.json").write_text(json.dumps({"pooling": "last", "max_length": 32}))
    return {"full": full, "lora": adapter, "peft_model": lora}


def test_length_sorted_batches_cover_all_indices_once() -> None:
    batches = length_sorted_batches([3, 9, 1, 9, 4], batch_size=2)
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3, 4]
    assert batches[0] == [1, 3] and [len(b) for b in batches] == [2, 2, 1]


def test_padding_does_not_change_an_embedding(model_dirs: dict[str, Path]) -> None:
    emb = load_embedder(model_dirs["full"], device="cpu")
    short, long_ = "the cat sat", "the cat sat on a mat while dogs ran in the park and people read books"
    alone = emb.encode([short], batch_size=1)
    padded = emb.encode([long_, short], batch_size=2)  # short is padded to long's length
    assert padded.dtype == np.float32 and padded.shape == (2, 64)
    np.testing.assert_allclose(padded[1], alone[0], atol=1e-5)
    assert not np.allclose(padded[0], padded[1])


def test_order_restored_and_truncation(model_dirs: dict[str, Path]) -> None:
    emb = load_embedder(model_dirs["full"], device="cpu")
    texts = ["a", "music food weather travel sports", "the park", " ".join(WORDS * 3)]
    one_by_one = np.stack([emb.encode([t], batch_size=1)[0] for t in texts])
    np.testing.assert_allclose(emb.encode(texts, batch_size=3), one_by_one, atol=1e-5)
    assert emb.config.max_length == 32 and len(emb._tokenize([texts[-1]])[0]) == 32


def test_max_length_override_truncates(model_dirs: dict[str, Path], tmp_path: Path) -> None:
    """--max-length replaces the training context length (docs/fidelity.md#P1-MTEB-TRUNCATION):
    texts that agree on their first 4 tokens embed identically at 4 and differently at 32."""
    emb = load_embedder(model_dirs["full"], device="cpu")
    a, b = "the cat sat on a mat", "the cat sat on rockets music food weather"
    assert emb._tokenize([a])[0][:4] == emb._tokenize([b])[0][:4]
    assert not np.allclose(*emb.encode([a, b]))
    emb.config = mteb_eval.with_max_length(emb.config, 4)
    np.testing.assert_array_equal(*emb.encode([a, b]))
    with pytest.raises(ValueError, match="max-length"):
        mteb_eval.with_max_length(emb.config, 0)
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"status": "ok"}))
    out = tmp_path / "mteb.json"
    assert evaluate_mteb.main(["--model-dir", str(model_dirs["full"]), "--run-metrics", str(metrics),
                           "--tasks", "STS15", "--data-dir", str(DEMO), "--device", "cpu",
                           "--max-length", "4", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["max_length"] == 4     # the default (32) is checked below


def test_merged_lora_equals_unmerged_peft(model_dirs: dict[str, Path]) -> None:
    emb = load_embedder(model_dirs["lora"], device="cpu")
    assert emb.config.pooling == "last"
    assert not any("lora" in n for n, _ in emb.model.named_parameters())  # merged away
    texts = ["the cat sat on a mat", "rockets and space science", "family"]
    peft_model = model_dirs["peft_model"].eval()
    enc = emb.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = peft_model(**enc).last_hidden_state
    from embtune.models.pooling import pool

    expected = pool(hidden, enc["attention_mask"], "last").numpy()
    np.testing.assert_allclose(emb.encode(texts, batch_size=2), expected, atol=1e-4)
    base = load_embedder(model_dirs["full"], device="cpu")
    base.config = emb.config
    assert not np.allclose(base.encode(texts), expected, atol=1e-3)  # the adapter mattered


def test_demo_data_validates_for_every_pinned_task() -> None:
    for name in PINNED:
        kind = mteb_data.task_type(name)
        frames = mteb_data.read_task_dir(DEMO / name, kind in mteb_data.RETRIEVAL_TYPES)
        assert mteb_data.validate_frames(name, kind, frames, mteb_data.local_splits(kind)) == [], name


def test_validation_reports_missing_columns() -> None:
    frames = {("default", "test"): {"": pl.DataFrame({"sentence1": ["a"], "score": [1.0]})}}
    problems = mteb_data.validate_frames("STS15", "STS", frames, ["test"])
    assert problems and "sentence2" in problems[0]
    assert mteb_data.validate_frames("SciFact", "Retrieval", {}, ["test"]) == ["SciFact: no data files"]


def test_mteb_shaped_dataset_round_trips_through_the_layout(tmp_path: Path) -> None:
    """``--source mteb`` path minus the download: mteb's shapes -> files -> mteb's shapes."""
    from datasets import Dataset, DatasetDict

    pairs = DatasetDict({"test": Dataset.from_dict(  # mteb's v1 'one row of lists' layout
        {"sentence1": [["a", "b"]], "sentence2": [["c", "d"]], "labels": [[1, 0]]})})
    frames = mteb_data.frames_from_mteb_dataset(pairs, ["test"], multilingual=False, retrieval=False)
    assert frames[("default", "test")][""].height == 2
    retrieval = {"default": {"test": {
        "corpus": Dataset.from_dict({"id": ["d1"], "text": ["x"], "title": [""]}),
        "queries": Dataset.from_dict({"id": ["q1"], "text": ["y"]}),
        "relevant_docs": {"q1": {"d1": 1}}, "top_ranked": {"q1": ["d1"]}}}}
    rframes = mteb_data.frames_from_mteb_dataset(retrieval, ["test"], multilingual=False, retrieval=True)
    mteb_data.write_task(rframes, tmp_path / "AskUbuntuDupQuestions")
    back = mteb_data.read_task_dir(tmp_path / "AskUbuntuDupQuestions", retrieval=True)
    assert mteb_data.validate_frames("AskUbuntuDupQuestions", "Reranking", back, ["test"]) == []
    split = mteb_eval.to_mteb_dataset(back, retrieval=True)["default"]["test"]
    assert split["relevant_docs"] == {"q1": {"d1": 1}} and split["top_ranked"] == {"q1": ["d1"]}


def test_materialise_local_copies_and_counts_rows(tmp_path: Path) -> None:
    from embtune.stages import materialise_mteb

    out = tmp_path / "mteb"
    assert materialise_mteb.main(["--tasks", "STS15", "Tatoeba", "--source", "local",
                                  "--local-dir", str(DEMO), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"]["STS15"]["rows"] == {"default/test.parquet": 90}
    assert set(manifest["tasks"]["Tatoeba"]["rows"]) == {f"{s}/test.parquet" for s in ("deu-eng", "fra-eng", "spa-eng")}
    assert (out / "STS15" / "default" / "test.parquet").read_bytes() == (DEMO / "STS15" / "default" / "test.parquet").read_bytes()
    assert materialise_mteb.main(["--tasks", "STS15", "--source", "local", "--local-dir", str(tmp_path / "nope"),
                                  "--out", str(tmp_path / "x")]) == 2


def test_local_task_keeps_real_metadata_and_subsets_on_disk() -> None:
    task = mteb_eval.local_task("Tatoeba", DEMO)
    assert task.metadata.name == "Tatoeba" and task.metadata.type == "BitextMining"
    assert task.metadata.main_score == "f1" and sorted(task.hf_subsets) == ["deu-eng", "fra-eng", "spa-eng"]
    assert mteb_eval.local_task("SciFact", DEMO).metadata.main_score == "ndcg_at_10"


@pytest.mark.slow   # ~9 s: make test runs it, make test-fast does not
def test_evaluate_mteb_cli_all_pinned_tasks(model_dirs: dict[str, Path], tmp_path: Path) -> None:
    """The real mteb evaluators, offline, on every pinned task (full model)."""
    out = tmp_path / "mteb.json"
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"status": "ok"}))
    rc = evaluate_mteb.main(["--model-dir", str(model_dirs["full"]), "--run-metrics", str(metrics),
                         "--tasks", *PINNED, "--exclude-from-average", "Tatoeba",
                         "--data-dir", str(DEMO), "--batch-size", "64", "--device", "cpu", "--out", str(out)])
    assert rc == 0
    record = json.loads(out.read_text())
    assert record["status"] == "ok" and set(record["tasks"]) == set(PINNED)
    assert record["max_length"] == 32          # the checkpoint's embedding_config (training length)
    assert all(0.0 <= v <= 1.0 or k in ("STS15", "SummEval") for k, v in record["tasks"].items())
    kept = [v for k, v in record["tasks"].items() if k != "Tatoeba"]
    assert record["average"] == pytest.approx(sum(kept) / len(kept)) and record["excluded"] == ["Tatoeba"]
    assert isinstance(record["n_texts_encoded"], int) and record["n_texts_encoded"] > 500
    tidy = pl.read_parquet(out.with_suffix(".parquet"))
    assert tidy.columns == ["task", "type", "split", "subset", "metric", "value"]
    main = tidy.filter((pl.col("metric") == "main_score") & (pl.col("task") == "Tatoeba"))
    assert sorted(main["subset"]) == ["deu-eng", "fra-eng", "spa-eng"]
    assert tidy.filter(pl.col("task") == "SciFact", pl.col("metric") == "ndcg_at_10")["value"][0] == \
        pytest.approx(record["tasks"]["SciFact"])


def test_evaluate_mteb_on_lora_adapter_dir(model_dirs: dict[str, Path]) -> None:
    emb = load_embedder(model_dirs["lora"], device="cpu")
    record, tidy = mteb_eval.evaluate_embedder(emb, ["STS15", "AskUbuntuDupQuestions"], DEMO, 64)
    assert set(record["tasks"]) == {"STS15", "AskUbuntuDupQuestions"} and record["average"] is not None
    assert set(tidy["type"]) == {"STS", "Reranking"}


def test_skipped_run_writes_skipped_record(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"status": "skipped", "skip_reason": "too few steps"}))
    out = tmp_path / "mteb.json"
    assert evaluate_mteb.main(["--model-dir", str(tmp_path / "absent"), "--run-metrics", str(metrics),
                           "--tasks", "STS15", "--exclude-from-average", "Tatoeba",
                           "--data-dir", str(DEMO), "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["status"] == "skipped" and record["tasks"] == {} and record["average"] is None
    assert pl.read_parquet(out.with_suffix(".parquet")).height == 0


def test_loss_mteb_spearman() -> None:
    runs = pl.DataFrame({"final_train_loss": [2.0, 1.5, 1.0, 0.8, None],
                         "mteb_average": [0.30, 0.35, 0.41, 0.40, 0.5]})
    assert mteb_eval.loss_mteb_spearman(runs) == pytest.approx(-0.8)
    assert math.isnan(mteb_eval.loss_mteb_spearman(runs.head(2)))


def test_local_task_rejects_unknown_subsets(tmp_path: Path) -> None:
    (tmp_path / "Tatoeba" / "xx-eng").mkdir(parents=True)
    with pytest.raises(ValueError, match="xx-eng"):
        mteb_eval.local_task("Tatoeba", tmp_path)


def test_sentence_transformers_folder_defaults(tmp_path: Path) -> None:
    from embtune.models.embedder import read_embedding_config

    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    assert read_embedding_config(tmp_path, 512).max_length == 256
    assert read_embedding_config(tmp_path / "absent", 10**30).max_length == 512


def test_mteb_results_in_mtebs_own_format_read_back_by_mteb(model_dirs: dict[str, Path], tmp_path: Path) -> None:
    """Beside mteb.json: mteb's TaskResult layout (results/<model>/<revision>/<Task>.json +
    model_meta.json), which mteb's own ResultCache loader reads back with the same scores."""
    import mteb

    from embtune.models.embed_cache import model_fingerprint

    run = tmp_path / "runs" / "tiny__full__c1e+12__s0"
    run.mkdir(parents=True)
    metrics = run / "metrics.json"
    metrics.write_text(json.dumps({"status": "ok", "run_id": run.name}))
    out = run / "mteb.json"
    assert evaluate_mteb.main(["--model-dir", str(model_dirs["full"]), "--run-metrics", str(metrics),
                           "--tasks", "STS15", "AskUbuntuDupQuestions", "--data-dir", str(DEMO),
                           "--device", "cpu", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    revision = model_fingerprint(str(model_dirs["full"]))
    assert record["mteb_revision"] == revision and record["mteb_model_name"] == f"embtune/{run.name}"
    folder = run / "mteb_results" / "results" / f"embtune__{run.name}" / revision
    assert sorted(p.name for p in folder.glob("*.json")) == ["AskUbuntuDupQuestions.json", "STS15.json",
                                                           "model_meta.json"]
    loaded = mteb.ResultCache(run / "mteb_results").load_results(include_remote=False)
    (model_result,) = loaded.model_results
    assert (model_result.model_name, model_result.model_revision) == (f"embtune/{run.name}", revision)
    by_task = {r.task_name: r for r in model_result.task_results}
    assert set(by_task) == {"STS15", "AskUbuntuDupQuestions"}
    for name, result in by_task.items():
        assert result.mteb_version == mteb.__version__
        assert result.dataset_revision == mteb.get_task(name).metadata.dataset["revision"]
        assert result.get_score() == pytest.approx(record["tasks"][name], abs=1e-6)  # to_disk rounds to 6
    meta = json.loads((folder / "model_meta.json").read_text())
    assert meta["embed_dim"] == 64 and meta["max_tokens"] == 32


def test_skipped_run_writes_an_empty_mteb_results_folder(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"status": "skipped", "skip_reason": "too few steps"}))
    assert evaluate_mteb.main(["--model-dir", str(tmp_path / "absent"), "--run-metrics", str(metrics),
                           "--tasks", "STS15", "--data-dir", str(DEMO), "--out", str(tmp_path / "mteb.json")]) == 0
    assert "too few steps" in (tmp_path / "mteb_results" / "README.txt").read_text()
    assert mteb_eval.read_mteb_results(tmp_path / "mteb_results").model_results == []
