"""The workflow through a REAL single-node SLURM (tests/slurm_cluster.py), not a mock.

Runs the literal `snakemake --profile slurm` from a copy of the repo root (the profile is found
as ./slurm/config.yaml; profiles/default is merged on top). The whole study through SLURM is
tests/e2e/test_rehearsal.py (CI's one SLURM pipeline run), with the checker defined here,
``assert_jobs_went_through_slurm``, which asserts from SLURM's own records —
the controller log's `_slurm_rpc_submit_batch_job` / `_job_complete` lines, the job-completion
log (JobState=COMPLETED), `scontrol show job` (the rule encoded in the job comment, the GPU
request) and the per-job logs named by SLURM job id — that every non-local rule instance went
through sbatch exactly once and succeeded, and that no local rule did. A training job
pre-empted mid-run (SIGTERM to its steps + Snakemake's retry, or SLURM's own requeue) must
resume from its checkpoint and end exactly where an uninterrupted run ends.

Site settings for this one-node cluster come through the profile's environment knobs (no
slurmdbd -> EMBTUNE_SLURM_STATUS_COMMAND=squeue; 2 CPUs -> 1 CPU per fake GPU; a small machine ->
memory caps). If SLURM cannot be installed the tests skip with a LOUD banner
(EMBTUNE_REQUIRE_SLURM=1 turns that into a failure); they never pass silently.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from slurm_cluster import SlurmCluster  # noqa: E402  (the fixture itself comes from conftest.py)

from embtune.core.layout import METRICS_JSON, Results  # noqa: E402
from embtune.runconfig import format_budget  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

PRESETS = ["presets/demo.yaml", "presets/ci.yaml"]
# The pre-emption tests' target: everything up to the fits (their one training run among it).
RESULTS = Results(Path("results/ci"))     # presets/ci.yaml's paths.results, relative to the repo copy
TARGETS = [str(RESULTS.analysis("fits.json"))]
IGNORE = shutil.ignore_patterns(".venv", "results", "processed", ".snakemake", ".git", "__pycache__",
                                ".pytest_cache", "*.egg-info", "raw", "logs", "cache", "tmp")
GPU_RULES = {"train_contrastive", "tune_query", "evaluate_mteb_batch", "evaluate_pnd_base", "evaluate_pnd_query"}


def _env(cluster: SlurmCluster) -> dict[str, str]:
    mem_mb = _node_mem_mb()
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1",
        # This cluster's facts, through the profile's documented knobs:
        "EMBTUNE_SLURM_STATUS_COMMAND": "squeue",     # no slurmdbd -> no sacct
        "EMBTUNE_SLURM_INIT_SECONDS": "2",
        "EMBTUNE_SLURM_CPUS_PER_GPU": "1",
        "EMBTUNE_SLURM_GPU_MODEL": "fake",            # the node's Gres=gpu:fake:2
        "EMBTUNE_SLURM_PARTITION": cluster.partition,
        "EMBTUNE_SLURM_DEFAULT_MEM_MB": str(max(256, mem_mb // 4)),
        "EMBTUNE_MAX_MEM_MB": str(max(256, mem_mb // 3)),
        "EMBTUNE_SLURM_JOBS": "4",
    }


def _node_mem_mb() -> int:
    with open("/proc/meminfo") as fh:
        kb = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
    return int(kb / 1024 * 0.9)


def _snakemake(workdir: Path, env: dict[str, str], *args: str, timeout: int) -> subprocess.CompletedProcess:
    # The literal `snakemake --profile slurm`, run from the (copied) repo root.
    cmd = ["snakemake", "--profile", "slurm", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def planned_jobs(dry_run_output: str) -> collections.Counter:
    """Rule -> job count of a dry run (it prints every job as "rule X:")."""
    return collections.Counter(re.findall(r"^(?:local)?rule (\w+):$", dry_run_output, flags=re.M))


def executed_jobs(run_output: str) -> tuple[collections.Counter, collections.Counter]:
    """(submitted, local) rule -> job count of a real run: the SLURM executor prints the jobs it
    submits as "rule X:" and the ones it runs on this host as "localrule X:"."""
    remote = collections.Counter(re.findall(r"^rule (\w+):$", run_output, flags=re.M))
    local = collections.Counter(re.findall(r"^localrule (\w+):$", run_output, flags=re.M))
    return remote, local


def assert_jobs_went_through_slurm(cluster: SlurmCluster, workdir: Path, expected: collections.Counter,
                                   local_rules: set[str], earlier: set[int]) -> dict[int, dict[str, str]]:
    """SLURM's records show exactly `expected` (rule -> count) batch jobs, all COMPLETED
    (jobs in `earlier` belong to other tests on the same cluster)."""
    submitted = [j for j in cluster.submitted_job_ids() if j not in earlier]
    assert len(submitted) == sum(expected.values()), (
        f"controller log has {len(submitted)} _slurm_rpc_submit_batch_job lines, expected "
        f"{sum(expected.values())} ({dict(expected)})\n{cluster.diagnostics()}")
    completed = cluster.completed_job_ids()
    assert {j: completed.get(j) for j in submitted} == {j: 0 for j in submitted}, \
        f"_job_complete WEXITSTATUS per job: {completed}"
    cluster.wait_for_records(submitted)
    records = cluster.job_records()
    states = {j: records.get(j, {}).get("JobState") for j in submitted}
    assert states == {j: "COMPLETED" for j in submitted}, f"jobcomp JobState: {states}"

    per_rule: collections.Counter = collections.Counter()
    shown: dict[int, dict[str, str]] = {}
    for jid in submitted:
        info = cluster.show_job(jid)
        shown[jid] = info
        assert info.get("JobState") == "COMPLETED", (jid, info)
        assert info.get("ExitCode") == "0:0", (jid, info)
        m = re.match(r"rule_(\w+?)(?:_wildcards_.*)?$", info.get("Comment", ""))
        assert m, f"job {jid} has no Snakemake rule comment: {info.get('Comment')!r}"
        rule = m.group(1)
        per_rule[rule] += 1
        # the job's own log, named by its SLURM job id (slurm-logdir + keep-successful-logs)
        logs = list((workdir / "logs" / "slurm").glob(f"rule_{rule}/**/{jid}.log"))
        assert logs, f"no SLURM log logs/slurm/rule_{rule}/**/{jid}.log"
        text = logs[0].read_text(errors="replace")
        assert f"SLURM_JOB_ID={jid}" in text or f"rule {rule}:" in text, logs[0]
        if rule in GPU_RULES:
            tres = info.get("TresPerJob", "") + info.get("TresPerNode", "")
            assert "gpu" in tres, f"GPU rule {rule} did not request a GPU: {info}"
            # runtime/mem_mb from workflow/rules/resources.smk reached sbatch (--time, --mem)
            assert info.get("TimeLimit") not in (None, "", "UNLIMITED"), (rule, info.get("TimeLimit"))
            assert info.get("MinMemoryNode", "0") not in ("0", ""), (rule, info.get("MinMemoryNode"))
    assert per_rule == expected, f"SLURM jobs per rule {dict(per_rule)} != planned {dict(expected)}"
    assert not (set(per_rule) & local_rules), f"local rules went to SLURM: {set(per_rule) & local_rules}"
    return shown


# --------------------------------------------------------------------------- profile smoke test
SMOKE_SNAKEFILE = """
localrules: summary

