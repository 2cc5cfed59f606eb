"""FLOP-budgeted contrastive fine-tuning of one run config (paper 1, sections 3–4); the ``embtune
train`` driver (arguments, run directory, exit codes) is :mod:`embtune.stages.train`.

The whole data schedule is planned before the first step (:func:`plan_steps`): seeded epoch
permutations cut into batches of ``batch_size`` pairs, real (non-padding) tokens per batch, and
C += 2·(N_F+N_B+N_U)·tokens after every step, stopping before the step that would exceed the
budget. Why plan first: the cosine schedule needs the step count, infeasible runs are detected
before any compute, and a resumed run only needs the step index to continue exactly.

Each step is one GradCache step over the global batch (symmetric InfoNCE, in-batch negatives);
with several processes every process embeds its slice, embeddings are all-gathered for the loss
and parameter gradients are all-reduced once per step by DDP (``no_sync`` on all chunks but one).
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtune.models.flops import ParamCounts
from embtune.runconfig import RunConfig
from embtune.train.callbacks import (
    Callbacks,
    Checkpointing,
    DivergenceCheck,
    Progress,
    ProgressLines,
    RunMeasurements,
    StepEnd,
    Tracking,
)
from embtune.train.checkpoint import STATE_FILE as STATE_FILE  # re-exported: the committed state file
from embtune.train.final_loss import final_loss
from embtune.train.pairs import SIDES, Pairs, open_pairs


# --------------------------------------------------------------------------- data and planning
@dataclass(frozen=True)
class Plan:
    """The step-by-step data schedule of a run, or why it cannot run."""

    batches: list[np.ndarray]           # global pair indices per step
    tokens: list[int]                   # real tokens per step
    per_token: int                      # 2·(N_F+N_B+N_U)
    epochs: float
    skip_reason: str | None = None

    @property
    def steps(self) -> int:
        return len(self.batches)


def plan_steps(lengths: np.ndarray, batch_size: int, seed: int, counts: ParamCounts,
               budget: float, max_epochs: float, min_steps: int) -> Plan:
    """Seeded epoch permutations, full batches only; stop before the step that exceeds ``budget``."""
    n = len(lengths)
    per_epoch = n // batch_size
    max_batches = math.floor(max_epochs * per_epoch + 1e-9)
    batches, tokens, spent = [], [], 0
    exhausted = True
    for epoch in range(math.ceil(max_epochs) if per_epoch else 0):
        perm = np.random.default_rng([seed, epoch]).permutation(n)
        for j in range(per_epoch):
            if len(batches) >= max_batches:
                break
            idx = perm[j * batch_size:(j + 1) * batch_size]
            step_tokens = int(lengths[idx].sum())
            if spent + counts.per_token * step_tokens > budget:
                exhausted = False
                break
            batches.append(idx)
            tokens.append(step_tokens)
            spent += counts.per_token * step_tokens
        if not exhausted:
            break
    if exhausted and batches and budget - spent < counts.per_token * np.mean(tokens):
        exhausted = False           # data ran out with less than one average batch of budget left
    epochs = len(batches) * batch_size / n if n else 0.0
    reason = None
    if per_epoch == 0:
        reason = f"{n} pairs is less than one batch of {batch_size}"
    elif exhausted:
        reason = (f"budget {budget:.3g} needs more than train.max_epochs={max_epochs} epochs "
                  f"({n} pairs; {len(batches)} steps spend only {spent:.3g} FLOP)")
    elif len(batches) < min_steps:
        reason = f"budget {budget:.3g} allows {len(batches)} steps < train.min_steps={min_steps}"
    return Plan(batches, tokens, counts.per_token, epochs, reason)


Chunk = tuple[torch.Tensor, torch.Tensor]


def _pad_sides(pairs: Pairs, rows: Sequence[np.ndarray], chunk: int, pad_id: int, multiple: int = 1) -> list[Chunk]:
    """Chunks of ``rows[0]`` of the queries, then of ``rows[1]`` of the positives."""
    return [pairs.side(side).pad(r[s:s + chunk], pairs.context_length, pad_id, multiple)
            for side, r in zip(SIDES, rows) for s in range(0, len(r), chunk)]


def make_chunks(pairs: Pairs, idx: Sequence[int], chunk: int, pad_id: int) -> list[Chunk]:
    """Query chunks then positive chunks of the pairs ``idx`` in order (the loss splits them in half)."""
    idx = np.asarray(idx, dtype=np.int64)
    return _pad_sides(pairs, (idx, idx), chunk, pad_id)


def length_sorted_chunks(pairs: Pairs, idx: Sequence[int], chunk: int, pad_id: int, multiple: int = 1
                         ) -> tuple[list[Chunk], torch.Tensor]:
    """Like :func:`make_chunks`, but each side's rows are sorted by length before chunking, so a
    chunk pads to a near-equal width instead of the batch's longest text; returns the chunks and
    ``restore`` with ``cat(encoded chunks)[restore]`` in :func:`make_chunks` order; ``multiple``
    rounds each chunk's width up (:meth:`TokenColumn.pad`: bounded shapes for ``train.compile``).

    Why this is exact: GradCache computes the loss over the whole batch, so which rows share a
    chunk changes no gradient; only the padding, i.e. wasted FLOPs, depends on it."""
    idx = np.asarray(idx, dtype=np.int64)
    orders = [np.argsort(pairs.side(side).lengths(pairs.context_length, idx), kind="stable") for side in SIDES]
    chunks = _pad_sides(pairs, [idx[o] for o in orders], chunk, pad_id, multiple)
    restore = np.argsort(np.concatenate([o + k * len(idx) for k, o in enumerate(orders)]), kind="stable")
    return chunks, torch.from_numpy(restore)


# --------------------------------------------------------------------------- model pieces
def embed(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], pooling: str,
          device: torch.device | str = "cpu") -> torch.Tensor:
    """Pooled last hidden states of one padded chunk."""
    from embtune.models.pooling import pool

    ids, mask = (t.to(device) for t in batch)
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    return pool(hidden, mask, pooling)


def contrastive_loss_fn(temperature: float, gather: Callable[[torch.Tensor], torch.Tensor] | None = None,
                        form: str = "inverse") -> Callable[[torch.Tensor], torch.Tensor]:
    """Loss over [queries; positives] of the local slice; ``gather`` builds the global batch.
    ``form``: logits cos/τ or cos·exp(τ) (docs/fidelity.md#P1-LOGIT-SCALE)."""
    from embtune.train.losses import symmetric_infonce

    def loss(reps: torch.Tensor) -> torch.Tensor:
        q, p = reps.chunk(2)
        if gather is not None:
            q, p = gather(q), gather(p)
        return symmetric_infonce(q, p, temperature, form)  # type: ignore[arg-type]

    return loss


def global_gather(rank: int, world: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """All-gather along dim 0, keeping the autograd graph for this rank's slice."""
    import torch.distributed as dist

    def gather(x: torch.Tensor) -> torch.Tensor:
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.detach().contiguous())
        parts[rank] = x
        return torch.cat(parts)

    return gather


def build_optimizer(model: torch.nn.Module, run: RunConfig, total_steps: int) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW (fused: ``train.kernels``) on the trainable parameters + warm-up/cosine schedule over
    the ``total_steps`` the plan holds (docs/fidelity.md#P1-LR-SCHEDULE)."""
    from embtune.core.optim import lr_multiplier
    from embtune.train.kernels import adamw

    t = run.train
    opt = adamw((p for p in model.parameters() if p.requires_grad), run.peak_lr, t.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_multiplier(
        s, total_steps, t.warmup_fraction, t.final_lr_fraction))
    return opt, sched


@torch.no_grad()
def held_out_loss(model: torch.nn.Module, pairs: Pairs, batch_size: int, chunk: int, pad_id: int,
                  pooling: str, temperature: float, device: torch.device | str = "cpu",
                  form: str = "inverse") -> float | None:
    """Mean contrastive loss over fixed consecutive batches of ``batch_size`` val pairs."""
    from embtune.train.losses import symmetric_infonce

    n = len(pairs)
    if n < 2:
        return None
    size = min(batch_size, n)
    was_training = model.training
    model.eval()
    losses = []
    for start in range(0, n - size + 1, size):
        chunks, restore = length_sorted_chunks(pairs, range(start, start + size), chunk, pad_id)
        reps = torch.cat([embed(model, c, pooling, device).float() for c in chunks])[restore]
        q, p = reps.chunk(2)
        losses.append(symmetric_infonce(q, p, temperature, form).item())  # type: ignore[arg-type]
    model.train(was_training)
    return float(np.mean(losses))


# --------------------------------------------------------------------------- state
class StopFlag:
    """Set by SIGTERM/SIGUSR1 (SLURM pre-emption): finish the step, checkpoint, exit non-zero."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.progress: Progress | None = None   # set by train_run: a failed run's partial metrics

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signum = signum


# --------------------------------------------------------------------------- the run
@dataclass
class Result:
    status: str                         # ok | skipped | preempted
    metrics: dict[str, Any]
    curve: list[dict[str, float]]
    model: torch.nn.Module | None = None


def load_base(base_dir: str) -> torch.nn.Module:
    from embtune.train.kernels import load_pretrained

    model = load_pretrained(base_dir, dtype=torch.float32)
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False
    return model


def enable_checkpointing(model: torch.nn.Module) -> None:
    """Activation checkpointing, non-reentrant (works with frozen inputs and peft); transformers
    5 renamed ``gradient_checkpointing_enable`` to ``activation_checkpointing_enable``.

    transformers also hooks the token embeddings so their output requires grad (needed only by
    reentrant checkpointing); the hook is removed again, else the backward runs through the frozen
    blocks of ``freeze`` and re-runs them (measured with torch's FLOP counter, one active block
    of three: +38 % executed FLOPs with GradCache's two passes, +59 % in one; ``embtune.plan.cost``).
    Gradients are unchanged (tests/unit/core/test_cost.py)."""
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:                                                # transformers < 5
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if hasattr(model, "disable_input_require_grads"):
        model.disable_input_require_grads()


def base_metrics(run: RunConfig, counts: ParamCounts | None) -> dict[str, Any]:
    from embtune.models import methods

    out: dict[str, Any] = {"run_id": run.run_id, "method": run.method, "model": run.model.name,
                           "budget": float(run.budget), "peak_lr": float(run.peak_lr),
                           "seed": run.seed, "batch_size": run.train.batch_size,
                           "context_length": run.train.context_length}
    if counts is not None:
        out.update(n_total=counts.n_total, n_forward=counts.n_forward, n_backward=counts.n_backward,
                   n_update=counts.n_update, trainable_fraction=counts.trainable_fraction)
    own = run.settings.to_dict()
    for key, _ in methods.get(run.method).reported:      # the method's own settings (its registry entry)
        if own.get(key) is not None:
            out[key] = own[key]
    return out


def pad_token_id(model: torch.nn.Module) -> int:
    """The padding token of the model's config (peft: of its base model), 0 where it has none."""
    config = model.get_base_model().config if hasattr(model, "get_base_model") else model.config
    return int(getattr(config, "pad_token_id", None) or 0)


def gradcache_loss(run: RunConfig, acc: Any, wrapped: torch.nn.Module, pairs: Pairs, pad_id: int
                   ) -> Callable[[np.ndarray], float]:
    """``step(local)``: forward and backward of this process's pairs ``local`` as one GradCache
    step (gradients accumulated, not applied); returns the loss of the global batch."""
    from embtune.train.gradcache import gradcache_step
    from embtune.train.kernels import compiled, width_multiple

    t, world, chunk = run.train, acc.num_processes, run.train.gradcache_chunk
    loss_fn = contrastive_loss_fn(t.temperature, global_gather(acc.process_index, world) if world > 1 else None,
                                  t.logit_scale)
    encoder, multiple = compiled(wrapped, t.compile, t.context_length), width_multiple(t.compile)

    def encode(c: Chunk) -> torch.Tensor:
        return embed(encoder, c, t.pooling, acc.device)

    def step(local: np.ndarray) -> float:
        chunks, restore = length_sorted_chunks(pairs, local, chunk, pad_id, multiple)
        with acc.autocast():
            loss = gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]),
                                  backward=acc.backward, no_sync=lambda: acc.no_sync(wrapped),
                                  grad_scale=float(world), single_pass=2 * len(local) <= chunk)
        return loss.item()

    return step


