"""Benchmark the contrastive training step: throughput vs sentence-transformers' cached MNRL and a
plain PyTorch loop, peak memory of a large GradCache batch vs a small batch without GradCache,
and (on a GPU) model FLOPs utilisation.

    .venv/bin/python benchmarks/bench_train.py [--base-model DIR | --hidden 768 --layers 12]
        [--threads 2] [--batch 64] [--chunk 16] [--repeats 3] [--modes ours st] [--skip-memory]

``make gpu-check`` runs it Pythia-410M-shaped (d 1024, 24 layers, 16 heads) at batch 1024, context
75, bf16, GradCache chunk 128, against sentence-transformers' CachedMNRL on the same config.

Every configuration runs in its own subprocess so peak RSS (CPU) / peak allocated memory (CUDA)
belongs to that configuration alone. Throughput counts real (non-padding) tokens, as training does.
Each repeat runs every configuration back to back and ratios are medians of per-repeat ratios:
this 2-core machine's speed drifts by ±20% over minutes, which a single run cannot tell from a
real difference. On CUDA every configuration runs under bf16 autocast, as training does.
Without ``--base-model`` a randomly initialised tiny GPT-NeoX (d=128, L=2, vocab 4096) is used:
speed and memory do not depend on the weights.

The external baseline (issue 8) is sentence-transformers' ``CachedMultipleNegativesRankingLoss``
(GradCache, mini-batch = ``--chunk``) around the same randomly initialised model, saved with a
byte-level BPE trained in memory. Its text pairs are built so that every token id of the id-level
configurations becomes one whole-word token: the same lengths, hence the same padding; real tokens
are counted from the tokenizer's attention masks. Tokenisation happens before the timed steps, as
the other configurations also start from token ids.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch


def _model(base: str | None, hidden: int, layers: int, heads: int | None = None) -> torch.nn.Module:
    from transformers import AutoModel

    from embtune.models.build import tiny_config

    if base:
        return AutoModel.from_pretrained(base)
    torch.manual_seed(0)
    spec = {"hidden_size": hidden, "num_layers": layers, "num_attention_heads": heads}
    return AutoModel.from_config(tiny_config(spec, 4096, 1, 0))


def _result(cfg: dict, tokens: int, t0: float, device: str) -> dict:
    """Throughput over the timed steps and the configuration's peak memory."""
    if device == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() / 2**20 if device == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    return {**cfg, "tokens_per_s": tokens / wall, "peak_mb": peak, "device": device, "device_name": name}


