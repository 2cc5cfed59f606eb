"""``embtune publish``: a finished run's model, with its card, as a Hub repository.

The folder uploaded is ``--out`` (default ``publish/<repo name>``): the run's sentence-transformers
model (the merged one for LoRA) as hard links, and its card with ``model-index`` from the run's
MTEB results (flagged when they come from a local subsample) and ``base_model`` = the Hub id the
base weights come from (:mod:`embtune.evaluate.publish`). Upload is huggingface_hub's
``upload_folder`` to ``$HF_ENDPOINT`` (the Hub by default); ``--no-upload`` stops after the folder.
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
    ap.add_argument("--out", type=Path, default=None, help="the folder to upload (default: publish/<repo name>)")
    ap.add_argument("--private", action="store_true", help="create the repository private")
    ap.add_argument("--no-upload", action="store_true", help="write the folder only")
    ap.add_argument("--token", default=None, help="a Hub token (default: huggingface_hub's login or $HF_TOKEN)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from embtune.evaluate.publish import publishable, stage_folder, upload

    args = _parser().parse_args(argv)
    out = args.out or Path("publish") / args.repo_id.split("/")[1]
    item = publishable(args.run_dir)
    stage_folder(item, out)
    print(f"publish: {out} ({item.kind} from {item.model_dir.name}/; card with "
          f"{'model-index' if 'model-index' in item.card else 'no MTEB scores'}"
          f"{'' if item.official_scores else ', scores flagged as a local subsample'})")
    if args.no_upload:
        return 0
    url = upload(out, args.repo_id, private=args.private, token=args.token,
                 commit_message=f"embtune publish {args.run_dir.name}")
    print(f"publish: uploaded to {args.repo_id}: {url}")
    return 0