rule all:
    input: "out/summary.txt"

rule train_contrastive:
    output: "out/{run}/metrics.json"
    resources: runtime=lambda wildcards, attempt: 5 * attempt, mem_mb=200
    shell: "echo SLURM_JOB_ID=$SLURM_JOB_ID; echo '{{\\"slurm_job_id\\": \\"'$SLURM_JOB_ID'\\"}}' > {output}"

rule summary:
    input: "out/a/metrics.json"
    output: "out/summary.txt"
    shell: "cat {input} > {output}; echo local=${{SLURM_JOB_ID:-none}} >> {output}"
"""


def test_profile_submits_through_sbatch(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The profile itself on a 2-rule workflow: one sbatch job (a GPU rule), one local rule."""
    work = tmp_path / "smoke"
    work.mkdir()
    shutil.copytree(REPO / "slurm", work / "slurm")
    shutil.copytree(REPO / "profiles", work / "profiles")
    (work / "Snakefile").write_text(SMOKE_SNAKEFILE)
    env = _env(slurm_cluster)
    before = len(slurm_cluster.submitted_job_ids())
    t0 = time.monotonic()
    proc = _snakemake(work, env, timeout=300)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Using profiles slurm and workflow specific profile profiles/default" in proc.stderr
    ids = slurm_cluster.submitted_job_ids()[before:]
    assert len(ids) == 1, ids
    out = (work / "out/a/metrics.json").read_text()
    assert f'"slurm_job_id": "{ids[0]}"' in out          # the job ran inside that SLURM job
    assert "local=none" in (work / "out/summary.txt").read_text()   # the local rule did not
    info = slurm_cluster.show_job(ids[0])
    assert info["JobState"] == "COMPLETED" and info["Comment"].startswith("rule_train_contrastive")
    assert "gpu:fake:1" in info.get("TresPerJob", ""), info
    print(f"\n[timing] 2-job workflow through SLURM: {elapsed:.1f} s")


