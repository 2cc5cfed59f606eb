"""``embtune build-arxiv-negatives``: arXiv snapshot (or the published file) -> arxiv-negatives
and the triplet tables, with a manifest.

Why a driver module apart from :mod:`embtune.data.arxiv_negatives`: the library computes on
papers it is given; reading the snapshot twice (category sizes, then the selected papers, so
only ~12% of a 2M-paper snapshot is ever in memory), the arguments and the output directory are
I/O and live here. The output directory is written whole into a temporary sibling and renamed
into place, so a killed run leaves either the previous complete output or none, never a mix.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embtune.core.layout import ARXIV_NEGATIVES, MANIFEST_JSON, arxiv_narrow_name, arxiv_triplets_name
from embtune.data.arxiv_negatives import (
    CATEGORY_MATCH,
    CATEGORY_TIES,
    PAPER_ALL_DISTINCT,
    check_selection,
    distinct_share,
    kept_categories,
    make_triplets,
    narrow_split,
    negatives_for,
    negatives_table,
    select_papers,
)
from embtune.data.arxiv_records import Drops, Paper, no_valid_papers, parse_lines, parse_published, resolve_ids
from embtune.data.jensen_shannon import DEFAULT_WORK
from embtune.data.jsonl import DataError, open_text

STAGE = "build-arxiv-negatives"


# --------------------------------------------------------------------------------------------

def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    with open_text(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            yield line_no, line


def _published_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Lines of the published file: JSONL as is, or the items of one JSON array (the hub file
    ``arxiv_10K_jsclosest.json`` may be either), numbered from 1."""
    with open_text(path) as fh:
        head = fh.read(1 << 16).lstrip()
    first = head.split("\n", 1)[0]
    try:
        json.loads(first)
        is_jsonl = True
    except json.JSONDecodeError:
        is_jsonl = not head.startswith("[")
    if is_jsonl:
        yield from _numbered_lines(path)
        return
    with open_text(path) as fh:
        try:
            items = json.load(fh)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from None
    for i, item in enumerate(items, start=1):
        yield i, json.dumps(item)


def _log(message: str, t0: tuple[float, float]) -> None:
    """Progress with wall and CPU seconds since ``t0 = (perf_counter, process_time)`` (on a
    shared machine only CPU time compares)."""
    wall, cpu = time.perf_counter() - t0[0], time.process_time() - t0[1]
    print(f"{STAGE}: [{wall:7.1f}s wall, {cpu:7.1f}s cpu] {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"embtune {STAGE}", description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=("build", "published"), default="build")
    ap.add_argument("--snapshot", type=Path, help="arxiv-metadata-oai-snapshot JSONL (build)")
    ap.add_argument("--published", type=Path, help="primer-ai/arxiv-negatives JSONL (published)")
    ap.add_argument("--max-category-size", type=int, default=10000,
                    help="select papers having a category with at most this many papers")
    ap.add_argument("--category-match", choices=CATEGORY_MATCH, default="all",
                    help="categories the prefix match sorts and matches: all of a paper's "
                         "(App. B.2, default) or only those within --max-category-size")
    ap.add_argument("--category-ties", choices=CATEGORY_TIES, default="listed",
                    help="order of equal-size categories: as listed in the snapshot (a stable "
                         "sort, default) or by name")
    ap.add_argument("--n-negatives", type=int, default=20)
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 21])
    ap.add_argument("--flavours", nargs="+", choices=("first", "title"), default=["first", "title"])
    ap.add_argument("--narrow-domains", nargs="*", default=["math", "physics", "cs"])
    ap.add_argument("--narrow-level", type=int, default=None,
                    help="difficulty level of the narrow tuning triplets (default: the random, "
                         "easiest one, n_negatives + 1, as used throughout paper 2)")
    ap.add_argument("--narrow-val-fraction", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--allow-bad-lines", type=int, default=0,
                    help="unparsable snapshot lines tolerated (counted in the manifest); more is an error")
    ap.add_argument("--work", type=int, default=DEFAULT_WORK, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, required=True)
    return ap


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    total = args.n_negatives + 1
    if args.n_negatives < 1 or args.max_category_size < 1:
        ap.error("--n-negatives and --max-category-size must be >= 1")
    bad = [lv for lv in args.levels if not 1 <= lv <= total]
    if bad:
        ap.error(f"--levels must be within 1..{total}; got {bad}")
    if args.narrow_level is not None and not 1 <= args.narrow_level <= total:
        ap.error(f"--narrow-level must be within 1..{total}")
    if not 0.0 <= args.narrow_val_fraction < 1.0:
        ap.error("--narrow-val-fraction must be in [0, 1)")
    src = args.snapshot if args.source == "build" else args.published
    if src is None:
        ap.error(f"--source {args.source} needs --{'snapshot' if args.source == 'build' else 'published'}")


