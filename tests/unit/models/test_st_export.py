"""Trained paper-1 runs are native sentence-transformers folders.

The bar: ``SentenceTransformer(<run>/trained)`` loads with no warning, ``max_seq_length`` equals the
training context length, and it embeds exactly as training did. The reference embeddings are
computed here by hand (the saved ``AutoModel``'s hidden states, masked mean / last real token),
not by embtune's own embedder."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from helpers_st import load_quietly
from helpers_train import one_thread, run_config

from embtune.core.layout import TRAINED_DIR, TRAINED_MERGED_DIR
from embtune.stages import train as train_stage
from embtune.train import loop

_one_thread = pytest.fixture(autouse=True)(one_thread)
CONTEXT = 12
TEXTS = ["the model", "a query about retrieval and search data",
         "text " * 40]                       # longer than the context: must be truncated


def _train(tmp_path, base, data, method: str, **over):
    run = run_config(base, data, method, budget=1.0e9, context_length=CONTEXT, **over)
    res = loop.train_run(run, tmp_path / "ck")
    assert res.status == "ok", res.metrics
    train_stage.write_outputs(tmp_path / "run", res, run)
    return run, res, tmp_path / "run"


def _reference(model_dir, texts, pooling: str, module=None) -> np.ndarray:
    """Hand-computed embeddings: tokens truncated to CONTEXT, one text at a time (no padding at
    all), hidden states of the saved AutoModel (or ``module``), mean or last token."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    net = module if module is not None else AutoModel.from_pretrained(str(model_dir))
    net.eval()
    out = []
    with torch.no_grad():
        for text in texts:
            ids = tok(text, add_special_tokens=True)["input_ids"][:CONTEXT]
            hidden = net(input_ids=torch.tensor([ids])).last_hidden_state[0]
            out.append((hidden.mean(0) if pooling == "mean" else hidden[-1]).numpy())
    return np.stack(out)


@pytest.mark.parametrize("method, pooling", [("full", "mean"), ("bias", "last")])
def test_trained_run_is_a_sentence_transformers_folder(tmp_path, fixture_dirs, caplog, method, pooling):
    base, data = fixture_dirs
    _, res, out = _train(tmp_path, base, data, method, pooling=pooling)
    model_dir = out / TRAINED_DIR
    modules = json.loads((model_dir / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling"]
    assert json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"] == CONTEXT
    mode = json.loads((model_dir / "1_Pooling" / "config.json").read_text())["pooling_mode"]
    assert mode == {"mean": "mean", "last": "lasttoken"}[pooling]
    assert not any(p.name.endswith(".hf") for p in out.rglob("*"))          # staging removed

    st = load_quietly(model_dir, caplog)
    assert st.max_seq_length == CONTEXT
    got = st.encode(TEXTS, batch_size=3)          # one padded batch: padding must not matter
    np.testing.assert_allclose(got, _reference(model_dir, TEXTS, pooling), atol=1e-5)
    # the saved weights are the trained ones
    np.testing.assert_allclose(got, _reference(model_dir, TEXTS, pooling, res.model), atol=1e-5)

    card = (model_dir / "README.md").read_text()
    m = res.metrics
    assert card.startswith("---\n") and "\nlibrary_name: sentence-transformers\n" in card.split("\n---\n")[0]
    for needle in (m["run_id"], f"{m['flops']:.4g}", f"{m['budget']:.4g}", f"{m['val_loss']:.4g}",
                   f"{m['final_train_loss']:.4g}", f"| optimizer steps | {m['steps']} |",
                   f"| context length (= max_seq_length) | {CONTEXT} |", "../mteb_results/"):
        assert needle in card, needle


def test_lora_run_keeps_the_adapter_and_writes_a_merged_folder(tmp_path, fixture_dirs, caplog):
    from embtune.models.embedder import load_embedder

    base, data = fixture_dirs
    run, res, out = _train(tmp_path, base, data, "lora")
    adapter = json.loads((out / TRAINED_DIR / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(base)             # the adapter, as before
    merged_dir = out / TRAINED_MERGED_DIR
    st = load_quietly(merged_dir, caplog)
    assert st.max_seq_length == CONTEXT
    assert not any("lora" in n for n, _ in st.named_parameters())
    # reference: the unmerged peft model from training, by hand
    ref = _reference(out / TRAINED_DIR, TEXTS, "mean", res.model)
    np.testing.assert_allclose(st.encode(TEXTS, batch_size=3), ref, atol=1e-4)
    np.testing.assert_allclose(load_embedder(out / TRAINED_DIR, device="cpu").encode(TEXTS), ref, atol=1e-4)
    assert "LoRA (rank 4" in (merged_dir / "README.md").read_text()
    # a re-run may replace the run directory that holds trained_merged/, mteb_results/ and model/
    (out / "mteb_results").mkdir()
    (out / "model").mkdir()
    train_stage.write_outputs(out, res, run)
    assert (out / TRAINED_MERGED_DIR / "modules.json").is_file()


def test_model_card_cli_adds_mteb_scores(tmp_path, fixture_dirs):
    base, data = fixture_dirs
    _, res, out = _train(tmp_path, base, data, "full")
    (out / "mteb.json").write_text(json.dumps({
        "status": "ok", "tasks": {"STS15": 0.123456, "Tatoeba": 0.5}, "average": 0.123456,
        "excluded": ["Tatoeba"], "max_length": CONTEXT}))
    card_path = tmp_path / "card.md"
    from embtune.stages import model_card
    assert model_card.main(["--run-dir", str(out), "--out", str(card_path)]) == 0
    card = card_path.read_text()
    assert "| STS15 | 0.1235 |" in card and "| **average** (excluded: Tatoeba) | 0.1235 |" in card
    assert res.metrics["run_id"] in card
    assert "MTEB scores are not part" in (out / TRAINED_DIR / "README.md").read_text()


def test_the_quiet_loader_fails_on_either_kind_of_warning(tmp_path, fixture_dirs, caplog):
    """Control for the bar above: a sentence-transformers warning (an unknown config key) and a
    transformers warning (a weight missing from the file, logged by transformers' own logger)
    each make :func:`load_quietly` fail."""
    from safetensors.torch import load_file, save_file

    base, data = fixture_dirs
    _, _, out = _train(tmp_path, base, data, "full")
    unknown = tmp_path / "unknown_key"
    shutil.copytree(out / TRAINED_DIR, unknown)
    cfg = json.loads((unknown / "sentence_bert_config.json").read_text())
    (unknown / "sentence_bert_config.json").write_text(json.dumps({**cfg, "processing_kwargs": {"bogus": {}}}))
    missing = tmp_path / "missing_weight"
    shutil.copytree(out / TRAINED_DIR, missing)
    tensors = load_file(missing / "model.safetensors")
    dropped = next(k for k in sorted(tensors) if k.endswith("final_layer_norm.weight"))
    save_file({k: v for k, v in tensors.items() if k != dropped}, missing / "model.safetensors",
              metadata={"format": "pt"})
    for folder, needle in ((unknown, "bogus"), (missing, "final_layer_norm")):
        with pytest.raises(AssertionError, match=needle):
            load_quietly(folder, caplog)
    load_quietly(out / TRAINED_DIR, caplog)          # and the real folder still passes
