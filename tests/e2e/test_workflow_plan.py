"""`snakemake -n` on the paper-scale params plans every stage of the study, offline."""

from __future__ import annotations

import os
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

from embtune.core import pnd_sets
from embtune.plan.config import load_params
from embtune.plan.query_sweep import query_runs
from embtune.plan.sweep import mteb_run_ids, training_plan

REPO = Path(__file__).resolve().parents[2]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _job_counts(output: str) -> dict[str, int]:
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def test_paper_scale_dry_run_plans_the_whole_study(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--config",
                           f"paths={{raw: data/raw, processed: {tmp_path}/processed, results: {tmp_path}/results}}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu
    print(f"paper-scale dry run planned in {elapsed:.1f} s wall, {cpu:.1f} s CPU")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The bar: < 30 s. CPU time, not wall: wall on a shared CI runner measures the neighbours.
    assert cpu < 30, f"paper-scale dry run took {cpu:.1f} s of CPU"
    counts = _job_counts(proc.stdout + proc.stderr)
    params = load_params([REPO / "params.yaml"])
    runs, _, members = training_plan(params)
    qruns = query_runs(params)
    assert counts["train_contrastive"] == len(runs) > 500
    # main grid + the App. D studies that report MTEB; App. F and the LR studies report losses
    mteb = mteb_run_ids(params, runs, members)
    assert counts["evaluate_mteb"] == len(mteb) and set(mteb) < {r["run_id"] for r in runs}
    assert counts["tune_query"] == counts["evaluate_pnd_query"] == len(qruns)
    assert counts["evaluate_pnd_base"] == len(params["query_tuning"]["models"])
    assert counts["build_model"] == len(params["models"]) == 8
    for rule in ("prepare_bge", "pack_pairs", "split_msmarco", "build_arxiv_negatives", "prepare_xnli",
                 *map(pnd_sets.prepare_rule, pnd_sets.sources()), "materialise_mteb", "build_tokenizer",
                 "collect_runs", "fit_scaling", "recipe", "figures", "query_table", "appendix_tables",
                 "summary"):
        assert counts.get(rule) == 1, rule
    parts = params["data"]["bge"]["parts"]
    assert parts > 1 and counts["bge_spill"] == counts["bge_sort"] == counts["bge_shards"] == parts
    # App. K: base and tuned evaluations score arxiv without each tuned domain, alike
    pnd = [line for line in proc.stdout.splitlines() if line.startswith("Shell command: embtune evaluate-pnd")]
    assert len(pnd) == counts["evaluate_pnd_base"] + counts["evaluate_pnd_query"]
    assert all(re.search(r"--exclude-domains cs math physics\s+(--doc-model-dir \S+\s+)?--out", line) for line in pnd)


def test_bge_preparation_scatters_over_parts(tmp_path: Path) -> None:
    """data.bge.parts = N plans N spill, sort and shards jobs (byte ranges, key ranges, row ranges)
    and one gather, each part its own job; a bad N is refused by the schema."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    paths = f"paths={{raw: data/demo, processed: {tmp_path}/processed, results: {tmp_path}/results}}"
    base = [sys.executable, "-m", "snakemake", "-n", "-p", f"{tmp_path}/processed/bge", "--configfile",
            "presets/demo.yaml", "--config", paths]

    def with_parts(parts: int) -> list[str]:  # a config layer over the preset (--config gives strings)
        layer = tmp_path / f"parts-{parts}.yaml"
        layer.write_text(f"data:\n  bge:\n    parts: {parts}\n")
        return [*base[:8], str(layer), *base[8:]]

    for parts in (1, 5):
        proc = subprocess.run(with_parts(parts), cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        counts = _job_counts(proc.stdout + proc.stderr)
        assert counts["bge_spill"] == counts["bge_sort"] == counts["bge_shards"] == parts
        assert counts["prepare_bge"] == 1
        shells = [line for line in proc.stdout.splitlines() if line.startswith("Shell command: embtune prepare-bge-part")]
        for step in ("spill", "sort", "shards"):
            got = sorted(int(m.group(1)) for line in shells if f"prepare-bge-part {step} " in line
                         for m in [re.search(rf"--parts {parts} --part (\d+) ", line)] if m)
            assert got == list(range(parts)), (step, got)
        gather = [line for line in shells if "prepare-bge-part gather " in line]
        assert len(gather) == 1 and all(f"shards-{i}-of-{parts}" in gather[0] for i in range(parts))
    # the demo preset itself runs the scatter path with N > 1
    proc = subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and _job_counts(proc.stdout + proc.stderr)["bge_spill"] == 3
    proc = subprocess.run(with_parts(0), cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "data.bge.parts: 0 is less than the minimum of 1" in proc.stdout + proc.stderr


def test_a_pull_request_revision_stages_into_its_own_folder(tmp_path: Path) -> None:
    """refs/pr/N (e.g. the hub's safetensors-conversion PR) is the store folder refs~pr~N, and the
    rule hands stage-in the ref itself."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    target = f"{tmp_path}/store/models/EleutherAI/pythia-14m/refs~pr~7"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", target, "--configfile", "presets/demo.yaml",
                           "--config", f"paths={{raw: data/demo, processed: {tmp_path}/p, results: {tmp_path}/r, "
                           f"store: {tmp_path}/store}}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    shell = [ln for ln in proc.stdout.splitlines() if "embtune stage-in snapshot" in ln]
    assert len(shell) == 1 and "--repo-id EleutherAI/pythia-14m --revision refs/pr/7 --out" in shell[0], shell
    assert f"--out {shlex.quote(target)} " in shell[0], shell
