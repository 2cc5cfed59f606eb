"""Evaluate a checkpoint on the pinned MTEB subset through the real mteb library, offline (stage
``evaluate-mteb``, driver :mod:`embtune.stages.evaluate_mteb`).

Why through mteb and not a re-implementation: the scores must be comparable with published MTEB
numbers, and mteb's evaluators (logistic-regression classification with undersampling, legacy
mini-batch k-means clustering, max-AP pair classification, MAP reranking, nDCG@10 retrieval,
Spearman STS / summarization, bitext F1) are what defines them. Why local: compute nodes are
offline, so each pinned task is a subclass of mteb's *own* task class (same name, type,
``TaskMetadata`` and main score, same evaluation settings such as ``samples_per_label``) whose
``load_data`` reads the files ``embtune materialise-mteb`` wrote (layout: ``embtune.data.mteb_data``).

Input length: texts are truncated to the checkpoint's training ``context_length`` (its
``embedding_config.json``), as the authors' evaluation did (their tokenizer wrapper truncates to
75 for training and MTEB alike); ``--max-length`` overrides it (docs/fidelity.md#P1-MTEB-TRUNCATION).

Outputs: ``mteb.json`` = ``{"status", "tasks": {task: main_score}, "average", "excluded",
"n_texts_encoded", "seconds", "max_length"}`` (``average`` = mean main score over tasks not
excluded; paper 1 App. B leaves out Tatoeba), and ``mteb.parquet`` beside it with every metric mteb reports, one row per
(task, type, split, subset, metric, value). ``mteb_results/`` beside them holds the same results
in mteb's own format (``TaskResult`` JSON per task with mteb version and dataset revision, under
``results/embtune__<run_id>/<model revision>/`` with ``model_meta.json``; the revision is the
sha256 of the weight files), written by mteb's ``ResultCache`` so mteb's tools read them back
(``mteb.ResultCache(<run>/mteb_results).load_results()``) and they can be submitted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from embtune.core.errors import DataError
from embtune.core.layout import MODEL_DIR, TRAINED_DIR, TRAINED_MERGED_DIR
from embtune.data.mteb_data import RETRIEVAL_TYPES, TaskFrames, read_task_dir

TIDY_SCHEMA = {"task": pl.String, "type": pl.String, "split": pl.String, "subset": pl.String,
               "metric": pl.String, "value": pl.Float64}


# ---------------------------------------------------------------- frames -> mteb's dataset shapes


def _to_dataset(frame: pl.DataFrame) -> Any:
    from datasets import Dataset

    return Dataset.from_dict(frame.to_dict(as_series=False))


def _retrieval_split(tables: Mapping[str, pl.DataFrame]) -> dict[str, Any]:
    """Tables -> mteb's ``RetrievalSplitData`` (HF datasets + qrels / top-ranked dicts)."""
    qrels: dict[str, dict[str, int]] = {}
    for row in tables["qrels"].iter_rows(named=True):
        qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    top = tables.get("top_ranked")
    top_ranked = None if top is None else {
        str(r["query-id"]): [str(d) for d in r["corpus-ids"]] for r in top.iter_rows(named=True)}
    return {"corpus": _to_dataset(tables["corpus"]), "queries": _to_dataset(tables["queries"]),
            "relevant_docs": qrels, "top_ranked": top_ranked}


def to_mteb_dataset(frames: TaskFrames, retrieval: bool) -> dict[str, Any]:
    """{(subset, split): tables} -> ``{subset: {split: Dataset | RetrievalSplitData}}``."""
    from datasets import DatasetDict

    out: dict[str, dict[str, Any]] = {}
    for (subset, split), tables in sorted(frames.items()):
        out.setdefault(subset, {})[split] = (_retrieval_split(tables) if retrieval
                                             else _to_dataset(tables[""]))
    return out if retrieval else {s: DatasetDict(d) for s, d in out.items()}


# ---------------------------------------------------------------- local tasks


@cache
def _real_task_class(name: str) -> type:
    import mteb

    return type(mteb.get_task(name))


