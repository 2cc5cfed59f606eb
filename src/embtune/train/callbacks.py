"""The side concerns of a training run (:func:`embtune.train.loop.train_run`) as small callbacks.

Why callbacks: the loop body stays the step itself (batch -> loss -> backward -> optimiser step ->
LR), as in nanoGPT, and each concern that watches the run (divergence, pre-emption and
checkpoints, the tracker, progress lines, end-of-run measurements) is one object that can be read
and tested alone. The protocol is three optional hooks, called in list order:

- ``on_loss(prog, loss, idx)``: after the backward, before the optimiser step; may raise (the
  divergence watch), so a diverged step never reaches the weights;
- ``on_step(prog, step)``: after the step; returns True to stop the run here (pre-emption);
- ``on_end(prog, metrics)``: at the end; ``metrics`` is the finished run's dict, which a callback
  may extend, or None when the run stopped early.

Every rank calls every hook: the checkpoint callback's collective (:func:`agree`) needs all of
them; the callbacks themselves write and print on the main process only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtune.train.checkpoint import load_checkpoint, run_fingerprints, save_checkpoint
from embtune.train.failures import Diverged, DivergenceWatch, partial_metrics
from embtune.train.pairs import SIDES, Pairs


@dataclass
class Progress:
    """Everything that changes step to step (checkpointed); the loop advances it, callbacks read it."""

    step: int = 0
    flops: int = 0
    tokens: int = 0
    wall: float = 0.0
    curve: list[dict[str, float]] = field(default_factory=list)

    def advance(self, step: StepEnd, per_token: int) -> None:
        """Count one finished step: its tokens, the FLOPs spent so far, its seconds, its curve row."""
        self.step += 1
        self.tokens += step.tokens
        self.flops = per_token * self.tokens
        self.wall += step.seconds
        self.curve.append({"step": self.step, "loss": step.loss, "lr": step.lr, "tokens": self.tokens,
                           "flops": self.flops})


@dataclass(frozen=True)
class StepEnd:
    """What one optimiser step did: its loss, the LR it used, its seconds and real tokens."""

    loss: float
    lr: float
    seconds: float
    tokens: int


class Callback:
    """The protocol (every hook a no-op here): subclass and override what a concern needs."""

    def on_loss(self, prog: Progress, loss: float, idx: np.ndarray) -> None:
        """Before the optimiser step of the pairs ``idx``; raise to stop the run with an error."""

    def on_step(self, prog: Progress, step: StepEnd) -> bool:
        """After the step; True stops the run after it."""
        return False

    def on_end(self, prog: Progress, metrics: dict[str, Any] | None) -> None:
        """At the end; ``metrics`` (extend it in place) is None when the run stopped early."""


class Callbacks(Callback):
    """A list of callbacks called in order; ``on_step`` calls every one (none is skipped by an
    earlier one's stop) and stops when any asks to."""

    def __init__(self, callbacks: Sequence[Callback]) -> None:
        self.callbacks = list(callbacks)

    def on_loss(self, prog: Progress, loss: float, idx: np.ndarray) -> None:
        for cb in self.callbacks:
            cb.on_loss(prog, loss, idx)

    def on_step(self, prog: Progress, step: StepEnd) -> bool:
        return any([cb.on_step(prog, step) for cb in self.callbacks])

    def on_end(self, prog: Progress, metrics: dict[str, Any] | None) -> None:
        for cb in self.callbacks:
            cb.on_end(prog, metrics)


# --------------------------------------------------------------------------- divergence
class DivergenceCheck(Callback):
    """Stops a run whose loss is NaN/inf or exploding (:class:`embtune.train.failures.DivergenceWatch`)
    with :class:`~embtune.train.failures.Diverged`, carrying what the run had done."""

    def __init__(self, run: Any, sched: Any, precision: str, pairs: Pairs) -> None:
        self.run, self.sched, self.precision, self.pairs = run, sched, precision, pairs
        self.watch = DivergenceWatch(run.train.batch_size)

    def on_loss(self, prog: Progress, loss: float, idx: np.ndarray) -> None:
        why = self.watch.check(loss)
        if not why:
            return
        step = prog.step + 1
        message = (nonfinite_loss_message(self.run, loss, step, self.sched.get_last_lr()[0], self.precision,
                                          empty_texts(self.pairs, idx)) if not math.isfinite(loss) else
                   f"run {self.run.run_id}: {why} at step {step}")
        raise Diverged(message, partial_metrics(prog.curve, prog.wall))


def empty_texts(pairs: Pairs, idx: np.ndarray) -> dict[str, int]:
    """How many queries / positives of the pairs ``idx`` have no tokens at all."""
    return {side: int((pairs.side(side).lengths(pairs.context_length, idx) == 0).sum()) for side in SIDES}


def nonfinite_loss_message(run: Any, loss: float, step: int, lr: float, precision: str,
                           empty: dict[str, int]) -> str:
    """Why a loss can be NaN/inf, each cause with this run's value, so the fix can be chosen
    without re-running under a debugger."""
    temperature = run.train.temperature
    causes = [
        f"learning rate too high (lr {lr:.3g} at this step, peak_lr {run.peak_lr:.3g}: "
        "try a smaller peak_lr)",
        ("fp16/bf16 overflow (unlikely: this run has no mixed precision)" if precision in ("no", "fp32")
         else f"fp16/bf16 overflow (this run computes in {precision}: try a lower peak_lr, or fp32 "
              "to confirm)"),
        f"bad data (this batch has {empty['query']} empty queries and {empty['pos']} empty "
        f"positives; check {run.data.train_dir})",
        f"temperature too small (train.temperature {temperature:g}; logits are cosine / "
        f"temperature, so |logit| <= {1 / temperature if temperature > 0 else math.inf:g})",
    ]
    return (f"run {run.run_id}: loss is {loss} at step {step} "
            f"(batch_size {run.train.batch_size}, method {run.method}); possible causes: "
            + "; ".join(f"({i}) {c}" for i, c in enumerate(causes, 1)))


# --------------------------------------------------------------------------- checkpoints
def agree(acc: Any, flag: bool) -> bool:
    """True on every process if it is true on any: a signal reaching one rank stops all at one step."""
    if acc.num_processes == 1:
        return flag
    import torch.distributed as dist

    t = torch.tensor([int(flag)], device=acc.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


class Checkpointing(Callback):
    """Resumes a run from its checkpoint and saves one every ``train.checkpoint_every_steps`` and
    at a pre-emption (a signal on ``stop``, an object with ``signum``, or the test hook
    ``stop_after_steps`` of this invocation), which then stops the run on every rank.

    The checkpoint carries the fingerprints of the run config's JSON form, so a changed config is
    never resumed (:mod:`embtune.train.checkpoint`)."""

    def __init__(self, ckpt_dir: Path, run: Any, model: Any, opt: Any, sched: Any, acc: Any, total: int,
                 stop: Any = None, stop_after_steps: int | None = None) -> None:
        self.ckpt_dir, self.model, self.opt, self.sched, self.acc = ckpt_dir, model, opt, sched, acc
        self.as_json = run.to_dict()             # the config's JSON form: what checkpoints record and compare
        self.fingerprints = run_fingerprints(self.as_json)
        self.every, self.total = run.train.checkpoint_every_steps, total
        self.stop, self.stop_after_steps, self.ran = stop, stop_after_steps, 0

    def resume(self) -> Progress:
        """The saved progress (the model, optimiser and schedule restored in place), or a fresh one."""
        saved = load_checkpoint(self.ckpt_dir, self.as_json, self.fingerprints, self.model, self.opt, self.sched)
        return Progress(**saved) if saved else Progress()

    def on_step(self, prog: Progress, step: StepEnd) -> bool:
        self.ran += 1
        signalled = self.stop is not None and self.stop.signum is not None
        preempt = agree(self.acc, signalled or self.ran == self.stop_after_steps)
        periodic = prog.step % self.every == 0 and prog.step < self.total
        if (preempt or periodic) and self.acc.is_main_process:
            save_checkpoint(self.ckpt_dir, self.as_json, self.fingerprints, self.model, self.opt, self.sched,
                            prog.__dict__)
        self.acc.wait_for_everyone()
        return preempt and prog.step < self.total


# --------------------------------------------------------------------------- tracking and progress
def gpu_memory(device: Any) -> dict[str, float]:
    """Peak GPU memory of this process so far (GiB), where there is a GPU."""
    if getattr(device, "type", None) != "cuda":
        return {}
    return {"gpu_max_allocated_gib": torch.cuda.max_memory_allocated(device) / 2**30,
            "gpu_max_reserved_gib": torch.cuda.max_memory_reserved(device) / 2**30}


class Tracking(Callback):
    """What a training run logs to its tracker (:mod:`embtune.train.tracking`) every
    ``train.log_every_steps`` steps and at the last: loss, LR, tokens, FLOPs spent against the
    budget, step time, throughput, model-FLOP MFU (where the device's peak is known), GPU memory
    (on a GPU); at the end the held-out loss and the run's model- and hardware-FLOP MFU
    (``embtune.train.mfu``).

    Why not every step: DVCLive rewrites its dvc.yaml, metrics.json and one TSV per metric at each
    logged step, measured 27 ms per logged step outside a repository and 48 ms inside this one
    (2-core machine under load); every 10th step makes that a few ms per step. ``curve.csv``
    keeps every step's loss."""

    def __init__(self, acc: Any, ckpt_dir: Path, metrics: dict[str, Any], counts: Any, total: int,
                 every: int | None) -> None:
        from embtune.train.mfu import device_peak
        from embtune.train.tracking import DIR, Tracker

        self.tracker = Tracker(acc, "embtune", Path(ckpt_dir) / DIR, metrics)
        self.acc, self.counts, self.total, self.every = acc, counts, total, int(every or 1)
        self.budget = float(metrics["budget"])
        device = getattr(acc, "device", None)
        self.device = device
        kind = getattr(device, "type", None) or "cpu"
        self.peak = device_peak(kind, torch.cuda.get_device_name(device) if kind == "cuda" else kind)[0]

    def on_step(self, prog: Progress, step: StepEnd) -> bool:
        if not self.tracker.active or (prog.step % self.every and prog.step != self.total):
            return False
        from embtune.models.flops import model_flops_utilisation

        per_s = step.tokens / step.seconds if step.seconds > 0 else None
        values = {"train/loss": step.loss, "train/lr": step.lr, "train/tokens": prog.tokens,
                  "train/flops": prog.flops, "train/budget_fraction": prog.flops / self.budget if self.budget else None,
                  "train/step_time_s": step.seconds, "train/tokens_per_s": per_s}
        if self.peak and per_s:
            values["train/mfu_model"] = model_flops_utilisation(self.counts, per_s, self.peak, self.acc.num_processes)
        values.update({f"train/{k}": v for k, v in gpu_memory(self.device).items()})
        self.tracker.log(values, prog.step)
        return False

    def on_end(self, prog: Progress, metrics: dict[str, Any] | None) -> None:
        if metrics is not None:
            self.tracker.log({"val/loss": metrics.get("val_loss"), "train/final_loss": metrics.get("final_train_loss"),
                              "train/mfu_model_run": metrics.get("mfu_model"),
                              "train/mfu_hardware_run": metrics.get("mfu_hardware")}, int(metrics.get("steps") or 0))
        self.tracker.end()


class ProgressLines(Callback):
    """The run's progress bar / periodic lines with ETA (:mod:`embtune.jobs.progress`), every step, and
    a plain ``step i/n loss lr C`` line on stdout every ``train.log_every_steps`` steps."""

    def __init__(self, acc: Any, run_id: str, total: int, initial: int, every: int | None) -> None:
        from embtune.jobs.progress import Progress as Bar

        self.main = bool(getattr(acc, "is_main_process", True))
        self.bar = Bar(total, f"train {run_id}", unit="step", initial=initial, enable=self.main)
        self.total, self.every = total, every

    def on_step(self, prog: Progress, step: StepEnd) -> bool:
        self.bar.update(1, loss=step.loss, lr=step.lr)
        if self.every and prog.step % self.every == 0 and self.main:
            print(f"step {prog.step}/{self.total} loss {step.loss:.4f} lr {step.lr:.3g} C {prog.flops:.3g}",
                  flush=True)
        return False

    def on_end(self, prog: Progress, metrics: dict[str, Any] | None) -> None:
        self.bar.close()


# --------------------------------------------------------------------------- end-of-run measurements
class RunMeasurements(Callback):
    """A finished run's measured peak memory against its estimate (:mod:`embtune.models.memory`)
    and its model- and hardware-FLOP MFU (:mod:`embtune.train.mfu`), added to ``metrics``."""

    def __init__(self, run: Any, counts: Any, model: Any, acc: Any, chunk: int) -> None:
        self.run, self.counts, self.model, self.acc, self.chunk = run, counts, model, acc, chunk

    def on_end(self, prog: Progress, metrics: dict[str, Any] | None) -> None:
        if metrics is None:
            return
        from embtune.models.memory import run_memory_metrics
        from embtune.train.mfu import run_mfu

        t, acc, world = self.run.train, self.acc, self.acc.num_processes
        metrics.update(run_memory_metrics(self.run, self.counts, self.model, self.chunk, acc))
        metrics.update(run_mfu(self.counts, self.run.method, prog.tokens, prog.wall,
                               two_pass=2 * (t.batch_size // world) > self.chunk,
                               checkpointing=t.gradient_checkpointing, device_type=acc.device.type,
                               device_name=metrics["device_name"], devices=world))
