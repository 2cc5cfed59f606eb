"""Benchmark length-bucketed GradCache chunks against chunks in batch order, on CPU.

    nice -n 10 .venv/bin/python benchmarks/bench_buckets.py [--batch 256] [--chunk 32]
        [--repeats 3] [--steps 1] [--json-out benchmarks/bucketing_measured.json]

The train stage sorts each batch's queries and positives by length before cutting them into
GradCache chunks (``train.loop.length_sorted_chunks``), so a chunk pads to the length of rows like
its own instead of the batch's longest; the baseline is the same step with chunks in batch order
(``make_chunks``). Both run the whole training step: GradCache's two passes, the backward, AdamW.

The batch is length-skewed like BGE: lengths are log-normal with the means the authors' code
assumes (``AVERAGE_BAAI_QUERY_TOKENS = 14``, ``..._POS_TOKENS = 64``, docs/fidelity.md#P1-D-TOKENS),
truncated at paper 1's context 75. Throughput counts real (non-padding) tokens, as training does.

The machine is shared, so the two modes alternate (A B, then B A, ...) on the same batches and the
ratio is the median of the per-repeat ratios: a slow phase hits both sides of a ratio alike. The
load average before and after is printed. Without a timing, the padded tokens each layout feeds the
model are counted exactly for several chunk sizes, including paper 1's (batch 1024, chunk 512).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

QUERY_MEAN, POS_MEAN, CONTEXT = 14, 64, 75       # the authors' averages; paper 1's context


def skewed_pairs(n: int, seed: int = 0, sigma: tuple[float, float] = (0.6, 0.8), context: int = CONTEXT):
    """``n`` pairs whose query/positive lengths are log-normal with means 14 and 64 tokens."""
    from embtune.train.pairs import Pairs

    rng = np.random.default_rng(seed)

    def rows(mean: float, s: float) -> list[list[int]]:
        lengths = np.maximum(1, np.round(rng.lognormal(np.log(mean) - s * s / 2, s, n))).astype(int)
        return [rng.integers(2, 4096, size=k).tolist() for k in lengths]

    return Pairs.from_lists(rows(QUERY_MEAN, sigma[0]), rows(POS_MEAN, sigma[1]), context)


def padded_tokens(pairs, batch: int, chunk: int, sorted_: bool, batches: int = 20) -> tuple[int, int]:
    """(real, padded) tokens of ``batches`` consecutive batches under one layout (exact count)."""
    from embtune.train.loop import length_sorted_chunks, make_chunks

    real = padded = 0
    for b in range(batches):
        idx = range(b * batch, (b + 1) * batch)
        chunks = length_sorted_chunks(pairs, idx, chunk, 1)[0] if sorted_ else make_chunks(pairs, idx, chunk, 1)
        real += sum(int(m.sum()) for _, m in chunks)
        padded += sum(ids.numel() for ids, _ in chunks)
    return real, padded


def timed_steps(model, opt, pairs, batches: list[range], chunk: int, bucketed: bool) -> float:
    """Real tokens/s over whole training steps on ``batches``."""
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, length_sorted_chunks, make_chunks

    loss_fn = contrastive_loss_fn(0.025)
    encode = lambda c: embed(model, c, "mean")  # noqa: E731
    tokens, t0 = 0, time.perf_counter()
    for idx in batches:
        if bucketed:
            chunks, restore = length_sorted_chunks(pairs, idx, chunk, 1)
            gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]))
        else:
            gradcache_step(encode, make_chunks(pairs, idx, chunk, 1), loss_fn)
        opt.step()
        opt.zero_grad(set_to_none=True)
        tokens += int(pairs.lengths()[list(idx)].sum())
    return tokens / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoModel

    from embtune.models.build import tiny_config

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=1, help="timed steps per mode and repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    start = time.perf_counter()

    layouts = {}
    big = skewed_pairs(20 * 1024, seed=1)
    for batch, chunk in ((1024, 512), (1024, 128), (args.batch, args.chunk)):
        (real, plain), (_, bucketed) = (padded_tokens(big, batch, chunk, s) for s in (False, True))
        layouts[f"batch{batch}-chunk{chunk}"] = {"real_tokens": real, "padded_unbucketed": plain,
                                                 "padded_bucketed": bucketed,
                                                 "fed_tokens_ratio": plain / bucketed}

    torch.manual_seed(0)
    model = AutoModel.from_config(tiny_config({"hidden_size": args.hidden, "num_layers": args.layers},
                                              4096, 1, 0)).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    pairs = skewed_pairs(args.batch * (args.steps + 1))
    batches = [range(s * args.batch, (s + 1) * args.batch) for s in range(1, args.steps + 1)]
    timed_steps(model, opt, pairs, [range(0, args.batch)], args.chunk, True)        # warm-up, untimed
    runs: dict[str, list[float]] = {"unbucketed": [], "bucketed": []}
    for rep in range(args.repeats):
        order = ("unbucketed", "bucketed") if rep % 2 == 0 else ("bucketed", "unbucketed")
        for mode in order:
            runs[mode].append(timed_steps(model, opt, pairs, batches, args.chunk, mode == "bucketed"))
    ratios = [b / u for b, u in zip(runs["bucketed"], runs["unbucketed"])]
    load_after = os.getloadavg()
    out = {
        "benchmark": "benchmarks/bench_buckets.py",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": f"cpu, {args.threads} thread(s), torch {torch.__version__}",
        "config": {"batch": args.batch, "chunk": args.chunk, "context": CONTEXT, "hidden": args.hidden,
                   "layers": args.layers, "timed_steps": args.steps, "repeats": args.repeats,
                   "lengths": f"log-normal, means query {QUERY_MEAN} / positive {POS_MEAN} tokens, "
                              f"truncated at {CONTEXT}"},
        "real_tokens_per_s": runs,
        "ratio_per_repeat": ratios,
        "bucketed_over_unbucketed": statistics.median(ratios),
        "fed_tokens": layouts,
        "load_average_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "contention": ("shared machine: the load average exceeded the thread count, so absolute tokens/s "
                       "are low; the alternating A/B order exposes both modes to it alike")
        if max(load_before[0], load_after[0]) > args.threads else None,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    print(f"{out['device']}; model d{args.hidden}-l{args.layers}, batch {args.batch}, chunk {args.chunk}, "
          f"context {CONTEXT}; {out['config']['lengths']}")
    for mode, values in runs.items():
        print(f"  {mode:<11} real tokens/s, per repeat: " + ", ".join(f"{v:.0f}" for v in values))
    print(f"bucketed / unbucketed (median of paired ratios): {out['bucketed_over_unbucketed']:.2f}x "
          f"(per repeat: {', '.join(f'{r:.2f}' for r in ratios)}; bar >= 1.3x)")
    for name, lay in layouts.items():
        print(f"  tokens fed to the model per real token, {name}: unbucketed "
              f"{lay['padded_unbucketed'] / lay['real_tokens']:.2f}, bucketed "
              f"{lay['padded_bucketed'] / lay['real_tokens']:.2f} ({lay['fed_tokens_ratio']:.2f}x fewer)")
    print(f"load average before/after: {out['load_average_before_after']}; {out['wall_s']} s")
    if args.json_out:
        tmp = Path(args.json_out).with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
