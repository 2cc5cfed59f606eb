"""``make gpu-check``: what only a CUDA GPU can check, in six steps (the first is the headline).

1. ``bench_mfu.py``: model-FLOP and hardware-FLOP MFU (``embtune.train.mfu``) of the train stage's
   step for the Pythia 70M / 410M / 1B shapes at paper 1's settings (batch 1024, context 75, bf16,
   GradCache chunk 512, BGE-like lengths), against sentence-transformers' CachedMNRL in the same
   run; writes ``benchmarks/mfu_measured.json`` (device name and date). Targets: >= 35 %
   model-FLOP MFU for the 410M shape, >= 1.3x CachedMNRL.
2. ``update_throughput.py``: feeds that JSON's hardware-FLOP MFU per size into
   profiles/default/throughput.yaml (``mfu_curve``, ``peak_flops_per_gpu``): review and commit it.
3. ``pytest -m gpu``: the CUDA and bf16 code paths (tests/unit/train/test_gpu.py).
4. ``bench_memory.py``: ``torch.cuda.max_memory_allocated`` against the peak-memory estimate
   (``embtune.models.memory``; fails if an estimate is > 5 % low), per model size.
5. ``bench_pnd.py --paper-eval``: one encoder's whole paper-2 evaluation at paper size,
   multilingual-e5-small-shaped (target: <= 3 min on one H100; paper 2: 1.2-1.3 h on an A100).
6. ``bench_mfu.py --compile inductor`` on the 410M shape: whether ``train.compile: inductor``
   beats step 1's eager number (``benchmarks/mfu_compiled_measured.json``); keep it off unless it does.

Targets are printed, not asserted. Without a usable CUDA device it says why and exits 0; it exits 1
if a step fails. ``--only N [N ...]`` runs some steps (e.g. ``--only 1 2`` on a short GPU lease).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = [
    ("training MFU, Pythia 70M/410M/1B shapes at paper 1's settings, vs CachedMNRL",
     [sys.executable, str(HERE / "bench_mfu.py"), "--json-out", str(HERE / "mfu_measured.json")]),
    ("measured MFU into the plan's throughput model (profiles/default/throughput.yaml)",
     [sys.executable, str(HERE / "update_throughput.py"), str(HERE / "mfu_measured.json")]),
    ("CUDA/bf16 tests", [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-rs", str(HERE.parent / "tests")]),
    ("peak memory vs estimate per model size (Pythia 70m-1b shapes, full and LoRA)",
     [sys.executable, str(HERE / "bench_memory.py"), "--write-curve", str(HERE / "mfu_curve.yaml"),
      "--write-measured", str(HERE / "memory_measured.json")]),
    ("evaluation benchmark (paper 2 at paper size, e5-small shape)",
     [sys.executable, str(HERE / "bench_pnd.py"), "--paper-eval", "--threads", "8"]),
    ("train.compile: inductor vs eager, Pythia-410M shape (compare with step 1's 410m line)",
     [sys.executable, str(HERE / "bench_mfu.py"), "--shapes", "410m", "--compile", "inductor", "--no-st",
      "--json-out", str(HERE / "mfu_compiled_measured.json")]),
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


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="+", type=int, choices=range(1, len(STEPS) + 1), help="steps to run (1-based)")
    args = ap.parse_args(argv)
    reason = no_cuda_reason()
    if reason:
        print(f"gpu-check: nothing to check on this machine.\n{reason}")
        return 0
    import torch

    name = torch.cuda.get_device_name()
    print(f"gpu-check on {name} (torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"bf16 {'supported' if torch.cuda.is_bf16_supported() else 'NOT supported: timings meaningless'})")
    failed = []
    for i, (title, cmd) in enumerate(STEPS, 1):
        if args.only and i not in args.only:
            continue
        print(f"\n== {title}\n$ {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        rc = subprocess.run(cmd, cwd=HERE.parent).returncode
        print(f"== {title}: exit {rc}, {time.perf_counter() - start:.0f} s", flush=True)
        if rc:
            failed.append(title)
    print("\ngpu-check: " + (f"FAILED: {', '.join(failed)}" if failed else "all steps ran")
          + " (targets: model-FLOP MFU >= 35 % for the 410M shape and >= 1.3x CachedMNRL at batch 1024 bf16; "
            "paper-2 evaluation <= 3 min on one H100)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
