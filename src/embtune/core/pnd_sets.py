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
- ``loader``: the module that reads its raw files (a set of an existing kind with a loader of
  its own: SQuAD, HotpotQA). Every set of one loader is written together, by one generic stage
  (``embtune prepare-pnd <source>``, :mod:`embtune.stages.prepare_pnd`) and one rule generated
  per source (:func:`prepare_rule`), into the folder its ``file`` names (the *source*: ``squad``,
  ``hotpotqa``), with the options of its ``data.<source>`` params section
  (:mod:`embtune.data.pnd_loader` has the loader's protocol);
- ``prepare``: the ``embtune`` stage that writes its file (``prepare-pnd`` for a loader's set;
  MSMARCO, arxiv and XNLI have stages of their own, as their data serve query tuning too or
  come as one table);
- ``demo``: the ``data.*`` params section its data comes from (the demo preset points each at
  the small local sample under ``tests/data``);
- ``arxiv_flavour``: ``first``/``title`` for the arxiv sets, which alone have paper categories:
  App. K's domain exclusions and App. H's difficulty levels apply to them only.

Adding a set of an existing kind takes its :func:`register` call (naming its loader), the loader
and its data (with the loader's ``data.<source>`` schema section); the rule, the stage, its
paths, dvc.yaml's lists and the hub downloads follow from the registry
(tests/contracts/test_pnd_set_registry.py). A new ``kind`` also takes its reader in evaluate-pnd.
The schema enum is held equal to :func:`names` by tests/unit/evaluate/test_pnd_sets.py.

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
#: the stage that writes every set with a ``loader``
PREPARE_PND = "prepare-pnd"


@dataclass(frozen=True, kw_only=True)
class PndSet:
    name: str
    file: str
    kind: str
    table: str
    column: str
    short: str
    demo: str
    prepare: str = PREPARE_PND
    loader: str | None = None
    arxiv_flavour: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.table not in TABLES:
            raise ValueError(f"PND set {self.name!r}: kind {self.kind!r} (one of {KINDS}), "
                             f"table {self.table!r} (one of {TABLES})")
        if (self.loader is None) == (self.prepare == PREPARE_PND):
            raise ValueError(f"PND set {self.name!r}: a loader module goes with stage {PREPARE_PND!r} "
                             f"(got loader {self.loader!r}, prepare {self.prepare!r})")
        if self.loader is not None and (self.file.count("/") != 1 or self.demo != f"data.{self.source}"):
            raise ValueError(f"PND set {self.name!r}: a loader's set lives in <source>/<file> with its "
                             f"options in data.<source> (got file {self.file!r}, demo {self.demo!r})")

    @property
    def source(self) -> str:
        """The folder under ``paths.processed`` its file lies in (a loader's output folder)."""
        return self.file.split("/", 1)[0]


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


def sources() -> dict[str, str]:
    """Source -> loader module of every set with a loader, in registry order: one generated
    ``prepare_<source>`` rule, one folder and one ``data.<source>`` params section each."""
    out: dict[str, str] = {}
    for s in _REGISTRY.values():
        if s.loader is not None and out.setdefault(s.source, s.loader) != s.loader:
            raise ValueError(f"PND source {s.source!r}: sets name two loaders ({out[s.source]!r}, {s.loader!r})")
    return out


def prepare_rule(source: str) -> str:
    """The Snakemake rule (and log) name of a source's preparation, generated per source in
    workflow/rules/data.smk and listed in dvc.yaml's data phase."""
    return f"prepare_{source}"


def loader_of(source: str) -> str:
    """The loader module of a source (:func:`sources`)."""
    try:
        return sources()[source]
    except KeyError:
        raise ValueError(f"unknown PND source {source!r} (expected one of {', '.join(sources())})") from None


def source_sets(source: str) -> tuple[str, ...]:
    """The sets one loader writes, in registry order."""
    return tuple(n for n, s in _REGISTRY.items() if s.loader is not None and s.source == source)


def source_files(data: dict) -> list[str]:
    """Every raw file (``data.<source>.files``) the loaders' sources read, for the hub download
    list; a source the params leave out reads none."""
    return [f for source in sources() for f in (data.get(source) or {}).get("files", [])]


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
           short="squad", demo="data.squad", loader="embtune.data.squad"),
    # App. C: >= 5 candidate sentences
    PndSet(name="squad-min5", file="squad/eval_min5.parquet", kind="grouped", table="table2", column="squad-min5",
           short="squad-min5", demo="data.squad", loader="embtune.data.squad"),
    # App. D, by HotpotQA's level label
    PndSet(name="hotpotqa-easy", file="hotpotqa/eval_easy.parquet", kind="grouped", table="table2", column="hotpotqa-easy",
           short="hotpotqa-easy", demo="data.hotpotqa", loader="embtune.data.hotpotqa"),
    PndSet(name="hotpotqa-medium", file="hotpotqa/eval_medium.parquet", kind="grouped", table="table2", column="hotpotqa-medium",
           short="hotpotqa-medium", demo="data.hotpotqa", loader="embtune.data.hotpotqa"),
    PndSet(name="hotpotqa-hard", file="hotpotqa/eval_hard.parquet", kind="grouped", table="table2", column="hotpotqa-hard",
           short="hotpotqa-hard", demo="data.hotpotqa", loader="embtune.data.hotpotqa"),
):
    register(_entry)
