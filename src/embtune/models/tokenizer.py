"""The tokenizer shared by the decoder suite (stage ``build-tokenizer``, driver
:mod:`embtune.stages.build_tokenizer`).

``--source train`` trains a byte-level BPE on the demo corpus (offline; no hub needed): byte-level
so that every string is encodable, with explicit eos and pad tokens because the contrastive stage
right-pads batches. ``--source hub|local`` copies an existing tokenizer into the results tree so
compute nodes never need the hub; ``--source gguf`` reads the one inside a GGUF model file (the
model's own, which its ``source: gguf`` entry needs). A missing pad token is set to eos (Pythia,
GPT-2 and many Llama tokenizers have none): padding is masked, so any id serves, and right
padding keeps every real token at its unpadded position.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence

EOS = "<|endoftext|>"
PAD = "<|padding|>"


def expand_globs(patterns: Sequence[str]) -> list[str]:
    """Sorted, de-duplicated files matching ``patterns``; sorted so training is reproducible."""
    files = sorted({f for p in patterns for f in glob.glob(p, recursive=True)})
    if not files:
        raise FileNotFoundError(f"no files match {list(patterns)}")
    return files


def train_bpe(files: Sequence[str], vocab_size: int):  # -> PreTrainedTokenizerFast
    """A byte-level BPE (GPT-2/Pythia style) with eos and pad special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS, PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train(list(files), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD,
                                   bos_token=EOS, unk_token=None)


def load_pretrained(ident: str, gguf_file: str | None = None):  # -> PreTrainedTokenizerBase
    """An existing tokenizer (hub id or directory, or a GGUF's: ``gguf_file`` set) with a pad
    token guaranteed and right padding (last-token pooling and position ids assume it)."""
    from transformers import AutoTokenizer

    from embtune.core.model_files import check_tokenizer_files

    check_tokenizer_files(ident)    # a directory's truncated tokenizer.json is named
    tok = AutoTokenizer.from_pretrained(ident, **({"gguf_file": gguf_file} if gguf_file else {}))
    if tok.pad_token is None:
        if tok.eos_token is None:
            raise ValueError(f"tokenizer {ident!r} has neither a pad nor an eos token to pad with")
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"
    return tok
