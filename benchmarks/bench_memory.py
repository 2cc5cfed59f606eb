"""Peak GPU memory and throughput per model size on a CUDA GPU (``make gpu-check``, issue 23).

For Pythia-shaped models (random weights, vocab 50304) and each method, a few real training steps
as ``embtune train`` runs them (bf16 autocast, GradCache chunks, activation checkpointing, AdamW)
compare ``torch.cuda.max_memory_allocated`` with ``embtune.models.memory.estimate``, and time the
steps: the achieved hardware FLOP/s over the dense bf16 peak is the MFU of that size. With
``--write-curve FILE`` the measured ``mfu_curve`` (and ``peak_flops_per_gpu``) are written to FILE
in profiles/default/throughput.yaml's format (merge them there; ``embtune.plan.study_cost`` reads them);
with ``--write-measured FILE`` the peaks, as benchmarks/memory_measured.json holds them (the
reference tests/unit/models/test_memory.py checks the estimate against). One untimed warm-up step runs first
(CUDA context, kernel selection), so the MFU is of steady steps.
Exits 1 if an estimate is more than 5 % below its measured peak.
"""

from __future__ import annotations

import argparse
import sys
import time

SHAPES = {"pythia-70m": (512, 6), "pythia-160m": (768, 12), "pythia-410m": (1024, 24), "pythia-1b": (2048, 16)}


def main() -> int:
    import torch
    import yaml
    from transformers import AutoModel, GPTNeoXConfig

    from embtune.models.flops import peak_bf16_flops
    from embtune.models.memory import estimate
    from embtune.models.methods import apply_method, count_params, method_config, planned_counts
    from embtune.models.model_spec import ModelSpec
    from embtune.models.run_spec import Planned, RunData, TrainSettings
    from embtune.plan.cost import hardware_per_token, two_pass
    from embtune.runconfig import RunConfig
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, enable_checkpointing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(SHAPES))
    ap.add_argument("--methods", nargs="+", default=["full", "lora"])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=75)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--write-curve", default=None)
    ap.add_argument("--write-measured", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_memory: no CUDA device")
        return 0
    dev = torch.device("cuda")
    peak_flops = peak_bf16_flops(torch.cuda.get_device_name(dev)) or 3.12e14
    bad, curve, peaks = 0, [], []
    for name in args.models:
        d, layers = SHAPES[name]
        spec = {"name": name, "hidden_size": d, "num_layers": layers}
        for method in args.methods:
            settings = {"lora_rank": 8, "lora_alpha": 8.0, "lora_dropout": 0.0} if method == "lora" else {}
            chosen = method_config({"method": method, **settings})
            c = planned_counts(spec, chosen)
            train = TrainSettings(batch_size=args.batch, context_length=args.ctx, temperature=0.025,
                                  gradcache_chunk=args.chunk, gradient_checkpointing=True, final_lr_fraction=0.1)
            run = RunConfig(run_id=f"{name}__{method}", model=ModelSpec.from_dict(spec), method=method,
                            settings=chosen.settings, budget=1.0,
                            seed=0, peak_lr=1e-4, planned=Planned(c, 0.0, float(args.steps)), train=train,
                            data=RunData("", ""), base_model_dir="")
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)
            model = AutoModel.from_config(GPTNeoXConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=d // 64,
                                                        intermediate_size=4 * d, rotary_pct=0.25, vocab_size=50304,
                                                        use_parallel_residual=True)).to(dev)
            model = apply_method(model, run.method_config)
            enable_checkpointing(model)
            model.train()
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4,
                                    weight_decay=0.1)     # the loop's optimizer
            loss_fn = contrastive_loss_fn(0.025)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for step in range(args.steps + 1):
                if step == 1:                               # step 0 is the untimed warm-up
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                ids = torch.randint(3, 50304, (2 * args.batch, args.ctx))
                chunks = [(ids[i:i + args.chunk], torch.ones_like(ids[i:i + args.chunk]))
                          for i in range(0, len(ids), args.chunk)]
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    gradcache_step(lambda ch, m=model: embed(m, ch, "mean", dev), chunks, loss_fn,
                                   single_pass=2 * args.batch <= args.chunk)
                opt.step()
                opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            secs = time.perf_counter() - t0
            measured = torch.cuda.max_memory_allocated(dev)
            est = estimate(run, vocab=50304, mixed_precision=True).peak
            counts = count_params(model, method)
            flops = hardware_per_token(counts, method, gradcache_two_pass=two_pass(args.batch, args.chunk),
                                       checkpointing=True) * 2 * args.batch * args.ctx * args.steps
            mfu = flops / secs / peak_flops
            ratio = est / measured
            bad += ratio < 0.95
            if method == "full":
                curve.append([float(counts.n_total), round(mfu, 4)])
            peaks.append({"model": name, "method": method, "measured_gib": round(measured / 2**30, 2)})
            print(f"{name:12s} {method:5s} measured {measured / 2**30:7.2f} GiB  estimate {est / 2**30:7.2f} GiB  "
                  f"estimate/measured {ratio:5.2f}  MFU {mfu:.3f}", flush=True)
            del model, opt
    if args.write_curve and curve:
        with open(args.write_curve, "w") as f:
            yaml.safe_dump({"peak_flops_per_gpu": float(peak_flops), "mfu_curve": sorted(curve)}, f)
        print(f"bench_memory: mfu_curve written to {args.write_curve}")
    if args.write_measured:
        _write_measured(args, torch.cuda.get_device_name(dev), peaks)
    return 1 if bad else 0


def _write_measured(args: argparse.Namespace, device: str, peaks: list[dict]) -> None:
    """The measured peaks in benchmarks/memory_measured.json's format."""
    import datetime
    import json

    import peft
    import torch
    import transformers

    data = {"what": "torch.cuda.max_memory_allocated over training steps as embtune train runs them (bf16 autocast, "
                    "GradCache, activation checkpointing, AdamW; random weights, vocab 50304, LoRA r8 alpha 8)",
            "source": f"benchmarks/bench_memory.py via make gpu-check, {datetime.date.today()}",
            "device": f"{device} (torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__})",
            "config": {"batch_size": args.batch, "gradcache_chunk": args.chunk, "context_length": args.ctx,
                       "gradient_checkpointing": True},
            "shapes": {m: list(SHAPES[m]) for m in args.models}, "peaks_gib": peaks,
            "note": "GiB to two decimals"}
    with open(args.write_measured, "w") as f:
        f.write(json.dumps(data, indent=1) + "\n")
    print(f"bench_memory: peaks written to {args.write_measured}")


if __name__ == "__main__":
    sys.exit(main())
