"""Peak GPU memory of one training run, estimated before it runs.

Why: a job that lands on a card too small for it fails after queueing for hours. The plan layer
(``embtune.plan.gpus``) picks, per run, the smallest declared GPU class this estimate fits, and the
largest GradCache chunk that fits that class. Counted in bytes, as ``embtune train`` runs a run
(``train.loop``: fp32 weights, AdamW on the trainable tensors, bf16 autocast on a GPU, GradCache
over chunks of ``gradcache_chunk`` sequences, activation checkpointing per block):

- **weights**: every parameter in fp32 (the loop loads fp32), token embeddings included;
- **autocast copies**: under bf16 autocast torch caches a bf16 copy of every trainable weight
  that a matmul reads, for the whole step (2 bytes per trainable parameter);
- **gradients**: fp32, one per trainable parameter;
- **optimizer**: AdamW's two fp32 moments per trainable parameter; fp32 weights are their own
  master copy, so none is added; the foreach update holds ``ADAM_TEMP`` more fp32 copies of the
  trainable parameters while it runs (below the activations' peak at scale);
- **LoRA adapters**: in the weights, gradients and moments through the trainable count
  (``planned.n_update``: r·(in+out) per dense layer; an adapter on the token embeddings also
  holds r·vocab);
- **activations of one GradCache chunk** (the second pass keeps one chunk's graph at a time):
  per token and back-propagated block ``ACT_PER_LAYER_TOKEN`` hidden-size vectors (the saved
  inputs of the norms, the four dense layers, the rotary and attention outputs, the MLP's 4d
  GELU input and output: 18·d; ``Method.saved_vectors`` for bias-only and LoRA) plus the attention's
  per-head row statistics, and ``BACKWARD_TRANSIENT`` vectors while a block back-propagates;
  with checkpointing a block keeps only its input (d, in fp32: the residual stream stays fp32
  under autocast, as the embeddings and the weights are fp32) and one block is re-built during
  its backward; frozen blocks below the first trainable tensor keep nothing
  (``train.loop.enable_checkpointing``); under bf16 autocast a block also holds
  ``AUTOCAST_BLOCK_EXTRA`` vectors that an fp32 run has not (the norms' outputs stay fp32 and
  every matmul saves its own bf16 cast of its input);
- **the batch's embeddings** (GradCache's first pass: 2·batch pooled vectors, their gradients);
- **evaluation**: the held-out loss runs chunks without a graph (a block's transient), which is
  below the training peak, so it only counts if it is larger.

Not counted: the CUDA context and the allocator's cached-but-free blocks (not in
``torch.cuda.max_memory_allocated``); ``embtune.plan.gpus`` plans on ``usable_fraction`` of a card
for them. The estimate is checked against an independent count of live tensor bytes over real
training steps of tiny GPT-NeoX models for every method (tests/unit/models/test_memory.py) and, at scale,
against ``torch.cuda.max_memory_allocated`` by the GPU check (benchmarks/gpu_check.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from embtune.models import methods
from embtune.models.flops import ParamCounts, arch_of
from embtune.models.model_spec import ModelSpec
from embtune.models.run_spec import TrainingRun

FP32, BF16 = 4, 2
#: Saved hidden-size vectors per token and back-propagated block (see the module docstring).
ACT_PER_LAYER_TOKEN = 18
#: Methods that save a different number (``Method.saved_vectors`` in the registry): bias-only
#: tuning needs no dense layer's input (no weight gradient) but keeps the norms' and GELU's (13);
#: LoRA's adapters keep their inputs and low-rank outputs (20). Fitted to the live-byte counts of
#: tests/unit/models/test_memory.py (full 18: 19.7 measured with the transient below; bias 12.9; LoRA 19.9).
#: Hidden-size vectors per token that one block's backward holds at once (activation gradients,
#: the 4d GELU gradient): measured 3.7-4.9 in tests/unit/models/test_memory.py.
BACKWARD_TRANSIENT = 5
#: Hidden-size bf16 vectors per token that a block holds under bf16 autocast on top of the fp32
#: count (fp32 norm outputs beside the bf16 casts the matmuls save). Fitted to the H200 peaks of
#: ``make gpu-check`` (benchmarks/memory_measured.json: Pythia 70m-1b, full and LoRA, batch
#: 1024, chunk 128, context 75): with fp32 checkpointed inputs the LoRA peaks need 13-17 more.
AUTOCAST_BLOCK_EXTRA = 18
#: Saved per-head floats per token and block (softmax row statistics of the attention).
ACT_PER_HEAD_TOKEN = 2
#: Extra fp32 copies of the trainable parameters while the foreach AdamW update runs (the
#: square root of the second moment; tests/unit/models/test_memory.py measured at most 1.6 on a tiny full run).
ADAM_TEMP = 1
#: Default vocabulary of a hub model without ``vocab_size`` (Pythia's padded GPT-NeoX vocabulary).
DEFAULT_VOCAB = 50304


@dataclass(frozen=True)
class Estimate:
    """Peak bytes of one training process and its parts."""

    weights: float
    autocast: float
    gradients: float
    optimizer: float
    activations: float
    embeddings: float
    evaluation: float
    peak: float
    chunk: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def vocab_size(model: ModelSpec, tokenizer_vocab: int | None = None) -> int:
    """The embedding table's rows: ``vocab_size`` of the params entry, the trained tokenizer's
    size for ``source: tiny``, else Pythia's 50,304."""
    if model.vocab_size:
        return int(model.vocab_size)
    if model.source == "tiny" and tokenizer_vocab:
        return int(tokenizer_vocab)
    return DEFAULT_VOCAB


