# Analysis (cheap, local): the runs table, scaling-law fits, frontier, recipes, figures, the
# query-tuning tables and a small metrics.json for `dvc metrics diff`.
#
# Outputs flagged `report(...)` go into `snakemake --report report.html` (one self-contained file;
# captions in workflow/report/*.rst), grouped in one category per paper plus the study's plan
# (PAPER1, PAPER2, STUDY and figure_category: inputs.smk).


localrules:
    evaluate_mteb,
    fetch_hf,
    require_raw,
    build_tokenizer,
    build_model,
    prepare_xnli,
    materialise_mteb,
    plan,
    collect_runs,
    fit_scaling,
    recipe,
    figures,
    query_table,
    appendix_tables,
    summary,


rule plan:
    """The planned grid and the configs skipped at planning time, with their reasons."""
    output:
        runs=L.results.analysis("planned_runs.csv"),
        skipped=report(L.results.analysis("skipped.csv"), caption="../report/skipped.rst", category=STUDY),
        cost=report(L.results.analysis("planned_cost.csv"), caption="../report/planned_cost.rst", category=STUDY),
        plan=L.results.analysis("plan.json"),
    log:
        L.results.log("plan"),
    params:
        code=code_version("plan"),
        grid=grid_json(),
        fps=FLOPS_PER_SECOND,
    shell:
        "embtune plan --params-json {params.grid:q} --flops-per-second {params.fps:q} "
        "--out-runs {output.runs:q} --out-skipped {output.skipped:q} --out-cost {output.cost:q} "
        "--out-plan {output.plan:q} > {log:q} 2>&1"


rule collect_runs:
    input:
        metrics=train_metrics(),
        mteb=mteb_results(),
        skipped=rules.plan.output.skipped,
    output:
        runs=L.results.analysis("runs.parquet"),
        csv=L.results.analysis("runs.csv"),
        # each run's final values, the rows of `dvc metrics show` (dvc.yaml metrics)
        run_metrics=directory(L.results.analysis("run_metrics")),
    log:
        L.results.log("collect_runs"),
    params:
        code=code_version("collect-runs"),
    shell:
        "embtune collect-runs --metrics {input.metrics:q} --skipped-csv {input.skipped:q} "
        "--out {output.runs:q} > {log:q} 2>&1"


rule curves:
    """Every run's loss and LR curves and every query run's per-epoch curves, one CSV per kind,
    and the same tables as this study's file in each kind's shared folder (paths.plots): the
    overlay charts of `dvc plots show` (dvc.yaml, .dvc/plots/overlay.json). Those copies are no
    declared output: DVC cannot version them (dvc.yaml), so a clone that pulls the study would
    lack them, and Snakemake would re-run the analysis for copies of tables it already has."""
    input:
        metrics=train_metrics(),
        query=query_metrics(),
    output:
        curves=directory(L.results.analysis("curves")),
    log:
        L.results.log("curves"),
    params:
        code=code_version("curves"),
        # a function: {kind} is the CLI's to fill in, not a wildcard
        plots=lambda wildcards: ["--plots", L.plots] if L.plots else [],
    shell:
        "embtune curves --metrics {input.metrics:q} --query-metrics {input.query:q} --out {output.curves:q} "
        "{params.plots:q} > {log:q} 2>&1"


rule fit_scaling:
    input:
        rules.collect_runs.output.runs,
    output:
        fits=report(L.results.analysis("fits.json"), caption="../report/fits.rst", category=PAPER1),
    log:
        L.results.log("fit_scaling"),
    # The methods' fits are independent processes (same fits.json); Snakemake scales it to --cores.
    threads: 2
    params:
        code=code_version("fit-scaling"),
        cfg=config["analyze"],
        seed=config["seed"],
    shell:
        "embtune fit-scaling --runs {input:q} --huber-delta {params.cfg[huber_delta]:q} "
        "--bootstrap {params.cfg[bootstrap]:q} --holdout {params.cfg[holdout]:q} --seed {params.seed:q} "
        "--chinchilla-coefficients {params.cfg[chinchilla_coefficients]:q} --workers {threads:q} "
        "--loss-column {params.cfg[fit_loss]:q} "
        "--out {output:q} > {log:q} 2>&1"


