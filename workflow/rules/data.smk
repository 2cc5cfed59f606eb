# Data preparation: one rule per dataset (issue 3). Downloads happen in local rules on the login
# node (compute nodes are offline); the heavy prep rules may go to the cluster as CPU jobs.


rule fetch_hf:
    output:
        file=L.raw_hf("{path}"),
        record=L.store.dataset_record("{path}"),  # repo, commit, sha256 (the store's manifest)
    log:
        L.results.log("fetch_hf/{path}"),
    # A fix to what `embtune fetch` runs re-fetches (the file might be wrong); only the code it
    # reaches counts (embtune.core.code_reach), so an edit elsewhere re-downloads nothing.
    params:
        code=code_version("fetch"),
    # The login node's network step (embtune fetch goes online even under HF_HUB_OFFLINE=1).
    shell:
        "embtune fetch --uri hf://datasets/{wildcards.path:q} --out {output.file:q} "
        "--record {output.record:q} > {log:q} 2>&1"


rule require_raw:
    """A raw source that cannot be downloaded automatically (login-only BGE dump, Kaggle arXiv
    snapshot). Planned like any job so `snakemake -n` shows the whole study; when run it fails
    with the one-time step to take."""
    output:
        L.raw / "{path}",
    log:
        L.results.log("require_raw/{path}"),
    wildcard_constraints:
        path=r"(?!hf/).+",
    shell:
        "echo 'missing raw source '{output:q}': place it there by hand (see README: Data sources)' "
        "| tee {log:q} >&2; exit 1"


rule build_tokenizer:
    input:
        corpus=tokenizer_inputs,
        staged=tokenizer_staged,
    output:
        tokenizer=directory(L.processed.tokenizer()),
    log:
        L.results.log("build_tokenizer"),
    priority: GRID_GATE_PRIORITY
    params:
        code=code_version("build-tokenizer"),
        tokenizer=config["tokenizer"],
        args=tokenizer_args,
    shell:
        "embtune build-tokenizer {params.args:q} --out {output:q} > {log:q} 2>&1"


# BGE preparation scattered over N = data.bge.parts parts: see BGE_PARTS above.
rule bge_spill:
    """Byte range `part` of the BGE input: filter, key, route to the sort parts."""
    input:
        files=expand_sources(config["data"]["bge"]["files"]),
    output:
        temp(directory(bge_part("spill"))),
    log:
        L.results.log("prepare_bge/spill-{part}"),
    wildcard_constraints:
        part=r"\d+",
    priority: GRID_GATE_PRIORITY
    threads: 1
    resources:
        **BGE_SPILL_RESOURCES,
    params:
        parts=BGE_PARTS,
        code=code_version("prepare-bge-part"),
        seed=config["seed"],
        flags=bge_input_flags,
    shell:
        "embtune prepare-bge-part spill --files {input.files:q} --seed {params.seed:q} {params.flags:q} "
        "--parts {params.parts:q} --part {wildcards.part:q} --out {output:q} > {log:q} 2>&1"


rule bge_sort:
    """Key range `part`: sort by the seeded key and drop exact duplicates (across all files)."""
    input:
        bge_parts("spill"),
    output:
        temp(directory(bge_part("sort"))),
    log:
        L.results.log("prepare_bge/sort-{part}"),
    wildcard_constraints:
        part=r"\d+",
    priority: GRID_GATE_PRIORITY
    threads: 1
    resources:
        **BGE_SORT_RESOURCES,
    params:
        parts=BGE_PARTS,
        code=code_version("prepare-bge-part"),
        flags=bge_dedup_flags,
    shell:
        "embtune prepare-bge-part sort --inputs {input:q} {params.flags:q} "
        "--parts {params.parts:q} --part {wildcards.part:q} --out {output:q} > {log:q} 2>&1"


rule bge_shards:
    """Tokenise and write the output shards whose first row is in row range `part`."""
    input:
        parts=bge_parts("sort"),
        tokenizer=rules.build_tokenizer.output.tokenizer,
    output:
        temp(directory(bge_part("shards"))),
    log:
        L.results.log("prepare_bge/shards-{part}"),
    wildcard_constraints:
        part=r"\d+",
    priority: GRID_GATE_PRIORITY
    # One tokenizer thread; the parallelism is the parts (data.bge.parts: 16 at paper scale). A
    # multi-thread job waits for that many free cores, and Snakemake reserves none: on the demo's
    # 2 cores this one (4 threads, scaled to 2) waited ~9 min behind paper 2's one-thread jobs,
    # and with it the whole training grid.
    threads: 1
    resources:
        **BGE_SHARDS_RESOURCES,
    params:
        parts=BGE_PARTS,
        code=code_version("prepare-bge-part"),
        context=MAX_CONTEXT,
        flags=bge_output_flags,
    shell:
        "embtune prepare-bge-part shards --inputs {input.parts:q} --tokenizer {input.tokenizer:q} "
        "--context-length {params.context:q} {params.flags:q} --threads {threads:q} "
        "--parts {params.parts:q} --part {wildcards.part:q} --out {output:q} > {log:q} 2>&1"


