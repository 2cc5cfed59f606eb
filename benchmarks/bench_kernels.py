"""Measure each fused kernel of ``embtune.train.kernels`` against the plain one, on this machine.

    nice -n 10 .venv/bin/python benchmarks/bench_kernels.py [--repeats 4] [--inductor]
        [--json-out benchmarks/kernels_measured.json]

- attention: SDPA vs eager, whole GradCache training steps of a tiny GPT-NeoX (d128, 2 layers,
  batch 64, chunk 32, BGE-like lengths, context 75), real tokens/s;
- AdamW: fused vs foreach vs the per-parameter loop, one optimizer step of a 5.8M-parameter model
  (d256, 6 layers) with random gradients, ms per step;
- ``--inductor``: the same training steps with the encoder compiled by inductor (chunk widths
  bucketed to multiples of 8, dynamic width), first step (compile) and steady-state tokens/s.

A/B modes alternate within each repeat (the machine is shared); ratios are medians of per-repeat
ratios; the load average before and after is recorded. On a GPU the same choices are measured by
``make gpu-check`` (bench_mfu.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _model(attn: str, hidden: int = 128, layers: int = 2) -> torch.nn.Module:
    from transformers import AutoModel

    from embtune.models.build import tiny_config

    torch.manual_seed(0)
    return AutoModel.from_config(tiny_config({"hidden_size": hidden, "num_layers": layers}, 4096, 1, 0),
                                 attn_implementation=attn).train()


def train_tokens_per_s(model, backend: str, pairs, batches, chunk: int) -> float:
    from embtune.train import kernels
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, length_sorted_chunks

    opt = kernels.adamw(model.parameters(), 1e-5, 0.0)
    encoder = kernels.compiled(model, backend, pairs.context_length)
    loss_fn = contrastive_loss_fn(0.025)
    tokens, t0 = 0, time.perf_counter()
    for idx in batches:
        chunks, restore = length_sorted_chunks(pairs, idx, chunk, 1, kernels.width_multiple(backend))
        gradcache_step(lambda c: embed(encoder, c, "mean"), chunks, lambda reps: loss_fn(reps[restore]))
        opt.step()
        opt.zero_grad(set_to_none=True)
        tokens += int(pairs.lengths()[list(idx)].sum())
    return tokens / (time.perf_counter() - t0)


def adamw_ms(repeats: int) -> dict[str, float]:
    model = _model("sdpa", 256, 6)
    params = list(model.parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    kinds = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    opts = {k: torch.optim.AdamW(params, lr=1e-5, weight_decay=0.1, **kw) for k, kw in kinds.items()}
    ms: dict[str, list[float]] = {k: [] for k in opts}
    for _ in range(repeats):
        for k, opt in opts.items():
            t0 = time.perf_counter()
            for _ in range(5):
                opt.step()
            ms[k].append(1000 * (time.perf_counter() - t0) / 5)
    return {"parameters": sum(p.numel() for p in params), **{k: statistics.median(v) for k, v in ms.items()}}


def main(argv: list[str] | None = None) -> int:
    from bench_buckets import skewed_pairs

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--inductor", action="store_true")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    load0, start = os.getloadavg()[0], time.perf_counter()
    pairs = skewed_pairs(args.batch * (args.steps + 1))
    batches = [range(s * args.batch, (s + 1) * args.batch) for s in range(1, args.steps + 1)]
    models = {attn: _model(attn) for attn in ("eager", "sdpa")}
    for m in models.values():                                  # warm-up, untimed
        train_tokens_per_s(m, "none", pairs, [range(0, args.batch)], args.chunk)
    attention: dict[str, list[float]] = {"eager": [], "sdpa": []}
    for rep in range(args.repeats):
        for attn in (("eager", "sdpa") if rep % 2 == 0 else ("sdpa", "eager")):
            attention[attn].append(train_tokens_per_s(models[attn], "none", pairs, batches, args.chunk))
    out = {"benchmark": "benchmarks/bench_kernels.py", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "device": f"cpu, 1 thread, torch {torch.__version__}",
           "attention_real_tokens_per_s": attention,
           "sdpa_over_eager": statistics.median(s / e for s, e in zip(attention["sdpa"], attention["eager"])),
           "adamw_ms_per_step": adamw_ms(args.repeats)}
    a = out["adamw_ms_per_step"]
    out["fused_adamw_over_loop"] = a["loop"] / a["fused"]
    out["fused_adamw_over_foreach"] = a["foreach"] / a["fused"]
    if args.inductor:
        model = _model("sdpa")
        t0 = time.perf_counter()
        train_tokens_per_s(model, "inductor", pairs, [range(0, args.batch)], args.chunk)
        first = time.perf_counter() - t0
        compiled = [train_tokens_per_s(model, "inductor", pairs, batches, args.chunk) for _ in range(args.repeats)]
        out["inductor"] = {"first_step_s": first, "real_tokens_per_s": compiled,
                           "over_eager_sdpa": statistics.median(compiled) / statistics.median(attention["sdpa"])}
    out["load_average_before_after"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    out["wall_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(out, indent=1))
    if args.json_out:
        tmp = Path(args.json_out).with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