def embedding_adapter(run: TrainingRun, vocab: int) -> int:
    """The r·vocab half of a LoRA adapter on the token embeddings (0 without one)."""
    return run.settings.embedding_rank() * vocab


def trainable(run: TrainingRun, vocab: int, counts: ParamCounts | None = None) -> int:
    """Trainable parameters: N_U (of ``counts``, default the run's planned counts), plus the
    token embeddings where the method trains them, plus an adapter's r·vocab on them."""
    n = int((counts or run.planned.counts).n_update)
    if methods.get(run.method).trains_embeddings:
        n += vocab * int(run.model.hidden_size)
    return n + embedding_adapter(run, vocab)


def graph_blocks(run: TrainingRun, counts: ParamCounts | None = None) -> int:
    """Blocks the backward pass runs through: N_B over a block's parameters (all of them for
    full, bias and LoRA; the active ones for freeze)."""
    a = arch_of(run.model)
    nb = int((counts or run.planned.counts).n_backward) - a.norm
    return max(0, min(a.layers, math.ceil(nb / a.block - 1e-9)))


def activation_bytes(run: TrainingRun, chunk: int, *, act_bytes: int, checkpointing: bool,
                     counts: ParamCounts | None = None) -> float:
    """Peak saved activations of one chunk of ``chunk`` sequences at the run's context length."""
    a = arch_of(run.model)
    d, heads = a.dims.hidden, a.dims.heads
    tokens = chunk * int(run.train.context_length)
    blocks = graph_blocks(run, counts)
    saved = methods.get(run.method).saved_vectors or ACT_PER_LAYER_TOKEN
    block = saved * d * act_bytes + ACT_PER_HEAD_TOKEN * heads * FP32
    if act_bytes < FP32:                                # bf16 autocast: see AUTOCAST_BLOCK_EXTRA
        block += AUTOCAST_BLOCK_EXTRA * d * BF16
    if checkpointing and blocks:
        per_token = blocks * d * FP32 + block           # fp32 block inputs + the block being re-built
    else:
        per_token = blocks * block
    if blocks:
        per_token += BACKWARD_TRANSIENT * d * act_bytes
    # the last hidden state and its gradient (fp32) for the pooled readout
    return tokens * (per_token + 2 * d * FP32)


