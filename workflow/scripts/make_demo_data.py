"""Generate the shipped offline demo data under data/demo/{corpus,bge,msmarco,xnli}/.

Kept for provenance only: the generated files are committed and the demo never re-runs this.
All text is real English: Python standard-library docstrings (parsed with ``ast``, never
imported, so no module side effects) and the license texts in /usr/share/common-licenses. The
XNLI pairs come from data/demo/xnli-source/pairs.tsv (see its README.md; built by
workflow/scripts/build_demo_xnli.py, which this script calls). Files written:

  corpus/licenses.txt, corpus/stdlib-docstrings-{0,1,2}.txt   ~1.5 MB prose (BPE + LM pre-training)
  bge/pairs.jsonl          FlagEmbedding {query, pos, neg}: docstring summary -> body,
                           "what does <name> do" -> summary (+ body), license sentence -> rest
  msmarco/msmarco-triplets.jsonl.gz   1465 samples, ~30% list form [q, pos, neg], others dict
                           form with 1-3 positives and 1-12 negatives (same-module docstrings)
  xnli/<lang>/test-00000-of-00001.parquet   premise, hypothesis, label (0/1/2), hub layout

BGE and MSMARCO use disjoint quarters of the documented names (crc32 bucket) so MSMARCO
evaluation passages are not BGE training pairs.

Usage: python workflow/scripts/make_demo_data.py [--out data/demo] [--seed 0]
Output depends on the Python version's stdlib text (generated with CPython 3.11).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
import random
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "turtledemo",
             "ensurepip", "config-3.11-x86_64-linux-gnu"}
LICENSE_DIR = Path("/usr/share/common-licenses")
CORPUS_BYTES = 2_000_000
BGE_PAIRS = 7000
MSMARCO_SAMPLES = 1465          # every distinct query of the MSMARCO quarter (CPython 3.11 stdlib)
PASSAGE_CHARS = 480


@dataclass(frozen=True)
class Doc:
    """One documented object: dotted name, its summary line and the prose that follows."""

    name: str
    summary: str
    body: str


def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS)
             and not p.name.startswith("test_")]
    return sorted(files, key=lambda p: str(p.relative_to(root)))


def module_name(path: Path) -> str:
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def prose(text: str) -> str:
    """Drop doctest/code lines and collapse whitespace inside paragraphs; keep paragraph breaks."""
    paras = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in para.splitlines()]
        if any(ln.startswith((">>>", "...", "$ ", "%")) for ln in lines):
            continue
        joined = " ".join(ln for ln in lines if ln)
        words = re.findall(r"[A-Za-z]+", joined)
        if len(words) >= 4 and sum(c.isalpha() or c.isspace() for c in joined) > 0.8 * len(joined):
            paras.append(joined)
    return "\n\n".join(paras)


def iter_docs(path: Path) -> Iterator[Doc]:
    """Module, class and function docstrings of one file, in source order."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return
    for name, node in documented(tree, module_name(path)):
        doc = ast.get_docstring(node)
        if not doc:
            continue
        text = prose(doc)
        if not text:
            continue
        summary, _, body = text.partition("\n\n")
        yield Doc(name, summary.strip(), body.strip())


def documented(node: ast.AST, name: str) -> Iterator[tuple[str, ast.AST]]:
    """The node and its public classes/functions, named ``module.Class.method``."""
    yield name, node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not child.name.startswith("_"):
            yield from documented(child, f"{name}.{child.name}")


