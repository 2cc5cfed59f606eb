"""Adiabatic tuning of the query tower of a dual encoder (paper 2).

Why this shape: the point of paper 2 is that stored document embeddings never change. So the
document tower is the pretrained encoder itself, frozen, and its embeddings come from the shared
persistent :class:`embtune.models.embed_cache.EmbedCache` (store ``tower="doc"``, the model's
``doc_prefix``): each unique document is encoded once per base model, however many learning rates
a sweep trains, and the PND evaluation reads the very same vectors. Only a copy of the encoder —
the query tower — is trained, with paper 2's regime (App. E):

* triplet margin loss on Euclidean (the default) or cosine (1 - cos) distance, margin from the run config;
* ``batches_per_epoch`` batches per epoch, then validation; an epoch *improves* only if the
  validation loss AND the validation error count both decrease vs the best so far (epoch 0 = the
  untuned model, so "best" can be the original encoder); stop after ``patience`` consecutive
  non-improving epochs or ``max_epochs``; the best checkpoint is what is saved, or with
  ``saved_epoch: last`` the last epoch's (the paper says neither; docs/fidelity.md#P2-STOPPING);
* LR schedule of Table 19 set before every optimizer step (:mod:`embtune.core.optim`;
  ``scheduler_unit`` picks the step or the epoch clock), a0 = ``lr_effective`` (batch-size
  scaling already applied by :func:`embtune.plan.query_sweep.query_runs`);
* optimizers of App. E(5) and Table 20 (:func:`make_optimizer`);
* freeze specs of Table 1 (:mod:`embtune.train.freeze_specs`).

The query tower trains in ``train()`` mode (dropout on, as sentence-transformers' ``fit`` does);
validation and the document tower run in ``eval()`` mode.

Both towers tuned (``tune_doc_tower: true``; App. L, Fig. 11a "E5-full": "both the query and text
encoder are subject to tuning (as two independent encoders, with the same starting point) with
the embedding block frozen in both encoders"): the document tower becomes a second trainable copy
(:class:`TunedDocs`) with the same freeze spec, both towers' parameters share one optimizer, and
its embeddings, which change every step, never touch the cache.

The training triplets and their epoch batches are :mod:`embtune.train.triplets`; the ``embtune
tune-query`` driver (arguments, data files, run directory) is :mod:`embtune.stages.tune_query`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from embtune.core.optim import epoch_lrs
from embtune.models.embed_cache import EmbedCache
from embtune.models.encoders import SentenceTransformerEncoder, compute_precision, without_normalize
from embtune.runconfig import QueryRunConfig
from embtune.train.failures import Diverged
from embtune.train.freeze_specs import FreezePlan, apply_freeze
from embtune.train.losses import pair_distance, triplet_margin_loss
from embtune.train.triplets import Triplet, epoch_batches

DOC_TOWER = "doc"


# ---------------------------------------------------------------- early stopping
@dataclass(frozen=True)
class StopState:
    """Best validation point so far and the count of consecutive non-improving epochs."""

    best_loss: float
    best_errors: int
    best_epoch: int = 0
    idle: int = 0


def stop_step(state: StopState, epoch: int, loss: float, errors: int) -> tuple[StopState, bool]:
    """Paper 2, App. E(4): improved iff loss AND error count both decreased vs the best so far."""
    if loss < state.best_loss and errors < state.best_errors:
        return StopState(loss, errors, epoch, 0), True
    return replace(state, idle=state.idle + 1), False


def stopping_trace(baseline: tuple[float, int], epochs: Sequence[tuple[float, int]],
                   patience: int) -> tuple[int, int, list[bool]]:
    """(epochs run, best epoch, improved flags) for a scripted validation sequence (tests, docs)."""
    state = StopState(*baseline)
    flags: list[bool] = []
    for epoch, (loss, errors) in enumerate(epochs, start=1):
        state, improved = stop_step(state, epoch, loss, errors)
        flags.append(improved)
        if state.idle >= patience:
            break
    return len(flags), state.best_epoch, flags


# ---------------------------------------------------------------- model pieces
OPTIMIZERS = ("adamw", "adamax", "adamax_nomomentum", "sgd", "adadelta")


def make_optimizer(params: list[torch.nn.Parameter], name: str, lr: float,
                   weight_decay: float) -> torch.optim.Optimizer:
    """The optimizers of paper 2 (App. E(5), M.8, Table 20), torch defaults otherwise.

    * ``adamw``: AdamW (App. E(5)); weight decay decoupled, p <- p - lr*wd*p (Loshchilov & Hutter).
    * ``adamax``: Adamax "with momentum" = torch's default betas (0.9, 0.999).
    * ``adamax_nomomentum``: Table 20, "corresponds to choosing beta1 = beta2 = 0". Then m = g and
      u = max(0*u, |g| + eps) = |g| + eps, so each step is p <- p - lr * g/(|g| + eps): sign-SGD
      with step lr, softened to lr*g/eps for |g| << eps = 1e-8 (no division by zero).
    * ``sgd``: SGD without momentum (Fig. 14).
    * ``adadelta``: tried in M.8 ("did not change the model weights in a significant enough way").
    For all but AdamW, torch applies ``weight_decay`` as an L2 term added to the gradient."""
    if not params:
        raise ValueError("no trainable parameters left after freezing")
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "adamax":
        return torch.optim.Adamax(params, lr=lr, weight_decay=weight_decay)
    if name == "adamax_nomomentum":
        return torch.optim.Adamax(params, lr=lr, betas=(0.0, 0.0), weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.0, weight_decay=weight_decay)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r} (expected one of {', '.join(OPTIMIZERS)})")


def embed_queries(model: Any, texts: list[str]) -> tuple[torch.Tensor, int]:
    """Differentiable query embeddings (raw: before the model's ``Normalize``, as the cached
    document vectors; docs/fidelity.md#P2-DIST-EMBEDDINGS) and the number of real tokens."""
    device = next(model.parameters()).device
    feats = model.preprocess(texts)
    feats = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in feats.items()}
    n_tokens = int(feats["attention_mask"].sum())
    with without_normalize(model):
        return model(feats)["sentence_embedding"], n_tokens