def estimate(run: TrainingRun, *, chunk: int | None = None, vocab: int = DEFAULT_VOCAB,
             mixed_precision: bool = True, processes: int = 1, counts: ParamCounts | None = None) -> Estimate:
    """The peak memory of one process of ``run`` with GradCache chunks of ``chunk`` sequences
    (default: the run's ``train.gradcache_chunk``). ``mixed_precision``: bf16 autocast (the loop
    on a GPU); False: fp32 (the loop on a CPU). ``counts``: N, N_B, N_U to use instead of the
    run's planned ones (the counts of the instantiated model, once it exists)."""
    t = run.train
    counts = counts or run.planned.counts
    a = arch_of(run.model)
    d = a.dims.hidden
    local = max(1, int(t.batch_size) // max(1, processes))
    chunk = int(chunk if chunk is not None else t.gradcache_chunk)
    chunk = max(1, min(chunk, 2 * local))          # a chunk never holds more than the local batch
    n_train = trainable(run, vocab, counts)
    total = int(counts.n_total) + vocab * d + embedding_adapter(run, vocab)
    act_bytes = BF16 if mixed_precision else FP32
    weights = FP32 * total
    autocast = BF16 * n_train if mixed_precision else 0.0
    gradients = FP32 * n_train
    optimizer = 2 * FP32 * n_train
    acts = activation_bytes(run, chunk, act_bytes=act_bytes, checkpointing=bool(t.gradient_checkpointing),
                            counts=counts)
    embeddings = 2 * (2 * local * d * FP32)        # pooled vectors of the batch and their gradients
    # held-out loss: one block's forward transients of a chunk, no graph
    evaluation = chunk * int(t.context_length) * (ACT_PER_LAYER_TOKEN // 3) * d * act_bytes
    train_peak = max(acts + embeddings, ADAM_TEMP * FP32 * n_train)
    peak = weights + autocast + gradients + optimizer + max(train_peak, evaluation)
    return Estimate(weights, autocast, gradients, optimizer, acts, embeddings, evaluation, peak, chunk)


def largest_chunk(run: TrainingRun, limit_bytes: float, *, upper: int, vocab: int = DEFAULT_VOCAB,
                  mixed_precision: bool = True, processes: int = 1) -> int | None:
    """The largest chunk in 1..``upper`` whose estimate fits ``limit_bytes``; None if even one
    sequence per chunk does not (the estimate grows with the chunk, so a bisection finds it)."""
    def fits(c: int) -> bool:
        return estimate(run, chunk=c, vocab=vocab, mixed_precision=mixed_precision,
                        processes=processes).peak <= limit_bytes

    if upper < 1 or not fits(1):
        return None
    lo, hi = 1, int(upper)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def measured_peak(device: Any) -> tuple[int, str]:
    """(bytes, what was measured): ``torch.cuda.max_memory_allocated`` on a GPU, else the
    process's peak resident set (``resource.getrusage``: KiB on Linux), which also counts the
    interpreter, libraries and data, so it bounds the tensors' peak from above."""
    import torch

    if getattr(device, "type", str(device)) == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "cuda_max_memory_allocated"
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024), "cpu_peak_rss"


def run_memory_metrics(run: TrainingRun, counts: ParamCounts, model: Any, chunk: int, acc: Any) -> dict[str, Any]:
    """The metrics.json keys of a finished run: its estimate (from the model's counted
    parameters, ``counts``; vocabulary, precision and processes as the loop's model and
    accelerator ``acc`` have them) and its measured peak."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    est = estimate(run, chunk=chunk, vocab=int(base.config.vocab_size), counts=counts,
                   mixed_precision=str(acc.mixed_precision) != "no", processes=int(acc.num_processes))
    peak, kind = measured_peak(acc.device)
    return {"estimated_peak_memory_bytes": int(est.peak), "peak_memory_bytes": peak, "peak_memory_kind": kind}
