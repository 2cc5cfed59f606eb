"""``embtune validate-params``: validate and print the resolved parameters.

Why a driver apart from :mod:`embtune.plan.config` (which loads, layers and validates): the
arguments, the printed JSON and the exit status live here. A params error is printed on stderr
and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from embtune.core.errors import EXIT_DATA_ERROR
from embtune.plan.config import ParamsError, load_params

STAGE = "validate-params"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets (later wins)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = load_params(args.files)
    except ParamsError as err:
        print(err, file=sys.stderr)
        return EXIT_DATA_ERROR
    json.dump(params, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0
