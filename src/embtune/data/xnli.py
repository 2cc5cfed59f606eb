"""XNLI (15 languages) -> one long table, every pair checked in every language; the
``prepare-xnli`` stage (driver: :mod:`embtune.stages.prepare_xnli`).

Paper 2 (App. F) compares each pair across all 15 x 15 language combinations, which only makes
sense if row ``i`` is the same pair (same label) in every language. The hub repo stores one parquet
per language and split (``<lang>/<split>-00000-of-00001.parquet``); a local directory with the same
layout is accepted too (the offline demo). ``pair_id`` is the row position within a language.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from embtune.core.io import read_parquet
from embtune.data.jsonl import DataError
from embtune.data.sources import is_hf_uri, parse_hf_uri

LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}
TEXT_COLUMNS = ("premise", "hypothesis")


def relative_file(lang: str, split: str) -> str:
    return f"{lang}/{split}-00000-of-00001.parquet"


def local_resolver(root: str) -> Callable[[str], Path]:
    """Map an in-repo path to a file under a local directory laid out like the hub repo."""
    def resolve(rel: str) -> Path:
        path = Path(root) / rel
        if not path.is_file():
            raise DataError(f"{path}: file not found (expected hub layout <lang>/<split>-00000-of-00001.parquet)")
        return path
    return resolve


def hub_resolver(uri: str) -> Callable[[str], Path]:
    """Map an in-repo path to a cached download from ``hf://datasets/<org>/<name>``."""
    parts = uri.rstrip("/")[len("hf://datasets/"):].split("/")
    if not uri.startswith("hf://datasets/") or len(parts) != 2 or not all(parts):
        raise DataError(f"{uri}: expected hf://datasets/<org>/<name>")

    def resolve(rel: str) -> Path:
        from huggingface_hub import hf_hub_download

        parse_hf_uri(f"{uri.rstrip('/')}/{rel}")  # validates the combined URI
        return Path(hf_hub_download(repo_id="/".join(parts), filename=rel, repo_type="dataset"))
    return resolve


def resolver(source: str) -> Callable[[str], Path]:
    """The hub resolver for an ``hf://`` source, else the local-directory one."""
    return hub_resolver(source) if is_hf_uri(source) else local_resolver(source)


def read_language(path: Path, lang: str) -> pl.DataFrame:
    """Read one language file and validate columns, types, labels and texts (errors name the row)."""
    frame = read_parquet(path, f"the XNLI {lang} table (columns premise, hypothesis, label)")
    missing = [c for c in (*TEXT_COLUMNS, "label") if c not in frame.columns]
    if missing:
        raise DataError(f"{path} ({lang}): missing column(s) {missing}")
    frame = frame.select(*TEXT_COLUMNS, "label")
    for col in TEXT_COLUMNS:
        if frame[col].dtype != pl.String:
            raise DataError(f"{path} ({lang}): column {col!r} has type {frame[col].dtype}, expected string")
        bad = frame.with_row_index("row").filter(pl.col(col).is_null() | (pl.col(col).str.strip_chars() == ""))
        if bad.height:
            raise DataError(f"{path} ({lang}): row {bad['row'][0]}: empty {col} ({bad.height} such rows)")
    if not frame["label"].dtype.is_integer():
        raise DataError(f"{path} ({lang}): column 'label' has type {frame['label'].dtype}, expected integer")
    bad = frame.with_row_index("row").filter(~pl.col("label").is_in(list(LABELS)) | pl.col("label").is_null())
    if bad.height:
        raise DataError(f"{path} ({lang}): row {bad['row'][0]}: label {bad['label'][0]} not in 0/1/2")
    if frame.height == 0:
        raise DataError(f"{path} ({lang}): no rows")
    return frame


def premise_ids(frame: pl.DataFrame) -> pl.Series:
    """Per row, the first row holding the same premise: XNLI pairs each premise with one
    hypothesis per label, so these ids are the same in every translation of the same rows."""
    rows = frame.select("premise").with_row_index("row")
    return rows.select(pl.col("row").min().over("premise").alias("premise_id"))["premise_id"]


