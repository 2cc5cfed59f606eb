"""The PND evaluation-set registry: the schema, the layout and the query
tables read it; a set evaluated but in no table is an error; the ``arxiv-`` prefix is parsed in
:mod:`embtune.core.pnd_sets` only; a toy set registered from this test reaches the query tables."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from embtune.core import pnd_sets
from embtune.core.errors import DataError
from embtune.core.layout import PND_FILES, XNLI_TEST, Processed
from embtune.core.pnd_sets import PndSet
from embtune.evaluate import query_table
from embtune.plan.config import load_schema

SRC = Path(__file__).resolve().parents[3] / "src" / "embtune"
#: Written out by hand: paper 2's sets as Tables 1 and 2 and App. A, C, D, G, H name them.
PAPER_SETS = ("msmarco", "msmarco-hard", "arxiv-first", "arxiv-title", "xnli", "squad", "squad-min5",
              "hotpotqa-easy", "hotpotqa-medium", "hotpotqa-hard")


def test_the_schema_enum_is_the_registry() -> None:
    enum = load_schema()["properties"]["query_tuning"]["properties"]["evaluate_on"]["items"]["enum"]
    assert tuple(enum) == pnd_sets.names() == PAPER_SETS


def test_layout_and_tables_read_the_registry() -> None:
    assert PND_FILES == {n: pnd_sets.get(n).file for n in PAPER_SETS if n != "xnli"}
    assert XNLI_TEST == "xnli/test.parquet" and PND_FILES["msmarco-hard"] == "msmarco/eval_hard.parquet"
    processed = Processed(Path("p"))
    assert processed.pnd_file("squad-min5") == Path("p/squad/eval_min5.parquet")
    assert processed.pnd_source("xnli") == Path("p/xnli/test.parquet")
    assert query_table.DATASETS == ("msmarco", "arxiv-first", "arxiv-title")
    assert query_table.TABLE2_DATASETS == ("msmarco-hard", "squad", "squad-min5", "hotpotqa-easy",
                                           "hotpotqa-medium", "hotpotqa-hard")
    assert pnd_sets.arxiv_sets() == ("arxiv-first", "arxiv-title")
    with pytest.raises(ValueError, match="unknown PND dataset 'nope'"):
        processed.pnd_file("nope")


def test_arxiv_ids_parsed_in_one_place() -> None:
    assert pnd_sets.arxiv_domain("arxiv-math") == "math" and pnd_sets.arxiv_domain("msmarco") is None
    assert pnd_sets.arxiv_domain(None) is None
    assert pnd_sets.arxiv_set("first") == "arxiv-first" and pnd_sets.arxiv_set("title", 7) == "arxiv-title-L7"
    assert pnd_sets.base_set("arxiv-first-L7") == "arxiv-first"
    assert pnd_sets.base_set("arxiv-title!math") == "arxiv-title"
    assert pnd_sets.base_set("arxiv-first-Lx") == "arxiv-first-Lx" and pnd_sets.base_set("xnli") == "xnli"


def _prefix_parses(path: Path) -> list[int]:
    """Lines that parse an ``arxiv-`` prefix: ``x.startswith("arxiv-")``, ``removeprefix``,
    ``split``/``partition`` on it, or a regular expression beginning ``^arxiv-``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            attr = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            text = node.args[0].value
            if (attr in ("startswith", "removeprefix", "split", "partition") and text.startswith("arxiv")) \
                    or (attr in ("compile", "match") and text.startswith("^arxiv-")):
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_registry_parses_the_arxiv_prefix(tmp_path) -> None:
    found = {str(p.relative_to(SRC)): lines for p in sorted(SRC.rglob("*.py"))
             if p.name != "pnd_sets.py" and (lines := _prefix_parses(p))}
    assert found == {}
    bad = tmp_path / "m.py"
    bad.write_text('import re\na = x.startswith("arxiv-")\nb = re.compile(r"^arxiv-(first)")\nc = y.split("!")\n')
    assert _prefix_parses(bad) == [2, 3]


def _entry(errors: int, total: int = 40) -> dict:
    return {"cos": {"errors": errors, "total": total, "per_query_rate": errors / total}}


def test_a_toy_set_reaches_table2_and_an_unregistered_one_is_an_error() -> None:
    """Registered from the test alone: its rows come out of the query table's reader, in
    Table 2; once unregistered the same pnd.json files are refused by name, not dropped."""
    base = {"msmarco": _entry(10), "toy-qa": _entry(20), "arxiv_levels": {}}
    tuned = {"msmarco": _entry(8), "toy-qa": _entry(15), "arxiv_levels": {}}
    toy = PndSet(name="toy-qa", file="toy/eval.parquet", kind="grouped", table="table2", column="toy-qa",
                 short="TOY", prepare="prepare-toy", demo="data.toy")
    pnd_sets.register(toy)
    try:
        rows = query_table.dataset_rows("m", "default", base, tuned, 1.96,
                                        datasets=(*pnd_sets.in_table("table1"), *pnd_sets.in_table("table2")))
        got = {r["dataset"]: (r["errors_base"], r["errors_tuned"], r["improvement"]) for r in rows}
        assert got == {"msmarco": (10, 8, pytest.approx(20.0)), "toy-qa": (20, 15, pytest.approx(25.0))}
        assert Processed(Path("p")).pnd_file("toy-qa") == Path("p/toy/eval.parquet")
        assert "toy-qa" in pnd_sets.in_table("table2")
    finally:
        pnd_sets.unregister("toy-qa")
    with pytest.raises(DataError, match=r"m/base/pnd.json: evaluation set 'toy-qa' is in no query table"):
        query_table.dataset_rows("m", "default", base, tuned, 1.96)
