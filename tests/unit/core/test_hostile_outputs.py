"""An output replaces only what its stage wrote, side files included; the previous result stays
until the new one is complete; one writer per output (embtune.core.outputs, embtune.core.locks).

Every stage is called in-process through ``embtune.cli`` with its output pointed at something it
did not write: a folder of a user's files, another stage's output, a user's file. Each must exit 2
with one line naming the path, before any work, leaving every file under the test's folder
byte-identical (inputs, the foreign things, and no new file anywhere).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
from pathlib import Path

import pytest
from helpers_cli import one_error as one_line  # noqa: E402

from embtune.cli import main as cli_main
from embtune.core.locks import hold, lock_path_beside
from embtune.core.outputs import mark, owner

_SPEC = importlib.util.spec_from_file_location(
    "output_cases", Path(__file__).resolve().parents[2] / "contracts" / "test_output_not_input.py")
_CASES_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CASES_MODULE)
CASES = _CASES_MODULE.CASES                 # stage -> (argv template with {OUT}, inputs)
REFUSED = "expected a missing path or this stage's own earlier output"


def tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too) with its content hash."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _argv(tmp_path: Path, stage: str, out: Path) -> list[str]:
    template, names = CASES[stage]
    paths = _CASES_MODULE._make_inputs(tmp_path, names)
    fill = {k: str(v) for k, v in paths.items()} | {"report_out": str(tmp_path / "report.md")}
    return [stage] + [a.format(OUT=str(out), **fill) for a in template]


def _foreign_folder(root: Path, stage: str) -> Path:
    notes = root / "mynotes"
    (notes / "chapter").mkdir(parents=True)
    (notes / "todo.txt").write_text("my own notes\n")
    (notes / "chapter" / "draft.md").write_text("# a draft\n")
    return notes


def _other_stage_output(root: Path, stage: str) -> Path:
    writer = "collect-runs" if stage != "collect-runs" else "fit-scaling"
    out = root / "results" / "runs.parquet"
    out.parent.mkdir(parents=True)
    out.write_bytes(f"PAR1 {writer}'s table".encode())
    mark(out, writer)
    return out


def _users_file(root: Path, stage: str) -> Path:
    out = root / "thesis.json"
    out.write_text('{"years": "of work"}\n')
    return out


# evaluate-pnd writes three files INTO --out (a query run's folder): its outputs are those files
TARGETS = {"folder": _foreign_folder, "other-stage": _other_stage_output, "users-file": _users_file}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("stage", sorted(set(CASES) - {"evaluate-pnd"}))
def test_an_output_never_replaces_what_the_stage_did_not_write(tmp_path, capsys, stage, target):
    out = TARGETS[target](tmp_path, stage)
    argv = _argv(tmp_path, stage, out)
    before = tree(tmp_path)
    line = one_line(cli_main(argv), capsys.readouterr().err, stage)
    # evaluate-mteb --out runs.parquet: its own side file would be the same path, refused first
    assert str(out) in line and (REFUSED in line or "expected every output of one call apart" in line), line
    assert tree(tmp_path) == before


def test_evaluate_pnd_refuses_a_users_file_where_it_writes(tmp_path, capsys):
    qrun = tmp_path / "qrun"
    qrun.mkdir()
    (qrun / "pnd.json").write_text('{"mine": 1}\n')
    argv = _argv(tmp_path, "evaluate-pnd", qrun)
    before = tree(tmp_path)
    line = one_line(cli_main(argv), capsys.readouterr().err, "evaluate-pnd")
    assert f"--out (pnd.json) {qrun / 'pnd.json'}" in line and REFUSED in line
    assert tree(tmp_path) == before


@pytest.mark.parametrize("stage,side,label", [
    ("evaluate-mteb", "runs.parquet", "--out (.parquet)"),          # mteb.parquet beside --out runs.json
    ("evaluate-mteb", "mteb_results", "--out (mteb_results)"),
    ("prepare-xnli", "manifest.json", "--out (manifest.json)"),     # prepare-xnli's manifest beside --out
    ("collect-runs", "runs.manifest.json", "--out (manifest)"),
])
def test_side_files_are_outputs_checked_the_same_way(tmp_path, capsys, stage, side, label):
    folder = tmp_path / "analysis"
    folder.mkdir()
    neighbour = folder / side
    if side == "mteb_results":
        neighbour.mkdir()
        (neighbour / "keep.txt").write_text("someone else's\n")
    else:
        neighbour.write_text("split-msmarco's or collect-runs' file\n")
        mark(neighbour, "split-msmarco")
    argv = _argv(tmp_path, stage, folder / ("runs.json" if stage != "prepare-xnli" else "xnli.parquet"))
    if stage == "collect-runs":
        argv = _argv(tmp_path, stage, folder / "runs.parquet")
    before = tree(tmp_path)
    line = one_line(cli_main(argv), capsys.readouterr().err, stage)
    assert f"{label} {neighbour}" in line and REFUSED in line, line
    assert tree(tmp_path) == before


@pytest.fixture()
def batch(tmp_path) -> Path:
    """A batch job's folder for link-outputs: the quickest stage that writes (no heavy imports)."""
    src = tmp_path / "batch"
    (src / "trained").mkdir(parents=True)
    (src / "trained" / "weights.bin").write_bytes(b"new weights")
    (src / "metrics.json").write_text('{"loss": 1.0}\n')
    return src


