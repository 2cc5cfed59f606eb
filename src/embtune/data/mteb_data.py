"""The pinned MTEB tasks as local parquet files: layout, readers, writers and checks (stage
``materialise-mteb``, driver :mod:`embtune.stages.materialise_mteb`).

Why: compute nodes have no network, and evaluating ~1000 checkpoints must not hit the hub ~8000
times. We download once (``--source mteb``: through the mteb library itself, so we get exactly
the data mteb would evaluate on, after its own ``dataset_transform``), or copy a prepared
directory (``--source local``, e.g. the shipped demo data), validating it either way.

Layout (``<out>/<Task>/<subset>/...``; ``subset`` is mteb's HF subset: ``default`` for
monolingual tasks, e.g. ``deu-eng`` for Tatoeba). Columns mirror mteb's dataset columns:

=====================  ======================================  ====================================
task type              files                                   columns
=====================  ======================================  ====================================
Classification         ``<subset>/{train,test}.parquet``       ``text`` str, ``label`` int
Clustering             ``<subset>/test.parquet``               one row per cluster set:
                                                               ``sentences`` list[str],
                                                               ``labels`` list[str|int]
PairClassification     ``<subset>/test.parquet``               one row per pair: ``sentence1``,
                                                               ``sentence2`` str, ``labels`` int 0/1
STS                    ``<subset>/test.parquet``               ``sentence1``, ``sentence2``,
                                                               ``score`` float (0-5)
Summarization          ``<subset>/test.parquet``               ``text`` str, ``human_summaries``,
                                                               ``machine_summaries`` list[str],
                                                               ``relevance`` list[float] (0-5)
BitextMining           ``<lang-pair>/test.parquet``            ``sentence1``, ``sentence2`` str
Retrieval, Reranking   ``<subset>/test/corpus.parquet``        ``id``, ``text``, [``title``]
                       ``<subset>/test/queries.parquet``       ``id``, ``text``
                       ``<subset>/test/qrels.parquet``         ``query-id``, ``corpus-id``,
                                                               ``score`` int
                       ``<subset>/test/top_ranked.parquet``    ``query-id``, ``corpus-ids``
                                                               list[str] (Reranking only)
=====================  ======================================  ====================================

``manifest.json`` (written last) records every file's row count per task. The whole ``<out>``
directory is built in a temporary sibling and renamed into place, so the set of tasks and the
manifest always belong together: a killed run leaves the previous output or none.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from embtune.core.io import atomic_path

RETRIEVAL_TYPES = frozenset({"Retrieval", "Reranking"})
RETRIEVAL_FILES = ("corpus", "queries", "qrels", "top_ranked")

# The types of the tasks the paper pins (App. B); other names are looked up in mteb.
PINNED_TYPES: dict[str, str] = {
    "EmotionClassification": "Classification",
    "TwentyNewsgroupsClustering": "Clustering",
    "SprintDuplicateQuestions": "PairClassification",
    "AskUbuntuDupQuestions": "Reranking",
    "SciFact": "Retrieval",
    "STS15": "STS",
    "SummEval": "Summarization",
    "Tatoeba": "BitextMining",
}

REQUIRED_COLUMNS: dict[str, dict[str, frozenset[str]]] = {
    "Classification": {"": frozenset({"text", "label"})},
    "Clustering": {"": frozenset({"sentences", "labels"})},
    "PairClassification": {"": frozenset({"sentence1", "sentence2", "labels"})},
    "STS": {"": frozenset({"sentence1", "sentence2", "score"})},
    "Summarization": {"": frozenset({"text", "human_summaries", "machine_summaries", "relevance"})},
    "BitextMining": {"": frozenset({"sentence1", "sentence2"})},
    "Retrieval": {"corpus": frozenset({"id", "text"}), "queries": frozenset({"id", "text"}),
                  "qrels": frozenset({"query-id", "corpus-id", "score"})},
}
REQUIRED_COLUMNS["Reranking"] = {**REQUIRED_COLUMNS["Retrieval"],
                                 "top_ranked": frozenset({"query-id", "corpus-ids"})}

# (subset, split) -> {file stem ("" for one-table types): frame}
TaskFrames = dict[tuple[str, str], dict[str, pl.DataFrame]]


def task_type(name: str) -> str:
    """The mteb task type (``metadata.type``) of a task name."""
    if name in PINNED_TYPES:
        return PINNED_TYPES[name]
    import mteb

    return str(mteb.get_task(name).metadata.type)


def needed_splits(task: Any) -> list[str]:
    """Eval splits, plus the classifier's training split for classification tasks."""
    splits = list(task.metadata.eval_splits)
    train = getattr(task, "train_split", None)
    if task.metadata.type == "Classification" and train and train not in splits:
        splits.append(train)
    return splits


# ---------------------------------------------------------------- mteb datasets -> frames


