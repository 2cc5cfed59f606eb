"""Jobs killed from outside become failure records: Snakemake's log read for the jobs it gave up
on (embtune.jobs.failed_jobs, on a log a real Snakemake wrote), and `embtune mark-failed` writing
records the readers downstream take as failed runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers_train import run_json

from embtune.core.errors import DataError
from embtune.jobs.failed_jobs import final_failures
from embtune.stages import mark_failed

# `kill` is killed by SIGKILL on every attempt; `flaky` fails on its first attempt only (a file
# counts the attempts); `fine` succeeds. With --retries 1 only `kill` fails for good.
SNAKEFILE = """
rule all:
    input: "runs/a/metrics.json", "flaky/b.txt", "fine.txt"
rule kill:
    output: "runs/{run}/metrics.json", "runs/{run}/curve.csv"
    shell: "kill -9 $$"
rule flaky:
    output: "flaky/{name}.txt"
    shell: "echo x >> attempts; test $(wc -l < attempts) -ge 2 && touch {output}"
rule fine:
    output: "fine.txt"
    shell: "touch {output}"
"""


@pytest.fixture(scope="module")
def snakemake_log(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("sm")
    (work / "Snakefile").write_text(SNAKEFILE)
    snakemake = str(Path(sys.executable).parent / "snakemake")
    proc = subprocess.run([snakemake, "--cores", "1", "--retries", "1", "--keep-going"], cwd=work,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, proc.stdout[-2000:]
    logs = sorted((work / ".snakemake" / "log").glob("*.snakemake.log"))
    assert len(logs) == 1
    return logs[0].read_text()


def test_only_the_job_snakemake_gave_up_on_is_a_final_failure(snakemake_log) -> None:
    assert snakemake_log.count("Error in rule kill:") == 2 and "Error in rule flaky:" in snakemake_log
    jobs = final_failures(snakemake_log)
    assert [(j.rule, j.wildcards) for j in jobs] == [("kill", {"run": "a"})]
    assert jobs[0].output == ("runs/a/metrics.json", "runs/a/curve.csv")
    assert jobs[0].detail().startswith("rule kill failed for good")


def test_a_restart_after_the_last_error_clears_it() -> None:
    log = ("rule t:\n    jobid: 4\n    wildcards: run=x, batch=b0\n"
           "Error in rule t:\n    message: SLURM-job '17' failed, SLURM status is: 'OUT_OF_MEMORY'\n"
           "    jobid: 4\n    output: r/x\n    external_jobid: 17\n")
    job, = final_failures(log)
    assert job.wildcards == {"run": "x", "batch": "b0"} and job.external_jobid == "17"
    assert job.detail() == ("rule t failed for good; SLURM job 17; "
                            "SLURM-job '17' failed, SLURM status is: 'OUT_OF_MEMORY'")
    assert final_failures(log + "Trying to restart job 4.\n") == []
    # the job step's own blocks inside a printed job log (show-failed-logs) are not the controller's
    printed = ("Logfile logs/slurm/17.log:\n" + "=" * 80 + "\nSNAKEMAKE\n=========\n  Date: today\n"
               "Error in rule t:\n    message: None\n    jobid: 0\n    output: r/x\n" + "=" * 80 + "\n")
    assert [j.jobid for j in final_failures(log + printed)] == ["4"]


def test_mark_failed_writes_records_the_readers_take_as_failed(tmp_path) -> None:
    from embtune.scaling.runs_table import build_table, run_row

    run = run_json(tmp_path / "base", tmp_path / "data", "full", budget=2e9)
    out, mteb = tmp_path / "runs" / run["run_id"], tmp_path / "runs" / run["run_id"]
    units = [{"kind": "train", "run": run, "out_dir": str(out), "tracking_dir": str(tmp_path / "trk"),
              "detail": "rule train_contrastive failed for good; SLURM job 9"},
             {"kind": "mteb", "scores": str(mteb / "mteb.json"), "table": str(mteb / "mteb.parquet"),
              "results": str(mteb / "mteb_results"), "model": str(mteb / "model"), "detail": "node failure"},
             {"kind": "pnd", "pnd": str(tmp_path / "q" / "pnd.json"), "xnli": str(tmp_path / "q" / "xnli.parquet"),
              "detail": "OUT_OF_MEMORY"}]
    assert mark_failed.main(["--jobs-json", json.dumps(units), "--retries", "2"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "failed" and metrics["method"] == "full" and metrics["budget"] == 2e9
    assert metrics["failure"]["reason"] == "killed" and metrics["failure"]["attempt"] == 3
    assert metrics["failure"]["detail"].endswith("SLURM job 9")
    assert (out / "trained" / "README.txt").read_text().startswith("failed: killed (attempt 3)")
    assert json.loads((out / "manifest.json").read_text())["run"]["run_id"] == run["run_id"]
    assert (tmp_path / "trk").is_dir()
    table = build_table([run_row(run["run_id"], metrics, {}, None)])
    assert table["failure_reason"].to_list() == ["killed"] and table["status"].to_list() == ["failed"]
    scores = json.loads((mteb / "mteb.json").read_text())
    assert scores["status"] == "failed" and "node failure" in scores["skip_reason"]
    assert pl.read_parquet(mteb / "mteb.parquet").height == 0
    assert (mteb / "model" / "README.txt").read_text().startswith("MTEB evaluation failed (killed: node failure)")
    pnd = json.loads((tmp_path / "q" / "pnd.json").read_text())
    assert pnd["status"] == "failed" and pnd["failure"]["reason"] == "killed"


def test_a_run_folder_train_wrote_is_replaced_whatever_lies_beside_the_model(tmp_path) -> None:
    """A run folder whose manifest names train is train's own, whatever else it holds (evaluation's
    model/, a folder no stage writes): re-writing it replaces it whole; a folder of other things
    without that manifest is refused, untouched."""
    from embtune.runconfig import RunConfig
    from embtune.stages.train import write_outputs
    from embtune.train.loop import Result

    run = run_json(tmp_path / "base", tmp_path / "data", "full", budget=2e9)
    out = tmp_path / "runs" / run["run_id"]
    unit = [{"kind": "train", "run": run, "out_dir": str(out), "tracking_dir": str(tmp_path / "trk"), "detail": "x"}]
    assert mark_failed.main(["--jobs-json", json.dumps(unit)]) == 0
    for extra in ("model", "notes"):
        (out / extra).mkdir()
    assert mark_failed.main(["--jobs-json", json.dumps(unit)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["curve.csv", "manifest.json", "metrics.json", "trained"]
    other = tmp_path / "other"
    (other / "notes").mkdir(parents=True)
    metrics = json.loads((out / "metrics.json").read_text())
    with pytest.raises(ValueError, match="notes"):
        write_outputs(other, Result("failed", metrics, []), RunConfig.from_dict(run))
    assert [p.name for p in other.iterdir()] == ["notes"]


@pytest.mark.parametrize("units,message", [
    ('{"kind": "train"}', "expected a JSON list"),
    ('[{"kind": "gpu"}]', "unit 0: kind 'gpu' is not one of"),
    ('[{"kind": "pnd", "pnd": "x"}]', "unit 0 (pnd): missing key(s) xnli")])
def test_bad_units_name_what_is_wrong(units, message) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mark_failed.read_units(units)


def test_an_output_over_the_units_file_is_refused(tmp_path) -> None:
    jobs = tmp_path / "logs" / "jobs.json"
    jobs.parent.mkdir()
    jobs.write_text(json.dumps([{"kind": "pnd", "pnd": str(tmp_path / "p.json"), "xnli": str(tmp_path / "logs")}]))
    with pytest.raises(DataError, match="xnli .* contains the units file"):
        mark_failed.read_units(str(jobs))
    assert jobs.exists()
