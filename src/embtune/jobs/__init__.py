"""How a job runs on a cluster: one process per GPU, progress with ETA, batch members and the jobs that failed for good.

Base layer, beside :mod:`embtune.core`."""
