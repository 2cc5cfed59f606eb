"""Stage ``build-tokenizer``: the tokenizer shared by the decoder suite.

Why a driver apart from :mod:`embtune.models.tokenizer`: the library trains or loads a tokenizer
and returns it; the arguments, which source needs which flag, and the output folder (written in a
temporary sibling and renamed into place, with its manifest) live here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import DataError
from embtune.core.io import atomic_path, provenance, write_json
from embtune.models.tokenizer import expand_globs, load_pretrained, train_bpe

STAGE = "build-tokenizer"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=("train", "hub", "local", "gguf"), required=True)
    ap.add_argument("--corpus", nargs="+", default=[], help="text files/globs (--source train)")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--id", help="hub id or directory (--source hub|local); directory or package (gguf)")
    ap.add_argument("--gguf-file", help="file name inside --id (--source gguf; default: its only .gguf)")
    ap.add_argument("--staged", help="--source hub: the store folder the login node staged it into (read offline)")
    ap.add_argument("--revision", default="main", help="--source hub: the revision staged (recorded)")
    ap.add_argument("--out", required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.source == "train":
        if not args.corpus:
            raise DataError(f"{STAGE}: --source train needs --corpus")
        try:
            files = expand_globs(args.corpus)
        except FileNotFoundError as err:
            raise DataError(f"{STAGE}: --corpus: {err}") from None
        tok = train_bpe(files, args.vocab_size)
        origin = {"source": "train", "corpus": files, "vocab_size": args.vocab_size}
    else:
        if not args.id:
            raise DataError(f"{STAGE}: --source {args.source} needs --id")
        if args.source == "local" and not Path(args.id).is_dir():
            raise DataError(f"{STAGE}: --id {args.id}: directory not found")
        if args.source == "gguf":
            from embtune.models.gguf import resolve_gguf

            folder, name = resolve_gguf(args.id, args.gguf_file, "tokenizer")
            tok, origin = load_pretrained(folder, name), {"source": "gguf", "id": args.id, "gguf_file": name}
        elif args.source == "hub" and args.staged:
            from embtune.data.store import require_staged

            folder = require_staged(args.staged, f"{args.id}@{args.revision}")
            tok, origin = load_pretrained(str(folder)), {"source": "hub", "id": args.id, "revision": args.revision}
        else:
            tok, origin = load_pretrained(args.id), {"source": args.source, "id": args.id}
    with atomic_path(args.out) as tmp:
        tok.save_pretrained(str(tmp))
        write_json(tmp / "manifest.json", provenance(stable=True, stage=STAGE, vocab=len(tok), **origin))
    print(f"{STAGE}: {len(tok)} tokens -> {args.out}")
    return 0
