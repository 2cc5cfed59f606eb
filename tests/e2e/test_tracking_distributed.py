"""Two gloo processes training one run leave exactly ONE tracker record: accelerate
logs on the main process only, so each step appears once, not once per process. Slow: starts two
interpreters."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from helpers_train import make_base_model, make_shards, one_thread, run_json
from test_train_distributed import _launch

from embtune.train import tracking

_one_thread = pytest.fixture(autouse=True)(one_thread)

WORKER = """
import json, sys, torch
torch.set_num_threads(1)
from embtune.runconfig import RunConfig
from embtune.train.loop import train_run
res = train_run(RunConfig.from_dict(json.loads(sys.argv[1])), __import__('pathlib').Path(sys.argv[2]), log_with="dvclive")
import torch.distributed as dist
if dist.get_rank() == 0:
    open(sys.argv[3], "w").write(json.dumps({"steps": res.metrics["steps"], "world": res.metrics["world_size"]}))
"""


@pytest.mark.slow
def test_two_gloo_processes_leave_one_tracker_record(tmp_path) -> None:
    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 48, 8, 190, 12)
    run = run_json(base, data, "full", budget=4e8, min_steps=2)
    _launch(WORKER, [json.dumps(run), str(tmp_path / "ck"), str(tmp_path / "out.json")], tmp_path)
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["world"] == 2
    live = tmp_path / "ck" / tracking.DIR / tracking.LIVE
    with (live / "plots/metrics/train/loss.tsv").open() as fh:
        steps = [int(r["step"]) for r in csv.DictReader(fh, delimiter="\t")]
    assert steps == list(range(1, out["steps"] + 1))        # once each, not twice
    assert sorted(p.name for p in live.parent.iterdir()) == ["dvc.yaml", "dvclive"]
    assert len(list(tmp_path.rglob("params.yaml"))) == 1    # one run record in the whole tree
    assert yaml.safe_load((live / "params.yaml").read_text())["run_id"] == run["run_id"]