rule prepare_bge:
    """Gather the parts into the output of `embtune prepare-bge` (links the shards, writes the
    manifest; checks every part was built with these settings)."""
    input:
        files=expand_sources(config["data"]["bge"]["files"]),
        spill=bge_parts("spill"),
        sorted=bge_parts("sort"),
        shards=bge_parts("shards"),
        tokenizer=rules.build_tokenizer.output.tokenizer,
    output:
        bge=directory(L.processed.bge()),
    log:
        L.results.log("prepare_bge/gather"),
    priority: GRID_GATE_PRIORITY
    resources:
        **BGE_GATHER_RESOURCES,
    params:
        parts=BGE_PARTS,
        code=code_version("prepare-bge-part"),
        cfg=config["data"]["bge"],
        context=MAX_CONTEXT,
        seed=config["seed"],
        flags=bge_flags,
    shell:
        "embtune prepare-bge-part gather --files {input.files:q} --tokenizer {input.tokenizer:q} "
        "--context-length {params.context:q} --seed {params.seed:q} {params.flags:q} "
        "--parts {params.parts:q} --spill {input.spill:q} --sorted {input.sorted:q} "
        "--shards {input.shards:q} --out {output:q} > {log:q} 2>&1"


rule pack_pairs:
    """The training pairs as flat token arrays that every training job memory-maps (shared OS
    page cache across the grid's runs and GPUs, no per-run parquet decoding)."""
    input:
        rules.prepare_bge.output.bge,
    output:
        packed=directory(L.processed.bge_packed()),
    log:
        L.results.log("pack_pairs"),
    priority: GRID_GATE_PRIORITY
    params:
        code=code_version("pack-pairs"),
    shell:
        "embtune pack-pairs --bge-dir {input:q} --out {output:q} > {log:q} 2>&1"


rule split_msmarco:
    input:
        local_file(config["data"]["msmarco"]["file"]),
    output:
        msmarco=directory(L.processed.msmarco()),
    log:
        L.results.log("split_msmarco"),
    priority: PAPER2_GATE_PRIORITY
    params:
        code=code_version("split-msmarco"),
        cfg=config["data"]["msmarco"],
    shell:
        "embtune split-msmarco --file {input:q} --train-size {params.cfg[train_size]:q} "
        "--val-size {params.cfg[val_size]:q} --eval-size {params.cfg[eval_size]:q} "
        "--hard-negatives {params.cfg[hard_negatives]:q} --out {output:q} > {log:q} 2>&1"


rule build_arxiv_negatives:
    input:
        arxiv_source_input,
    output:
        arxiv=directory(L.processed.arxiv()),
    log:
        L.results.log("build_arxiv_negatives"),
    priority: PAPER2_GATE_PRIORITY
    params:
        code=code_version("build-arxiv-negatives"),
        cfg=config["data"]["arxiv"],
        seed=config["seed"],
        args=arxiv_args,
    shell:
        "embtune build-arxiv-negatives {params.args:q} --seed {params.seed:q} --out {output:q} > {log:q} 2>&1"


rule prepare_xnli:
    input:
        xnli_inputs,
    output:
        xnli=L.processed.xnli_test(),
    log:
        L.results.log("prepare_xnli"),
    priority: PAPER2_GATE_PRIORITY
    params:
        code=code_version("prepare-xnli"),
        cfg=config["data"]["xnli"],
        source=xnli_source,
        languages=config["data"]["xnli"]["languages"],
        max_premises=xnli_max_premises_arg,
    shell:
        "embtune prepare-xnli --source {params.source:q} --split {params.cfg[split]:q} "
        "--languages {params.languages:q} {params.max_premises:q} --out {output:q} > {log:q} 2>&1"


rule materialise_mteb:
    input:
        mteb_inputs,
    output:
        mteb=directory(L.processed.mteb()),
    log:
        L.results.log("materialise_mteb"),
    params:
        code=code_version("materialise-mteb"),
        tasks=config["evaluate"]["mteb"]["tasks"],
        source=mteb_source_args,
    shell:
        "embtune materialise-mteb --tasks {params.tasks:q} {params.source:q} --out {output:q} > {log:q} 2>&1"


rule select_mteb_tasks:
    """Paper 1 App. B: the MTEB task most correlated with its category's average, per category,
    from full-MTEB scores of many models (evaluate.mteb.selection.scores). Its params.yaml is a
    layer the study can take (--configfile) to evaluate on the selected tasks."""
    input:
        expand_sources(config["evaluate"]["mteb"]["selection"]["scores"]),
    output:
        selection=directory(L.processed.mteb_selection()),
    log:
        L.results.log("select_mteb_tasks"),
    params:
        code=code_version("select-mteb-tasks"),
    shell:
        "embtune select-mteb-tasks --scores {input:q} --out {output:q} > {log:q} 2>&1"


# Every PND set with a loader of its own (embtune.core.pnd_sets.sources; paper 2, App. C, D): one rule
# per source folder (prepare_<source>, a static name that dvc.yaml's data phase can target),
# generated from the registry; its options from data.<source>, the sets of a source written together.
for _source in _pnd_sets.sources():

    rule prepare_pnd:
        """A PND source's raw files -> its evaluation sets (`embtune prepare-pnd <source>`)."""
        name:
            _pnd_sets.prepare_rule(_source)
        input:
            expand_sources(config["data"][_source]["files"]),
        output:
            directory(L.processed.pnd_dir(_source)),
        log:
            L.results.log(_pnd_sets.prepare_rule(_source)),
        priority: PAPER2_GATE_PRIORITY
        params:
            code=code_version("prepare-pnd"),
            source=_source,
            args=_pnd_loader.option_args(config["data"][_source]),
        shell:
            "embtune prepare-pnd {params.source:q} --files {input:q} {params.args:q} --out {output:q} > {log:q} 2>&1"