def _frame(cols: dict[str, list[Any]], negatives: bool = False) -> Any:
    import polars as pl

    schema: dict[str, Any] = {c: pl.Utf8 for c in cols}
    if negatives:
        schema["negatives"] = pl.List(pl.Utf8)
    return pl.DataFrame(cols, schema=schema)


def check_bad_lines(drops: Drops, allowed: int, source: str) -> None:
    """More unparsable lines than ``allowed`` is an error: a truncated snapshot drops its last
    line and changes every category size, so the selection would silently differ."""
    bad = drops.counts["bad_json"]
    if bad > allowed:
        examples = ", ".join(drops.examples["bad_json"][:3])
        raise DataError(f"{source}: {bad} unparsable line(s) (e.g. {examples}); expected at most {allowed} "
                        "(data.arxiv.allow_bad_lines); a truncated or damaged snapshot?")


def _build(args: argparse.Namespace, drops: Drops, t0: tuple[float, float]
           ) -> tuple[list[Paper], np.ndarray, dict[str, Any]]:
    """Two passes over the snapshot: category sizes of every paper, then the selected papers."""
    src = args.snapshot
    sizes: Counter[str] = Counter()
    n_valid = 0
    for paper in parse_lines(_numbered_lines(src), str(src), drops):
        sizes.update(set(paper.categories.split()))
        n_valid += 1
    if not n_valid:
        raise no_valid_papers(str(src), drops)
    check_bad_lines(drops, args.allow_bad_lines, str(src))
    kept = kept_categories(sizes, args.max_category_size)
    selected = select_papers(parse_lines(_numbered_lines(src), str(src)), kept)
    check_selection(len(selected), sizes, args.max_category_size)
    if len(selected) - 1 < args.n_negatives:
        raise DataError(f"{src}: {len(selected)} papers selected, so each has {len(selected) - 1} others; "
                        f"expected at least --n-negatives {args.n_negatives} other papers to draw negatives from")
    _log(f"read {n_valid} valid papers, selected {len(selected)}", t0)
    negs, info = negatives_for(selected, sizes, kept, args.n_negatives, args.seed, args.work,
                               match=args.category_match, ties=args.category_ties)
    return selected, negs, {"n_valid_papers": n_valid, "n_categories": len(sizes), **info}


def _published(args: argparse.Namespace, drops: Drops
               ) -> tuple[list[Paper], np.ndarray, dict[str, Any], list[list[str]]]:
    """Published rows, their negatives as row indices (-1: id not in the file) and the ids."""
    src = args.published
    selected, neg_ids = parse_published(_published_lines(src), str(src), args.n_negatives + 1,
                                        drops)
    check_bad_lines(drops, args.allow_bad_lines, str(src))
    if not selected:
        raise DataError(f"{src}: no usable rows")
    negs = resolve_ids(selected, neg_ids)
    code: dict[str, int] = {}  # ids as integers, so ids missing from the file still compare
    codes = np.asarray([[code.setdefault(x, len(code)) for x in row] for row in neg_ids])
    info = {"n_selected": len(selected), "negative_ids_not_found": int((negs < 0).sum()),
            **distinct_share(codes, args.n_negatives)}
    return selected, negs, info, neg_ids


