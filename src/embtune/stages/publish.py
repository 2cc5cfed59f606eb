"""``embtune publish``: a finished run's model, with its card, as a Hub repository.

The folder uploaded is the run's ``model/`` as evaluate-mteb wrote it: the run's
sentence-transformers model (the merged one for LoRA) as hard links, and its card with
``model-index`` from the run's MTEB results (flagged when they come from a local subsample) and
``base_model`` = the Hub id the base weights come from, or none for a model built here
(:mod:`embtune.evaluate.publish`). With ``--out``, or for a run without that folder (not
MTEB-evaluated, or a query run), the same folder is written to ``--out`` (default
``publish/<repo name>``) first. Upload is huggingface_hub's ``upload_folder`` to ``$HF_ENDPOINT``
(the Hub by default); ``--no-upload`` stops after the folder.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")


def _repo_id(value: str) -> str:
    if not REPO_ID.match(value) or ".." in value:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a Hub repo id <owner>/<name> "
                                         "(letters, digits, '_', '.', '-')")
    return value


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="embtune publish", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, help="a finished run: runs/<run_id> or query_runs/<model>/<qrun_id>")
    ap.add_argument("--repo-id", type=_repo_id, required=True, help="the Hub repository, <owner>/<name>")
    ap.add_argument("--out", type=Path, default=None,
                    help="write the folder to upload here (default: the run's model/ as evaluation wrote it, "
                         "else publish/<repo name>)")
    ap.add_argument("--private", action="store_true", help="create the repository private")
    ap.add_argument("--no-upload", action="store_true", help="write the folder only")
    ap.add_argument("--token", default=None, help="a Hub token (default: huggingface_hub's login or $HF_TOKEN)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from embtune.evaluate.publish import CARD, evaluated_model, publishable, stage_folder, upload

    args = _parser().parse_args(argv)
    item = publishable(args.run_dir)          # a finished run, or a clear error
    out = evaluated_model(args.run_dir) if args.out is None else None
    if out is not None:
        card, source = out.joinpath(CARD).read_text(encoding="utf-8"), "the run's own, as evaluation wrote it"
    else:
        out = args.out or Path("publish") / args.repo_id.split("/")[1]
        stage_folder(item, out)
        card, source = item.card, f"written from {item.model_dir.name}/"
    print(f"publish: {out} ({item.kind}, {source}; card with "
          f"{'model-index' if 'model-index' in card else 'no MTEB scores'}"
          f"{'' if item.official_scores else ', scores flagged as a local subsample'})")
    if args.no_upload:
        return 0
    url = upload(out, args.repo_id, private=args.private, token=args.token,
                 commit_message=f"embtune publish {args.run_dir.name}")
    print(f"publish: uploaded to {args.repo_id}: {url}")
    return 0
