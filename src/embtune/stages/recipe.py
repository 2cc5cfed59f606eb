"""Stage ``recipe``: Algorithm 1 — budget in, method/model/data/hyper-parameters out.

Why a driver apart from :mod:`embtune.scaling.recipe`: the library makes the recipe from fits,
a runs table and the model suite; the arguments, reading fits.json and the runs table, writing
recipe.json and printing it with its warnings live here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from embtune.core.errors import DataError
from embtune.core.io import write_json
from embtune.scaling.artifacts import check_budget, nonfinite_fields, read_fits, read_runs_table
from embtune.scaling.recipe import make_recipe
from embtune.scaling.recipe_trust import METHOD_SETS

STAGE = "recipe"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, required=True)
    ap.add_argument("--fits", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--suite-json", default=None, help="the params `models` list as JSON")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--tokens-per-pair", type=float, default=None)
    ap.add_argument("--method-set", choices=METHOD_SETS, default="paper",
                    help="paper: Algorithm 1 returns full fine-tuning or LoRA (§4.4); any: every fitted method")
    ap.add_argument("--out", type=Path, required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    suite = json.loads(args.suite_json) if args.suite_json else None
    budget = check_budget(args.budget)
    fits = read_fits(args.fits)
    runs = read_runs_table(args.runs)
    recipe = make_recipe(budget, fits, runs, suite=suite,
                         batch_size=args.batch_size, tokens_per_pair=args.tokens_per_pair,
                         method_set=args.method_set)
    bad = list(nonfinite_fields(recipe))
    if bad:   # never write a NaN recipe: its inputs hold something the readers above let through
        raise DataError(f"{args.fits}: the recipe at budget {budget:g} came out NaN/inf in {', '.join(bad[:3])}; "
                        "expected fits and runs that give a finite recipe")
    lost = {m: v for m, v in (fits.get("lost_rows") or {}).items() if v.get("count")}
    if lost:        # failed runs (embtune.train.failures): the recipe stands on fewer rows; say which
        recipe["lost_rows"] = {m: v["count"] for m, v in lost.items()}
        recipe["warnings"] = [*recipe["warnings"], "the fits lost rows to failed runs: " + "; ".join(
            f"{m} {v['count']} ({', '.join(r['run_id'] + ': ' + r['reason'] for r in v['runs'])})"
            for m, v in lost.items())]
    write_json(args.out, recipe)
    print(json.dumps(recipe, indent=2, sort_keys=True))
    for w in recipe["warnings"]:
        print(f"WARNING: {w}")
    return 0
