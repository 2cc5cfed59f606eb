"""A tiny byte-level BPE tokenizer for data-stage tests (built in memory, no hub access)."""

from __future__ import annotations

from pathlib import Path

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Return the absolute value of the argument.",
    "How many people live in the capital of France?",
    "Paris is the capital and most populous city of France.",
    "A tokenizer splits text into pieces that a model can read.",
    "Embeddings map sentences to vectors in a shared space.",
] * 20


def build_tiny_tokenizer(out_dir: Path, vocab_size: int = 300) -> Path:
    """Train a byte-level BPE on a few sentences and save it as a fast HF tokenizer dir.

    Why byte-level: every string (any language, any symbol) tokenises, as with the real one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|pad|>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(SENTENCES, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|endoftext|>")
    fast.save_pretrained(str(out_dir))
    return out_dir
