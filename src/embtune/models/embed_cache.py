"""Persistent embedding cache: each unique text is embedded once per (model, tower, prefix,
precision, max length). The vectors are the encoder's raw (pre-``Normalize``) output; normalised
ones are derived where asked for (docs/fidelity.md#P2-DIST-EMBEDDINGS).

Why: PND evaluation re-embeds the same texts many times — XNLI sentences appear in 225 language
pairs, MSMARCO passages repeat across samples, and every tuned query tower is evaluated against
the *same* frozen document tower. Keying embeddings by (model fingerprint, tower, prefix,
precision, text) makes the document side a one-off cost per base model and makes re-runs free;
with the compute precision in the key, fp32 and bf16 embeddings of a text never mix. It also
makes a text's embedding unique (padding in different batches can otherwise change the last
bits), which PND's exact tie counting relies on.

Precision (``fp32`` default, ``bf16`` named option): :mod:`embtune.models.encoders`.

Layout: ``<cache_dir>/<key>/meta.json`` plus append-only shards ``part-<digest>.npz`` holding
``hashes`` (sha256 of the prefixed text, 32-byte rows) and ``emb`` (float32). A shard is written
atomically (``embtune.core.io.atomic_path``) and named by its content digest, so a killed job never
leaves a half-written shard and concurrent writers never clobber each other.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, sha256_file, write_json
from embtune.models.encoders import OUTPUT_TAG, PRECISIONS, Encoder, check_precision, local_folder

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model")
SKIP_DIRS = frozenset({"onnx", "openvino", ".git", "checkpoints"})


def model_fingerprint(path_or_id: str) -> str:
    """sha256 over the weight/config files of a model folder (relative path + content hash).

    A hub id that is not a local folder is resolved through the local HF cache; when that fails
    the id string itself is the fingerprint (documented limitation: a changed hub revision under
    the same id would then reuse stale embeddings)."""
    folder = local_folder(path_or_id)
    if folder is None:
        return hashlib.sha256(f"id:{path_or_id}".encode()).hexdigest()
    digest = hashlib.sha256()
    for file in _weight_files(folder):
        digest.update(f"{file.relative_to(folder).as_posix()}\0{sha256_file(file)}\n".encode())
    return digest.hexdigest()


def _weight_files(folder: Path) -> list[Path]:
    files = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        files += [Path(root) / n for n in names if n.endswith(WEIGHT_SUFFIXES)]
    return sorted(files)


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class EncodeStats:
    """Work actually done by the encoder (the benchmark compares it with a naive count)."""

    texts_requested: int = 0
    texts_encoded: int = 0
    forward_passes: int = 0
    per_store: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"texts_requested": self.texts_requested, "texts_encoded": self.texts_encoded,
                "forward_passes": self.forward_passes, "per_store": self.per_store}


class EmbedCache:
    """On-disk embeddings for one cache directory; see the module docstring for the layout."""

    def __init__(self, cache_dir: str | os.PathLike[str], progress: bool = True) -> None:
        self.root = Path(cache_dir)
        self.progress = progress
        self.stats = EncodeStats()
        self._loaded: dict[str, dict[bytes, np.ndarray]] = {}

    def embed(self, encoder: Encoder, fingerprint: str, tower: str, prefix: str,
              texts: Sequence[str], batch_size: int) -> np.ndarray:
        """float32 embeddings of ``prefix + text`` for each text, encoding only unseen texts.
        The store is chosen by (fingerprint, tower, prefix, ``encoder.precision``)."""
        precision = getattr(encoder, "precision", None)
        if precision is None:
            raise TypeError(f"{type(encoder).__name__} has no .precision: the cache key needs the "
                            f"precision the embeddings are computed in ({', '.join(PRECISIONS)})")
        max_len = getattr(encoder, "max_seq_length", None)
        key = store_key(fingerprint, tower, prefix, precision, max_len)
        store = self._store(key, fingerprint, tower, prefix, precision, max_len)
        full = [prefix + t for t in texts]
        hashes = [text_hash(t) for t in full]
        missing = _unique_missing(full, hashes, store)
        if missing:
            new = self._encode(encoder, missing, batch_size, f"{tower}:{key[:8]}")
            self._append(key, [text_hash(t) for t in missing], new)
        self._count(key, len(full), len(missing), _n_batches(len(missing), batch_size))
        if not full:
            return np.zeros((0, 0), dtype=np.float32)
        _check_widths(self.root / key, {len(store[h]) for h in hashes}, _pooling_width(encoder))
        return np.stack([store[h] for h in hashes]).astype(np.float32, copy=False)

    def _store(self, key: str, fingerprint: str, tower: str, prefix: str,
               precision: str, max_seq_length: int | None = None) -> dict[bytes, np.ndarray]:
        if key not in self._loaded:
            folder = self.root / key
            meta = {"fingerprint": fingerprint, "tower": tower, "prefix": prefix, "precision": precision,
                    "output": OUTPUT_TAG, "max_seq_length": max_seq_length}
            if not (folder / "meta.json").exists():
                write_json(folder / "meta.json", meta)
            else:
                check_meta(folder / "meta.json", meta)
            self._loaded[key] = _read_shards(folder)
        return self._loaded[key]

    def _encode(self, encoder: Encoder, texts: list[str], batch_size: int, desc: str) -> np.ndarray:
        """Length-sorted batches (less padding); results returned in the input order."""
        from embtune.jobs.progress import iterate

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[np.ndarray] = []
        starts = range(0, len(order), batch_size)
        for start in iterate(starts, f"encode {desc}", unit="batch", enable=self.progress):
            batch = [texts[i] for i in order[start:start + batch_size]]
            out.append(np.asarray(encoder.encode(batch, batch_size), dtype=np.float32))
        emb = np.concatenate(out)
        result = np.empty_like(emb)
        result[np.asarray(order)] = emb
        return result

    def _append(self, key: str, hashes: list[bytes], emb: np.ndarray) -> None:
        hash_arr = np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(len(hashes), 32)
        digest = shard_digest(hash_arr, emb)
        with atomic_path(self.root / key / f"part-{digest}.npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, hashes=hash_arr, emb=emb)
        store = self._loaded[key]
        for h, row in zip(hashes, emb):
            store[h] = row

    def _count(self, key: str, requested: int, encoded: int, passes: int) -> None:
        s = self.stats
        s.texts_requested += requested
        s.texts_encoded += encoded
        s.forward_passes += passes
        entry = s.per_store.setdefault(key, {"texts_requested": 0, "texts_encoded": 0,
                                             "forward_passes": 0})
        entry["texts_requested"] += requested
        entry["texts_encoded"] += encoded
        entry["forward_passes"] += passes


def store_key(fingerprint: str, tower: str, prefix: str, precision: str,
              max_seq_length: int | None = None) -> str:
    """Directory name of one (model, tower, prefix, precision, output, max length) store: every
    input that changes the vectors. ``output`` is :data:`OUTPUT_TAG` (raw, pre-``Normalize``
    vectors); ``max_seq_length`` None means the model folder's own, which the fingerprint covers."""
    payload = json.dumps([fingerprint, tower, prefix, check_precision(precision), OUTPUT_TAG,
                          max_seq_length]).encode()
    return hashlib.sha256(payload).hexdigest()[:24]


