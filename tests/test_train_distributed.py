"""Two CPU processes (gloo, DDP through accelerate) on a global batch train exactly like one
process on that batch: in-batch negatives span the global batch and gradients are all-reduced
once per step, through the GradCache second pass. Slow: starts two interpreters."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from embtune.train import loop
from helpers_train import make_base_model, make_shards, one_thread, run_config

_one_thread = pytest.fixture(autouse=True)(one_thread)

WORKER = """
import json, sys, torch
torch.set_num_threads(1)
from embtune.train.loop import train_run
run, ckpt, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
res = train_run(run, __import__('pathlib').Path(ckpt))
import torch.distributed as dist
if dist.get_rank() == 0:
    torch.save({"curve": res.curve, "metrics": res.metrics,
                "params": {n: p.detach() for n, p in res.model.named_parameters()}}, out)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "lora"])
def test_two_gloo_processes_match_one(tmp_path, method) -> None:
    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 48, 8, 190, 12)
    run = run_config(base, data, method, budget=4e8, min_steps=2)
    single = loop.train_run(run, tmp_path / "ck1")
    assert single.status == "ok"
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
               "RANK": str(rank), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
               "ACCELERATE_USE_CPU": "true", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(run), str(tmp_path / "ck2"),
                                       str(tmp_path / "two.pt")], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    logs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs[0][-3000:] + logs[1][-3000:]
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    assert two["metrics"]["world_size"] == 2 and two["metrics"]["steps"] == single.metrics["steps"]
    assert two["metrics"]["flops"] == single.metrics["flops"]
    for a, b in zip(single.curve, two["curve"]):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
    ref = dict(single.model.named_parameters())
    worst = max((ref[n].detach() - p).abs().max().item() for n, p in two["params"].items())
    assert worst <= 1e-5, worst