def _unit(run: QueryRunConfig) -> bool:
    """``dist`` on L2-normalised vectors (``dist_embeddings: normalized``) rather than raw ones."""
    return run.dist_embeddings == "normalized"


@dataclass
class DocSide:
    """Frozen document tower + persistent cache: the only way this module touches documents."""

    encoder: SentenceTransformerEncoder
    cache: EmbedCache
    fingerprint: str
    prefix: str
    batch_size: int = 64

    @property
    def precision(self) -> str:
        return self.encoder.precision

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        emb = self.cache.embed(self.encoder, self.fingerprint, DOC_TOWER, self.prefix, list(texts),
                               self.batch_size)
        return torch.from_numpy(np.ascontiguousarray(emb))


@dataclass
class TunedDocs:
    """A trainable document tower (both towers tuned): ``embed`` for validation (eval mode, no
    gradient, the run's precision), ``train_embed`` inside a training step (train mode, float32,
    differentiable). Nothing is cached: the weights change every step."""

    model: Any
    prefix: str
    precision: str
    batch_size: int = 64

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        self.model.eval()
        device = str(next(self.model.parameters()).device)
        out = []
        with torch.inference_mode(), compute_precision(self.precision, device):
            for i in range(0, len(texts), self.batch_size):
                emb, _ = embed_queries(self.model, [self.prefix + t for t in texts[i:i + self.batch_size]])
                out.append(emb.float().cpu())
        return torch.cat(out)

    def train_embed(self, texts: Sequence[str]) -> torch.Tensor:
        self.model.train()
        return embed_queries(self.model, [self.prefix + t for t in texts])[0]


def tuned_doc_side(docs: DocSide, freeze: str) -> tuple[TunedDocs, FreezePlan]:
    """App. L's second tower: a copy of the frozen base with ``freeze`` applied, as the query's."""
    model = copy.deepcopy(docs.encoder.model)
    return TunedDocs(model, docs.prefix, docs.precision, docs.batch_size), apply_freeze(model, freeze)