# --------------------------------------------------------------------------- pre-emption + resume
# presets/ci.yaml's training run with a larger budget (~320 steps of ~35 ms on one core: room to
# interrupt it mid-way), a log line per step and no periodic checkpoint, so the only checkpoint a
# resumed run can start from is the one `embtune train` writes on SIGTERM.
PREEMPT_PRESET = """\
train:
  methods: [full]
  budgets: [3.0e+11]
  log_every_steps: 1
  checkpoint_every_steps: 1000000
"""
PREEMPT_CONFIG = [*PRESETS, "preempt.yaml"]
PREEMPT_AFTER_STEP = 20
STEP_LINE = re.compile(r"^step (\d+)/(\d+) ", re.M)


def _wait_for(pred, timeout: float, what: str, proc: subprocess.Popen | None = None, out: Path | None = None):
    """Poll ``pred`` every 0.1 s until it returns something truthy; fail if snakemake exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            tail = out.read_text(errors="replace")[-4000:] if out else ""
            pytest.fail(f"snakemake exited (rc={proc.returncode}) while waiting for {what}:\n{tail}")
        time.sleep(0.1)
    tail = out.read_text(errors="replace")[-4000:] if out else ""
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _minutes(limit: str) -> int:
    """SLURM's TimeLimit ([D-]HH:MM:SS) in minutes."""
    days, _, hms = limit.rpartition("-")
    h, m, _s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 1440 + h * 60 + m


def _jobcomp_states(cluster: SlurmCluster, jid: int) -> list[str]:
    """Every JobState the job-completion log recorded for ``jid`` (a requeued job has several)."""
    return [rec.get("JobState", "") for line in _read(cluster.jobcomp_log).splitlines()
            if (rec := dict(re.findall(r"(\w+)=(\S*)", line))).get("JobId") == str(jid)]


