"""Data-preparation stages (fetch, prepare-bge, split-msmarco, prepare-xnli, ...).

Each stage module is pure functions plus a thin ``main(argv) -> int``; shared helpers (streaming
JSONL, the ``DataError`` exception) live in :mod:`embtune.data.jsonl`."""
