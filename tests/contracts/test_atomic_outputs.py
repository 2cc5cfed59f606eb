"""Every stage with a directory output, killed at random points, leaves either its previous
complete output or nothing at the output path, never a mix of old, new and partial files.

Two ways to kill:
* in-process: a trace function raises :class:`Killed` (a ``BaseException``, so no ``except
  Exception`` in the stage swallows it) at a random executed line of the stage, half of the
  draws in the last stretch of the run where the outputs are written;
* out of process: the stage's CLI as a subprocess, SIGKILLed after a random delay, so no
  ``finally`` runs (what a node failure or SLURM's KillWait expiry does).

Each stage has an "old" and a "new" invocation with different outputs; before every kill the
old output is restored, afterwards the output path must hold exactly the old files (byte for
byte), exactly the new ones, or nothing. A final uninterrupted run must then produce the new
output despite the debris earlier kills left behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_config

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"

_one_thread = pytest.fixture(autouse=True)(one_thread)


class Killed(BaseException):
    """Raised inside the stage by the tracer: the stand-in for a kill at that line."""


def traced(fn: Callable[[], object], kill_at: int | None = None) -> int:
    """Run ``fn``, counting executed lines (all Python frames of this thread); raise
    :class:`Killed` at line number ``kill_at``. Returns the number of lines run."""
    count = 0

    def tracer(frame, event, arg):  # noqa: ANN001 - sys.settrace protocol
        nonlocal count
        if event == "line":
            count += 1
            if count == kill_at:
                raise Killed(count)
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def snapshot(path: Path, volatile: tuple[str, ...] = ()) -> dict[str, str] | None:
    """{relative path: sha256} of the visible files under ``path`` (None when it is absent);
    hidden temporaries (``.name.*.tmp``) are how a stage stages its work, not its output. Files
    in ``volatile`` (a manifest with its creation time) count by presence only."""
    if not path.exists():
        return None
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {rel: "present" if rel in volatile else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) for rel in [p.relative_to(path).as_posix()]
            if p.is_file() and not any(s.startswith(".") for s in p.relative_to(path).parts)}


def _describe(got: dict[str, str] | None, old: dict[str, str], new: dict[str, str]) -> str:
    if got is None:
        return "nothing"
    return (f"{len(got)} files: only in output {sorted(set(got) - set(old) - set(new))[:5]}, "
            f"missing vs old {sorted(set(old) - set(got))[:5]}, missing vs new {sorted(set(new) - set(got))[:5]}")


@dataclass
class Stage:
    name: str
    old: Callable[[Path], object]      # writes the previous output at the given path
    new: Callable[[Path], object]      # the run that gets killed
    volatile: tuple[str, ...] = ()     # files whose bytes differ between identical runs
    kills: int = 10


def _check_stage(stage: Stage, tmp: Path) -> None:
    ref_old, ref_new, out = tmp / "ref_old" / "out", tmp / "ref_new" / "out", tmp / "work" / "out"
    stage.old(ref_old)
    traced(lambda: stage.new(ref_new))
    lines = traced(lambda: stage.new(tmp / "warm" / "out"))     # first calls run extra lines
    old, new = snapshot(ref_old, stage.volatile), snapshot(ref_new, stage.volatile)
    assert old and new and old != new, f"{stage.name}: old and new outputs must differ"
    rng = np.random.default_rng(0)
    for seed in range(stage.kills):
        if out.exists():
            shutil.rmtree(out)
        if seed % 3:                                        # two thirds over an old output
            shutil.copytree(ref_old, out)
        late = seed % 2 == 0                                # the writing tail, or anywhere
        kill_at = int(rng.integers(int(lines * 0.85) if late else 1, lines + 1))
        with pytest.raises(Killed):
            traced(lambda: stage.new(out), kill_at)
        got = snapshot(out, stage.volatile)
        assert got is None or got == old or got == new, (
            f"{stage.name}: killed at line {kill_at}/{lines} (seed {seed}) left a mix: {_describe(got, old, new)}")
    stage.new(out)                                          # recovers over the debris
    assert snapshot(out, stage.volatile) == new, f"{stage.name}: a clean run after the kills gave another output"


# --------------------------------------------------------------------------- stages
def _mteb(tasks: list[str]) -> Callable[[Path], object]:
    from embtune.stages import materialise_mteb as mteb_data

    def run(out: Path) -> None:
        assert mteb_data.main(["--tasks", *tasks, "--source", "local", "--local-dir", str(DEMO / "mteb"),
                               "--out", str(out)]) == 0
    return run


def _pack(bge: Path) -> Callable[[Path], object]:
    from embtune.stages import pack_pairs as pairs

    def run(out: Path) -> None:
        assert pairs.main(["--bge-dir", str(bge), "--out", str(out)]) == 0
    return run


def _msmarco(train: int) -> Callable[[Path], object]:
    from embtune.stages import split_msmarco as msmarco

    def run(out: Path) -> None:
        assert msmarco.main(["--file", str(DEMO / "msmarco" / "msmarco-triplets.jsonl.gz"), "--train-size",
                             str(train), "--val-size", "20", "--eval-size", "20", "--hard-negatives", "4",
                             "--out", str(out)]) == 0
    return run


def _arxiv(max_size: int) -> Callable[[Path], object]:
    from embtune.stages import build_arxiv_negatives as arxiv_negatives

    def run(out: Path) -> None:
        assert arxiv_negatives.main(["--snapshot", str(DEMO / "arxiv" / "arxiv-metadata-oai-snapshot.json"),
                                     "--max-category-size", str(max_size), "--seed", "0",
                                     "--out", str(out)]) == 0
    return run


def _qa(source: str, *extra: str) -> Callable[[Path], object]:
    """prepare-pnd squad / hotpotqa on the shipped demo files (paper 2, App. C, D)."""
    from embtune.stages import prepare_pnd

    files = (["squad/train-v2.0.json", "squad/dev-v2.0.json"] if source == "squad"
             else ["hotpotqa/hotpot_train_v1.1.json", "hotpotqa/hotpot_dev_distractor_v1.json"])

    def run(out: Path) -> None:
        assert prepare_pnd.main([source, "--files", *(str(DEMO / f) for f in files), *extra, "--out", str(out)]) == 0
    return run


@pytest.mark.parametrize("stage", [
    Stage("prepare-pnd squad", _qa("squad", "--positive-rule", "span"), _qa("squad")),
    Stage("prepare-pnd hotpotqa", _qa("hotpotqa", "--min-passages", "9"), _qa("hotpotqa")),
], ids=lambda s: s.name)
def test_killed_qa_stage_leaves_old_output_or_nothing(tmp_path, stage) -> None:
    _check_stage(stage, tmp_path)


@pytest.fixture(scope="module")
def train_results(tmp_path_factory):
    """One finished and one skipped tiny training run (the train stage's two kinds of output)."""
    from embtune.train import loop

    root = tmp_path_factory.mktemp("atomic_train")
    base, data = make_base_model(root), make_shards(root / "bge", 32, 6, 190, 12)
    ok_run = run_config(base, data, "bias", budget=4e8, min_steps=2)
    skip_run = run_config(base, data, "bias", budget=1e6)
    ok, skipped = loop.train_run(ok_run, root / "ck1"), loop.train_run(skip_run, root / "ck2")
    assert ok.status == "ok" and skipped.status == "skipped"
    return (ok, ok_run), (skipped, skip_run)


@pytest.mark.parametrize("name", ["materialise-mteb", "pack-pairs", "split-msmarco"])
def test_killed_stage_leaves_old_output_or_nothing(tmp_path, name) -> None:
    if name == "materialise-mteb":
        stage = Stage(name, _mteb(["STS15"]), _mteb(["STS15", "SciFact", "SummEval"]))
    elif name == "pack-pairs":
        a = make_shards(tmp_path / "bge_a", 40, 5, 190, 12, seed=1)
        b = make_shards(tmp_path / "bge_b", 60, 5, 190, 12, seed=2)
        stage = Stage(name, _pack(a), _pack(b))
    else:
        stage = Stage(name, _msmarco(40), _msmarco(60))
    _check_stage(stage, tmp_path)


@pytest.mark.slow   # ~9 s: make test runs it, make test-fast does not
def test_killed_arxiv_negatives_leaves_old_output_or_nothing(tmp_path) -> None:
    _check_stage(Stage("build-arxiv-negatives", _arxiv(60), _arxiv(80)), tmp_path)


def test_killed_train_outputs_leave_old_run_dir_or_nothing(tmp_path, train_results) -> None:
    """The run directory (model/, curve.csv, metrics.json, manifest.json) of the train stage;
    training itself writes only its checkpoint, tested in test_checkpoint.py."""
    from embtune.stages import train as train_stage

    (ok, ok_run), (skipped, skip_run) = train_results
    stage = Stage("train", lambda out: train_stage.write_outputs(out, skipped, skip_run),
                  lambda out: train_stage.write_outputs(out, ok, ok_run), volatile=("manifest.json",), kills=6)
    _check_stage(stage, tmp_path)


@pytest.mark.parametrize("seed", range(3))
def test_sigkilled_materialise_mteb_cli(tmp_path, seed) -> None:
    """SIGKILL (no ``finally``, no cleanup) of the real CLI after a random delay."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "embtune.cli", "materialise-mteb", "--source", "local",
           "--local-dir", str(DEMO / "mteb"), "--tasks"]
    old_tasks, new_tasks = ["STS15"], ["STS15", "SciFact", "SummEval", "Tatoeba"]
    ref_old, ref_new, out = tmp_path / "old", tmp_path / "new", tmp_path / "out"
    subprocess.run([*cmd, *old_tasks, "--out", str(ref_old)], env=env, check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([*cmd, *new_tasks, "--out", str(ref_new)], env=env, check=True, capture_output=True)
    duration = time.perf_counter() - t0
    shutil.copytree(ref_old, out)
    rng = np.random.default_rng(seed)
    # the imports take most of the run: draw the kill over its second half, where files are written
    delay = float(rng.uniform(0.5 * duration, 1.1 * duration))
    proc = subprocess.Popen([*cmd, *new_tasks, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    got, old, new = snapshot(out), snapshot(ref_old), snapshot(ref_new)
    assert got is None or got == old or got == new, f"SIGKILL after {delay:.2f}s left a mix: {_describe(got, old, new)}"


def test_atomic_dir_killed_at_every_line(tmp_path) -> None:
    """Replacing a directory through ``atomic_dir``, killed at each of the last 300 lines in turn
    (the old directory's removal and the renames are there) and at every 25th line before,
    leaves the old tree, the new one or nothing."""
    from embtune.core.io import atomic_dir

    def tree(out: Path, tag: str, n: int) -> None:
        for i in range(n):
            (out / f"sub{i % 2}").mkdir(exist_ok=True)
            (out / f"sub{i % 2}" / f"f{i}.txt").write_text(f"{tag}{i}")

    def old(out: Path) -> None:
        with atomic_dir(out) as tmp:
            tree(tmp, "old", 6)

    def new(out: Path) -> None:
        with atomic_dir(out) as tmp:
            tree(tmp, "new", 4)

    ref_old, ref_new, out = tmp_path / "o", tmp_path / "n", tmp_path / "w"
    old(ref_old)
    new(ref_new)
    lines = traced(lambda: new(tmp_path / "warm"))
    want = [snapshot(ref_old), snapshot(ref_new)]
    for kill_at in [*range(1, lines - 300, 25), *range(max(1, lines - 300), lines + 1)]:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(ref_old, out)
        with pytest.raises(Killed):
            traced(lambda: new(out), kill_at)
        got = snapshot(out)
        assert got is None or got in want, f"killed at line {kill_at}/{lines}: {_describe(got, *want)}"