@pytest.fixture(scope="module")
def preempt_copy(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A repo copy with the test preset, everything upstream of its one training job built
    locally (not through SLURM), and that job's run id."""
    work = tmp_path_factory.mktemp("slurm_preempt") / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    (work / "preempt.yaml").write_text(PREEMPT_PRESET)
    env = _env(slurm_cluster)
    dry = subprocess.run(["snakemake", "-n", TARGETS[0], "--configfile", *PREEMPT_CONFIG], cwd=work,
                         env=env, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-4000:]
    runs = sorted(set(re.findall(r"wildcards: run=(\S+)", dry.stdout + dry.stderr)))
    assert len(runs) == 1, f"expected one training run in presets/ci.yaml + the test preset: {runs}"
    target = str(RESULTS.runs.file(runs[0], METRICS_JSON))
    up = subprocess.run(["snakemake", target, "--configfile", *PREEMPT_CONFIG, "--omit-from",
                         "train_contrastive"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert up.returncode == 0, up.stderr[-4000:]
    assert not (work / target).exists()
    return {"work": work, "run_id": runs[0], "target": target, "env": env}


def _reference_metrics(preempt_copy: dict, run: dict) -> dict:
    """The same run trained uninterrupted, locally (`embtune train`, as the rule calls it)."""
    if "reference" not in preempt_copy:
        work, ref = preempt_copy["work"], preempt_copy["work"] / "reference"
        shutil.rmtree(ref, ignore_errors=True)
        proc = subprocess.run(["embtune", "train", "--run-config-json", json.dumps(run), "--out-dir",
                               str(ref / "out"), "--checkpoint-dir", str(ref / "ckpt"), "--threads", "1"],
                              cwd=work, env=preempt_copy["env"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        preempt_copy["reference"] = json.loads((ref / "out" / "metrics.json").read_text())
    return preempt_copy["reference"]


@pytest.mark.parametrize("how", ["retry", "requeue"])
def test_preempted_training_resumes_through_slurm(slurm_cluster: SlurmCluster, preempt_copy: dict,
                                                  how: str) -> None:
    """One `train_contrastive` job of the ci preset through `snakemake --profile slurm`, pre-empted
    mid-run the way SLURM does it, resumes from its checkpoint and ends where an uninterrupted run
    ends.

    retry:   `scancel --signal=TERM <job>` = what SLURM sends a job's steps at pre-emption
             (GraceTime) and at its time limit: the run checkpoints and exits 75, the job FAILs and
             the profile's `retries` re-submit it (a new job id, attempt 2).
    requeue: `scontrol requeue <job>` = SLURM's own requeue (PreemptMode=REQUEUE): SIGTERM, then the
             same job id goes back to PENDING and runs again; the executor plugin just waits.
    """
    work, run_id, env = preempt_copy["work"], preempt_copy["run_id"], preempt_copy["env"]
    run_dir = work / RESULTS.runs.dir(run_id)
    ckpt = work / RESULTS.checkpoint(run_id)
    rule_log = work / RESULTS.log(f"train/{run_id}")
    slurm_logs = work / "logs/slurm/rule_train_contrastive" / run_id
    shutil.rmtree(run_dir, ignore_errors=True)          # the other parametrisation's outputs
    shutil.rmtree(ckpt, ignore_errors=True)
    rule_log.unlink(missing_ok=True)

    before = set(slurm_cluster.submitted_job_ids())

    def new_jobs() -> list[int]:
        return [j for j in slurm_cluster.submitted_job_ids() if j not in before]

    out = work.parent / f"snakemake-{how}.out"
    t0 = time.monotonic()
    with open(out, "w") as fh:
        proc = subprocess.Popen(["snakemake", "--profile", "slurm", preempt_copy["target"], "--configfile",
                                 *PREEMPT_CONFIG], cwd=work, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        # 1. the job runs under SLURM and has done some steps
        def steps_done():
            steps = [(int(a), int(b)) for a, b in STEP_LINE.findall(_read(rule_log))]
            return steps[-1] if steps and steps[-1][0] >= PREEMPT_AFTER_STEP else None
        done, planned = _wait_for(steps_done, 180, f"step {PREEMPT_AFTER_STEP} in {rule_log}", proc, out)
        assert planned > 4 * PREEMPT_AFTER_STEP, f"only {planned} planned steps: too short to interrupt"
        jobs = new_jobs()
        assert len(jobs) == 1, jobs
        first = jobs[0]
        assert slurm_cluster.show_job(first).get("JobState") == "RUNNING"

        # 2. pre-empt it: the run finishes its step, checkpoints and exits 75 (EX_TEMPFAIL)
        cmd = (["scancel", "--signal=TERM", str(first)] if how == "retry"
               else ["scontrol", "requeue", str(first)])
        sig = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert sig.returncode == 0, sig.stderr
        m = _wait_for(lambda: re.search(r"train: pre-empted at step (\d+)", _read(rule_log)), 60,
                      "'pre-empted at step k' in the rule log", proc, out)
        k = int(m.group(1))
        assert done <= k < planned, (done, k, planned)
        assert (ckpt / "state.json").exists(), "no checkpoint after the pre-emption"
        # Snakemake inside the job reports the run's own exit status (the rule `exec`s it)
        first_log = slurm_logs / f"{first}.log"
        _wait_for(lambda: "returned non-zero exit status 75" in _read(first_log), 60,
                  f"exit status 75 in {first_log}", proc, out)
        if how == "requeue":
            # SLURM holds a requeued job for AuthInfo cred_expire (120 s) before it may start
            # again; release it now instead of waiting
            _wait_for(lambda: slurm_cluster.show_job(first).get("JobState") == "PENDING", 60,
                      f"job {first} PENDING after the requeue", proc, out)
            rel = subprocess.run(["scontrol", "update", f"JobId={first}", "StartTime=now"],
                                 capture_output=True, text=True, timeout=30)
            assert rel.returncode == 0, rel.stderr

        # 3. the retry / requeue runs to the end
        rc = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            for jid in new_jobs():
                subprocess.run(["scancel", str(jid)], capture_output=True, timeout=30)
    elapsed = time.monotonic() - t0
    if rc != 0:
        pytest.fail(f"snakemake --profile slurm failed after {elapsed:.0f} s:\n{_read(out)[-5000:]}\n"
                    f"{slurm_cluster.diagnostics()}")

    # SLURM's records show the second attempt
    jobs = new_jobs()
    if how == "retry":
        assert len(jobs) == 2, f"expected the pre-empted job + one retry, got sbatch ids {jobs}"
        assert jobs[0] == first
        last = jobs[1]
        slurm_cluster.wait_for_records(jobs)
        assert _jobcomp_states(slurm_cluster, first) == ["FAILED"]
        assert _jobcomp_states(slurm_cluster, last) == ["COMPLETED"]
        assert slurm_cluster.completed_job_ids().get(first) != 0
        info1, info2 = slurm_cluster.show_job(first), slurm_cluster.show_job(last)
        assert info1.get("Comment") == info2.get("Comment") and info2["Comment"].startswith(
            "rule_train_contrastive"), (info1.get("Comment"), info2.get("Comment"))
        assert "--attempt 2" in _read(slurm_logs / f"{last}.log")
        # runtime (resources.smk) grows with the attempt
        assert _minutes(info2["TimeLimit"]) == 2 * _minutes(info1["TimeLimit"]), (info1["TimeLimit"],
                                                                                info2["TimeLimit"])
    else:
        assert jobs == [first], f"SLURM's requeue must not be followed by a Snakemake retry: {jobs}"
        last = first
        assert f"Requeuing JobId={first}" in _read(slurm_cluster.ctld_log)
        info = slurm_cluster.show_job(first)
        assert info.get("Restarts") == "1" and info.get("Requeue") == "1", info
        _wait_for(lambda: _jobcomp_states(slurm_cluster, first)[-1:] == ["COMPLETED"], 30,
                  f"job {first} COMPLETED in the job-completion log")
        assert len(_jobcomp_states(slurm_cluster, first)) == 2, _jobcomp_states(slurm_cluster, first)
    final = slurm_cluster.show_job(last)
    assert final.get("JobState") == "COMPLETED" and final.get("ExitCode") == "0:0", final

    # the second attempt resumed at step k+1 and finished; the checkpoint is gone
    resumed = [int(a) for a, _ in STEP_LINE.findall(_read(rule_log))]
    assert resumed and resumed[0] == k + 1 and resumed[-1] == planned, (k, resumed[:3], resumed[-1:])
    assert f"train: {run_id} ok" in _read(rule_log)
    assert not ckpt.exists(), f"{ckpt} left behind"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest.get("slurm_job_id") == str(last), manifest.get("slurm_job_id")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    curve = (run_dir / "curve.csv").read_text().splitlines()[1:]
    assert [int(r.split(",")[0]) for r in curve] == list(range(1, planned + 1))

    # ... and ends where the same run trained uninterrupted ends
    ref = _reference_metrics(preempt_copy, manifest["run"])
    assert metrics["status"] == ref["status"] == "ok"
    for key in ("steps", "flops", "tokens"):
        assert metrics[key] == ref[key], (key, metrics[key], ref[key])
    for key in ("final_train_loss", "val_loss"):
        assert metrics[key] == pytest.approx(ref[key], rel=1e-6, abs=0), (key, metrics[key], ref[key])
    print(f"\n[timing] pre-emption via {how} through SLURM: {elapsed:.1f} s (jobs {jobs}, pre-empted "
          f"at step {k}/{planned}; loss {metrics['final_train_loss']:.6f} = reference "
          f"{ref['final_train_loss']:.6f})")


# --------------------------------------------------------------------------- runs that end for good
# Two runs of the ci preset (six epochs allowed, so they outlast a minute) on the cluster at once,
# with --retries 0 (their first attempt is their last) and a one-minute time request
# (EMBTUNE_MAX_RUNTIME_MIN, the profile's cap): the 2e12 run (~2,200 steps of ~35 ms) is still
# training when SLURM's --signal=USR1@15 arrives and must write a time_limit record; the 1e12 run
# is kill -9'd mid-run (what an OOM killer or a lost node leaves), and the workflow's onerror must
# write a `killed` record. A second `snakemake` then writes the analysis without them.
FOR_GOOD_PRESET = """\
train:
  methods: [full]
  budgets: [1.0e+12, 2.0e+12]
  max_epochs: 6
  log_every_steps: 1
  checkpoint_every_steps: 1000000
"""
FOR_GOOD_CONFIG = [*PRESETS, "for_good.yaml"]


def _pids_of(run_id: str) -> list[int]:
    """The `embtune train` processes of ``run_id`` on this host (the job step's own)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if proc.name.isdigit() and b"train" in argv and any(run_id.encode() in a for a in argv) and \
                any(a.endswith(b"embtune") for a in argv[:2]):
            pids.append(int(proc.name))
    return pids


def test_time_limit_and_kill_are_failure_records_and_the_analysis_goes_on(
        slurm_cluster: SlurmCluster, preempt_copy: dict) -> None:
    work, env = preempt_copy["work"], {**preempt_copy["env"], "EMBTUNE_MAX_RUNTIME_MIN": "1"}
    (work / "for_good.yaml").write_text(FOR_GOOD_PRESET)
    killed, timed = (preempt_copy["run_id"].replace(f"c{format_budget(3e11)}", f"c{format_budget(c)}")
                     for c in (1e12, 2e12))
    assert killed != preempt_copy["run_id"] != timed, (killed, timed)
    killed_log, timed_log = (work / RESULTS.log(f"train/{r}") for r in (killed, timed))
    before = set(slurm_cluster.submitted_job_ids())
    out = work.parent / "snakemake-for-good.out"
    t0 = time.monotonic()
    with open(out, "w") as fh:
        proc = subprocess.Popen(["snakemake", "--profile", "slurm", *TARGETS, "--retries", "0", "--configfile",
                                 *FOR_GOOD_CONFIG], cwd=work, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        # its first step done (well before SLURM's signal, 15-45 s into the job)
        pids = _wait_for(lambda: STEP_LINE.findall(_read(killed_log)) and _pids_of(killed), 180,
                         f"a step in {killed_log}", proc, out)
        for pid in pids:
            os.kill(pid, 9)
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            for jid in set(slurm_cluster.submitted_job_ids()) - before:
                subprocess.run(["scancel", str(jid)], capture_output=True, timeout=30)
    text = _read(out)
    assert rc != 0 and "Error in rule train_contrastive" in text, text[-4000:]
    assert "mark-failed: 1 failure record(s) written" in text, text[-4000:]

    # the time limit: SLURM's signal before the limit, a checkpoint, a record, exit 0
    jobs = {slurm_cluster.show_job(j).get("Comment", ""): j for j in set(slurm_cluster.submitted_job_ids()) - before}
    timed_job = next(j for c, j in jobs.items() if timed in c)
    info = slurm_cluster.show_job(timed_job)
    assert info["TimeLimit"] == "00:01:00" and info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", info
    timed_metrics = json.loads((work / RESULTS.runs.file(timed, METRICS_JSON)).read_text())
    rec = timed_metrics["failure"]
    assert rec["reason"] == "time_limit" and rec["attempt"] == 1 and rec["retries"] == 0, rec
    assert rec["detail"].startswith("signal 10 at step ") and 0 < rec["partial"]["steps"], rec   # SIGUSR1
    assert (work / RESULTS.checkpoint(timed) / "state.json").exists()         # kept: a rerun resumes it
    assert "failed for good: time_limit" in _read(timed_log)
    # the kill: no record from the job itself; the controller's onerror wrote it
    killed_metrics = json.loads((work / RESULTS.runs.file(killed, METRICS_JSON)).read_text())
    assert killed_metrics["failure"]["reason"] == "killed", killed_metrics
    assert f"SLURM job {jobs[next(c for c in jobs if killed in c)]}" in killed_metrics["failure"]["detail"]

    # ... and the analysis goes on without them
    again = subprocess.run(["snakemake", "--profile", "slurm", *TARGETS, "--configfile", *FOR_GOOD_CONFIG],
                           cwd=work, env=preempt_copy["env"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-4000:]
    fits = json.loads((work / TARGETS[0]).read_text())
    assert fits["failed_runs"]["count"] == 2, fits["failed_runs"]
    assert fits["failed_runs"]["by_reason"] == {"killed": 1, "time_limit": 1}, fits["failed_runs"]
    print(f"\n[timing] time limit + kill -9 through SLURM, then the analysis: {time.monotonic() - t0:.1f} s")
