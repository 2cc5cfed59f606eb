"""``embtune validate-params``: validate and print the resolved parameters.

Why a driver apart from :mod:`embtune.plan.config` (which loads, layers and validates): the
arguments, the printed JSON and the exit status live here. A params error is printed on stderr
and exits 1.

``--out FILE`` writes them as YAML instead: dvc.yaml's ``config@<preset>`` stage writes each
study's resolved parameters to ``<results>/params.yaml``, and that study's DVC stages read their
``params`` from it, so `dvc exp show` / `dvc params diff` show the values the study ran with
(the demo's, not params.yaml's paper-scale ones under the demo's metrics).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import EXIT_DATA_ERROR
from embtune.plan.config import ParamsError, load_params

STAGE = "validate-params"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets (later wins)")
    ap.add_argument("--out", type=Path, default=None, help="write the resolved parameters to this YAML file")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = load_params(args.files)
    except ParamsError as err:
        print(err, file=sys.stderr)
        return EXIT_DATA_ERROR
    if args.out is not None:
        import yaml

        from embtune.core.io import write_text

        header = (f"# The resolved parameters of {' + '.join(args.files)}, written by embtune {STAGE}: what\n"
                  "# this study runs with (dvc.yaml reads its stages' params here). Edit the files above, not this.\n")
        write_text(args.out, header + yaml.safe_dump(params, sort_keys=True, allow_unicode=True))
        print(f"{STAGE}: {' + '.join(args.files)} -> {args.out}")
        return 0
    json.dump(params, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0
