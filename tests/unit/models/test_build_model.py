"""Stages ``build-tokenizer`` and ``build-model``: a trained byte-level BPE with pad/eos, a tiny
GPT-NeoX that pre-training actually improves, and the local (hub-like) copy path."""

from __future__ import annotations

import json

import pytest
import torch
from helpers_train import one_thread, write_corpus
from transformers import AutoModel, AutoTokenizer

from embtune.models import tokenizer
from embtune.stages import build_model as build
from embtune.stages import build_tokenizer

_one_thread = pytest.fixture(autouse=True)(one_thread)


def test_tokenizer_and_tiny_model(tmp_path) -> None:
    write_corpus(tmp_path / "corpus" / "a.txt", lines=400)
    tok_dir = tmp_path / "tok"
    assert build_tokenizer.main(["--source", "train", "--corpus", str(tmp_path / "corpus" / "*.txt"),
                           "--vocab-size", "300", "--out", str(tok_dir)]) == 0
    tok = AutoTokenizer.from_pretrained(tok_dir)
    assert tok.pad_token == tokenizer.PAD and tok.eos_token == tokenizer.EOS
    assert tok.decode(tok("the query text")["input_ids"]) == "the query text"   # byte-level round trip

    spec = {"name": "t", "source": "tiny", "hidden_size": 64, "num_layers": 2, "pretrain_peak_lr": 3e-3,
            "pretrain_steps": 40}
    out = tmp_path / "base"
    assert build.main(["--model-json", json.dumps(spec), "--tokenizer", str(tok_dir), "--corpus",
                       str(tmp_path / "corpus" / "*.txt"), "--batch-size", "8", "--seq-len", "32",
                       "--out", str(out)]) == 0
    model = AutoModel.from_pretrained(out)
    assert type(model).__name__ == "GPTNeoXModel" and model.config.num_attention_heads == 2
    assert model.config.intermediate_size == 256 and model.config.use_parallel_residual
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["pretrain_loss_last10"] < manifest["pretrain_loss_first"] - 0.5
    assert AutoTokenizer.from_pretrained(out).pad_token == tokenizer.PAD

    copy = tmp_path / "copy"
    local = {"name": "c", "source": "local", "id": str(out), "hidden_size": 64, "num_layers": 2}
    assert build.main(["--model-json", json.dumps(local), "--tokenizer", str(tok_dir), "--out", str(copy)]) == 0
    again = AutoModel.from_pretrained(copy)
    for (n, a), (_, b) in zip(model.named_parameters(), again.named_parameters()):
        assert torch.equal(a, b), n