def clip(text: str, limit: int = PASSAGE_CHARS) -> str:
    """Cut at a sentence end before ``limit`` characters (or a word end) so passages stay prose."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return cut[:end + 1] if end > limit // 3 else cut[:cut.rfind(" ")] + "."


def humanise(name: str) -> str:
    return name.rsplit(".", 1)[-1].replace("_", " ").strip()


def license_paragraphs() -> list[str]:
    paras: list[str] = []
    for path in sorted(LICENSE_DIR.iterdir()):
        if path.is_file() and not path.is_symlink():
            text = path.read_text(encoding="utf-8", errors="replace")
            paras += [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 8]
    return paras


def write_corpus(out: Path, docs: list[Doc]) -> None:
    """~2 MB of prose in a few files: licenses first, then docstrings until the byte budget."""
    out.mkdir(parents=True, exist_ok=True)
    lic = "\n\n".join(license_paragraphs()) + "\n"
    (out / "licenses.txt").write_text(lic, encoding="utf-8")
    budget, buf, size, seen = CORPUS_BYTES - len(lic.encode()), [], 0, set()
    for doc in docs:
        paras = [p for p in (doc.summary, *doc.body.split("\n\n")) if p and p not in seen]
        seen.update(paras)  # boilerplate (copyright lines) appears once, not per module
        if not paras:
            continue
        para = "\n\n".join(paras) + "\n\n"
        buf.append(para)
        size += len(para.encode())
        if size >= budget:
            break
    text = "".join(buf)
    chunk = len(text) // 3 + 1
    for part in range(3):
        (out / f"stdlib-docstrings-{part}.txt").write_text(text[part * chunk:(part + 1) * chunk], encoding="utf-8")


def bge_pairs(docs: list[Doc], rng: random.Random) -> list[dict]:
    """FlagEmbedding pairs: summary -> body, and "what does X do" -> summary (+ body)."""
    bodies = [clip(d.body) for d in docs if len(d.body) >= 80]
    pairs = []
    for d in docs:
        if len(d.body) >= 80 and len(d.summary.split()) >= 3:
            pairs.append({"query": d.summary, "pos": [clip(d.body)]})
        if len(d.summary.split()) >= 4:
            pos = clip(d.summary + (" " + d.body if d.body else ""))
            pairs.append({"query": f"what does {d.name} do", "pos": [pos]})
    for para in license_paragraphs():  # first sentence -> rest of the paragraph
        first, sep, rest = para.partition(". ")
        if sep and len(first.split()) >= 5 and len(rest.split()) >= 10:
            pairs.append({"query": first + ".", "pos": [clip(rest)]})
    rng.shuffle(pairs)
    pairs = pairs[:BGE_PAIRS]
    for p in pairs:
        p["neg"] = [b for b in rng.sample(bodies, 2) if b != p["pos"][0]][:1]
    return pairs


def msmarco_samples(docs: list[Doc], rng: random.Random) -> list[object]:
    """Retrieval-like samples: a question about an object; positives are its docstring
    paragraphs; negatives are docstrings of other objects in the same module (hard-ish)."""
    by_module: dict[str, list[Doc]] = {}
    for d in docs:
        by_module.setdefault(d.name.rsplit(".", 1)[0], []).append(d)
    candidates = [d for d in docs if len(d.summary.split()) >= 4 and "." in d.name]
    rng.shuffle(candidates)
    samples: list[object] = []
    queries: set[str] = set()
    for d in candidates:
        siblings = [clip(s.summary + " " + s.body) for s in by_module[d.name.rsplit(".", 1)[0]] if s.name != d.name]
        others = [clip(o.summary + " " + o.body) for o in rng.sample(docs, 12) if o.name != d.name]
        negatives = list(dict.fromkeys(siblings[:10] + others))
        paras = [d.summary] + [p for p in d.body.split("\n\n") if len(p.split()) >= 6]
        positives = [clip(" ".join(paras[:2]))] + [clip(p) for p in paras[2:4]]
        query = rng.choice(["what does {} do", "what is {} for", "how to use {} in python",
                            "{} python documentation"]).format(humanise(d.name) if rng.random() < 0.5 else d.name)
        form = rng.random()
        n_neg = rng.choice([1, 2, 3, 5, 8, 9, 10, 12]) if form >= 0.3 else 0
        # One sample per query (its random draws still made, so the others stay as they were):
        # split-msmarco refuses an eval query that is also a train/val query, as paper 2's
        # held-out numbers need (two objects can humanise to the same name, e.g. "reset").
        if query in queries:
            continue
        queries.add(query)
        if form < 0.3:
            samples.append([query, positives[0], negatives[0]])
        else:
            samples.append({"query": query, "pos": positives, "neg": negatives[:n_neg]})
        if len(samples) == MSMARCO_SAMPLES:
            break
    return samples


def write_jsonl(path: Path, rows: list[object], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as fh:  # mtime=0: reproducible
            fh.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


def write_xnli(out: Path) -> None:
    """Delegates to build_demo_xnli.py: the pairs live in data/demo/xnli-source/pairs.tsv."""
    from build_demo_xnli import language_frames, read_source, write_language_files

    write_language_files(language_frames(read_source(Path(__file__).parents[2] / "data/demo/xnli-source/pairs.tsv")), out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/demo")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    docs = [d for f in stdlib_files() for d in iter_docs(f)]
    # Disjoint halves (by name hash) so MSMARCO passages are not BGE training text.
    msm_docs = [d for d in docs if hash_bucket(d.name) == 0]
    write_corpus(out / "corpus", docs)
    write_jsonl(out / "bge" / "pairs.jsonl", bge_pairs([d for d in docs if hash_bucket(d.name)], random.Random(args.seed)))
    write_jsonl(out / "msmarco" / "msmarco-triplets.jsonl.gz", msmarco_samples(msm_docs, random.Random(args.seed + 1)), gz=True)
    write_xnli(out / "xnli")


def hash_bucket(name: str, n: int = 4) -> int:
    """Stable (not PYTHONHASHSEED-dependent) bucket of a name."""
    import zlib

    return zlib.crc32(name.encode()) % n


if __name__ == "__main__":
    main()
