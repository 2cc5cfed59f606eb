"""A run's model as the folder a user loads and uploads: its weights, and a card with its MTEB scores.

Why a folder apart from training's: the training stage's ``trained/`` is an output Snakemake
tracks, and the MTEB scores exist only after evaluation; writing the card into ``trained/``
afterwards would make the trained model look newer than its evaluation and re-run it. So
evaluation writes the run's ``model/`` as an output of its own, ``runs/<run_id>/model/``
(:func:`model_folder`, called by evaluate-mteb), and ``embtune publish`` writes the same folder
wherever it is asked to: hard links to the weights (no copy of GBs), and the card rendered with
``model-index``.

Scores measured on a local subsample of an MTEB task (the demo's, or any ``data.mteb.source:
local``) are flagged as such in the card and in ``model-index`` (split ``<split>-subsample``, no
official dataset revision, tag ``mteb-subsample``): they are not the official split's scores and
a leaderboard must not read them as such.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError
from embtune.core.layout import (
    MANIFEST_JSON,
    METRICS_JSON,
    MODEL_DIR,
    MTEB_JSON,
    MTEB_RESULTS,
    TRAINED_DIR,
    TRAINED_MERGED_DIR,
)

CARD = "README.md"
#: Marks a folder this stage wrote: only such a folder (or none) is replaced; it is not uploaded.
MARKER = ".embtune-publish"


@dataclass(frozen=True)
class Publishable:
    """What a run publishes: the model folder (merged for LoRA) and its card."""

    model_dir: Path
    card: str
    kind: str                 # "training run" | "query run"
    official_scores: bool     # MTEB scores on the official splits (False: a local subsample)


def flag_subsample(eval_results: list[Any]) -> list[Any]:
    """The same results, marked as measured on a local subsample: the split gets ``-subsample``
    and the dataset name says so, and the official revision is dropped (it did not produce them)."""
    for result in eval_results:
        result.dataset_split = f"{result.dataset_split or 'test'}-subsample"
        result.dataset_name = f"{result.dataset_name or result.dataset_type} (local subsample, not the official split)"
        result.dataset_revision = None
    return eval_results


def _read(run_dir: Path, name: str, required: bool = True) -> Any:
    from embtune.core.io import read_json

    path = run_dir / name
    if not path.is_file():
        if required:
            raise DataError(f"{path}: missing; expected a finished run directory (runs/<run_id> or "
                            "query_runs/<model>/<qrun_id>) holding metrics.json and manifest.json")
        return None
    return read_json(path)


def publishable(run_dir: str | os.PathLike[str], scores_dir: str | os.PathLike[str] | None = None) -> Publishable:
    """The folder and card of a finished paper-1 run or paper-2 query run; ``scores_dir`` holds
    its ``mteb.json`` and ``mteb_results/`` (default: the run directory; evaluate-mteb's batch
    job passes the folder it stages them in)."""
    from embtune.evaluate.mteb_card import hub_eval_results
    from embtune.models.st_export import query_card, training_card

    run_dir = Path(run_dir)
    metrics, manifest = _read(run_dir, METRICS_JSON), _read(run_dir, MANIFEST_JSON)
    if metrics.get("status", "ok") != "ok":
        raise DataError(f"{run_dir / METRICS_JSON}: status {metrics.get('status')!r}; only a run that "
                        "finished ('ok') can be published")
    run = manifest.get("run") or manifest.get("run_config") or {}
    if "qrun_id" in metrics:
        card = query_card(metrics, run, manifest)
        return Publishable(_st_folder(run_dir, MODEL_DIR), card, "query run", official_scores=False)
    scores_dir = run_dir if scores_dir is None else Path(scores_dir)
    mteb = _read(scores_dir, MTEB_JSON, required=False)
    scored = bool(mteb and mteb.get("status") == "ok")
    official = scored and mteb.get("data_source") == "mteb"
    results = hub_eval_results(scores_dir / MTEB_RESULTS) if scored else []
    if results and not official:
        results = flag_subsample(results)
    card = training_card(metrics, run, manifest, mteb, results, official_scores=official, published=True)
    merged = run_dir / TRAINED_MERGED_DIR
    return Publishable(_st_folder(run_dir, TRAINED_MERGED_DIR if merged.is_dir() else TRAINED_DIR), card,
                       "training run", official_scores=official)


def _st_folder(run_dir: Path, name: str) -> Path:
    folder = run_dir / name
    if not (folder / "modules.json").is_file():
        raise DataError(f"{folder}: not a sentence-transformers folder (no modules.json); expected the "
                        "run's model written by embtune train or tune-query")
    return folder


def _own(out: str | os.PathLike[str]) -> Path:
    """``out``, refused when it exists and this module did not write it (no marker inside)."""
    out = Path(out)
    if out.exists() and not (out / MARKER).is_file():
        raise DataError(f"{out}: exists and was not written by embtune publish or evaluate-mteb (no "
                        f"{MARKER}); expected a new folder or one of theirs")
    return out


def stage_folder(item: Publishable, out: str | os.PathLike[str]) -> Path:
    """``out`` = the model's files as hard links (copies across filesystems) + the card, written
    atomically: a failure leaves the previous folder, or none."""
    from embtune.core.io import SNAKEMAKE_TIMESTAMP, atomic_dir, link_or_copy

    out = _own(out)
    with atomic_dir(out) as tmp:
        for src in sorted(item.model_dir.rglob("*")):
            rel = src.relative_to(item.model_dir)
            if src.is_dir() or rel.as_posix() == CARD or src.name == SNAKEMAKE_TIMESTAMP:
                continue
            dst = tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(src, dst)
        (tmp / CARD).write_text(item.card, encoding="utf-8")
        (tmp / MARKER).write_text(item.model_dir.name + "\n", encoding="utf-8")   # no machine's path
    return out


def model_folder(run_dir: str | os.PathLike[str], scores_dir: str | os.PathLike[str],
                 out: str | os.PathLike[str]) -> str:
    """Evaluation's ``model/`` of a training run (``runs/<run_id>/model/``): training's files
    and the card with ``model-index`` from the scores in ``scores_dir``. A run that did not
    finish gets a folder holding only ``README.txt`` with its status and reason, so the output
    exists for every run; returns what was written."""
    from embtune.core.io import read_json

    metrics = read_json(Path(run_dir) / METRICS_JSON)
    if metrics.get("status", "ok") == "ok":
        item = publishable(run_dir, scores_dir)
        stage_folder(item, out)
        return "card with model-index" if "model-index" in item.card else "card without MTEB scores"
    nothing_to_publish(out, f"{metrics.get('status')}: {metrics.get('skip_reason')}\n"
                            "Nothing to publish: the run did not finish.")
    return f"run {metrics.get('status')}, nothing to publish"


def evaluated_model(run_dir: str | os.PathLike[str]) -> Path | None:
    """The run's ``model/`` when evaluation wrote it with a card (:func:`model_folder`), else None
    (a run not evaluated, an evaluation that failed, a query run: tune-query's ``model/``)."""
    folder = Path(run_dir) / MODEL_DIR
    done = all((folder / name).is_file() for name in (MARKER, CARD, "modules.json"))
    return folder if done else None


def nothing_to_publish(out: str | os.PathLike[str], why: str) -> None:
    """A model folder holding only ``README.txt`` saying why (a run that did not finish, an
    evaluation killed from outside): the output exists for every run, so the workflow goes on."""
    from embtune.core.io import atomic_dir

    with atomic_dir(_own(out)) as tmp:
        (tmp / "README.txt").write_text(why.rstrip("\n") + "\n", encoding="utf-8")
        (tmp / MARKER).write_text("\n", encoding="utf-8")


def upload(folder: str | os.PathLike[str], repo_id: str, *, private: bool, token: str | None,
           commit_message: str) -> str:
    """Create the repo if needed and upload the folder with huggingface_hub; returns the commit URL.
    The endpoint is huggingface_hub's own (``$HF_ENDPOINT`` for a mirror or a private hub)."""
    from huggingface_hub import HfApi, constants

    from embtune.core.io import SNAKEMAKE_TIMESTAMP

    if constants.HF_HUB_OFFLINE:
        raise DataError("publishing needs the hub: HF_HUB_OFFLINE is set (unset it, or pass --no-upload "
                        "to write the folder only)")
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type="model",
                             commit_message=commit_message, ignore_patterns=[MARKER, SNAKEMAKE_TIMESTAMP])
    return str(info.commit_url)