def validate(query_tower: Any, val: list[Triplet], docs: DocSide | TunedDocs, run: QueryRunConfig,
             batch_size: int = 64) -> tuple[float, int]:
    """(mean triplet loss, error count) on the validation triplets; error = d(q,pos) >= d(q,neg).
    Queries are embedded in the document tower's precision (fp32 unless bf16 was asked for);
    training itself always runs in float32."""
    prefix = run.model.get("query_prefix", "")
    pos, neg = docs.embed([t[1] for t in val]), docs.embed([t[2] for t in val])
    query_tower.eval()
    losses, errors = [], 0
    device = str(next(query_tower.parameters()).device)
    with torch.inference_mode(), compute_precision(docs.precision, device):
        for i in range(0, len(val), batch_size):
            q, _ = embed_queries(query_tower, [prefix + t[0] for t in val[i:i + batch_size]])
            q, p, n = q.float().cpu(), pos[i:i + batch_size], neg[i:i + batch_size]
            losses.append(float(triplet_margin_loss(q, p, n, run.margin, run.distance, _unit(run)))
                          * len(q))
            errors += int((pair_distance(q, p, run.distance, _unit(run))
                           >= pair_distance(q, n, run.distance, _unit(run))).sum())
    return sum(losses) / len(val), errors


# ---------------------------------------------------------------- training loop
@dataclass
class TuneResult:
    """What :func:`tune` leaves behind; ``query_tower`` holds the best checkpoint."""

    query_tower: Any
    curve: list[dict[str, Any]]
    metrics: dict[str, Any]
    plan: FreezePlan
    doc_tower: Any = None   # the tuned document tower (tune_doc_tower), else None


def _train_epoch(query_tower: Any, optimizer: torch.optim.Optimizer, batches: list[list[int]],
                 lrs: Sequence[float], train: list[Triplet], docs: DocSide | TunedDocs,
                 run: QueryRunConfig) -> tuple[float, int]:
    """One epoch of optimizer steps, step i at rate ``lrs[i]``; returns (mean train loss, query
    tokens processed). Documents come from the cache, or with gradients from a tuned tower."""
    prefix = run.model.get("query_prefix", "")
    query_tower.train()
    total, tokens = 0.0, 0
    device = next(query_tower.parameters()).device
    for batch, lr in zip(batches, lrs, strict=True):
        for group in optimizer.param_groups:
            group["lr"] = lr
        side = docs.train_embed if isinstance(docs, TunedDocs) else docs.embed
        pos = side([train[i][1] for i in batch]).to(device)
        neg = side([train[i][2] for i in batch]).to(device)
        q, n_tok = embed_queries(query_tower, [prefix + train[i][0] for i in batch])
        loss = triplet_margin_loss(q, pos, neg, run.margin, run.distance, _unit(run))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
        tokens += n_tok
    return total / len(batches), tokens


def _fill_doc_cache(train: list[Triplet], batches: list[list[int]], docs: DocSide) -> float:
    """Encode an epoch's unseen documents in one batched call (better batching than per step);
    returns the seconds it took, kept apart from query-tower training time."""
    t = time.perf_counter()
    flat = [i for b in batches for i in b]
    docs.embed([train[i][1] for i in flat] + [train[i][2] for i in flat])
    return time.perf_counter() - t


