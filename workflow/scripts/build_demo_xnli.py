"""Build the demo's XNLI-format parquet files from data/demo/xnli-source/pairs.tsv.

Writes data/demo/xnli/<lang>/test-00000-of-00001.parquet (premise, hypothesis, label; label 0 =
entailment, 1 = neutral, 2 = contradiction), the hub layout src/embtune/data/xnli.py reads. The
source TSV has one row per sentence: ``item`` (premise number), ``role`` (premise, entailment,
neutral, contradiction, in that order for every item) and one column per language. Each item gives
three pairs (its premise with each hypothesis, labels 0, 1, 2), so every language has the same
premises, hypotheses and labels in the same order. Provenance: data/demo/xnli-source/README.md.

Why 200 premises (600 pairs, 200 per label). Paper 2's XNLI PND counts, for one (query language,
text language) pair, every entailment pair whose sentences are not closer than those of a pair of
the other relation: N = n_entail x n_relation = n^2 comparisons with n pairs per label. The
pooled two-proportion z-test (src/embtune/evaluate/stats.py) then detects, at alpha = 0.05
two-sided with power 0.8, a change of about (1.96 + 0.84) sqrt(2 P (1 - P) / N) in the error rate P
(``embtune.evaluate.stats.min_detectable_difference``). With n = 200, N = 40,000:

    P = 0.10: 0.0059 absolute (5.9 % relative)    P = 0.20: 0.0079 (4.0 %)    P = 0.30: 0.0091 (3.0 %)

The former 40 pairs per label (N = 1,600) needed 0.030 / 0.040 / 0.045 (30 / 20 / 15 %); the
paper's 1,670 (N = 2,788,900) detect 0.0007 / 0.0009 / 0.0011 (0.7 / 0.5 / 0.4 %). The N comparisons reuse the same
200 premises, so they are not independent and the test (like the paper's) overstates certainty;
it is used here exactly as the paper uses it.

Usage: python workflow/scripts/build_demo_xnli.py [--source data/demo/xnli-source/pairs.tsv]
       [--out data/demo/xnli]. Deterministic: same TSV -> same frames (tests/unit/data/test_demo_xnli_source.py).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import unicodedata
from pathlib import Path

import polars as pl

LANGUAGES = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh")
ROLES = ("premise", "entailment", "neutral", "contradiction")  # hypotheses in label order 0, 1, 2
# The script every text of a language must use (a wrong-column paste fails loudly).
SCRIPTS = {
    "ar": r"[\u0600-\u06FF]", "ur": r"[\u0600-\u06FF]", "bg": r"[\u0400-\u04FF]",
    "ru": r"[\u0400-\u04FF]", "el": r"[\u0370-\u03FF\u1F00-\u1FFF]", "hi": r"[\u0900-\u097F]",
    "th": r"[\u0E00-\u0E7F]", "zh": r"[\u4E00-\u9FFF]",
}
NON_LATIN = r"[\u0370-\u03FF\u0400-\u04FF\u0600-\u06FF\u0900-\u097F\u0E00-\u0E7F\u4E00-\u9FFF]"


class SourceError(ValueError):
    """A malformed source TSV (message names file, line and column)."""


def read_source(path: Path) -> list[dict[str, dict[str, str]]]:
    """Items as ``[{role: {lang: text}}]``, validated (header, role order, scripts, NFC, no blanks)."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    header = ["item", "role", "en", *(lang for lang in LANGUAGES if lang != "en")]
    if not rows or rows[0] != header:
        raise SourceError(f"{path}: header must be {header}")
    items: list[dict[str, dict[str, str]]] = []
    for lineno, row in enumerate(rows[1:], start=2):
        where = f"{path}:{lineno}"
        if len(row) != len(header):
            raise SourceError(f"{where}: {len(row)} columns, expected {len(header)}")
        item, role, *texts = row
        k = len(items) if role == "premise" else len(items) - 1
        if role != ROLES[(lineno - 2) % 4] or item != str(k + 1):
            raise SourceError(f"{where}: expected item {(lineno - 2) // 4 + 1} role "
                              f"{ROLES[(lineno - 2) % 4]!r}, got item {item!r} role {role!r}")
        by_lang = dict(zip(header[2:], texts, strict=True))
        for lang, text in by_lang.items():
            _check_text(text, lang, f"{where} ({lang})")
        if role == "premise":
            items.append({})
        items[-1][role] = by_lang
    if not items or len(items[-1]) != len(ROLES):
        raise SourceError(f"{path}: the last item is incomplete (needs {len(ROLES)} rows)")
    premises = [it["premise"]["en"] for it in items]
    if len(set(premises)) != len(premises):
        dup = next(p for p in premises if premises.count(p) > 1)
        raise SourceError(f"{path}: premise repeated: {dup!r}")
    return items


def _check_text(text: str, lang: str, where: str) -> None:
    if not text.strip() or text != text.strip():
        raise SourceError(f"{where}: empty text or surrounding whitespace")
    if unicodedata.normalize("NFC", text) != text:
        raise SourceError(f"{where}: text is not NFC-normalised")
    if lang in SCRIPTS and not re.search(SCRIPTS[lang], text):
        raise SourceError(f"{where}: no character of the {lang} script in {text!r}")
    if lang not in SCRIPTS and re.search(NON_LATIN, text):
        raise SourceError(f"{where}: non-Latin script in the {lang} column: {text!r}")


def language_frames(items: list[dict[str, dict[str, str]]]) -> dict[str, pl.DataFrame]:
    """One XNLI-format frame per language: 3 pairs per item, labels 0, 1, 2, same order everywhere."""
    frames = {}
    for lang in LANGUAGES:
        premise, hypothesis, label = [], [], []
        for it in items:
            for lab, role in enumerate(ROLES[1:]):
                premise.append(it["premise"][lang])
                hypothesis.append(it[role][lang])
                label.append(lab)
        frames[lang] = pl.DataFrame({"premise": premise, "hypothesis": hypothesis, "label": label},
                                    schema={"premise": pl.String, "hypothesis": pl.String, "label": pl.Int64})
    return frames


def write_language_files(frames: dict[str, pl.DataFrame], out: Path) -> list[Path]:
    """Atomic writes (temp + rename) in the hub layout; no statistics so bytes are reproducible."""
    paths = []
    for lang, frame in frames.items():
        path = out / lang / "test-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".parquet.tmp")
        frame.write_parquet(tmp, compression="zstd", statistics=False)
        tmp.replace(path)
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="data/demo/xnli-source/pairs.tsv")
    ap.add_argument("--out", default="data/demo/xnli")
    args = ap.parse_args()
    try:
        items = read_source(Path(args.source))
    except SourceError as exc:  # data error: one line, exit 2
        print(f"build_demo_xnli: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    frames = language_frames(items)
    write_language_files(frames, Path(args.out))
    print(f"build_demo_xnli: {len(items)} premises x 3 labels = {3 * len(items)} pairs "
          f"in {len(frames)} languages -> {args.out}")


if __name__ == "__main__":
    main()
