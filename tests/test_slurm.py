"""The workflow through a REAL single-node SLURM (tests/slurm_cluster.py), not a mock.

Runs the literal `snakemake --profile slurm` from a copy of the repo root (the profile is found
as ./slurm/config.yaml; profiles/default is merged on top) and asserts from SLURM's own records —
the controller log's `_slurm_rpc_submit_batch_job` / `_job_complete` lines, the job-completion
log (JobState=COMPLETED), `scontrol show job` (the rule encoded in the job comment, the GPU
request) and the per-job logs named by SLURM job id — that every non-local rule instance went
through sbatch exactly once and succeeded, and that no local rule did.

Site settings for this one-node cluster come through the profile's environment knobs (no
slurmdbd -> EMBTUNE_SLURM_STATUS_COMMAND=squeue; 2 CPUs -> 1 CPU per fake GPU; a small machine ->
memory caps). If SLURM cannot be installed the tests skip with a LOUD banner
(EMBTUNE_REQUIRE_SLURM=1 turns that into a failure); they never pass silently.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_cluster import SlurmCluster, slurm_cluster  # noqa: E402,F401  (fixture)

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

PRESETS = ["presets/demo.yaml", "presets/ci.yaml"]
# Every SLURM-submitted rule (data prep, training, MTEB, query tuning, PND) plus the analysis up
# to the fits, the recipe and the query-tuning tables; figures/summary (local, matplotlib-heavy)
# are left to tests/test_pipeline_demo.py and tests/test_dvc_roundtrip.py.
TARGETS = ["results/ci/analysis/fits.json", "results/ci/analysis/recipes/recipe_c3e17.json",
           "results/ci/analysis/query_tuning"]
IGNORE = shutil.ignore_patterns(".venv", "results", "processed", ".snakemake", ".git", "__pycache__",
                                ".pytest_cache", "*.egg-info", "raw", "logs", "cache", "tmp")
GPU_RULES = {"train_contrastive", "tune_query", "evaluate_mteb", "evaluate_pnd_base", "evaluate_pnd_query"}


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


# --------------------------------------------------------------------------- the real pipeline
@pytest.fixture(scope="module")
def pipeline_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO / "Snakefile").exists():
        pytest.fail("no Snakefile at the repo root")
    work = tmp_path_factory.mktemp("slurm_pipeline") / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    return work


def test_ci_pipeline_through_slurm(slurm_cluster: SlurmCluster, pipeline_copy: Path) -> None:
    """presets/ci.yaml (a training job, MTEB evaluation, query tuning + PND, the analysis) via
    `snakemake --profile slurm`: one COMPLETED SLURM job per non-local rule instance."""
    env = _env(slurm_cluster)
    dry = _snakemake(pipeline_copy, env, *TARGETS, "--configfile", *PRESETS, "-n", timeout=300)
    assert dry.returncode == 0, dry.stderr[-4000:]
    planned = planned_jobs(dry.stdout + dry.stderr)
    assert planned["train_contrastive"] >= 1 and planned["evaluate_mteb"] >= 1, planned

    before = set(slurm_cluster.submitted_job_ids())
    t0 = time.monotonic()
    proc = _snakemake(pipeline_copy, env, *TARGETS, "--configfile", *PRESETS, timeout=540)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        logs = sorted((pipeline_copy / "results/ci/logs").rglob("*.log"))
        tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1500:]}" for p in logs[-6:])
        pytest.fail(f"snakemake --profile slurm failed after {elapsed:.0f} s:\n{proc.stderr[-5000:]}\n"
                    f"{tails}\n{slurm_cluster.diagnostics()}")
    remote, local = executed_jobs(proc.stdout + proc.stderr)
    assert remote + local == planned, f"executed {dict(remote)} + local {dict(local)} != planned {dict(planned)}"
    for rule in GPU_RULES | {"prepare_bge"}:          # the heavy rules all went to SLURM
        assert remote[rule] == planned[rule], (rule, dict(remote), dict(planned))
    for rule in ("plan", "collect_runs", "fit_scaling", "recipe", "query_table", "build_tokenizer"):
        assert local[rule] == planned[rule] and not remote[rule], (rule, dict(local))
    # ... and SLURM's own records agree, job by job
    assert_jobs_went_through_slurm(slurm_cluster, pipeline_copy, remote, set(local), before)
    for target in TARGETS:
        assert (pipeline_copy / target).exists(), target
    print(f"\n[timing] ci pipeline through SLURM: {elapsed:.1f} s, "
          f"{sum(remote.values())} SLURM jobs {dict(remote)}, {sum(local.values())} local {dict(local)}")

    again = _snakemake(pipeline_copy, env, *TARGETS, "--configfile", *PRESETS, "-n", timeout=300)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
