"""Model-FLOP and hardware-FLOP MFU of the training step for the Pythia 70M / 410M / 1B shapes at
paper 1's settings, against sentence-transformers' CachedMNRL in the same run (``make gpu-check``).

    .venv/bin/python benchmarks/bench_mfu.py [--shapes 70m 410m 1b] [--json-out benchmarks/mfu_measured.json]
        [--compile none|inductor] [--checkpointing] [--no-st] [--cpu --batch 8 --chunk 4]

Paper 1's settings: batch 1024 pairs, context 75, bf16 autocast, full fine-tuning, GradCache chunk
512 (params.yaml's ``train.gradcache_chunk``), BGE-like length-skewed pairs (log-normal, the
authors' mean lengths 14/64, bench_buckets.py). Each configuration runs in its own subprocess
(bench_train.py's workers: the train stage's step, with its length-bucketed chunks, SDPA and fused
AdamW); the first step is an untimed warm-up, then ``--steps`` are timed.

- model-FLOP MFU = 2·(N_F+N_B+N_U) per real token × real tokens/s / peak (paper 1's C/D; 6·N for full);
- hardware-FLOP MFU = the FLOPs executed per real token (GradCache's second forward, 2·N, and with
  ``--checkpointing`` the recompute) × real tokens/s / peak: ``embtune.train.mfu``.
CachedMNRL runs the same two passes, so its hardware count per token is the same as ours.

The JSON (device name, date, both MFUs per shape, the ratio to CachedMNRL) feeds the plan's
throughput model: ``benchmarks/update_throughput.py benchmarks/mfu_measured.json`` rewrites
profiles/default/throughput.yaml's ``peak_flops_per_gpu`` and ``mfu_curve`` from it. Targets
(printed, not asserted): >= 35 % model-FLOP MFU for the 410M shape and >= 1.3x CachedMNRL.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SHAPES = {"70m": (512, 6, 8), "410m": (1024, 24, 16), "1b": (2048, 16, 8)}   # Pythia: d, layers, heads


def shape_result(ours: dict, st: dict | None, peak: float | None) -> dict:
    """Both MFUs of ours (and of CachedMNRL, same model and passes) and the ratio to it."""
    out = {"n_total": ours["n_total"], "tokens_per_s": round(ours["tokens_per_s"]),
           "model_flops_per_token": ours["flop_per_token"], "hardware_flops_per_token": ours["hardware_flop_per_token"],
           "peak_mb": round(ours["peak_mb"])}
    if peak:
        out["mfu_model"] = ours["flop_per_token"] * ours["tokens_per_s"] / peak
        out["mfu_hardware"] = ours["hardware_flop_per_token"] * ours["tokens_per_s"] / peak
    if st is not None and "tokens_per_s" in st:
        out["st_tokens_per_s"] = round(st["tokens_per_s"])
        out["over_st"] = ours["tokens_per_s"] / st["tokens_per_s"]
        if peak:
            out["st_mfu_model"] = ours["flop_per_token"] * st["tokens_per_s"] / peak
    elif st is not None:
        out["st_error"] = st["error"]
    return out


def _try_spawn(spawn, cfg: dict) -> dict:
    try:
        return spawn(cfg)
    except subprocess.CalledProcessError as err:           # e.g. CUDA out of memory: record, go on
        tail = (err.stderr or "").strip().splitlines()[-1:] or ["(no stderr)"]
        return {"error": tail[0][:300]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=75)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--compile", default="none", choices=["none", "inductor", "aot_eager"])
    ap.add_argument("--checkpointing", action="store_true", help="activation checkpointing (params.yaml's default)")
    ap.add_argument("--no-st", action="store_true", help="skip sentence-transformers' CachedMNRL")
    ap.add_argument("--json-out", default=str(HERE / "mfu_measured.json"))
    ap.add_argument("--cpu", action="store_true", help="run without a GPU too (a smoke test: shrink --batch)")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available() and not args.cpu:
        print("bench_mfu: no CUDA device; MFU is measured against a GPU's peak (make gpu-check). "
              "--cpu runs it anyway as a smoke test.")
        return 0
    from bench_train import _spawn

    from embtune.models.flops import peak_bf16_flops

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    peak = peak_bf16_flops(device) if device != "cpu" else None
    common = {"base": None, "threads": args.threads, "ctx": args.ctx, "batch": args.batch, "chunk": args.chunk,
              "steps": args.steps, "lengths": "bge", "compile": args.compile, "checkpointing": args.checkpointing}
    results = {}
    for name in args.shapes:
        d, layers, heads = SHAPES[name]
        cfg = {**common, "hidden": d, "layers": layers, "heads": heads}
        ours = _try_spawn(_spawn, {**cfg, "mode": "ours"})
        st = None if args.no_st else _try_spawn(_spawn, {**cfg, "mode": "st"})
        if "error" in ours:
            results[name] = {"error": ours["error"]}
            print(f"pythia-{name}: embtune step failed: {ours['error']}", flush=True)
            continue
        r = results[name] = shape_result(ours, st, peak)
        mfu = (f"model-FLOP MFU {100 * r['mfu_model']:.1f}%, hardware-FLOP MFU {100 * r['mfu_hardware']:.1f}%"
               if peak else "MFU n/a (no peak FLOP/s on record for this device)")
        vs = (f"; CachedMNRL {r['st_tokens_per_s']} tokens/s, ours {r['over_st']:.2f}x" if "over_st" in r
              else f"; CachedMNRL failed: {r['st_error']}" if "st_error" in r else "")
        print(f"pythia-{name} (d{d} l{layers} h{heads}, N={r['n_total']:.3g}): {r['tokens_per_s']} real tokens/s, "
              f"{mfu}{vs}", flush=True)
    out = {"device": device, "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "torch": torch.__version__, "peak_flops_per_gpu": peak,
           "config": {k: v for k, v in common.items() if k not in ("base", "threads")} | {"method": "full",
                                                                                          "precision": "bf16" if peak or device != "cpu" else "fp32"},
           "targets": {"mfu_model_410m": 0.35, "over_st": 1.3}, "shapes": results}
    tmp = Path(args.json_out).with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    tmp.replace(args.json_out)
    print(f"bench_mfu: written to {args.json_out}; feed it to the plan with "
          f"`python benchmarks/update_throughput.py {args.json_out}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
