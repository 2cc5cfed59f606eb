"""Feed a measured bench_mfu.py JSON into the plan's throughput model.

    .venv/bin/python benchmarks/update_throughput.py benchmarks/mfu_measured.json
        [--throughput profiles/default/throughput.yaml] [--calibrate 410m]

Rewrites, in place and atomically, ``peak_flops_per_gpu`` (the measured device's dense bf16 peak)
and ``mfu_curve`` (one [non-embedding parameters, hardware-FLOP MFU] point per measured shape:
``embtune.plan.study_cost`` prices *executed* FLOPs, GradCache's second forward included, so the curve
is the hardware-FLOP MFU, not the model-FLOP one) and leaves every other line, comments included,
as it is. ``--calibrate SHAPE`` also sets ``hardware_flops_per_gpu_second`` (the single figure
SLURM time requests use) to that shape's measured hardware FLOP/s; without it the figure stays, as
the file's comment explains why it is kept on the safe side. The result is read back with
``embtune.plan.study_cost.mfu_curve`` before it replaces the file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MARK = "# mfu_curve and peak_flops_per_gpu below: benchmarks/update_throughput.py"


def measured_points(data: dict[str, Any]) -> list[tuple[float, float]]:
    points = sorted((float(r["n_total"]), round(float(r["mfu_hardware"]), 4))
                    for r in data["shapes"].values() if r.get("mfu_hardware"))
    if not points:
        raise SystemExit("update_throughput: the JSON has no measured hardware-FLOP MFU (a run without a GPU "
                         "or with no peak on record cannot feed the plan)")
    return points


def rewrite(text: str, data: dict[str, Any], source: str, calibrate: str | None = None) -> str:
    """``text`` (throughput.yaml) with the measured peak and curve (and optionally the calibration)."""
    points = measured_points(data)
    peak = float(data["peak_flops_per_gpu"])
    lines = [line for line in text.splitlines() if not line.startswith(MARK)]
    out: list[str] = []
    skipping = False
    for line in lines:
        if skipping and line.startswith("  - ["):
            continue
        skipping = False
        if line.startswith("peak_flops_per_gpu:"):
            out.append(f"{MARK} from {source} ({data['device']}, {data['date']})")
            out.append(f"peak_flops_per_gpu: {peak:.4g}      # {data['device']} dense bf16")
        elif line.startswith("mfu_curve:"):
            out.append("mfu_curve:                        # [non-embedding parameters, hardware-FLOP MFU]")
            out.extend(f"  - [{n:.0f}, {m}]" for n, m in points)
            skipping = True
        elif calibrate and line.startswith("hardware_flops_per_gpu_second:"):
            r = data["shapes"][calibrate]
            out.append(f"hardware_flops_per_gpu_second: {r['mfu_hardware'] * peak:.3e}   "
                       f"# pythia-{calibrate} shape, {data['device']}, {data['date']}")
        else:
            out.append(line)
    if not any(line.startswith("mfu_curve:") for line in out):
        raise SystemExit("update_throughput: no `mfu_curve:` key in the throughput file")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    from embtune.plan.study_cost import mfu_curve

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("measured")
    ap.add_argument("--throughput", default=str(REPO / "profiles" / "default" / "throughput.yaml"))
    ap.add_argument("--calibrate", default=None, help="shape whose hardware FLOP/s becomes the single figure")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.measured).read_text(encoding="utf-8"))
    target = Path(args.throughput)
    text = rewrite(target.read_text(encoding="utf-8"), data, Path(args.measured).name, args.calibrate)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    peak, curve, _ = mfu_curve(tmp)                     # refuses a curve the plan could not read
    tmp.replace(target)
    print(f"update_throughput: {target}: peak {peak:.4g} FLOP/s, mfu_curve {[list(p) for p in curve]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
