"""``embtune validate-params``: validate and print the resolved parameters."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from embtune.config import ParamsError, load_params


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="embtune validate-params", description=__doc__)
    ap.add_argument("files", nargs="*", default=["params.yaml"], help="params.yaml then presets (later wins)")
    args = ap.parse_args(argv)
    try:
        params = load_params(args.files)
    except ParamsError as err:
        print(err, file=sys.stderr)
        return 1
    json.dump(params, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0