def train_run(run: RunConfig, ckpt_dir: Path, *, stop: StopFlag | None = None,
              stop_after_steps: int | None = None, accelerator: Any = None, log_with: str | None = None) -> Result:
    """Train one run config; pure apart from the checkpoint directory (tracker files: ``tracking``).

    The loop is the step (batch -> loss and backward -> optimiser step -> LR); what watches the
    run (divergence, progress, tracker, checkpoints, end-of-run measurements) are the callbacks of
    :mod:`embtune.train.callbacks`. ``stop_after_steps`` is a test hook that behaves like a
    pre-emption signal after that many steps of this invocation."""
    from embtune.models.methods import apply_method, count_params
    from embtune.train import tracking

    t = run.train
    torch.manual_seed(run.seed)
    acc = accelerator or tracking.accelerator(ckpt_dir, log_with)
    model = apply_method(load_base(run.base_model_dir), run.method_config)
    counts = count_params(model, run.method)
    train_pairs = open_pairs(run.data.train_dir, "train", t.context_length)
    # rows of the embedding table (peft's LoRA-on-embeddings layer has no num_embeddings of its own)
    train_pairs.check_vocab(int(model.get_input_embeddings().weight.shape[0]), run.data.train_dir)
    plan = plan_steps(train_pairs.lengths(), t.batch_size, run.seed, counts, run.budget, t.max_epochs, t.min_steps)
    metrics = base_metrics(run, counts)
    if plan.skip_reason:
        return Result("skipped", {**metrics, "status": "skipped", "skip_reason": plan.skip_reason,
                                  "n_pairs": len(train_pairs)}, [])
    if t.gradient_checkpointing:
        enable_checkpointing(model)
    model.train()
    opt, sched = build_optimizer(model, run, plan.steps)
    wrapped = acc.prepare(model)
    checkpoints = Checkpointing(ckpt_dir, run, model, opt, sched, acc, plan.steps, stop, stop_after_steps)
    prog = checkpoints.resume()
    if stop is not None:
        stop.progress = prog
    world, rank, bs = acc.num_processes, acc.process_index, t.batch_size
    if bs % world:
        raise ValueError(f"batch_size {bs} is not divisible by {world} processes")
    pad_id = pad_token_id(model)
    forward_backward = gradcache_loss(run, acc, wrapped, train_pairs, pad_id)
    callbacks = Callbacks([DivergenceCheck(run, sched, str(acc.mixed_precision), train_pairs),
                           ProgressLines(acc, run.run_id, plan.steps, prog.step, t.log_every_steps),
                           RunMeasurements(run, counts, model, acc, t.gradcache_chunk),
                           Tracking(acc, ckpt_dir, metrics, counts, plan.steps, t.log_every_steps),
                           checkpoints])
    while prog.step < plan.steps:
        t0 = time.perf_counter()
        local = plan.batches[prog.step][rank * bs // world:(rank + 1) * bs // world]   # this process's pairs
        loss = forward_backward(local)
        callbacks.on_loss(prog, loss, local)
        lr = sched.get_last_lr()[0]
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step = StepEnd(loss, lr, time.perf_counter() - t0, plan.tokens[prog.step])
        prog.advance(step, plan.per_token)
        if callbacks.on_step(prog, step):
            callbacks.on_end(prog, None)
            return Result("preempted", {**metrics, "status": "preempted", "steps": prog.step}, prog.curve)
    metrics.update(finished_metrics(run, model, prog, plan, len(train_pairs), pad_id, acc))
    callbacks.on_end(prog, metrics)
    return Result("ok", metrics, prog.curve, model)


def finished_metrics(run: RunConfig, model: torch.nn.Module, prog: Progress, plan: Plan, n_pairs: int,
                     pad_id: int, acc: Any) -> dict[str, Any]:
    """The metrics.json fields of a run that spent its plan: the fitted final loss (never
    averaging warm-up steps, docs/fidelity.md#P1-FINAL-LOSS), the held-out loss, what it spent
    and where it ran."""
    t = run.train
    final, window = final_loss([r["loss"] for r in prog.curve], t.final_loss_window,
                               t.final_loss_fraction, t.warmup_fraction)
    val = open_pairs(run.data.train_dir, "val", t.context_length)
    val_loss = held_out_loss(model, val, t.batch_size, t.gradcache_chunk, pad_id, t.pooling, t.temperature,
                             acc.device, t.logit_scale)
    return dict(status="ok", final_train_loss=final, final_loss_steps=window,
                val_loss=val_loss, flops=prog.flops, tokens=prog.tokens, steps=prog.step,
                planned_steps=plan.steps, epochs=plan.epochs, n_pairs=n_pairs,
                budget_fraction=prog.flops / run.budget, wall_seconds=prog.wall,
                throughput_tokens_per_s=prog.tokens / prog.wall if prog.wall else None,
                world_size=acc.num_processes, device=str(acc.device),
                device_name=torch.cuda.get_device_name(acc.device) if acc.device.type == "cuda" else "cpu")
