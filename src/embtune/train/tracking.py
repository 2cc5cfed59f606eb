"""Experiment tracking through accelerate's tracker API (``Accelerator(log_with=...)``).

Why accelerate's trackers and not our own writer: training already runs through accelerate, whose
tracker classes (DVCLive, TensorBoard, MLflow, W&B, ...) log on the main process only and write
each tool's own format, so ``dvc plots show`` / ``dvc exp show`` / DVC Studio / TensorBoard read a
run with no glue code. ``params.yaml``'s ``tracking.log_with`` picks one (``none`` turns it off).

Where the files go (``embtune.core.layout.Results.tracking``): while a run trains, into
``<checkpoint>/tracking`` (resumed with the checkpoint after a pre-emption; DVCLive's own
``dvc.yaml`` there lets ``dvc plots show`` follow the run live); when it finishes the stage copies
them into ``results/tracking/<run>``, a declared output of the rule. Not inside ``runs/<run>``:
DVC does not look for ``dvc.yaml`` files inside a stage's outputs (``runs/`` is one), so the
per-run plots and metrics would be invisible to ``dvc plots show`` there. The tracker is chosen
outside the run config, so it never changes a run's identity (rerun hashes, checkpoint
fingerprints).
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: tracking.log_with -> the module it needs (``none``: no tracker).
TRACKERS = {"dvclive": "dvclive", "tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb",
            "none": None}
DEFAULT = "dvclive"
LIVE = "dvclive"   # DVCLive's own folder inside a run's tracking folder (dvc.yaml beside it)
#: The environment variable the workflow sets from params (common.smk), read by the stages; an
#: environment variable and not a rule param, so changing the tracker re-runs nothing.
ENV = "EMBTUNE_LOG_WITH"


def tracker_problem(name: str) -> str | None:
    """Why ``name`` cannot be used here, or None when it can."""
    if name not in TRACKERS:
        return f"unknown tracker {name!r} (expected one of {', '.join(TRACKERS)})"
    module = TRACKERS[name]
    if module and importlib.util.find_spec(module) is None and not (
            name == "tensorboard" and importlib.util.find_spec("tensorboardX")):
        return (f"tracker {name!r} is not installed in this environment (pip install {module}), "
                "or choose tracking.log_with: dvclive | none")
    return None


def selected(name: str | None = None) -> str:
    """``name``, else ``$EMBTUNE_LOG_WITH``, else DVCLive; an unusable one is a ValueError."""
    name = name or os.environ.get(ENV) or DEFAULT
    problem = tracker_problem(name)
    if problem:
        raise ValueError(f"tracking.log_with: {problem}")
    return name


#: The tracker's folder inside a run's checkpoint directory (the live copy while it trains).
DIR = "tracking"


def accelerator_kwargs(name: str | None, ckpt_dir: Path) -> dict[str, Any]:
    """Keyword arguments of ``Accelerator`` for tracker ``name`` (``selected``) writing into
    ``ckpt_dir/tracking``."""
    name = selected(name)
    if name == "none":
        return {}
    return {"log_with": name, "project_dir": str(Path(ckpt_dir) / DIR)}


def accelerator(ckpt_dir: Path, log_with: str | None = None) -> Any:
    """The training accelerator: bf16 autocast on a GPU, fp32 on CPU, with the run's tracker."""
    import torch
    from accelerate import Accelerator

    return Accelerator(mixed_precision="bf16" if torch.cuda.is_available() else "no",
                       **accelerator_kwargs(log_with, ckpt_dir))


def _init_kwargs(name: str, directory: Path) -> dict[str, Any]:
    if name == "dvclive":
        # resume: a requeued run continues the same files; no DVC experiment (a commit) per run and
        # its own dvc.yaml instead of editing the repository's; DVCLive's layout (dvc.yaml above
        # its folder: with dvc.yaml inside it, DVCLive 3.49 appends duplicate entries every step)
        return {"dvclive": {"dir": str(directory / LIVE), "resume": True, "save_dvc_exp": False,
                            "dvcyaml": str(directory / "dvc.yaml")}}
    if name == "wandb":
        return {"wandb": {"dir": str(directory)}}
    return {}


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool)) and not (isinstance(value, float) and not math.isfinite(value))


