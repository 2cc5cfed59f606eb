"""A training run's identity (what its result depends on) apart from its runtime settings.

Why: Snakemake re-runs a job when a rule's params change, and the training rule passes the run
config as a param. Keys that change no result stay out of it: in it, raising the log interval or
moving a folder would re-queue the whole grid. Those keys are:

- ``train.log_every_steps``, ``train.checkpoint_every_steps``: when the loop prints and saves;
- ``train.gradcache_chunk``: GradCache gives the same gradients at any chunk size (paper 1
  §3.4; tests/unit/train/test_gradcache.py); the chunk is a memory knob, chosen per run from the GPU-memory
  estimate (``embtune.plan.gpus``) and handed to the job as a Snakemake resource;
- ``train.compile``: torch.compile fuses the same computation into other kernels (float
  rounding aside, the same gradients; ``embtune.train.kernels``);
- ``data`` and ``base_model_dir``: paths; what lies there is tracked by the rule's inputs.

Threads and process counts are command-line options, never in the config. The rule passes
:func:`identity` as its ``run`` param (a rerun trigger) and :func:`runtime` as a param computed
from the job's resources (Snakemake treats a param function that reads ``resources`` as
derived: not a rerun trigger); ``embtune train`` joins them again with :func:`merge`. The same
keys are neutral to a checkpoint's config fingerprint (``train.checkpoint``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: ``train.<key>`` settings that change no result.
RUNTIME_TRAIN_KEYS = ("log_every_steps", "checkpoint_every_steps", "gradcache_chunk", "compile")
#: Top-level keys that are paths.
RUNTIME_TOP_KEYS = ("data", "base_model_dir")
#: Every runtime key, dotted as ``train.checkpoint.resume_config`` flattens them.
RUNTIME_KEYS = (*(f"train.{k}" for k in RUNTIME_TRAIN_KEYS), "data.train_dir", "data.tokenizer_dir",
                "base_model_dir")


def identity(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run config without its runtime keys: what the result depends on."""
    out = {k: copy.deepcopy(v) for k, v in run.items() if k not in RUNTIME_TOP_KEYS}
    out["train"] = {k: v for k, v in out["train"].items() if k not in RUNTIME_TRAIN_KEYS}
    return out


def runtime(run: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """The runtime keys of a run config, ``{"train": {...}, "data": ..., "base_model_dir": ...}``;
    ``overrides`` replace ``train`` keys (e.g. the chunk the job's resources chose)."""
    train = {k: run["train"][k] for k in RUNTIME_TRAIN_KEYS if k in run["train"]}
    unknown = sorted(set(overrides) - set(RUNTIME_TRAIN_KEYS))
    if unknown:
        raise ValueError(f"runtime override {unknown[0]!r}: not a runtime key ({', '.join(RUNTIME_TRAIN_KEYS)})")
    train.update(overrides)
    return {"train": train, **{k: copy.deepcopy(run[k]) for k in RUNTIME_TOP_KEYS if k in run}}


def merge(ident: Mapping[str, Any], rt: Mapping[str, Any]) -> dict[str, Any]:
    """The whole run config again; a runtime key the identity also has is refused (one source)."""
    clash = sorted(set(ident) & set(rt) - {"train"}) + sorted(
        f"train.{k}" for k in set(ident.get("train") or {}) & set(rt.get("train") or {}))
    if clash:
        raise ValueError(f"run config: {clash[0]!r} given in both the identity and the runtime settings")
    out = copy.deepcopy(dict(ident))
    out.update({k: copy.deepcopy(v) for k, v in rt.items() if k != "train"})
    out["train"] = {**out.get("train", {}), **(rt.get("train") or {})}
    return out