def _write_outputs(out: Path, args: argparse.Namespace, selected: Sequence[Paper],
                   negs: np.ndarray, table: dict[str, list[Any]]
                   ) -> tuple[dict[str, int], dict[str, Any], int]:
    """Every table of the stage under ``out`` (``paths.processed``/arxiv; file names from
    :mod:`embtune.core.layout`, which the readers use too): (rows per file, triplet drops, narrow level)."""
    from embtune.core.io import write_parquet

    outputs: dict[str, int] = {}
    triplet_drops: dict[str, Any] = {}
    write_parquet(out / ARXIV_NEGATIVES, _frame(table, negatives=True))
    outputs[ARXIV_NEGATIVES] = len(selected)
    for flavour in args.flavours:
        for level in sorted(set(args.levels)):
            name = arxiv_triplets_name(flavour, level)
            tdrops = Drops()
            cols = make_triplets(selected, negs, flavour, level, tdrops)
            triplet_drops[name] = tdrops.as_dict()
            write_parquet(out / name, _frame(cols))
            outputs[name] = len(cols["anchor"])
    narrow_level = args.narrow_level or args.n_negatives + 1
    if args.narrow_domains:
        tdrops = Drops()
        cols = make_triplets(selected, negs, "first", narrow_level, tdrops)
        triplet_drops[f"narrow_* (first, L{narrow_level}, before the domain filter)"] = \
            tdrops.as_dict()
        for domain in args.narrow_domains:
            for split, part in zip(("train", "val"),
                                   narrow_split(cols, domain, args.narrow_val_fraction, args.seed)):
                name = arxiv_narrow_name(domain, split)
                write_parquet(out / name, _frame(part))
                outputs[name] = len(part["anchor"])
    return outputs, triplet_drops, narrow_level


def main(argv: Sequence[str] | None = None) -> int:
    from embtune.core.io import atomic_path, provenance, sha256_file, write_json

    ap = _parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    t0 = (time.perf_counter(), time.process_time())
    drops = Drops()
    try:
        if args.source == "build":
            src = args.snapshot
            selected, negs, info = _build(args, drops, t0)
            table = negatives_table(selected, negs)
        else:
            src = args.published
            selected, negs, info, neg_ids = _published(args, drops)
            table = negatives_table(selected, negs)
            table["negatives"] = [list(r) for r in neg_ids]  # keep ids absent from the file
    except DataError as err:
        print(f"embtune {STAGE}: error: {err}", file=sys.stderr)
        return 2   # a data error: one line, exit 2 (the CLI convention, embtune.core.errors)
    _log(f"{len(selected)} papers with negatives; {info['all_distinct']} "
         f"({info['all_distinct_share']:.1%}) have {args.n_negatives} different nearest "
         f"negatives (paper 2, App. B.2: {PAPER_ALL_DISTINCT[0]} of {PAPER_ALL_DISTINCT[1]}, "
         f"{info['all_distinct_share_paper']:.1%}, on the real snapshot)", t0)
    with atomic_path(args.out) as out:  # the whole directory, renamed into place at the end
        out.mkdir()
        outputs, triplet_drops, narrow_level = _write_outputs(out, args, selected, negs, table)
        manifest = provenance(
            stable=True, stage=STAGE, source=args.source,
            input={"path": str(src), "sha256": sha256_file(src)},
            params={"max_category_size": args.max_category_size, "n_negatives": args.n_negatives,
                    "levels": sorted(set(args.levels)), "flavours": list(args.flavours),
                    "narrow_domains": list(args.narrow_domains), "narrow_level": narrow_level,
                    "narrow_val_fraction": args.narrow_val_fraction, "seed": args.seed,
                    "js_log_base": "e", "category_match": args.category_match,
                    "category_ties": args.category_ties,
                    "category_order": "size over the whole snapshot, smallest first"},
            input_drops=drops.as_dict(), triplet_drops=triplet_drops, stats=info,
            bad_lines=drops.counts["bad_json"], allow_bad_lines=args.allow_bad_lines,
            outputs=outputs)
        write_json(out / MANIFEST_JSON, manifest)
    _log(f"wrote {args.out} ({sum(drops.counts.values())} input lines dropped)", t0)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
