"""``make gpu-check``: what only a CUDA GPU can check, in four steps.

1. ``pytest -m gpu``: the CUDA and bf16 code paths (tests/unit/train/test_gpu.py).
2. ``bench_train.py``, Pythia-410M-shaped (d 1024, 24 layers, 16 heads), batch 1024, context 75,
   bf16, GradCache chunk 512 (params.yaml's train.gradcache_chunk), against sentence-transformers'
   CachedMNRL on the same config: tokens/s, MFU (target: >= 40 %) and the hardware FLOP/s to calibrate
   profiles/default/throughput.yaml.
3. ``bench_memory.py``: ``torch.cuda.max_memory_allocated`` against the peak-memory estimate
   (``embtune.models.memory``; fails if an estimate is > 5 % low) and the MFU per model size,
   written as ``benchmarks/mfu_curve.yaml`` in profiles/default/throughput.yaml's format.
4. ``bench_pnd.py --paper-eval``: one encoder's whole paper-2 evaluation at paper size,
   multilingual-e5-small-shaped (target: <= 3 min on one H100; paper 2: 1.2-1.3 h on an A100).

Targets are printed, not asserted. Without a usable CUDA device it says why and exits 0; it exits 1
if a step fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = [
    ("CUDA/bf16 tests", [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-rs", str(HERE.parent / "tests")]),
    ("training benchmark (Pythia-410M shape, batch 1024, bf16)",
     [sys.executable, str(HERE / "bench_train.py"), "--hidden", "1024", "--layers", "24", "--heads", "16",
      "--batch", "1024", "--chunk", "512", "--ctx", "75", "--steps", "3", "--repeats", "1",
      "--modes", "ours", "st", "--skip-memory", "--threads", "8"]),
    ("peak memory vs estimate and MFU per model size (Pythia 70m-1b shapes, full and LoRA)",
     [sys.executable, str(HERE / "bench_memory.py"), "--write-curve", str(HERE / "mfu_curve.yaml"),
      "--write-measured", str(HERE / "memory_measured.json")]),
    ("evaluation benchmark (paper 2 at paper size, e5-small shape)",
     [sys.executable, str(HERE / "bench_pnd.py"), "--paper-eval", "--threads", "8"]),
]


def no_cuda_reason() -> str | None:
    """Why this machine cannot run the GPU checks, or None if it can."""
    import torch

    if torch.version.cuda is None:
        seen = " (nvidia-smi is present: the GPU is there, this torch cannot use it)" if shutil.which("nvidia-smi") else ""
        return (f"torch {torch.__version__} is a CPU-only build{seen}. `make install` pins the CPU wheel "
                f"(constraints.txt); on a GPU machine install a CUDA build into the venv, e.g.\n"
                f"  .venv/bin/pip install --force-reinstall torch=={torch.__version__.split('+')[0]} "
                f"--index-url https://download.pytorch.org/whl/cu126\n"
                f"(pick the CUDA version your driver supports), then run `make gpu-check` again.")
    if not torch.cuda.is_available():
        return (f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device: check the "
                f"driver (nvidia-smi), CUDA_VISIBLE_DEVICES, or the job's GPU request.")
    return None


def main() -> int:
    reason = no_cuda_reason()
    if reason:
        print(f"gpu-check: nothing to check on this machine.\n{reason}")
        return 0
    import torch

    name = torch.cuda.get_device_name()
    print(f"gpu-check on {name} (torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"bf16 {'supported' if torch.cuda.is_bf16_supported() else 'NOT supported: timings meaningless'})")
    failed = []
    for title, cmd in STEPS:
        print(f"\n== {title}\n$ {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        rc = subprocess.run(cmd, cwd=HERE.parent).returncode
        print(f"== {title}: exit {rc}, {time.perf_counter() - start:.0f} s", flush=True)
        if rc:
            failed.append(title)
    print("\ngpu-check: " + (f"FAILED: {', '.join(failed)}" if failed else "all steps ran")
          + " (targets: MFU >= 40 % at batch 1024 bf16; paper-2 evaluation <= 3 min on one H100)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
