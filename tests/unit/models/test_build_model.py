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


def _staged_pythia(tmp_path, hidden: int = 64, shard: str | None = None):
    """A stage-in folder as the hub serves Pythia: a GPTNeoXForCausalLM (LM head, ``gpt_neox.``
    prefix) in safetensors, its record written last; and a tokenizer folder."""
    from transformers import GPTNeoXForCausalLM

    from embtune.data.store import STAGE_RECORD
    from embtune.models.build import tiny_config
    from embtune.models.tokenizer import train_bpe

    tok = train_bpe([str(write_corpus(tmp_path / "corpus.txt"))], 200)
    tok.save_pretrained(str(tmp_path / "tok"))
    torch.manual_seed(0)
    lm = GPTNeoXForCausalLM(tiny_config({"hidden_size": hidden, "num_layers": 2}, len(tok), tok.pad_token_id,
                                        tok.eos_token_id))
    staged = tmp_path / "store" / f"d{hidden}"
    lm.save_pretrained(str(staged), **({"max_shard_size": shard} if shard else {}))
    (staged / STAGE_RECORD).write_text("{}")
    return lm, staged


@pytest.mark.parametrize("shard", [None, "40KB"], ids=["one-file", "sharded"])
def test_a_hub_model_is_checked_from_its_config_and_linked_not_loaded(tmp_path, monkeypatch, shard) -> None:
    """The login-node path: no weights are read (any from_pretrained or tensor load fails the test);
    the output holds the staged files as hard links, AutoModel loads the LM's own base weights from
    it, and n_params is the hand count of the base model's parameters."""
    import safetensors.torch
    from transformers import PreTrainedModel

    lm, staged = _staged_pythia(tmp_path, shard=shard)
    weights = sorted(p.name for p in staged.glob("model*.safetensors"))
    assert (len(weights) > 1) == bool(shard) and (staged / "model.safetensors.index.json").is_file() == bool(shard)
    want = {k: v.clone() for k, v in lm.gpt_neox.state_dict().items()}
    n_base = sum(p.numel() for p in lm.gpt_neox.parameters())
    spec = {"name": "p", "source": "hub", "id": "EleutherAI/pythia-14m", "revision": "step143000",
            "path": str(staged), "hidden_size": 64, "num_layers": 2}

    def refuse(*a, **k):
        raise AssertionError("weights loaded on the login node")

    with monkeypatch.context() as m:
        m.setattr(PreTrainedModel, "from_pretrained", classmethod(refuse))
        m.setattr(safetensors.torch, "load_file", refuse)
        m.setattr(torch, "load", refuse)
        assert build.main(["--model-json", json.dumps(spec), "--tokenizer", str(tmp_path / "tok"),
                           "--out", str(tmp_path / "base")]) == 0
    out = tmp_path / "base"
    assert sorted(p.name for p in out.glob("model*.safetensors")) == weights
    assert all((out / w).stat().st_ino == (staged / w).stat().st_ino for w in weights)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_params"] == n_base and manifest["weights_from"] == str(staged)
    got = AutoModel.from_pretrained(out).state_dict()
    assert sorted(got) == sorted(want) and all(torch.equal(got[k], v) for k, v in want.items())
    assert AutoTokenizer.from_pretrained(out).pad_token == tokenizer.PAD


def test_hub_weights_that_do_not_fit_the_config_are_refused_naming_the_tensor(tmp_path) -> None:
    from embtune.core.errors import DataError

    _, staged = _staged_pythia(tmp_path)
    _, other = _staged_pythia(tmp_path / "other", hidden=96)
    (staged / "model.safetensors").unlink()
    (staged / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    spec = {"name": "p", "source": "hub", "id": "EleutherAI/pythia-14m", "revision": "step143000",
            "path": str(staged), "hidden_size": 64, "num_layers": 2}
    args = ["--model-json", json.dumps(spec), "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path / "base")]
    with pytest.raises(DataError, match=r"model.safetensors: tensor 'embed_in.weight' has shape \[\d+, 96\]; "
                                        r"config.json's model expects \[\d+, 64\]"):
        build.main(args)
    (staged / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes()[:500])
    with pytest.raises(DataError, match=r"model.safetensors: corrupt or truncated safetensors file"):
        build.main(args)
    assert not (tmp_path / "base").exists()
