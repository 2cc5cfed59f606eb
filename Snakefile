# embtune — one workflow for both papers: data prep -> training grid -> evaluation -> scaling
# fits, figures and the recipe. Parameters: params.yaml (paper scale); the offline CPU demo adds
# `--configfile presets/demo.yaml`. Cluster: `snakemake --profile slurm` (see slurm/README.md).
from snakemake.utils import min_version

min_version("9.0")

from embtune.plan.config import ParamsError, read_yaml

# Snakemake reads config files through YTE (Python runs if a file says `__use_yte__: true`) and
# keeps the last of two equal keys silently: read params.yaml with the strict loader first.
try:
    read_yaml("params.yaml")
except ParamsError as err:
    raise WorkflowError(str(err)) from None


configfile: "params.yaml"


# `snakemake --report report.html`: every figure and table of the study in one self-contained file.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/inputs.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/stage_in.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/analyze.smk"
include: "workflow/rules/failures.smk"


rule all:
    default_target: True
    input:
        final_outputs(),


onerror:
    mark_failed_jobs(log)