def check_aligned(frames: dict[str, pl.DataFrame]) -> None:
    """Every language must have the same number of pairs, the same label sequence and the same
    premise ids per row (rows moved within a label keep the labels but not the premises)."""
    ref_lang = next(iter(frames))
    ref = frames[ref_lang]["label"]
    ref_ids = premise_ids(frames[ref_lang])
    for lang, frame in frames.items():
        if frame.height != len(ref):
            raise DataError(f"language {lang!r} has {frame.height} pairs, {ref_lang!r} has {len(ref)}")
        diff = (frame["label"] != ref).arg_true()
        if len(diff):
            i = int(diff[0])
            raise DataError(f"language {lang!r}: pair {i} has label {frame['label'][i]}, "
                            f"{ref_lang!r} has {ref[i]} ({len(diff)} pairs differ)")
        moved = (premise_ids(frame) != ref_ids).arg_true()
        if len(moved):
            i = int(moved[0])
            raise DataError(f"language {lang!r}: pair {i} has the premise first seen at pair "
                            f"{premise_ids(frame)[i]}, {ref_lang!r} at pair {ref_ids[i]} ({len(moved)} pairs "
                            "differ); expected the languages' rows aligned (same premise ids per row)")


#: the translation check needs enough rows to tell a correlation from noise (r·sqrt(n) >> 1)
TRANSLATION_MIN_ROWS = 90
#: translations of the same hypotheses have correlated lengths (relative to their premise's other
#: hypotheses): r >= 0.61 for every demo language against English; hypotheses rotated within a
#: label give r <= 0.28, entailment swapped with contradiction r < 0
TRANSLATION_MIN_R = 0.4


def _length_residuals(frame: pl.DataFrame) -> pl.Series:
    """log hypothesis length minus its premise's mean: what sets a hypothesis apart from the
    other hypotheses of its premise, and stays with it through translation."""
    return frame.select(
        (pl.col("hypothesis").str.len_chars().cast(pl.Float64).log1p()
         - pl.col("hypothesis").str.len_chars().cast(pl.Float64).log1p().mean().over(premise_ids(frame)))
        .alias("r"))["r"]


def check_translations(frames: dict[str, pl.DataFrame]) -> None:
    """A cheap cross-lingual check that row i of every language is a translation of row i of the
    first: hypothesis lengths (within their premise) must correlate across languages. Labels and
    premises aligned (:func:`check_aligned`) do not catch hypotheses rotated within a label or
    entailment swapped with contradiction; this does. Skipped below
    :data:`TRANSLATION_MIN_ROWS` rows, where a correlation says nothing."""
    ref_lang = next(iter(frames))
    if frames[ref_lang].height < TRANSLATION_MIN_ROWS:
        return
    ref = _length_residuals(frames[ref_lang])
    for lang, frame in list(frames.items())[1:]:
        r = pl.DataFrame({"a": ref, "b": _length_residuals(frame)}).select(pl.corr("a", "b"))[0, 0]
        if r is None or not r >= TRANSLATION_MIN_R:
            raise DataError(f"language {lang!r}: hypothesis lengths correlate with {ref_lang!r} at r = "
                            f"{r if r is None else round(r, 3)} over {frame.height} pairs; expected r >= "
                            f"{TRANSLATION_MIN_R} for translations of the same rows (hypotheses moved between "
                            "rows, e.g. rotated within a label or entailment swapped with contradiction?)")


def first_premises(frames: dict[str, pl.DataFrame], n: int) -> dict[str, pl.DataFrame]:
    """The rows of the first ``n`` premises (in order of first appearance) with all their
    hypotheses. The languages are aligned (:func:`check_aligned`), so the premise ids of the
    first language select the same rows, and pairs, in every language."""
    ids = premise_ids(next(iter(frames.values())))
    keep = ids.is_in(ids.unique(maintain_order=True).head(n))
    return {lang: f.filter(keep) for lang, f in frames.items()}


def long_table(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Stack languages (in the given order) into pair_id, label, language, premise, hypothesis."""
    parts = [
        f.with_row_index("pair_id").select(
            pl.col("pair_id").cast(pl.Int64),
            pl.col("label").replace_strict(LABELS, return_dtype=pl.String),
            pl.lit(lang, dtype=pl.String).alias("language"),
            pl.col("premise"), pl.col("hypothesis"),
        )
        for lang, f in frames.items()
    ]
    return pl.concat(parts)
