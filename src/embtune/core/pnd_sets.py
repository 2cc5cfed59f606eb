"""The PND evaluation sets of paper 2: one registry, one declaration per set.

Why one registry: the list of sets is read in five places (the layout's file map, the params
schema's ``evaluate_on`` enum, the two query-table modules and the CI preset); kept apart, a copy
falls behind and the query tables silently drop a set they do not know. Each set here declares

- ``name``: its ``query_tuning.evaluate_on`` id and ``pnd.json`` key;
- ``file``: its file under ``paths.processed`` (:class:`embtune.core.layout.Processed` reads it here);
- ``kind``: how evaluate-pnd reads and scores it: ``grouped`` (one query per row with candidate
  lists: PND and the ranking metrics MRR, MAP, P@1), ``triplets`` (one anchor/positive/negative
  per row with arxiv categories), ``xnli`` (the multilingual pair table: error counts per
  language pair);
- ``table`` and ``column``: the query table that reports it (``table1``: Table 1's columns,
  ``table2``: Table 2's rows, ``xnli``: Table 1's XNLI counts) and its label there;
- ``short``: its name in Table 3 (App. G; the paper abbreviates Table 1's sets only);
- ``prepare``: the ``embtune`` stage that writes its file;
- ``demo``: the ``data.*`` params section its data comes from (the demo preset points each at
  the small local sample under ``tests/data``);
- ``arxiv_flavour``: ``first``/``title`` for the arxiv sets, which alone have paper categories:
  App. K's domain exclusions and App. H's difficulty levels apply to them only.

Adding a set takes a loader for a new ``kind`` (none for an existing one), one :func:`register`
call and its data; the schema enum is held equal to :func:`names` by tests/unit/evaluate/test_pnd_sets.py.

The ``arxiv-`` prefix of an arxiv set or a narrow tuning domain (``arxiv-math``, App. K) is
parsed here only (:func:`arxiv_domain`, :func:`arxiv_set`).
"""

from __future__ import annotations

from dataclasses import dataclass

ARXIV_PREFIX = "arxiv-"
#: evaluate-pnd's pnd.json keys that are not an evaluation set (no set may take these names)
PND_META_KEYS = ("encoder_calls", "arxiv_levels", "model", "over_length")
KINDS = ("grouped", "triplets", "xnli")
TABLES = ("table1", "table2", "xnli")


@dataclass(frozen=True, kw_only=True)
class PndSet:
    name: str
    file: str
    kind: str
    table: str
    column: str
    short: str
    prepare: str
    demo: str
    arxiv_flavour: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.table not in TABLES:
            raise ValueError(f"PND set {self.name!r}: kind {self.kind!r} (one of {KINDS}), "
                             f"table {self.table!r} (one of {TABLES})")


_REGISTRY: dict[str, PndSet] = {}


def register(entry: PndSet) -> PndSet:
    """Add a set (a test may register a toy one and :func:`unregister` it again)."""
    if entry.name in _REGISTRY or entry.name in PND_META_KEYS:
        raise ValueError(f"PND set {entry.name!r} is registered twice or is a pnd.json meta key")
    _REGISTRY[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def get(name: str) -> PndSet:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown PND dataset {name!r} (expected one of {', '.join(_REGISTRY)})") from None


def names() -> tuple[str, ...]:
    """Every set, in the schema enum's order."""
    return tuple(_REGISTRY)


def in_table(table: str) -> tuple[str, ...]:
    """The sets a query table reports, in its order."""
    return tuple(n for n, s in _REGISTRY.items() if s.table == table)


def arxiv_sets() -> tuple[str, ...]:
    """The sets with arxiv categories (App. K exclusions, App. H levels)."""
    return tuple(n for n, s in _REGISTRY.items() if s.arxiv_flavour)


def arxiv_domain(name: str | None) -> str | None:
    """``arxiv-math`` -> ``math`` (a narrow tuning domain or an arxiv flavour); None otherwise."""
    return name[len(ARXIV_PREFIX):] if name and name.startswith(ARXIV_PREFIX) else None


def arxiv_set(flavour: str, level: int | None = None) -> str:
    """The id of an arxiv flavour's set (``arxiv-first``), at a difficulty level (``arxiv-first-L7``)."""
    return f"{ARXIV_PREFIX}{flavour}" + ("" if level is None else f"-L{level}")


def base_set(key: str) -> str:
    """The registered set a ``pnd.json`` key belongs to: ``arxiv-first!math`` (App. K) and
    ``arxiv-first-L7`` (App. H) belong to ``arxiv-first``."""
    name = key.split("!", 1)[0]
    for n, s in _REGISTRY.items():
        if s.arxiv_flavour and name.startswith(n + "-L") and name[len(n) + 2:].isdigit():
            return n
    return name


for _entry in (
    PndSet(name="msmarco", file="msmarco/eval.parquet", kind="grouped", table="table1", column="msmarco",
           short="MM", prepare="split-msmarco", demo="data.msmarco"),
    # App. A: samples with >= data.msmarco.hard_negatives negatives
    PndSet(name="msmarco-hard", file="msmarco/eval_hard.parquet", kind="grouped", table="table2", column="msmarco-hard",
           short="MM-65", prepare="split-msmarco", demo="data.msmarco"),
    PndSet(name="arxiv-first", file="arxiv/triplets_first_L21.parquet", kind="triplets", table="table1", column="arxiv-first",
           short="ARX-F", prepare="build-arxiv-negatives", demo="data.arxiv", arxiv_flavour="first"),
    PndSet(name="arxiv-title", file="arxiv/triplets_title_L21.parquet", kind="triplets", table="table1", column="arxiv-title",
           short="ARX-T", prepare="build-arxiv-negatives", demo="data.arxiv", arxiv_flavour="title"),
    PndSet(name="xnli", file="xnli/test.parquet", kind="xnli", table="xnli", column="xnli",
           short="XNLI", prepare="prepare-xnli", demo="data.xnli"),
    PndSet(name="squad", file="squad/eval.parquet", kind="grouped", table="table2", column="squad",
           short="squad", prepare="prepare-squad", demo="data.squad"),
    # App. C: >= 5 candidate sentences
    PndSet(name="squad-min5", file="squad/eval_min5.parquet", kind="grouped", table="table2", column="squad-min5",
           short="squad-min5", prepare="prepare-squad", demo="data.squad"),
    # App. D, by HotpotQA's level label
    PndSet(name="hotpotqa-easy", file="hotpotqa/eval_easy.parquet", kind="grouped", table="table2", column="hotpotqa-easy",
           short="hotpotqa-easy", prepare="prepare-hotpotqa", demo="data.hotpotqa"),
    PndSet(name="hotpotqa-medium", file="hotpotqa/eval_medium.parquet", kind="grouped", table="table2", column="hotpotqa-medium",
           short="hotpotqa-medium", prepare="prepare-hotpotqa", demo="data.hotpotqa"),
    PndSet(name="hotpotqa-hard", file="hotpotqa/eval_hard.parquet", kind="grouped", table="table2", column="hotpotqa-hard",
           short="hotpotqa-hard", prepare="prepare-hotpotqa", demo="data.hotpotqa"),
):
    register(_entry)
