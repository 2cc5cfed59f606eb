"""`dvc exp show` as a researcher reads it: each study's DVC stages take their params from the
study's own resolved file (``config@<preset>`` writes ``<results>/params.yaml`` with
``embtune validate-params``), so the demo's columns hold the demo's values, never params.yaml's
paper-scale ones beside the demo's metrics. Run with the real dvc on dvc.yaml as shipped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embtune.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]
DVC = str(Path(sys.executable).parent / "dvc")


def _stages() -> dict[str, dict]:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def test_every_stage_after_config_reads_its_params_from_the_study_file() -> None:
    for name, stage in _stages().items():
        params = stage["do"].get("params", [])
        if name == "config":
            assert not params and stage["do"]["outs"] == ["${item.results}/params.yaml"]
            continue
        assert params and all(isinstance(p, dict) and list(p) == ["${item.results}/params.yaml"] for p in params), name


@pytest.mark.slow
def test_dvc_exp_show_gives_the_demo_its_own_params(tmp_path: Path) -> None:
    for name in ("dvc.yaml", "params.yaml", "presets", "workflow/schemas"):
        src, dst = REPO / name, tmp_path / name
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy(src, dst)
    env = {"cwd": tmp_path, "capture_output": True, "text": True, "timeout": 120}
    for cmd in (["git", "init", "-q"], [DVC, "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "study"]):
        assert subprocess.run(cmd, **env).returncode == 0, cmd
    # what config@demo runs (dvc.yaml's cmd), in-process
    files = [str(tmp_path / "params.yaml"), str(tmp_path / "presets/demo.yaml")]
    assert cli_main(["validate-params", *files, "--out", str(tmp_path / "results/demo/params.yaml")]) == 0
    done = subprocess.run([DVC, "exp", "show", "--json", "--param-deps"], **env)
    assert done.returncode == 0, done.stderr[-2000:]
    params = json.loads(done.stdout)[0]["data"]["params"]
    assert "params.yaml" not in params                      # no stage reads params.yaml's own values
    assert "error" in params["results/params.yaml"]         # the paper study has not run here
    demo = params["results/demo/params.yaml"]["data"]
    preset = yaml.safe_load((REPO / "presets/demo.yaml").read_text())
    paper = yaml.safe_load((REPO / "params.yaml").read_text())
    assert [m["name"] for m in demo["models"]] == [m["name"] for m in preset["models"]]
    assert [m["name"] for m in demo["models"]] != [m["name"] for m in paper["models"]]
    assert demo["data"]["bge"]["val_pairs"] == preset["data"]["bge"]["val_pairs"]
    assert set(demo) == {"seed", "paths", "tokenizer", "data", "evaluate", "train", "models", "query_tuning",
                         "analyze"}
