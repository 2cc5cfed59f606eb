# Placeholder resources until the SLURM profile work lands (issue 7).
TRAIN_RESOURCES = {}
QUERY_RESOURCES = {}
EVAL_RESOURCES = {}
