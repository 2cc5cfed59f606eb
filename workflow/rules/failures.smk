# Jobs killed from outside become failure records (embtune.stages.mark_failed), so one OOM kill,
# node failure or `kill -9` on the cluster does not hold the analysis back for good.
#
# Snakemake calls `onerror` once, after the run ended with failed jobs (with --keep-going, after
# every other job). The handler reads Snakemake's own log for the jobs it gave up on after their
# last attempt (embtune.jobs.failed_jobs), resolves each to the units it would have written (a training
# run, a query run, one run's MTEB scores, one PND evaluation; a batch job to each member), and
# runs `embtune mark-failed` on them. The next `snakemake` finds every input and writes the
# analysis without those runs; the report lists them with reason `killed`. Only the GPU rules
# below are marked, and only when they ran through a cluster executor (a failing local job, data
# or analysis job is a bug or bad input you are watching, and stops the study).
import json as _json
import tempfile as _tempfile

from embtune.jobs.failed_jobs import final_failures as _final_failures

MARK_FAILED_ENV = "EMBTUNE_MARK_FAILED"  # "0": leave failed jobs as they are (debugging)


def _train_unit(run, detail):
    return {
        "kind": "train",
        "run": RUNS[run],
        "detail": detail,
        "out_dir": str(L.results.runs.dir(run)),
        "tracking_dir": str(L.results.tracking(run)),
    }


def _query_unit(qmodel, qrun, detail):
    return {
        "kind": "query",
        "run": QRUNS[(qmodel, qrun)],
        "detail": detail,
        "out_dir": str(L.results.query_runs.dir(qmodel, qrun)),
        "tracking_dir": str(L.results.query_tracking(qmodel, qrun)),
    }


def _mteb_unit(run, detail):
    return {
        "kind": "mteb",
        "detail": detail,
        "scores": str(L.results.runs.file(run, MTEB_JSON)),
        "table": str(L.results.runs.file(run, MTEB_PARQUET)),
        "results": str(L.results.runs.file(run, MTEB_RESULTS)),
        "model": str(L.results.runs.file(run, MODEL_DIR)),
    }


def _pnd_unit(qmodel, qrun, detail):
    return {
        "kind": "pnd",
        "detail": detail,
        "pnd": str(L.results.query_runs.file(qmodel, qrun, PND_JSON)),
        "xnli": str(L.results.query_runs.file(qmodel, qrun, XNLI_COUNTS)),
    }


def failed_units(job):
    """The units a job Snakemake gave up on would have written (embtune.jobs.failed_jobs.FailedJob)."""
    wc, detail, name = job.wildcards, job.detail(), job.rule
    if name == "train_contrastive" and TRAIN_RUNS_PER_JOB == 1 and wc.get("run") in RUNS:
        return [_train_unit(wc["run"], detail)]
    if name == "train_batch":
        return [_train_unit(run, detail) for run in TRAIN_BATCHES.get(wc.get("batch"), [])]
    if name == "tune_query" and QUERY_RUNS_PER_JOB == 1 and (wc.get("qmodel"), wc.get("qrun")) in QRUNS:
        return [_query_unit(wc["qmodel"], wc["qrun"], detail)]
    if name == "tune_query_batch":
        return [_query_unit(m, q, detail) for m, q in QUERY_BATCHES.get(wc.get("qbatch"), [])]
    if name == "evaluate_mteb_batch":
        return [_mteb_unit(run, detail) for run in MTEB_BATCHES.get(wc.get("batch"), [])]
    if name == "evaluate_pnd_base" and wc.get("qmodel") in QMODELS:
        return [_pnd_unit(wc["qmodel"], BASE_RUN, detail)]
    if name == "evaluate_pnd_query" and (wc.get("qmodel"), wc.get("qrun")) in QRUNS:
        return [_pnd_unit(wc["qmodel"], wc["qrun"], detail)]
    return []


def mark_failed_jobs(logs):
    """`onerror`: failure records for the GPU jobs this run gave up on (see the top of this file)."""
    if os.environ.get(MARK_FAILED_ENV) == "0" or not workflow.is_main_process or workflow.local_exec:
        return
    text = "".join(Path(p).read_text(errors="replace") for p in ([logs] if isinstance(logs, str) else logs or []))
    units = [unit for job in _final_failures(text) for unit in failed_units(job)]
    units = list({_json.dumps(u, sort_keys=True): u for u in units}.values())  # a batch named twice
    if not units:
        return
    L.results.log("mark_failed").parent.mkdir(parents=True, exist_ok=True)
    with _tempfile.NamedTemporaryFile(
        "w", suffix=".json", dir=L.results.log("mark_failed").parent, prefix="mark_failed.", delete=False
    ) as fh:
        _json.dump(units, fh)
    jobs_json, retries = fh.name, job_retries({}, 1)
    shell("embtune mark-failed --jobs-json {jobs_json:q} --retries {retries:q}")
    print(
        f"mark-failed: {len(units)} failure record(s) written (reason killed); run snakemake again "
        "to write the analysis without them (docs/cluster.md)"
    )