class Tracker:
    """The run's tracker: a thin wrapper on the accelerator's (no-op where it has none).

    accelerate already logs on the main process only; values that are not finite scalars (None,
    NaN, lists) are dropped, as every tracker rejects them differently."""

    def __init__(self, acc: Any, project: str, directory: Path, config: Mapping[str, Any]) -> None:
        self.acc = acc
        self.active = bool(getattr(acc, "log_with", None))
        if not self.active:
            return
        # LoggerType members (their value is the name) or GeneralTracker instances (.name)
        names = [str(getattr(t, "value", None) or getattr(t, "name", t)).lower() for t in acc.log_with]
        if acc.is_main_process:
            Path(directory).mkdir(parents=True, exist_ok=True)
        init: dict[str, Any] = {}
        for name in names:
            init.update(_init_kwargs(name, Path(directory)))
        acc.init_trackers(project, config={k: v for k, v in config.items() if _scalar(v)}, init_kwargs=init)

    def log(self, values: Mapping[str, Any], step: int) -> None:
        if self.active:
            self.acc.log({k: v for k, v in values.items() if _scalar(v)}, step=step)

    def end(self) -> None:
        """Finish the trackers; not ``Accelerator.end_training``, which also destroys the
        process group the caller may still use."""
        if self.active:
            for tracker in self.acc.trackers:
                tracker.finish()
            self.active = False


def tracker_for(project: str, directory: Path, config: Mapping[str, Any], name: str | None = None) -> Tracker:
    """A tracker outside training (query tuning): an ``Accelerator`` only for its trackers."""
    from accelerate import Accelerator

    name = selected(name)
    acc = Accelerator(**accelerator_kwargs(name, directory)) if name != "none" else None
    return Tracker(acc, project, directory, config)


def publish(live_dir: Path, out: Path) -> None:
    """Copy a run's tracker files (``<checkpoint>/tracking``) to the rule's declared output,
    replacing it as a whole; an empty folder where nothing was tracked (skipped run, ``none``)."""
    import shutil

    from embtune.core.io import atomic_dir

    with atomic_dir(out) as tmp:
        if Path(live_dir).is_dir():
            shutil.copytree(live_dir, tmp, dirs_exist_ok=True)


class QueryTracker:
    """What a query-tuning run logs (paper 2), once per epoch: training and validation loss, the
    validation error count, the LR, the stopping decision (improved, idle epochs, stop); at the
    end the best epoch, why it stopped and the layer-change summary. Called as ``track(row,
    epoch)`` by :func:`embtune.train.query_tower.tune`."""

    def __init__(self, directory: Path | None, run: Mapping[str, Any], name: str | None = None) -> None:
        from embtune.jobs.progress import Progress

        self.bar = Progress(int(run["max_epochs"]), f"tune {run.get('qrun_id')}", unit="epoch")
        self.tracker = Tracker(None, "", Path(), {})
        if directory is None:
            return
        config = {"qrun_id": run.get("qrun_id"), "model": (run.get("model") or {}).get("name"),
                  **{k: run.get(k) for k in ("train_data", "freeze", "optimizer", "lr_effective", "scheduler",
                                             "batch_size", "batches_per_epoch", "margin", "distance", "seed")}}
        import shutil

        shutil.rmtree(directory, ignore_errors=True)       # the tracker's own output, whole
        Path(directory).mkdir(parents=True)
        self.tracker = tracker_for("embtune-query", Path(directory), config, name)

    def __call__(self, row: Mapping[str, Any], epoch: int) -> None:
        self.bar.update(1, val_loss=row.get("val_loss"), errors=row.get("val_errors"))
        self.tracker.log({"train/loss": row.get("train_loss"), "train/lr": row.get("lr"),
                          "val/loss": row.get("val_loss"), "val/errors": row.get("val_errors"),
                          "stop/improved": int(bool(row.get("improved"))), "stop/idle": row.get("idle"),
                          "stop/stop": int(bool(row.get("stop")))}, epoch)

    def end(self, metrics: Mapping[str, Any], changes: Any = None) -> None:
        values = {"best/epoch": metrics.get("best_epoch"), "best/val_loss": metrics.get("best_val_loss"),
                  "best/val_errors": metrics.get("best_val_errors"),
                  "stop/patience": int(metrics.get("stopped_reason") == "patience")}
        if changes is not None and len(changes):
            values.update({"layers/changed": int(changes["changed"].sum()),
                           "layers/max_abs_change": changes["max_abs_change"].max(),
                           "layers/max_relative_change": changes["relative_change"].max()})
        self.tracker.log(values, int(metrics.get("epochs") or 0))
        self.tracker.end()
        self.bar.close()