def _link(src: Path, out: Path, *extra: str) -> list[str]:
    return ["link-outputs", "--src", str(src), "--out", str(out), *extra]


def test_own_earlier_output_is_replaced_and_force_overrides(tmp_path, capsys, batch):
    out = tmp_path / "run" / "metrics.json"
    assert cli_main(_link(batch, out)) == 0
    assert owner(out) == "link-outputs"
    assert cli_main(_link(batch, out)) == 0 and out.read_bytes() == b'{"loss": 1.0}\n'   # its own: replaced
    other = tmp_path / "other" / "metrics.json"
    other.parent.mkdir()
    other.write_text("{}\n")
    mark(other, "recipe")
    capsys.readouterr()
    line = one_line(cli_main(_link(batch, other)), capsys.readouterr().err, "link-outputs")
    assert "holds the output of stage 'recipe'" in line and other.read_text() == "{}\n"
    assert cli_main(_link(batch, other, "--force")) == 0                       # a person decides
    assert other.read_bytes() == b'{"loss": 1.0}\n' and owner(other) == "link-outputs"


def test_a_folder_of_related_outputs_and_an_empty_folder_are_replaceable(tmp_path, batch):
    """A run's trained/ written by train may be replaced by link-outputs (the batch form of the
    same outputs); an empty folder holds nothing to lose."""
    model = tmp_path / "run" / "trained"
    model.mkdir(parents=True)
    (model / "old.bin").write_bytes(b"old")
    mark(model, "train")
    (tmp_path / "run2" / "trained").mkdir(parents=True)
    assert cli_main(_link(batch, model)) == 0 and (model / "weights.bin").is_file()
    assert cli_main(_link(batch, tmp_path / "run2" / "trained")) == 0


def test_a_second_writer_is_refused_naming_the_holder(tmp_path, capsys, batch):
    out = tmp_path / "run" / "metrics.json"
    with hold(lock_path_beside(out), "test writer", out):
        line = one_line(cli_main(_link(batch, out)), capsys.readouterr().err, "link-outputs")
    assert f"is locked by pid {os.getpid()} on {socket.gethostname()}" in line
    assert not out.exists()
    assert cli_main(_link(batch, out)) == 0                   # released: the next writer goes on
    assert not lock_path_beside(out).exists()