@cache
def local_task_class(name: str) -> type:
    """mteb's own class for ``name`` with ``load_data`` reading ``self.local_dir`` instead of the hub.

    The data were materialised *after* mteb's ``dataset_transform``, so it is not applied again."""
    base = _real_task_class(name)

    def load_data(self: Any, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        retrieval = self.metadata.type in RETRIEVAL_TYPES
        self.dataset = to_mteb_dataset(read_task_dir(self.local_dir, retrieval), retrieval)
        self.data_loaded = True

    return type(name, (base,), {"load_data": load_data, "__module__": __name__,
                                "__doc__": f"{name} read from materialised local files."})


def local_task(name: str, data_dir: str | Path) -> Any:
    """An evaluable task instance over ``data_dir/<name>/``, limited to the subsets on disk
    (e.g. the few Tatoeba language pairs of the demo data)."""
    task_dir = Path(data_dir) / name
    if not task_dir.is_dir():
        raise FileNotFoundError(f"{task_dir}: not materialised (run `embtune materialise-mteb`)")
    task = local_task_class(name)()
    task.local_dir = task_dir
    on_disk = {p.name for p in task_dir.iterdir() if p.is_dir()}
    unknown = sorted(on_disk - set(task.metadata.hf_subsets))
    if unknown or not on_disk:
        raise ValueError(f"{task_dir}: subsets {unknown or 'none'} on disk; {name} has "
                         f"{task.metadata.hf_subsets[:6]}{'...' if len(task.metadata.hf_subsets) > 6 else ''}")
    subsets = [s for s in task.metadata.hf_subsets if s in on_disk]
    task.hf_subsets = subsets
    return task


# ---------------------------------------------------------------- model adapter


def model_meta(embedder: Any, name: str = "embtune/checkpoint", revision: str = "local") -> Any:
    """mteb's ``ModelMeta`` for a checkpoint: the name and revision its result folders carry
    (``results/<name with / as __>/<revision>/``), plus what the embedder knows of itself."""
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    n_params = sum(p.numel() for p in embedder.model.parameters()) if hasattr(embedder, "model") else None
    return ModelMeta.create_empty({
        "name": name, "revision": revision, "similarity_fn_name": ScoringFunction.COSINE,
        "n_parameters": n_params, "embed_dim": getattr(embedder, "dim", None),
        "max_tokens": getattr(getattr(embedder, "config", None), "max_length", None),
        "framework": ["PyTorch", "Sentence Transformers"], "open_weights": True,
        "use_instructions": False})


def _mteb_encoder(embedder: Any, batch_size: int, meta: Any = None) -> Any:
    """A thin ``AbsEncoder`` around :class:`embtune.models.embedder.Embedder` (cosine similarity)."""
    from mteb.models.abs_encoder import AbsEncoder

    class EmbedderEncoder(AbsEncoder):
        def __init__(self) -> None:
            self.model = embedder
            self.n_texts = 0
            self.mteb_model_meta = meta if meta is not None else model_meta(embedder)

        def encode(self, inputs: Any, *, task_metadata: Any, hf_split: str, hf_subset: str,
                   prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            self.n_texts += len(texts)
            return embedder.encode(texts, batch_size=batch_size)

    return EmbedderEncoder()


# ---------------------------------------------------------------- results


def tidy_scores(task_results: Sequence[Any], types: Mapping[str, str]) -> pl.DataFrame:
    """Every numeric metric mteb reported, one row each (``types``: task name -> mteb type)."""
    rows = []
    for result in task_results:
        kind = types.get(result.task_name, "")
        for split, per_subset in result.scores.items():
            for scores in per_subset:
                for metric, value in scores.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        rows.append({"task": result.task_name, "type": kind, "split": split,
                                     "subset": scores.get("hf_subset", "default"),
                                     "metric": metric, "value": float(value)})
    return pl.DataFrame(rows, schema=TIDY_SCHEMA)


def main_scores(tidy: pl.DataFrame) -> dict[str, float]:
    """Per task: the main score, averaged over subsets and splits (as mteb's ``get_score``)."""
    main = tidy.filter(pl.col("metric") == "main_score").group_by("task").agg(pl.col("value").mean())
    return {row["task"]: float(row["value"]) for row in main.sort("task").iter_rows(named=True)}


def with_max_length(config: Any, max_length: int) -> Any:
    """The embedding config with another truncation length (a clear error for a bad one)."""
    import dataclasses

    if max_length < 1:
        raise ValueError(f"--max-length must be >= 1, got {max_length}")
    return dataclasses.replace(config, max_length=int(max_length))


def average_score(scores: Mapping[str, float], excluded: Sequence[str]) -> float | None:
    """Mean main score over the tasks not excluded (paper: all but Tatoeba)."""
    kept = [v for t, v in scores.items() if t not in set(excluded)]
    return float(np.mean(kept)) if kept else None


def skipped_record(metrics: Mapping[str, Any], excluded: Sequence[str]) -> dict[str, Any]:
    """mteb.json for a run that training skipped: nothing to evaluate, not an error."""
    return {"status": "skipped", "skip_reason": metrics.get("skip_reason"), "tasks": {},
            "average": None, "excluded": list(excluded), "n_texts_encoded": 0}


def evaluate_embedder(embedder: Any, tasks: Sequence[str], data_dir: str | Path, batch_size: int,
                      excluded: Sequence[str] = (), meta: Any = None,
                      task_results: list[Any] | None = None) -> tuple[dict[str, Any], pl.DataFrame]:
    """Run mteb on the local tasks; returns (mteb.json record, tidy table). mteb's own
    ``TaskResult`` objects are appended to ``task_results`` when a list is given."""
    import mteb

    model = _mteb_encoder(embedder, batch_size, meta)
    local = [local_task(name, data_dir) for name in tasks]
    start = time.perf_counter()
    result = mteb.evaluate(model, tasks=local, cache=None, show_progress_bar=False,
                           encode_kwargs={"batch_size": batch_size})
    if task_results is not None:
        task_results.extend(result.task_results)
    tidy = tidy_scores(result.task_results, {t.metadata.name: str(t.metadata.type) for t in local})
    scores = main_scores(tidy)
    missing = sorted(set(tasks) - set(scores))
    if missing:
        raise RuntimeError(f"mteb returned no score for {missing}")
    record = {"status": "ok", "tasks": scores, "average": average_score(scores, excluded),
              "excluded": sorted(set(excluded) & set(tasks)), "n_texts_encoded": int(model.n_texts),
              "seconds": round(time.perf_counter() - start, 3)}
    return record, tidy


MTEB_RESULTS_DIR = "mteb_results"


def mteb_data_source(data_dir: str | Path) -> str:
    """Where the evaluated task data came from, as materialise-mteb recorded it: ``mteb`` (the
    official splits, through the mteb library) or ``local`` (a prepared directory such as the
    demo's subsamples); ``unknown`` without its manifest. A model card labels only ``mteb``
    scores as the official splits' (:mod:`embtune.evaluate.publish`)."""
    import json

    try:
        source = json.loads((Path(data_dir) / "manifest.json").read_text(encoding="utf-8")).get("source")
    except (OSError, ValueError, AttributeError):
        return "unknown"
    return source if source in ("mteb", "local") else "unknown"


def model_revision(model_dir: str | Path) -> str:
    """The checkpoint's revision for mteb: sha256 over its weight files (names and contents), the
    same identity the embedding caches use, so a retrained model never shares a result folder."""
    from embtune.models.embed_cache import model_fingerprint

    return model_fingerprint(str(model_dir))


def write_mteb_results(out_dir: str | Path, task_results: Sequence[Any], meta: Any,
                       note: str | None = None) -> None:
    """mteb's own result layout, written by mteb's ``ResultCache.save_to_cache``:
    ``<out_dir>/results/<model name>/<revision>/<Task>.json`` (``TaskResult``: scores, dataset
    revision, mteb version, evaluation time) + ``model_meta.json``. mteb's tools read it back with
    ``mteb.ResultCache(out_dir).load_results()``; the folder is what the results repository takes.
    The whole folder is replaced atomically; ``note`` (a skipped run) goes to ``README.txt``."""
    from mteb.cache import ResultCache

    from embtune.core.io import atomic_dir

    with atomic_dir(out_dir) as tmp:
        if note:
            (tmp / "README.txt").write_text(note + "\n", encoding="utf-8")
        cache = ResultCache(tmp)
        for result in task_results:
            cache.save_to_cache(result, meta)


def read_mteb_results(out_dir: str | Path) -> Any:
    """``BenchmarkResults`` of a folder written by :func:`write_mteb_results`, by mteb's loader."""
    from mteb.cache import ResultCache

    return ResultCache(out_dir).load_results(include_remote=False)


def loss_mteb_spearman(runs: pl.DataFrame, loss: str = "final_train_loss",
                       score: str = "mteb_average") -> float:
    """Spearman rank correlation between final training loss and MTEB average across runs.

    Paper 1 (App. C) reports -0.892: lower contrastive loss ranks with better MTEB scores, which
    is what justifies fitting scaling laws to loss. Runs lacking either value (skipped, failed)
    are dropped; NaN when fewer than 3 remain or either column is constant."""
    from scipy.stats import spearmanr

    both = runs.select(pl.col(loss).cast(pl.Float64), pl.col(score).cast(pl.Float64)).drop_nulls().drop_nans()
    if both.height < 3:
        return math.nan
    rho = spearmanr(both[loss].to_numpy(), both[score].to_numpy()).statistic
    return float(rho)


def check_finite(model: Any, model_dir: Path) -> None:
    """Refuse to evaluate weights holding NaN/inf: every embedding would be NaN and mteb would
    report a meaningless score (or fail deep inside a classifier) instead of naming the run."""
    from embtune.models.embedder import nonfinite_parameters

    bad = nonfinite_parameters(model)
    if not bad:
        return
    run_dir = model_dir.parent if model_dir.name in (TRAINED_DIR, TRAINED_MERGED_DIR, MODEL_DIR) else model_dir
    name, count, size = bad[0]
    raise DataError(f"run {run_dir}: {len(bad)} parameter tensor(s) of {model_dir} hold NaN/inf "
                    f"(e.g. {name}: {count} of {size} values); expected finite weights. Training "
                    f"diverged or the checkpoint is damaged: see {run_dir / 'curve.csv'}, lower "
                    "peak_lr (or check the data) and re-run training")