def _trainable_state(model: Any) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def tune(run: QueryRunConfig, train: list[Triplet], val: list[Triplet], docs: DocSide,
         log: Callable[[str], None] = print,
         track: Callable[[dict[str, Any], int], None] | None = None) -> TuneResult:
    """Train a copy of ``docs.encoder.model`` as the query tower; the frozen document tower
    (``docs.encoder``) is untouched. With ``run.tune_doc_tower`` a second copy is tuned as
    the document tower alongside (App. L) and returned as ``TuneResult.doc_tower``. ``track(row,
    epoch)`` gets each epoch's losses, error count and stopping decision (embtune.train.tracking)."""
    t0 = time.perf_counter()
    torch.manual_seed(run.seed)
    forwards0 = docs.cache.stats.texts_encoded
    query_tower = copy.deepcopy(docs.encoder.model)
    plan = apply_freeze(query_tower, run.freeze)
    towers, doc_plan = [query_tower], None
    side: DocSide | TunedDocs = docs
    if run.tune_doc_tower:
        side, doc_plan = tuned_doc_side(docs, run.freeze)
        towers.append(side.model)
    params = [p for t in towers for p in t.parameters() if p.requires_grad]
    optimizer = make_optimizer(params, run.optimizer, run.lr_effective, run.weight_decay)
    loss0, err0 = validate(query_tower, val, side, run)
    state, best = StopState(loss0, err0), [_trainable_state(t) for t in towers]
    curve = [_curve_row(0, [], None, loss0, err0, False, 0, t0)]
    tokens, train_time, doc_time, reason = 0, 0.0, 0.0, "max_epochs"
    for epoch in range(1, run.max_epochs + 1):
        lrs = epoch_lrs(run.lr_effective, run.scheduler, run.scheduler_unit, epoch - 1,
                        run.batches_per_epoch, run.max_epochs)
        batches = epoch_batches(len(train), run.batch_size, run.batches_per_epoch, epoch - 1,
                                run.seed)
        if side is docs:
            doc_time += _fill_doc_cache(train, batches, docs)
        ts = time.perf_counter()
        train_loss, n_tok = _train_epoch(query_tower, optimizer, batches, lrs, train, side, run)
        train_time, tokens = train_time + time.perf_counter() - ts, tokens + n_tok
        val_loss, val_err = validate(query_tower, val, side, run)
        if not (math.isfinite(train_loss) and math.isfinite(val_loss)):   # a failure record, not a result
            raise Diverged(f"query run {run.qrun_id}: loss is {train_loss} (train) / {val_loss} "
                           f"(validation) at epoch {epoch} (lr {lrs[0]:.3g})",
                           {"epochs": epoch - 1, "last_finite_loss": curve[-1]["val_loss"],
                            "wall_seconds": time.perf_counter() - t0})
        state, improved = stop_step(state, epoch, val_loss, val_err)
        if improved:
            best = [_trainable_state(t) for t in towers]
        curve.append(_curve_row(epoch, lrs, train_loss, val_loss, val_err, improved, state.idle, t0))
        log(f"epoch {epoch}: lr={lrs[0]:.3g}..{lrs[-1]:.3g} train={train_loss:.5f} "
            f"val={val_loss:.5f} errors={val_err}/{len(val)} {'improved' if improved else f'idle {state.idle}'}")
        if track:
            track({**curve[-1], "stop": state.idle >= run.patience}, epoch)
        if state.idle >= run.patience:
            reason = "patience"
            break
    for tower, state_dict in zip(towers, best):
        if run.saved_epoch == "best":   # "last": keep the weights of the epoch it stopped at
            tower.load_state_dict(state_dict, strict=False)
        tower.eval()
    metrics = _metrics(run, curve, state, reason, plan, tokens, train_time, len(val),
                       docs.cache.stats.texts_encoded - forwards0, time.perf_counter() - t0)
    metrics.update(train_time_s=train_time, doc_fill_time_s=doc_time,
                   saved_epoch=state.best_epoch if run.saved_epoch == "best" else len(curve) - 1,
                   tune_doc_tower=len(towers) > 1,
                   n_trainable_doc_tensors=len(doc_plan.trainable) if doc_plan else 0)
    return TuneResult(query_tower, curve, metrics, plan, towers[1] if len(towers) > 1 else None)


def _curve_row(epoch: int, lrs: Sequence[float], train_loss: float | None, val_loss: float,
               val_errors: int, improved: bool, idle: int, t0: float) -> dict[str, Any]:
    """One row per epoch; ``lr``/``lr_last`` = the rates of its first and last step."""
    return {"epoch": epoch, "lr": lrs[0] if lrs else None, "lr_last": lrs[-1] if lrs else None,
            "train_loss": train_loss, "val_loss": val_loss,
            "val_errors": val_errors, "improved": improved, "idle": idle,
            "wall_s": round(time.perf_counter() - t0, 3)}


def _metrics(run: QueryRunConfig, curve: list[dict[str, Any]], state: StopState, reason: str,
             plan: FreezePlan, tokens: int, train_time: float, n_val: int, doc_forwards: int,
             wall: float) -> dict[str, Any]:
    n_train = len(plan.trainable)
    return {
        "status": "ok", "qrun_id": run.qrun_id, "epochs": len(curve) - 1,
        "best_epoch": state.best_epoch, "stopped_reason": reason,
        "val_loss": [r["val_loss"] for r in curve], "val_errors": [r["val_errors"] for r in curve],
        "val_total": n_val, "best_val_loss": state.best_loss, "best_val_errors": state.best_errors,
        "train_steps": (len(curve) - 1) * run.batches_per_epoch,
        "doc_forward_passes": doc_forwards, "query_tokens": tokens,
        "query_tokens_per_s": tokens / train_time if train_time > 0 else math.nan,
        "freeze": plan.spec, "freeze_note": plan.note, "n_frozen_tensors": len(plan.frozen),
        "n_trainable_tensors": n_train, "lr_effective": run.lr_effective, "wall_time_s": wall,
    }
