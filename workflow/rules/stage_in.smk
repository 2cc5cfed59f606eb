# Stage-in: every external artifact the params need, downloaded on the login node (local rules:
# compute nodes have no network) into the project store (paths.store, embtune.core.layout.Store) and
# data/raw/hf: hub models, encoders and the tokenizer at their pinned revision (stage_snapshot),
# hf:// dataset files (fetch_hf, data.smk) and the MTEB tasks (materialise_mteb, data.smk).
# `snakemake stage_in` runs them all and writes the store's manifest; compute jobs then read only
# local folders with the hub offline, and exit 2 naming the artifact and rule if one is missing.


localrules:
    stage_snapshot,
    stage_in,
    fetch_hf,
    materialise_mteb,


rule stage_snapshot:
    """One hub model repo at one revision (its commit and every file's sha256 recorded inside)."""
    output:
        directory(L.store.snapshot("{repo}", "{revision}")),
    log:
        L.results.log("stage_snapshot/{repo}/{revision}"),
    wildcard_constraints:
        repo=r"[^/]+(?:/[^/]+)?",
        revision=r"[^/]+",
    # A fix to what `embtune stage-in` runs re-stages (the folder or its record might be wrong);
    # only the code it reaches counts (embtune.core.code_reach), so an edit elsewhere re-downloads nothing.
    params:
        code=code_version("stage-in"),
        revision=lambda wildcards: L.store.revision_of(wildcards.revision),  # refs~pr~N -> refs/pr/N
    shell:
        "embtune stage-in snapshot --repo-id {wildcards.repo:q} "
        "--revision {params.revision:q} --out {output:q} > {log:q} 2>&1"


rule stage_in:
    """Everything the compute nodes need, then the manifest (run this on the login node)."""
    input:
        unpack(stage_in_inputs),
    output:
        manifest=L.store.manifest(),
    log:
        L.results.log("stage_in"),
    params:
        code=code_version("stage-in"),
        mteb=mteb_manifest,
    shell:
        "embtune stage-in manifest --snapshots {input.snapshots:q} --records {input.records:q} "
        "--extra-files {params.mteb:q} --out {output.manifest:q} > {log:q} 2>&1"
