"""MTEB scores of a run as the Hub's ``model-index`` entries, the format the MTEB leaderboard reads.

Why mteb's converter and not our own: ``TaskResult.get_hf_eval_results`` (mteb) builds
huggingface_hub ``EvalResult`` objects with MTEB's task type, dataset id, config, split, revision
and main score exactly as the leaderboard's parser expects; writing that YAML by hand would
drift from it. mteb marks the method deprecated in favour of pushing results to the Hub's new
"Benchmarks" (which needs the network); the model-index it writes is still what
``huggingface_hub.ModelCard`` and the leaderboard read.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def hub_eval_results(results_dir: str | Path) -> list[Any]:
    """``EvalResult`` per task, split and subset of mteb's result folder (``<run>/mteb_results``,
    written by :func:`embtune.evaluate.mteb_eval.write_mteb_results`); [] when it has none."""
    from embtune.evaluate.mteb_eval import read_mteb_results

    if not Path(results_dir).is_dir():
        return []
    out: list[Any] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for model_result in read_mteb_results(results_dir).model_results:
            for task_result in model_result.task_results:
                out += task_result.get_hf_eval_results()
    return out