def _pairs(n: int, ctx: int, seed: int = 0, lengths: str = "uniform"):
    """Token-id pairs: lengths uniform in [ctx/3, ctx], or ``bge``: log-normal with BGE's means
    (bench_buckets.skewed_pairs), truncated at ``ctx``."""
    from embtune.train.pairs import Pairs

    if lengths == "bge":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_buckets import skewed_pairs

        return skewed_pairs(n, seed, context=ctx)
    rng = random.Random(seed)
    seqs = lambda: [[rng.randrange(2, 4096) for _ in range(rng.randint(ctx // 3, ctx))] for _ in range(n)]  # noqa: E731
    return Pairs.from_lists(seqs(), seqs(), ctx)


def _tokenizer(base: str | None, vocab: int = 4096):
    """``base``'s tokenizer (pad = eos if missing), else a byte-level BPE trained in memory on
    pseudo-words so that many whole words (``Ġword``) are single tokens; eos 0, pad 1 as in
    :func:`_model`."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if base:
        tok = AutoTokenizer.from_pretrained(base)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(1)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
             for _ in range(3000)]
    corpus = [" ".join(rng.choice(words) for _ in range(64)) for _ in range(2000)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>", "<|padding|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   pad_token="<|padding|>", bos_token="<|endoftext|>")


def _texts(tok, n: int, ctx: int, lengths: str = "uniform") -> tuple[list[str], list[str]]:
    """Text pairs with the lengths of :func:`_pairs`: each id becomes a vocabulary word that is a
    single token with its leading space, so a text of k ids tokenises to exactly k tokens."""
    words = sorted(t[1:] for t in tok.get_vocab() if re.fullmatch(r"\u0120[a-z]+", t))
    pairs = _pairs(n, ctx, lengths=lengths)
    text = lambda col: ["".join(" " + words[t % len(words)] for t in col.row(i, ctx))  # noqa: E731
                         for i in range(len(pairs))]
    return text(pairs.query), text(pairs.pos)


def st_worker(cfg: dict) -> dict:
    """sentence-transformers baseline: ``CachedMultipleNegativesRankingLoss`` (symmetric, scale
    1/0.025, mini-batch ``chunk``) on the same model, driven by a minimal manual loop."""
    from sentence_transformers import SentenceTransformer
    try:
        from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:                                  # sentence-transformers < 6
        from sentence_transformers.losses import CachedMultipleNegativesRankingLoss
        from sentence_transformers.models import Pooling, Transformer

    torch.set_num_threads(cfg["threads"])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    bs, steps, ctx = cfg["batch"], cfg["steps"], cfg["ctx"]
    tok = _tokenizer(cfg["base"])
    model = _model(cfg["base"], cfg["hidden"], cfg["layers"], cfg.get("heads"))
    model.config.pad_token_id = tok.pad_token_id
    if tok.eos_token_id is not None:
        model.config.eos_token_id = tok.eos_token_id
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        dim = model.config.hidden_size
        del model
        st = SentenceTransformer(modules=[Transformer(tmp, max_seq_length=ctx), Pooling(dim, "mean")],
                                 device=device)
    st.train()
    loss = CachedMultipleNegativesRankingLoss(st, scale=1 / 0.025, mini_batch_size=cfg["chunk"],
                                              directions=("query_to_doc", "doc_to_query"),
                                              partition_mode="per_direction")
    opt = torch.optim.AdamW(st.parameters(), lr=1e-5)
    queries, docs = _texts(tok, bs * (steps + 1), ctx, cfg.get("lengths", "uniform"))
    prep = st.preprocess if hasattr(st, "preprocess") else st.tokenize
    batches = []
    for step in range(steps + 1):                        # tokenised up front, untimed
        feats = [{k: v.to(device) if torch.is_tensor(v) else v
                  for k, v in prep(side[step * bs:(step + 1) * bs]).items()} for side in (queries, docs)]
        batches.append((feats, sum(int(f["attention_mask"].sum()) for f in feats)))
    ref = _pairs(bs * (steps + 1), ctx, lengths=cfg.get("lengths", "uniform"))
    lengths = [[int(n) for b in batches for n in b[0][side]["attention_mask"].sum(1)] for side in (0, 1)]
    assert lengths == [ref.query.lengths(ctx).tolist(), ref.pos.lengths(ctx).tolist()], \
        "text pairs do not tokenise to the id-level lengths"
    tokens, t0 = 0, 0.0
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for step, (feats, real) in enumerate(batches):     # step 0 warms up, untimed
        if step == 1:
            t0 = time.perf_counter()
        with _autocast(device):
            loss(sentence_features=feats, labels=None).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step:
            tokens += real
    return _result(cfg, tokens, t0, device)


def worker(cfg: dict) -> dict:
    """One configuration: ``ours`` (the train stage's step: length-sorted GradCache chunks),
    ``unsorted`` (GradCache chunks in batch order), ``single`` (the single-pass shortcut) or
    ``plain`` (one forward per tower over the whole batch, one backward); ``st`` goes to
    :func:`st_worker`."""
    if cfg["mode"] == "st":
        return st_worker(cfg)
    from embtune.models.methods import count_params
    from embtune.plan.cost import hardware_per_token
    from embtune.train import kernels
    from embtune.train.gradcache import gradcache_step
    from embtune.train.loop import contrastive_loss_fn, embed, enable_checkpointing, length_sorted_chunks, make_chunks

    torch.set_num_threads(cfg["threads"])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = _model(cfg["base"], cfg["hidden"], cfg["layers"], cfg.get("heads")).to(device).train()
    ckpt, backend = bool(cfg.get("checkpointing")), cfg.get("compile", "none")
    if ckpt:
        enable_checkpointing(model)
    # the train stage's kernels (fused AdamW, SDPA, optional compile); "plain" keeps torch's defaults
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-5) if cfg["mode"] == "plain"
           else kernels.adamw(model.parameters(), 1e-5, 0.0))
    bs, steps = cfg["batch"], cfg["steps"]
    pairs = _pairs(bs * (steps + 1), cfg["ctx"], lengths=cfg.get("lengths", "uniform"))
    lengths = pairs.lengths()
    loss_fn = contrastive_loss_fn(0.025)
    encoder = kernels.compiled(model, backend, cfg["ctx"]) if cfg["mode"] == "ours" else model
    encode = lambda c: embed(encoder, c, "mean", device)  # noqa: E731
    tokens, t0 = 0, 0.0
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for step in range(steps + 1):                        # step 0 warms up, untimed
        if step == 1:
            t0 = time.perf_counter()
        idx = range(step * bs, (step + 1) * bs)
        with _autocast(device):
            if cfg["mode"] == "ours":
                chunks, restore = length_sorted_chunks(pairs, idx, cfg["chunk"], 1, kernels.width_multiple(backend))
                gradcache_step(encode, chunks, lambda reps: loss_fn(reps[restore]),
                               single_pass=2 * bs <= cfg["chunk"])
            elif cfg["mode"] in ("unsorted", "single"):
                gradcache_step(encode, make_chunks(pairs, idx, cfg["chunk"], 1), loss_fn,
                               single_pass=cfg["mode"] == "single")
            else:
                loss = loss_fn(torch.cat([encode(c) for c in make_chunks(pairs, idx, bs, 1)]))
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step:
            tokens += int(lengths[list(idx)].sum())
    out = _result(cfg, tokens, t0, device)
    counts = count_params(model, "full")
    # GradCache's two passes ("single"/"plain": one; "ours" as the train stage: one when the batch fits a chunk)
    passes = cfg["mode"] == "unsorted" or (cfg["mode"] == "ours" and 2 * bs > cfg["chunk"])
    return {**out, "flop_per_token": counts.per_token,
            "hardware_flop_per_token": hardware_per_token(counts, "full", gradcache_two_pass=passes,
                                                          checkpointing=ckpt),
            "n_total": counts.n_total}


def _autocast(device: str):
    """bf16 autocast on a GPU, as the train stage runs (Accelerator(mixed_precision="bf16"))."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()


def _spawn(cfg: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(cfg)], capture_output=True,
                         text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


SPEED_LABELS = {"plain": "plain PyTorch loop (baseline)", "single": "embtune single pass (batch fits)",
                "unsorted": "embtune GradCache, chunks in batch order", "ours": "embtune GradCache (train stage)",
                "st": "sentence-transformers CachedMNRL"}


def _median_ratio(runs: dict[str, list[dict]], a: str, b: str) -> float:
    """Median over repeats of the paired ratio a/b (each repeat runs every mode back to back, so
    slow phases of a shared machine hit both sides of a ratio alike)."""
    return statistics.median(x["tokens_per_s"] / y["tokens_per_s"] for x, y in zip(runs[a], runs[b]))


def _mfu_line(r: dict) -> str:
    from embtune.models.flops import peak_bf16_flops

    if r["device"] != "cuda":
        return "model FLOPs utilisation: n/a (no GPU; MFU is reported on CUDA devices)"
    peak = peak_bf16_flops(r["device_name"])
    if peak is None:
        return f"model FLOPs utilisation: n/a (no bf16 peak on record for {r['device_name']})"
    achieved = r["flop_per_token"] * r["tokens_per_s"]
    hardware = r["hardware_flop_per_token"] * r["tokens_per_s"]
    return (f"model FLOPs utilisation (6·N per token, {r['device_name']}, bf16 peak {peak:.3g}): "
            f"{achieved:.3g} FLOP/s = {100 * achieved / peak:.1f}% MFU (target >= 40% for Pythia-410M "
            f"at batch 1024 bf16)\nhardware FLOP/s executed (GradCache's second forward included, "
            f"embtune.plan.cost; the calibration in profiles/default/throughput.yaml, without "
            f"checkpointing): {hardware:.3g}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--base-model", default=None)
    ap.add_argument("--hidden", type=int, default=128, help="tiny GPT-NeoX width (without --base-model)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=None, help="attention heads (default d/32)")
    ap.add_argument("--modes", nargs="+", default=list(SPEED_LABELS), choices=list(SPEED_LABELS),
                    help="configurations to time (ratios are printed for the pairs present)")
    ap.add_argument("--skip-memory", action="store_true",
                    help="skip the peak-memory comparison (its plain large batch needs the most memory)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=32)
    ap.add_argument("--large-batch", type=int, default=1024, help="memory: GradCache batch")
    ap.add_argument("--memory-chunk", type=int, default=64,
                    help="memory: the chunk size, and the batch of the plain (no GradCache) reference")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    common = {"base": args.base_model, "threads": args.threads, "ctx": args.ctx,
              "hidden": args.hidden, "layers": args.layers, "heads": args.heads}
    chunks = {"plain": args.batch, "single": args.batch, "unsorted": args.chunk, "ours": args.chunk,
              "st": args.chunk}
    modes = {m: c for m, c in chunks.items() if m in args.modes}
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for _ in range(args.repeats):
        for mode, chunk in modes.items():
            runs[mode].append(_spawn({**common, "mode": mode, "batch": args.batch, "chunk": chunk,
                                      "steps": args.steps}))
    small = args.memory_chunk
    memory = [] if args.skip_memory else [
        _spawn({**common, "mode": "plain", "batch": small, "chunk": small, "steps": 2}),
        _spawn({**common, "mode": "ours", "batch": args.large_batch, "chunk": small, "steps": 2}),
        _spawn({**common, "mode": "plain", "batch": args.large_batch, "chunk": args.large_batch, "steps": 2})]
    first = next(iter(runs.values()))[0]
    heads = f"-h{args.heads}" if args.heads else ""
    print(f"device {first.get('device_name', first['device'])}, threads {args.threads}, context {args.ctx}, "
          f"model d{args.hidden}-l{args.layers}{heads}, batch {args.batch}, chunk {args.chunk}, "
          f"{args.steps} timed steps x {args.repeats} repeats")
    print("throughput (real tokens/s, median of repeats)")
    for mode, rs in runs.items():
        med = statistics.median(r["tokens_per_s"] for r in rs)
        ratio = f"   {_median_ratio(runs, mode, 'plain'):5.2f}x plain" if "plain" in runs else ""
        print(f"  {SPEED_LABELS[mode]:<44} {med:10.0f}{ratio}")
    if {"ours", "st"} <= runs.keys():
        per_repeat = ", ".join(f"{a['tokens_per_s'] / b['tokens_per_s']:.2f}" for a, b in zip(runs["ours"], runs["st"]))
        print(f"embtune GradCache (chunk {args.chunk}) / sentence-transformers CachedMNRL (mini-batch "
              f"{args.chunk}): {_median_ratio(runs, 'ours', 'st'):.2f}x  "
              f"(per repeat: {per_repeat})")
    if {"ours", "unsorted"} <= runs.keys():
        print(f"  of which length-sorted chunks: {_median_ratio(runs, 'ours', 'unsorted'):.2f}x over batch-order chunks")
    if {"single", "st"} <= runs.keys():
        print(f"embtune single pass / sentence-transformers CachedMNRL: {_median_ratio(runs, 'single', 'st'):.2f}x")
    ours = runs.get("ours") or next(iter(runs.values()))
    if "flop_per_token" in ours[0]:
        print(_mfu_line(sorted(ours, key=lambda r: r["tokens_per_s"])[len(ours) // 2]))
    if memory:
        print("peak memory (MB; CPU: process max RSS, CUDA: max allocated)")
    for r in memory:
        label = (f"plain, batch {r['batch']}" if r["mode"] == "plain"
                 else f"GradCache, batch {r['batch']}, chunk {r['chunk']}")
        print(f"  {label:<44} {r['peak_mb']:10.1f}   {r['peak_mb'] / memory[0]['peak_mb']:5.2f}x small plain batch")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"speed": runs, "memory": memory}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
