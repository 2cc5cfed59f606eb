"""Stage ``build-model``: the base decoders that contrastive fine-tuning starts from.

Why a driver apart from :mod:`embtune.models.build`: the library builds, pre-trains, loads and
checks a model; the arguments, the tokenizer folder, the choice by ``source`` and the output
folder (model, tokenizer and manifest, written in a temporary sibling and renamed into place)
live here. A hub or local model folder is never loaded here (the rule runs on the login node):
its config.json and weight headers are checked and its files hard-linked (copied across devices).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, link_or_copy, provenance, write_json
from embtune.core.model_files import check_tokenizer_files
from embtune.models.build import (
    check_model,
    lm_batches,
    load_pretrained,
    meta_model,
    pretrain_causal_lm,
    pretrained_folder,
    read_corpus,
    tiny_config,
    token_stream,
    weights_check,
)

STAGE = "build-model"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--model-json", required=True, help="one entry of params.models, as JSON")
    ap.add_argument("--tokenizer", required=True, help="tokenizer directory")
    ap.add_argument("--corpus", nargs="*", default=[], help="pre-training text globs (tiny models)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", required=True)
    return ap


def _pretrain_tiny(spec: dict[str, Any], tok: Any, args: argparse.Namespace) -> tuple[torch.nn.Module, dict[str, Any]]:
    """A tiny decoder of the entry's family, pre-trained as a causal LM on ``--corpus``."""
    if not args.corpus:
        raise DataError(f"{STAGE}: a tiny model needs --corpus to pre-train on")
    try:
        texts = read_corpus(args.corpus)
    except FileNotFoundError as err:
        raise DataError(f"{STAGE}: --corpus: {err}") from None
    cfg = tiny_config(spec, len(tok), tok.pad_token_id, tok.eos_token_id)
    stream = token_stream(texts, tok, tok.eos_token_id)
    steps = int(spec.get("pretrain_steps", 300))
    batches = lm_batches(stream, args.seq_len, args.batch_size, steps, args.seed)
    lm, losses = pretrain_causal_lm(cfg, batches, float(spec["pretrain_peak_lr"]), args.seed)
    return lm.base_model, {
        "pretrain_steps": steps, "pretrain_tokens": steps * args.seq_len * args.batch_size,
        "pretrain_loss_first": losses[0] if losses else None,
        "pretrain_loss_last10": sum(losses[-10:]) / max(1, len(losses[-10:])),
        "corpus_tokens": int(stream.numel())}


def _link_model(folder: Path, files: list[Path], out: Path) -> None:
    """config.json and the weight files (with their shard index) of ``folder`` into ``out``."""
    names = ["config.json", *(p.name for p in files)]
    if (folder / "model.safetensors.index.json").is_file():
        names.append("model.safetensors.index.json")
    for name in names:
        link_or_copy(folder / name, out / name)


def main(argv: Sequence[str] | None = None) -> int:
    from transformers import AutoTokenizer

    args = _parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    spec = json.loads(args.model_json)
    if not Path(args.tokenizer).is_dir():
        raise DataError(f"--tokenizer {args.tokenizer}: directory not found; expected build-tokenizer's output")
    check_tokenizer_files(args.tokenizer)
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    extra: dict[str, Any] = {}
    t0 = time.time()
    folder = pretrained_folder(spec) if spec["source"] in ("hub", "local") else None
    if spec["source"] == "tiny":
        model, extra = _pretrain_tiny(spec, tok, args)
    elif folder is not None:      # config and weight headers only: see the module docstring
        model = meta_model(folder)
        files = weights_check(folder, model)
        extra = {"weights": "linked", "weights_from": str(folder)}
    elif spec["source"] in ("hub", "local", "gguf"):
        model = load_pretrained(spec)
    else:
        raise DataError(f"{STAGE}: unknown source {spec['source']!r} (expected tiny, hub, local or gguf)")
    check_model(spec, model, len(tok))
    with atomic_path(args.out) as tmp:
        if folder is not None:
            tmp.mkdir()
            _link_model(folder, files, tmp)
        else:
            model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        write_json(tmp / "manifest.json", provenance(
            stage=STAGE, model=spec, seed=args.seed, seconds=round(time.time() - t0, 2),
            n_params=sum(p.numel() for p in model.parameters()), **extra))
    print(f"{STAGE}: {spec['name']} -> {args.out} ({time.time() - t0:.1f}s)")
    return 0
