"""``embtune model-card``: render a paper-1 run's model card again, with its MTEB scores.

Why a command: the card is written at training time, before evaluation; the training stage's
``model/`` folder must not be rewritten by a later stage (Snakemake would see the model as
changed), so publishing a model with its scores is a separate, explicit step.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.layout import MANIFEST_JSON, METRICS_JSON, MTEB_JSON, MTEB_RESULTS
from embtune.models.st_export import training_card


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="embtune model-card", description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", type=Path, required=True, help="a paper-1 run directory (runs/<run_id>)")
    ap.add_argument("--out", type=Path, required=True,
                    help="where to write the card, e.g. <run>/model/README.md before publishing the model")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Render a paper-1 run's card with its MTEB scores (``mteb.json``) once they exist."""
    from embtune.io import read_json, write_text

    args = _parse(argv)
    metrics = read_json(args.run_dir / METRICS_JSON)
    manifest = read_json(args.run_dir / MANIFEST_JSON)
    mteb_path = args.run_dir / MTEB_JSON
    mteb = read_json(mteb_path) if mteb_path.is_file() else None
    from embtune.evaluate.mteb_card import hub_eval_results

    scores = hub_eval_results(args.run_dir / MTEB_RESULTS) if mteb else []
    write_text(args.out, training_card(metrics, manifest.get("run", {}), manifest, mteb, scores))
    print(f"model-card: {args.out} ({'with' if mteb else 'without'} MTEB scores)")
    return 0
