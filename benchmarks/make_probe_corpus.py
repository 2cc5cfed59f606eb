"""Write a pre-training corpus for probing the demo's tiny models: the docstrings of installed
packages, read with ``ast`` (never imported), one per paragraph-free line block.

Why: the demo pre-trains its tiny suite on ~107k tokens (data/demo/corpus), so its base models
start fine-tuning near chance. ``benchmarks/probe_demo_grid.py`` can fine-tune base models built on
a larger corpus (``embtune build-model --corpus <this file>``) to measure what better pre-training
changes in the loss curves (docs/fidelity.md#P1-DEMO-GRID). The default packages are installed
with embtune and are none of those the demo's fine-tuning pairs come from
(workflow/scripts/make_demo_pairs.py ``PYDOC_PACKAGES``), so pre-training never sees a pair.

    .venv/bin/python benchmarks/make_probe_corpus.py --out /tmp/probe/corpus.txt
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import re
from pathlib import Path

PACKAGES = ("pandas", "scikit-learn", "matplotlib", "SQLAlchemy", "pyarrow", "mteb", "PuLP", "fonttools",
            "cryptography", "Pygments", "dulwich", "aiohttp", "snakemake", "setuptools", "peft",
            "huggingface-hub", "pillow", "sentence-transformers", "hypothesis", "pydantic", "narwhals", "mpmath",
            "pip", "datasets", "accelerate", "dvc", "Jinja2", "PyYAML", "requests", "urllib3", "click", "rich",
            "tqdm", "jsonschema", "fsspec")
MIN_CHARS = 40


def docstrings(path: Path) -> list[str]:
    """Module, class and function docstrings of one file, whitespace folded to single spaces."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    nodes = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    docs = (ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, nodes))
    return [re.sub(r"\s+", " ", d).strip() for d in docs if d and len(d) > MIN_CHARS]


def package_docs(dist: str) -> list[str]:
    """Every docstring of an installed distribution's .py files, in sorted file order."""
    d = importlib.metadata.distribution(dist)
    files = sorted(Path(d.locate_file(f)) for f in d.files or [] if str(f).endswith(".py"))
    return [doc for f in files if f.is_file() for doc in docstrings(f)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--packages", nargs="*", default=list(PACKAGES))
    args = ap.parse_args(argv)
    texts, missing = [], []
    for dist in args.packages:
        try:
            texts += package_docs(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n\n".join(texts), encoding="utf-8")
    print(f"{len(texts)} docstrings, {sum(map(len, texts))} characters -> {args.out}"
          + (f" (not installed: {', '.join(missing)})" if missing else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
