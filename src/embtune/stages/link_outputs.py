"""``embtune link-outputs``: hard-link one run's outputs out of a batch job's folder.

Why a stage and not a ``run:`` block in the rule: Snakemake spawns every ``run:`` job as a new
``snakemake`` process that parses the whole workflow again (and so expands the study's plan);
for ``evaluate_mteb`` that was ~5 s per run in the demo (376 of its 3,630 job-seconds) and, at
paper scale, one workflow parse per run on the login node. This stage starts in a fraction of
a second: it imports nothing beyond :mod:`embtune.core.io`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from embtune.core import io
from embtune.core.errors import DataError

STAGE = "link-outputs"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="the batch job's folder of this run")
    ap.add_argument("--out", type=Path, nargs="+", required=True,
                    help="outputs, each linked from SRC/<its name>, in this order (commit marker last)")
    ap.add_argument("--extra", type=Path, nargs="*", default=[],
                    help="linked first, from SRC/<its name>, where SRC has it (an undeclared folder a run "
                         "may write beside its outputs: LoRA's trained_merged/)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        io.link_tree(args.src, [p for p in args.extra if (args.src / p.name).exists()])
        io.link_tree(args.src, args.out)
    except FileNotFoundError as e:
        raise DataError(str(e)) from None
    print(f"{STAGE}: {len(args.out)} outputs linked from {args.src}")
    return 0