rule recipe:
    input:
        fits=rules.fit_scaling.output.fits,
        runs=rules.collect_runs.output.runs,
    output:
        recipe=report(L.results.recipe("{budget}"), caption="../report/recipe.rst", category=PAPER1),
    log:
        L.results.log("recipe/c{budget}"),
    params:
        code=code_version("recipe"),
        suite=json.dumps(config["models"], sort_keys=True),
        batch=config["train"]["batch_size"],
        methods=config["analyze"]["recipe_methods"],
    shell:
        "embtune recipe --budget {wildcards.budget:q} --fits {input.fits:q} --runs {input.runs:q} "
        "--suite-json {params.suite:q} --batch-size {params.batch:q} --method-set {params.methods:q} "
        "--out {output:q} > {log:q} 2>&1"


rule query_table:
    input:
        query_pnd_results(),
    output:
        tables=report(
            directory(L.results.analysis("query_tuning")),
            patterns=["{name}.csv"],
            caption="../report/query_tables.rst",
            category=PAPER2,
        ),
    log:
        L.results.log("query_table"),
    params:
        code=code_version("query-table"),
        z=config["evaluate"]["pnd"]["z_critical"],
        runs_dir=query_runs_dir,
        runs=[f"{m}/{q}" for m, q in sorted(QRUNS)],
        plan=json.dumps({"query_tuning": config["query_tuning"]}, sort_keys=True),
    shell:
        "embtune query-table --query-runs-dir {params.runs_dir:q} --runs {params.runs:q} --z-critical {params.z:q} "
        "--plan-json {params.plan:q} --out {output:q} > {log:q} 2>&1"


rule appendix_tables:
    """Paper 1's smaller studies (train.studies): App. D's Tables 1-4 and App. F's predicted vs
    actual losses (Fig. 20), from the runs table."""
    input:
        runs=rules.collect_runs.output.runs,
        plan=rules.plan.output.plan,
    output:
        tables=directory(L.results.analysis("appendix")),
    log:
        L.results.log("appendix_tables"),
    params:
        code=code_version("appendix-tables"),
        grid=grid_json(),
        delta=config["analyze"]["huber_delta"],
    shell:
        "embtune appendix-tables --runs {input.runs:q} --plan {input.plan:q} --params-json {params.grid:q} "
        "--huber-delta {params.delta:q} --out {output:q} > {log:q} 2>&1"


rule figures:
    input:
        runs=rules.collect_runs.output.runs,
        fits=rules.fit_scaling.output.fits,
        query=rules.query_table.output.tables,
        recipes=recipe_files(),
        cost=rules.plan.output.cost,
        curves=rules.curves.output.curves,
    output:
        figures=report(
            directory(L.results.analysis("figures")),
            patterns=["{name}.png"],
            caption="../report/figure.rst",
            category=figure_category,
        ),
        report=report(L.results.analysis("report.md"), caption="../report/report_md.rst", category=STUDY),
    log:
        L.results.log("figures"),
    # Figures are drawn by parallel processes (same files); the stage runs last, alone.
    threads: 2
    params:
        code=code_version("figures"),
        qmodels=json.dumps(config["query_tuning"]["models"], sort_keys=True),
    shell:
        "embtune figures --runs {input.runs:q} --fits {input.fits:q} --query-table-dir {input.query:q} "
        "--recipe {input.recipes[0]:q} --planned-cost {input.cost:q} --curves-dir {input.curves:q} "
        "--query-models-json {params.qmodels:q} "
        "--out {output.figures:q} --report {output.report:q} --workers {threads:q} > {log:q} 2>&1"


rule summary:
    """Small, diff-able headline numbers for `dvc metrics diff`."""
    input:
        runs=rules.collect_runs.output.runs,
        fits=rules.fit_scaling.output.fits,
        recipes=recipe_files(),
        query=rules.query_table.output.tables,
    output:
        metrics=report(L.results.summary(), caption="../report/metrics.rst", category=STUDY),
    log:
        L.results.log("summary"),
    params:
        code=code_version("summary"),
    shell:
        "embtune summary --runs {input.runs:q} --fits {input.fits:q} --recipes {input.recipes:q} "
        "--query-table-dir {input.query:q} --out {output:q} > {log:q} 2>&1"
