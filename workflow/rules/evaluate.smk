# Evaluation: every trained checkpoint on the MTEB subset through mteb (paper 1), and PND on
# the registered evaluation sets (query_tuning.evaluate_on) for each encoder before and after
# query tuning (paper 2). Base and tuned evaluations get the same arxiv domain exclusions (App. K).
# Query-run evaluations wait for the base evaluation so the frozen document tower's embeddings
# are computed once and then read from the shared cache.

from embtune.core.layout import BASE_RUN, MODEL_DIR, MTEB_JSON, MTEB_PARQUET, MTEB_RESULTS, PND_JSON, XNLI_COUNTS

# Reading choices of the papers (docs/fidelity.md): schema enums/integers, safe on a command line.
PND_RULE_ARGS = [
    "--ties",
    config["evaluate"]["pnd"].get("ties", "error"),
    "--xnli-text-prefix",
    config["evaluate"]["pnd"].get("xnli_text_prefix", "doc"),
    "--dist-embeddings",
    config["query_tuning"]["defaults"].get("dist_embeddings", "raw"),
    *arxiv_level_args(),
]  # App. H levels: integers from the validated config


# MTEB in batches (evaluate.mteb.runs_per_job runs of one base model per job: embtune.plan.sweep.run_batches):
# one process imports mteb/torch/transformers once for the whole batch (~8 s of a ~10 s demo
# evaluation) and a SLURM job starts once per batch. The batch job writes its runs' outputs to a
# transient folder; evaluate_mteb links each run's into runs/<run_id>/ (a local job in Snakemake's
# own process, no interpreter start), where every reader expects them. A batch re-run re-evaluates
# only the members whose mteb.json is out of date (embtune.stages.evaluate_mteb: eval_key). Each
# run's model/ (the folder to load and to upload: training's files and the card with model-index)
# is written here, where the scores first exist; training's trained/ is never rewritten.
rule evaluate_mteb_batch:
    input:
        metrics=lambda wildcards: mteb_batch_outputs(wildcards, "metrics"),
        trained=lambda wildcards: mteb_batch_outputs(wildcards, "trained"),
        data=rules.materialise_mteb.output.mteb,
    output:
        staged=temp(directory(L.results.mteb_batch("{batch}"))),
    log:
        L.results.log("evaluate_mteb/{batch}"),
    benchmark:
        L.results.benchmark("evaluate_mteb/{batch}")
    threads: 1
    resources:
        **EVAL_MTEB_BATCH_RESOURCES,
    params:
        code=code_version("evaluate-mteb"),
        runs=mteb_batch_json,
        tasks=config["evaluate"]["mteb"]["tasks"],
        exclude=config["evaluate"]["mteb"]["exclude_from_average"],
        batch=config["evaluate"]["mteb"]["batch_size"],
        max_length=mteb_max_length_arg,
    shell:
        "embtune evaluate-mteb --runs-json {params.runs:q} --code-version {params.code:q} "
        "--tasks {params.tasks:q} --exclude-from-average {params.exclude:q} --data-dir {input.data:q} "
        "--batch-size {params.batch:q} {params.max_length:q} > {log:q} 2>&1"


rule evaluate_mteb:
    """One run's MTEB outputs, hard-linked from its batch's folder (mteb.json, the commit marker,
    last). A shell job, not ``run:``: Snakemake spawns each ``run:`` job as a new snakemake that
    parses the whole workflow again (~5 s a run in the demo; one plan expansion per run at paper
    scale), where ``embtune link-outputs`` starts in a fraction of a second."""
    input:
        staged=mteb_batch_of_run,
    output:
        scores=L.results.runs.file("{run}", MTEB_JSON),
        table=L.results.runs.file("{run}", MTEB_PARQUET),
        results=directory(L.results.runs.file("{run}", MTEB_RESULTS)),  # mteb's own TaskResult layout
        # the run's model: trained/'s files + the card with model-index (trained/ stays training's)
        model=directory(L.results.runs.file("{run}", MODEL_DIR)),
    log:
        L.results.log("link_mteb/{run}"),
    params:
        code=code_version("link-outputs"),
        src=lambda wildcards, input: str(Path(input.staged) / wildcards.run),
    shell:
        "embtune link-outputs --src {params.src:q} "
        "--out {output.table:q} {output.results:q} {output.model:q} {output.scores:q} > {log:q} 2>&1"


rule evaluate_pnd_base:
    input:
        data=pnd_data_inputs,
        encoder=encoder_inputs,
    output:
        pnd=L.results.query_runs.file("{qmodel}", BASE_RUN, PND_JSON),
        xnli=L.results.query_runs.file("{qmodel}", BASE_RUN, XNLI_COUNTS),
    log:
        L.results.log("evaluate_pnd/{qmodel}/base"),
    benchmark:
        L.results.benchmark("evaluate_pnd/{qmodel}/base")
    priority: PAPER2_GATE_PRIORITY
    threads: 1
    resources:
        **EVAL_RESOURCES,
    params:
        code=code_version("evaluate-pnd"),
        data_dir=str(L.processed.root),
        model=qmodel_json,
        datasets=PND_DATASETS,
        measures=config["evaluate"]["pnd"]["measures"],
        batch=config["evaluate"]["pnd"]["batch_size"],
        precision=config["evaluate"]["pnd"]["precision"],
        rules=PND_RULE_ARGS,
        cache=str(L.results.embed_cache("{qmodel}")),
        out_dir=pnd_out_dir,
        exclusion=pnd_exclusion,
    shell:
        "embtune evaluate-pnd --model-json {params.model:q} --datasets {params.datasets:q} "
        "--data-dir {params.data_dir:q} --cache-dir {params.cache:q} --measures {params.measures:q} "
        "--batch-size {params.batch:q} --precision {params.precision:q} {params.rules:q} {params.exclusion:q} "
        "--out {params.out_dir:q} > {log:q} 2>&1"


rule evaluate_pnd_query:
    input:
        data=pnd_data_inputs,
        model=rules.tune_query.output.model,
        base=rules.evaluate_pnd_base.output.pnd,
    output:
        pnd=L.results.query_runs.file("{qmodel}", "{qrun}", PND_JSON),
        xnli=L.results.query_runs.file("{qmodel}", "{qrun}", XNLI_COUNTS),
    log:
        L.results.log("evaluate_pnd/{qmodel}/{qrun}"),
    benchmark:
        L.results.benchmark("evaluate_pnd/{qmodel}/{qrun}")
    threads: 1
    resources:
        **EVAL_RESOURCES,
    params:
        code=code_version("evaluate-pnd"),
        data_dir=str(L.processed.root),
        model=qmodel_json,
        datasets=PND_DATASETS,
        measures=config["evaluate"]["pnd"]["measures"],
        batch=config["evaluate"]["pnd"]["batch_size"],
        precision=config["evaluate"]["pnd"]["precision"],
        rules=PND_RULE_ARGS,
        cache=str(L.results.embed_cache("{qmodel}")),
        out_dir=pnd_out_dir,
        exclusion=pnd_exclusion,
        doc_model=pnd_doc_model,
    shell:
        "embtune evaluate-pnd --model-json {params.model:q} --query-model-dir {input.model:q} "
        "--datasets {params.datasets:q} --data-dir {params.data_dir:q} --cache-dir {params.cache:q} "
        "--measures {params.measures:q} --batch-size {params.batch:q} --precision {params.precision:q} "
        "{params.rules:q} {params.exclusion:q} {params.doc_model:q} --out {params.out_dir:q} > {log:q} 2>&1"