def _unique_missing(texts: list[str], hashes: list[bytes], store: dict[bytes, np.ndarray]) -> list[str]:
    seen: set[bytes] = set()
    missing = []
    for text, h in zip(texts, hashes):
        if h not in store and h not in seen:
            seen.add(h)
            missing.append(text)
    return missing


def _n_batches(n: int, batch_size: int) -> int:
    return -(-n // batch_size)


def shard_digest(hashes: np.ndarray, emb: np.ndarray) -> str:
    """The checksum a shard is named by: sha256 of its text hashes and its vectors."""
    return hashlib.sha256(hashes.tobytes() + emb.tobytes()).hexdigest()[:16]


def check_meta(path: Path, expected: dict[str, str]) -> None:
    """A store's meta.json must name the model fingerprint (and tower, prefix, precision) its
    key was made from; anything else means its vectors belong to another model."""
    from embtune.core.errors import DataError
    from embtune.core.io import read_json

    meta = read_json(path)
    if not isinstance(meta, dict):
        raise DataError(f"{path}: not an object; expected the embedding store's meta.json")
    for field_name, want in expected.items():
        if meta.get(field_name) != want:
            raise DataError(f"{path}: field {field_name!r} is {str(meta.get(field_name))[:16]!r}, expected "
                            f"{str(want)[:16]!r} (these embeddings are another model's; delete {path.parent})")


def _pooling_width(encoder: Encoder) -> int | None:
    """The embedding width a sentence-transformers folder declares (its pooling config), if any."""
    path = getattr(encoder, "path", None)
    config = Path(path) / "1_Pooling" / "config.json" if isinstance(path, str) else None
    if config is None or not config.is_file():
        return None
    try:
        width = json.loads(config.read_text(encoding="utf-8")).get("word_embedding_dimension")
    except (OSError, ValueError, AttributeError):
        return None
    return width if isinstance(width, int) and not isinstance(width, bool) else None


def _check_widths(folder: Path, widths: set[int], expected: int | None) -> None:
    """One width for every vector of a store, the encoder's when it declares one: a cache shard
    of another width (cut, or from another model) would otherwise be used as if it fitted."""
    if len(widths) > 1 or (expected is not None and widths and widths != {expected}):
        want = f"the encoder's width {expected}" if expected is not None else "one width"
        raise DataError(f"{folder}: cached embeddings of width(s) {sorted(widths)}; expected {want} "
                        "(delete this cache folder to encode again)")


def _verified(shard: Path) -> tuple[np.ndarray, np.ndarray] | str:
    """(hashes, emb) of a shard whose content matches the checksum in its name, or why not."""
    import zipfile

    try:
        with np.load(shard, allow_pickle=False) as data:
            hashes, emb = np.asarray(data["hashes"]), np.asarray(data["emb"])
    except (zipfile.BadZipFile, ValueError, OSError, KeyError, EOFError) as err:
        return f"unreadable ({type(err).__name__})"
    if hashes.ndim != 2 or hashes.shape[1] != 32 or hashes.dtype != np.uint8 or emb.ndim != 2 \
            or emb.dtype != np.float32 or len(emb) != len(hashes):
        return "wrong shapes or types"
    if shard_digest(hashes, emb) != shard.stem.removeprefix("part-"):
        return "content does not match its checksum"
    if not np.isfinite(emb).all():
        return "NaN/inf vectors"
    return hashes, emb


def _read_shards(folder: Path) -> dict[bytes, np.ndarray]:
    """Every shard whose content matches its checksum; any other is set aside (renamed to
    ``*.corrupt``, named on stderr) and its texts are encoded again: never used."""
    import sys

    store: dict[bytes, np.ndarray] = {}
    for shard in sorted(folder.glob("part-*.npz")):
        got = _verified(shard)
        if isinstance(got, str):
            shard.replace(shard.with_name(shard.name + ".corrupt"))
            print(f"embed-cache: warning: {shard}: {got}; set aside, its texts are encoded again",
                  file=sys.stderr)
            continue
        for h, row in zip(*got):
            store[h.tobytes()] = row
    return store
