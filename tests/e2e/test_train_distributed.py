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
from helpers_train import make_base_model, make_shards, one_thread, run_config, run_json

from embtune.train import loop
from embtune.train.pairs import read_pairs, train_shards

_one_thread = pytest.fixture(autouse=True)(one_thread)

WORKER = """
import json, sys, torch
torch.set_num_threads(1)
from embtune.runconfig import RunConfig
from embtune.train.loop import train_run
run, ckpt, out = RunConfig.from_dict(json.loads(sys.argv[1])), sys.argv[2], sys.argv[3]
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
@pytest.mark.parametrize("method", ["full"])
def test_two_gloo_processes_match_one(tmp_path, method) -> None:
    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 48, 8, 190, 12)
    run = run_config(base, data, method, budget=4e8, min_steps=2)
    single = loop.train_run(run, tmp_path / "ck1")
    assert single.status == "ok"
    _launch(WORKER, [json.dumps(run.to_dict()), str(tmp_path / "ck2"), str(tmp_path / "two.pt")], tmp_path)
    two = torch.load(tmp_path / "two.pt", weights_only=True)
    assert two["metrics"]["world_size"] == 2 and two["metrics"]["steps"] == single.metrics["steps"]
    assert two["metrics"]["flops"] == single.metrics["flops"]
    for a, b in zip(single.curve, two["curve"]):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
    ref = dict(single.model.named_parameters())
    # Key biases get an exactly-zero gradient (softmax is shift invariant), so their AdamW updates
    # are normalised float noise, bounded by lr per step; everything else must agree closely.
    for n, p in two["params"].items():
        diff = (ref[n].detach() - p).abs().max().item()
        bound = run.peak_lr * len(single.curve) if n.endswith("query_key_value.bias") else 1e-5
        assert diff <= bound, (n, diff)


GRAD_WORKER = """
import json, sys, torch
torch.set_num_threads(1)
from accelerate import Accelerator
from transformers import AutoModel
from embtune.models.methods import apply_method
from embtune.train.gradcache import gradcache_step
from embtune.train.loop import contrastive_loss_fn, embed, global_gather, make_chunks
from embtune.train.pairs import read_pairs, train_shards
runs, out = json.loads(sys.argv[1]), sys.argv[2]
acc = Accelerator(cpu=True)
r, w = acc.process_index, acc.num_processes
result = {}
for run in runs:
    torch.manual_seed(0)
    model = apply_method(AutoModel.from_pretrained(run["base_model_dir"]), run)
    wrapped = acc.prepare(model)
    pairs = read_pairs(train_shards(run["data"]["train_dir"]), 12)
    local = list(range(16))[r * 16 // w:(r + 1) * 16 // w]
    gradcache_step(lambda c: embed(wrapped, c, "mean"), make_chunks(pairs, local, 3, 1),
                   contrastive_loss_fn(0.05, global_gather(r, w)), backward=acc.backward,
                   no_sync=lambda: acc.no_sync(wrapped), grad_scale=float(w))
    result[run["method"]] = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    acc.free_memory()
if r == 0:
    torch.save(result, out)
"""


def _launch(script: str, args: list[str], tmp_path: Path) -> None:
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
               "RANK": str(rank), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
               "ACCELERATE_USE_CPU": "true", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, cwd=tmp_path))
    logs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs[0][-3000:] + logs[1][-3000:]


@pytest.mark.slow
def test_two_process_gradients_equal_full_batch(tmp_path) -> None:
    """For all four methods: the all-reduced GradCache gradient of 2×8 local pairs equals the
    full-batch gradient of the 16 pairs in one process."""
    from transformers import AutoModel

    from embtune.models.methods import apply_method

    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 16, 4, 190, 12)
    runs = [run_json(base, data, m) for m in ("full", "freeze", "bias", "lora")]
    _launch(GRAD_WORKER, [json.dumps(runs), str(tmp_path / "grads.pt")], tmp_path)
    two = torch.load(tmp_path / "grads.pt", weights_only=True)
    pairs = read_pairs(train_shards(data), 12)
    chunks = loop.make_chunks(pairs, range(16), 16, 1)
    for run in runs:
        torch.manual_seed(0)
        model = apply_method(AutoModel.from_pretrained(str(base)), run)
        loss = loop.contrastive_loss_fn(0.05)(torch.cat([loop.embed(model, c, "mean") for c in chunks]))
        loss.backward()
        ref = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
        got = two[run["method"]]
        assert ref.keys() == got.keys()
        for n in ref:
            assert (ref[n] - got[n]).abs().max().item() <= 1e-5, (run["method"], n)