def _retrieval_frames(split_data: Mapping[str, Any]) -> dict[str, pl.DataFrame]:
    """RetrievalSplitData (HF datasets + qrels dicts) -> the four tables."""
    qrels = [{"query-id": str(q), "corpus-id": str(d), "score": int(s)}
             for q, docs in split_data["relevant_docs"].items() for d, s in docs.items()]
    frames = {
        "corpus": split_data["corpus"].to_polars(),
        "queries": split_data["queries"].to_polars(),
        "qrels": pl.DataFrame(qrels, schema={"query-id": pl.String, "corpus-id": pl.String,
                                             "score": pl.Int64}),
    }
    if split_data.get("top_ranked"):
        frames["top_ranked"] = pl.DataFrame(
            [{"query-id": str(q), "corpus-ids": [str(d) for d in docs]}
             for q, docs in split_data["top_ranked"].items()],
            schema={"query-id": pl.String, "corpus-ids": pl.List(pl.String)})
    return frames


def _table_frame(dataset: Any) -> pl.DataFrame:
    """One HF Dataset -> polars; mteb's v1 'one row holding lists' pair layout is exploded."""
    frame = dataset.to_polars()
    if {"sentence1", "sentence2", "labels"} <= set(frame.columns) and frame.height == 1 \
            and isinstance(frame.schema["sentence1"], pl.List):
        frame = frame.explode(["sentence1", "sentence2", "labels"])
    return frame


def frames_from_mteb_dataset(dataset: Mapping[str, Any], splits: Sequence[str],
                             multilingual: bool, retrieval: bool) -> TaskFrames:
    """A loaded ``task.dataset`` (any of mteb's shapes) -> {(subset, split): tables}."""
    by_subset = dataset if (multilingual or retrieval) else {"default": dataset}
    out: TaskFrames = {}
    for subset, per_split in by_subset.items():
        for split in splits:
            if split not in per_split:
                continue
            data = per_split[split]
            out[(subset, split)] = _retrieval_frames(data) if retrieval else {"": _table_frame(data)}
    return out


def frames_from_mteb(name: str) -> TaskFrames:
    """Download one task through mteb (network) and return its tables."""
    import mteb

    task = mteb.get_task(name)
    task.load_data()
    if hasattr(task, "convert_v1_dataset_format_to_v2"):
        task.convert_v1_dataset_format_to_v2(num_proc=None)
    retrieval = task.metadata.type in RETRIEVAL_TYPES
    return frames_from_mteb_dataset(task.dataset, needed_splits(task),
                                    task.metadata.is_multilingual, retrieval)


# ---------------------------------------------------------------- files <-> frames


def frame_path(task_dir: Path, subset: str, split: str, stem: str) -> Path:
    """Where one table lives in the layout above."""
    return task_dir / subset / f"{split}.parquet" if not stem else task_dir / subset / split / f"{stem}.parquet"


def read_task_dir(task_dir: str | os.PathLike[str], retrieval: bool) -> TaskFrames:
    """All tables of one materialised task."""
    root = Path(task_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: task directory not found")
    out: TaskFrames = {}
    for subset_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if retrieval:
            for split_dir in sorted(p for p in subset_dir.iterdir() if p.is_dir()):
                out[(subset_dir.name, split_dir.name)] = {
                    f.stem: pl.read_parquet(f) for f in sorted(split_dir.glob("*.parquet"))}
        else:
            for f in sorted(subset_dir.glob("*.parquet")):
                out[(subset_dir.name, f.stem)] = {"": pl.read_parquet(f)}
    return out


def validate_frames(name: str, kind: str, frames: TaskFrames, splits: Sequence[str]) -> list[str]:
    """Problems that would make evaluation fail or be meaningless (empty list = fine)."""
    problems: list[str] = []
    if not frames:
        return [f"{name}: no data files"]
    subsets = sorted({subset for subset, _ in frames})
    for subset in subsets:
        for split in splits:
            tables = frames.get((subset, split))
            if tables is None:
                problems.append(f"{name}/{subset}: missing split {split!r}")
                continue
            for stem, cols in REQUIRED_COLUMNS[kind].items():
                if stem not in tables:
                    problems.append(f"{name}/{subset}/{split}: missing table {stem or 'data'!r}")
                    continue
                missing = cols - set(tables[stem].columns)
                if missing:
                    problems.append(f"{name}/{subset}/{split}/{stem or 'data'}: missing columns {sorted(missing)}")
                if tables[stem].height == 0:
                    problems.append(f"{name}/{subset}/{split}/{stem or 'data'}: no rows")
    return problems


def local_splits(kind: str) -> list[str]:
    """Splits a local task dir must hold (the pinned tasks all evaluate on ``test``)."""
    return ["train", "test"] if kind == "Classification" else ["test"]


def row_counts(frames: TaskFrames) -> dict[str, int]:
    """{relative file path: rows}, for the manifest."""
    return {str(frame_path(Path(""), subset, split, stem)): int(frame.height)
            for (subset, split), tables in sorted(frames.items())
            for stem, frame in sorted(tables.items())}


def write_task(frames: TaskFrames, task_dir: Path) -> None:
    """Write one task's tables atomically (the whole task dir appears at once)."""
    with atomic_path(task_dir) as tmp:
        for (subset, split), tables in frames.items():
            for stem, frame in tables.items():
                path = frame_path(tmp, subset, split, stem)
                path.parent.mkdir(parents=True, exist_ok=True)
                frame.write_parquet(path, compression="zstd", statistics=False)


def copy_task(src: Path, task_dir: Path) -> None:
    """Copy a validated local task dir byte for byte (keeps re-runs identical)."""
    with atomic_path(task_dir) as tmp:
        shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(".*"))