def test_a_stale_lock_of_a_dead_process_is_taken_over_and_logged(tmp_path, capsys, batch):
    out = tmp_path / "run" / "metrics.json"
    dead = 2**22 + 12345                                       # above pid_max on common kernels
    while True:
        try:
            os.kill(dead, 0)
            dead += 1
        except ProcessLookupError:
            break
    out.parent.mkdir()
    lock_path_beside(out).write_text(f"pid {dead} on {socket.gethostname()}\n")
    assert cli_main(_link(batch, out)) == 0
    err = capsys.readouterr().err
    assert f"taking over the lock left by pid {dead}" in err and out.is_file()


def test_evaluate_mteb_keeps_the_previous_result_on_bad_input(tmp_path, capsys):
    """A bad input stops the stage before the previous mteb.json (its commit marker) is touched."""
    run = tmp_path / "run"
    run.mkdir()
    previous = {"mteb.json": b'{"average": 0.5}\n', "mteb.parquet": b"PAR1 old"}
    for name, data in previous.items():
        (run / name).write_bytes(data)
        mark(run / name, "evaluate-mteb")
    (tmp_path / "mteb").mkdir()
    argv = ["evaluate-mteb", "--model-dir", str(run / "trained"), "--tasks", "STS15", "--data-dir",
            str(tmp_path / "mteb"), "--out", str(run / "mteb.json")]
    before = tree(tmp_path)
    line = one_line(cli_main(argv), capsys.readouterr().err, "evaluate-mteb")
    assert "model" in line
    assert tree(tmp_path) == before


def test_two_batch_members_with_one_stage_folder_are_refused(tmp_path, capsys):
    for d in ("prev", "trk", "ck1", "ck2"):
        (tmp_path / "in" / d).mkdir(parents=True)
    stage = tmp_path / "batch" / "r"
    members = [{"run": {"run_id": f"r{i}"}, "stage": str(stage), "checkpoint": str(tmp_path / "in" / f"ck{i}"),
                "previous": str(tmp_path / "in" / "prev"), "previous_tracking": str(tmp_path / "in" / "trk")}
               for i in (1, 2)]
    before = tree(tmp_path)
    line = one_line(cli_main(["train-batch", "--batch-json", json.dumps(members), "--code-version", "v"]),
                    capsys.readouterr().err, "train-batch")
    assert f"--batch-json[1].stage {stage}: the same as or nested with --batch-json[0].stage" in line
    assert tree(tmp_path) == before


def test_train_refuses_a_users_folder_as_its_checkpoint_dir(tmp_path, capsys):
    """The checkpoint folder is deleted when the run ends: a user's folder there would go with it."""
    notes = _foreign_folder(tmp_path, "train")
    run = {"run_id": "r", "base_model_dir": str(tmp_path / "base"), "data": {"train_dir": str(tmp_path / "d")}}
    before = tree(tmp_path)
    line = one_line(cli_main(["train", "--run-config-json", json.dumps(run), "--out-dir", str(tmp_path / "run"),
                              "--checkpoint-dir", str(notes)]), capsys.readouterr().err, "train")
    assert f"--checkpoint-dir {notes}: is a folder this stage did not write" in line and REFUSED in line
    assert tree(tmp_path) == before


def test_a_killed_runs_checkpoint_is_still_trains_own(tmp_path):
    """A checkpoint left by a killed run (no marker: written before the end) is recognised by
    what it holds."""
    from embtune.core.outputs import RESUMABLE_FILES, why_not_replaceable

    ckpt = tmp_path / "ckpt"
    (ckpt / "tracking").mkdir(parents=True)
    (ckpt / "state.json").write_text("{}")
    (ckpt / "tensors-00010-ab12.safetensors").write_bytes(b"x")
    (ckpt / ".embtune.lock").write_text("pid 1 on h\n")
    assert why_not_replaceable(ckpt, "train", RESUMABLE_FILES) is None
    (ckpt / "thesis.tex").write_text("mine")
    assert "thesis.tex" in why_not_replaceable(ckpt, "train", RESUMABLE_FILES)
