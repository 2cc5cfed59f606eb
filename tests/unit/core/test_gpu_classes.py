"""GPU classes (profiles/default/gpu_classes.yaml) and the class each training run asks for
(embtune.plan.gpus): smallest class that fits, the GradCache chunk that fits it, and a run
that fits none refused at plan time by `embtune plan` and by the workflow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_train import planned_run

from embtune.models import memory
from embtune.plan import gpus
from embtune.runconfig import RunConfig

REPO = Path(__file__).resolve().parents[3]
GIB = 2**30


def _run(name: str, d: int, layers: int, method: str = "full", chunk: int = 128, **settings) -> RunConfig:
    spec = {"name": name, "source": "hub", "hidden_size": d, "num_layers": layers}
    return planned_run(spec, method, train={"gradcache_chunk": chunk, "gradient_checkpointing": True}, **settings)


def _classes(tmp_path: Path, body: str) -> gpus.Classes:
    f = tmp_path / "classes.yaml"
    f.write_text(body)
    return gpus.read_classes(f)


def test_the_profile_declares_usable_classes() -> None:
    classes = gpus.read_classes(environ={})
    assert [c.memory_gib for c in classes.classes] == sorted(c.memory_gib for c in classes.classes)
    assert all(c.resources() for c in classes.classes)
    assert 0 < classes.usable_fraction <= 1


def test_smallest_fitting_class_and_the_chunk_that_fits_it(tmp_path: Path) -> None:
    classes = _classes(tmp_path, "usable_fraction: 1.0\nclasses:\n"
                       "  - {name: big, memory_gib: 80, gpu_model: h100}\n"
                       "  - {name: small, memory_gib: 24, gpu_model: l4}\n")
    assert [c.name for c in classes.classes] == ["small", "big"]
    small = _run("pythia-70m", 512, 6)
    fit = gpus.fit(small, classes, vocab=50304)
    assert fit.gpu_class.name == "small" and fit.chunk == 128
    assert fit.gpu_class.resources() == {"gpu_model": "l4"}
    # Pythia-2.8B full: 16 + 2 bytes per parameter (~47.6 GB) do not fit 24 GiB, do fit 80 GiB
    big = _run("pythia-2.8b", 2560, 32)
    fit = gpus.fit(big, classes, vocab=50304)
    assert fit.gpu_class.name == "big" and fit.chunk == 128
    # LoRA on it, where one chunk's activations matter: a 12 GiB largest class still takes the run,
    # at the largest chunk that fits it (chosen from the estimate)
    lora = _run("pythia-2.8b", 2560, 32, "lora", lora_rank=8)
    assert memory.estimate(lora).peak > 12 * GIB
    tight = _classes(tmp_path, "usable_fraction: 1.0\nclasses:\n  - {name: mid, memory_gib: 12}\n")
    fit = gpus.fit(lora, tight, vocab=50304)
    assert fit.gpu_class.name == "mid" and 1 <= fit.chunk < 128
    assert fit.estimate.peak <= 12 * GIB < memory.estimate(lora, chunk=fit.chunk + 1).peak


def test_a_run_that_fits_no_class_is_refused_with_its_estimate_and_the_largest_class(tmp_path: Path) -> None:
    classes = _classes(tmp_path, "usable_fraction: 0.5\nclasses:\n"
                       "  - {name: t4, memory_gib: 16, gpu_model: t4}\n  - {name: a10, memory_gib: 24, gpu_model: a10}\n")
    runs = [_run("pythia-70m", 512, 6), _run("pythia-2.8b", 2560, 32)]
    with pytest.raises(gpus.GpuClassError) as err:
        gpus.check(runs, {}, classes)
    msg = str(err.value)
    assert "run pythia-2.8b__full" in msg and "a10 (24 GiB x usable_fraction 0.5 = 12.0 GiB" in msg
    est = memory.estimate(runs[1], chunk=1).peak / GIB
    assert f"{est:.1f} GiB" in msg


@pytest.mark.parametrize(("body", "match"), [
    ("classes: []\n", "non-empty list"),
    ("classes:\n  - {name: a, memory_gib: 0}\n", "memory_gib"),
    ("classes:\n  - {name: a, memory_gib: 8, gres: x}\n", "unknown key 'gres'"),
    ("classes:\n  - {name: a, memory_gib: 8, gpu_model: a}\n  - {name: b, memory_gib: 9, constraint: b}\n",
     "same way"),
    ("usable_fraction: 2\nclasses:\n  - {name: a, memory_gib: 8}\n", "usable_fraction"),
])
def test_bad_class_files_name_the_problem(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(gpus.GpuClassError, match=match):
        _classes(tmp_path, body)


def _small_classes(tmp_path: Path) -> dict:
    f = tmp_path / "tiny_classes.yaml"
    f.write_text("classes:\n  - {name: tiny-card, memory_gib: 4, gpu_model: fake}\n")
    return {**os.environ, "EMBTUNE_GPU_CLASSES": str(f), "HF_HUB_OFFLINE": "1",
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


def test_embtune_plan_refuses_the_paper_grid_on_a_4_gib_card(tmp_path: Path) -> None:
    proc = subprocess.run([str(Path(sys.executable).parent / "embtune"), "plan", "params.yaml"], cwd=REPO,
                          env=_small_classes(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert "embtune plan: run pythia-" in proc.stderr and "largest GPU class tiny-card (4 GiB" in proc.stderr
    assert "more runs" in proc.stderr


@pytest.mark.slow
def test_the_workflow_refuses_it_too(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=REPO,
                          env=_small_classes(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "largest GPU class tiny-card" in proc.stdout + proc.stderr


def test_oom_retries_halve_the_chunk_then_take_the_next_class(tmp_path: Path) -> None:
    """Attempt 1 = the fit; then, alternately, half the chunk and the next larger class; at the
    largest class every further attempt halves (hand-written ladder)."""
    classes = _classes(tmp_path, "classes:\n  - {name: s, memory_gib: 40, gpu_model: s}\n"
                                 "  - {name: m, memory_gib: 80, gpu_model: m}\n")
    small, medium = classes.classes
    fit = gpus.Fit("r", small, 64, None)
    ladder = [(c.name, k) for c, k in (gpus.escalate(fit, classes, a) for a in range(1, 8))]
    assert ladder == [("s", 64), ("s", 32), ("m", 32), ("m", 16), ("m", 8), ("m", 4), ("m", 2)]
    assert gpus.escalate(gpus.Fit("r", medium, 1, None), classes, 5) == (medium, 1)
    assert gpus.escalate(gpus.Fit("r", None, None, None), classes, 3) == (None, None)
