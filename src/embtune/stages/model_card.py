"""``embtune model-card``: render a run's model card again, with its MTEB scores.

Why a command: the card is written at training time, before evaluation; the training stage's
``trained/`` folder must not be rewritten by a later stage (Snakemake would see the model as
changed), so evaluate-mteb writes the card with scores into the run's ``model/``, and this
command prints the same card anywhere (``embtune publish`` writes it into the folder it uploads).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="embtune model-card", description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True,
                    help="a run directory (runs/<run_id> or query_runs/<model>/<qrun_id>)")
    ap.add_argument("--out", type=Path, required=True, help="where to write the card (a Markdown file)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Render a run's card with its MTEB scores (``mteb.json``) once they exist."""
    from embtune.core.io import write_text
    from embtune.evaluate.publish import publishable

    args = _parse(argv)
    item = publishable(args.run_dir)
    write_text(args.out, item.card)
    scores = "with MTEB scores" if "model-index" in item.card else "without MTEB scores"
    print(f"model-card: {args.out} ({scores}{'' if item.official_scores else ', none official'})")
    return 0
