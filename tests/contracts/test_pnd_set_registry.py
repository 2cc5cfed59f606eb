"""A PND set of an existing kind is its registry entry, its loader and its data.

A toy ``grouped`` set is declared here the way a user would: a loader module (written to a temp
folder) and one :func:`embtune.core.pnd_sets.register` call naming it. With no other edit it reaches
the generic stage (``embtune prepare-pnd``, its arguments and output checks), the paths, the
rule's wildcard values and arguments, the hub downloads, dvc.yaml's lists and the rerun hash's
entries; and the paper's sources are named nowhere but in the registry, their loaders and the
schema.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from embtune.cli import main as cli_main
from embtune.core import codeversion, pnd_sets
from embtune.core.layout import Processed
from embtune.core.pnd_sets import PndSet
from embtune.data.pnd_loader import load, option_args
from embtune.plan.config import load_schema

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"

TOY_LOADER = '''
import json

import polars as pl

from embtune.data.pnd_loader import Option, Prepared

FILES_HELP = "toy questions, one JSON object per line: query, positives, negatives"
OPTIONS = (
    Option(key="min_negatives", type=int, default=1, help="drop questions with fewer negatives"),
    Option(key="lowercase", type=bool, default=False, help="lower-case every text"),
)


def prepare(files, settings):
    rows = [json.loads(line) for f in files for line in open(f, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if len(r["negatives"]) >= settings.min_negatives]
    if settings.lowercase:
        rows = [{k: v.lower() if isinstance(v, str) else [t.lower() for t in v] for k, v in r.items()}
                for r in rows]
    schema = {"query": pl.String, "positives": pl.List(pl.String), "negatives": pl.List(pl.String)}
    frame = pl.DataFrame(rows, schema=schema)
    return Prepared({"toyqa": frame}, {"rows": frame.height}, f"{frame.height} questions")
'''
TOY = PndSet(name="toyqa", file="toyqa/eval.parquet", kind="grouped", table="table2", column="toyqa",
             short="TQ", demo="data.toyqa", loader="toy_pnd_loader")


def _load_script():
    spec = importlib.util.spec_from_file_location("dvc_code_deps", REPO / "workflow/scripts/dvc_code_deps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PndSet:
    """The toy set registered (on a copy of the registry) with its loader importable."""
    (tmp_path / "toy_pnd_loader.py").write_text(TOY_LOADER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pnd_sets, "_REGISTRY", dict(pnd_sets._REGISTRY))
    pnd_sets.register(TOY)
    yield TOY
    sys.modules.pop("toy_pnd_loader", None)


def test_the_toy_set_is_prepared_by_the_generic_stage(toy: PndSet, tmp_path: Path) -> None:
    raw = tmp_path / "toy.jsonl"
    raw.write_text("\n".join(json.dumps(r) for r in [
        {"query": "Q1", "positives": ["A"], "negatives": ["B", "C"]},
        {"query": "Q2", "positives": ["D"], "negatives": ["E"]},          # one negative: dropped
        {"query": "Q3", "positives": ["F", "G"], "negatives": ["H", "I", "J"]}]) + "\n")
    section = {"files": [str(raw)], "min_negatives": 2, "lowercase": True}   # its data.toyqa section
    args = option_args(section)
    assert args == ["--min-negatives", "2", "--lowercase"]
    out = tmp_path / "processed" / "toyqa"
    assert cli_main(["prepare-pnd", "toyqa", "--files", str(raw), *args, "--out", str(out)]) == 0
    frame = pl.read_parquet(Processed(tmp_path / "processed").pnd_file("toyqa"))
    assert frame.to_dicts() == [{"query": "q1", "positives": ["a"], "negatives": ["b", "c"]},
                                {"query": "q3", "positives": ["f", "g"], "negatives": ["h", "i", "j"]}]
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["stage"], manifest["source"], manifest["rows"]) == ("prepare-pnd", "toyqa", 2)
    # the generic output check: an output over its own input is refused before any work
    assert cli_main(["prepare-pnd", "toyqa", "--files", str(raw), "--out", str(raw)]) == 2
    assert raw.read_text().startswith('{"query": "Q1"')


def test_the_toy_set_reaches_paths_rule_hub_downloads_and_hashes(toy: PndSet) -> None:
    processed = Processed(Path("p"))
    assert processed.pnd_file("toyqa") == Path("p/toyqa/eval.parquet")
    assert processed.pnd_source("toyqa") == processed.pnd_dir("toyqa") == Path("p/toyqa")
    # the generated rules (one per source) and each source's sets
    assert pnd_sets.prepare_rule("toyqa") == "prepare_toyqa"
    assert pnd_sets.sources() == {"squad": "embtune.data.squad", "hotpotqa": "embtune.data.hotpotqa",
                                  "toyqa": "toy_pnd_loader"}
    assert pnd_sets.source_sets("toyqa") == ("toyqa",) and "toyqa" in pnd_sets.in_table("table2")
    data = {"squad": {"files": ["hf://datasets/a/b/s.parquet"]}, "toyqa": {"files": ["hf://datasets/me/toy/t.jsonl"]}}
    assert pnd_sets.source_files(data) == ["hf://datasets/a/b/s.parquet", "hf://datasets/me/toy/t.jsonl"]
    # the stage runs the toy loader: its module is an entry of prepare-pnd's hash and closure
    assert "toy_pnd_loader" in codeversion.loaded_by_name("prepare-pnd")
    assert codeversion.loaded_by_name("prepare-xnli") == ()
    assert load("toy_pnd_loader").FILES_HELP.startswith("toy questions")


def test_the_toy_set_reaches_dvc_yaml(toy: PndSet) -> None:
    script = _load_script()
    committed = (REPO / "dvc.yaml").read_text()
    with_toy = script.render_pnd(committed)
    assert "        - ${item.processed}/toyqa:\n            persist: true\n" in with_toy       # data's outs
    assert "        - ${item.processed}/toyqa\n" in with_toy                                # models' deps
    assert "  - pnd_rules: prepare_squad prepare_hotpotqa prepare_toyqa\n" in with_toy       # the data phase's
    assert script.render_pnd(with_toy, ["squad", "hotpotqa"]) == committed


@pytest.mark.parametrize("source", ["squad", "hotpotqa"])
def test_a_source_is_named_by_its_entry_loader_and_schema_only(source: str) -> None:
    """The bar: at most 4 files of src/embtune and workflow/rules name a source, and none of the
    generic ones (rules, stages, CLI, layout, stage paths, evaluation)."""
    files = [*SRC.rglob("*.py"), *SRC.rglob("*.yaml"), *(REPO / "workflow/rules").glob("*.smk")]
    naming = {p.relative_to(REPO).as_posix() for p in files
              if re.search(source, p.read_text(encoding="utf-8"), re.I)}
    assert {"src/embtune/core/pnd_sets.py", f"src/embtune/data/{source}.py",
            "src/embtune/schemas/params.schema.yaml"} <= naming and len(naming) <= 4, naming
    generic = ("workflow/", "src/embtune/stages/", "src/embtune/evaluate/", "src/embtune/cli.py",
               "src/embtune/core/layout.py", "src/embtune/core/stage_paths.py", "src/embtune/core/codeversion.py")
    assert not [f for f in naming if f.startswith(generic)]


@pytest.mark.parametrize("source", ["squad", "hotpotqa"])
def test_each_loader_option_is_its_params_key(source: str) -> None:
    """The rule passes a data.<source> section key by key; the schema's keys and defaults are the
    loader's options (and its files)."""
    section = load_schema()["properties"]["data"]["properties"][source]["properties"]
    options = load(pnd_sets.loader_of(source)).OPTIONS
    assert set(section) == {"files"} | {o.key for o in options}
    for opt in options:
        default = list(opt.default) if opt.many else opt.default
        assert section[opt.key]["default"] == default, opt.key


# The workflow run in-process after the toy's registration, as a user's edit of pnd_sets.py and
# of the schema (its data.toyqa section) would be read: Snakemake imports the same embtune.
WORKFLOW_WITH_TOY = """
import sys
sys.path.insert(0, {loader_dir!r})
from embtune.plan import config
from embtune.core import pnd_sets
from embtune.core.pnd_sets import PndSet
pnd_sets.register(PndSet(**{toy!r}))
_schema = config.load_schema
def load_schema(path=None):
    schema = _schema(path)
    schema["properties"]["data"]["properties"]["toyqa"] = {section!r}
    return schema
config.load_schema = load_schema
from snakemake.cli import main
sys.argv = ["snakemake", *{argv!r}]
main()
"""
TOY_SECTION = {"type": "object", "additionalProperties": False, "properties": {
    "files": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    "min_negatives": {"type": "integer", "minimum": 0, "default": 1}, "lowercase": {"type": "boolean", "default": False}}}


@pytest.mark.slow
def test_the_workflow_plans_the_toy_rule_and_its_download(tmp_path: Path) -> None:
    """A dry run of the real workflow with the toy registered: the generated rule prepare_toyqa
    (with data.toyqa's options) beside the paper's sources, and its hub file fetched and staged in."""
    (tmp_path / "toy_pnd_loader.py").write_text(TOY_LOADER)
    layer = tmp_path / "toy.yaml"
    layer.write_text(json.dumps({"data": {"toyqa": {"files": ["hf://datasets/me/toy/t.jsonl"],
                                                    "min_negatives": 2, "lowercase": True}}}))
    targets = [pnd_sets.prepare_rule(s) for s in [*pnd_sets.sources(), "toyqa"]]
    argv = ["-n", "-p", *targets, "stage_in", "--configfile", "presets/demo.yaml", str(layer), "--config",
            f"paths={{raw: data/raw, processed: {tmp_path}/p, results: {tmp_path}/r}}"]
    toy = {f: getattr(TOY, f) for f in ("name", "file", "kind", "table", "column", "short", "demo", "loader")}
    script = WORKFLOW_WITH_TOY.format(loader_dir=str(tmp_path), toy=toy, section=TOY_SECTION, argv=argv)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    argvs = [shlex.split(line.removeprefix("Shell command: ").split(" > ")[0])
             for line in out.splitlines() if line.startswith("Shell command: embtune prepare-pnd")]
    commands = {argv[2]: argv for argv in argvs}
    assert len(argvs) == 3 and set(commands) == {"squad", "hotpotqa", "toyqa"}
    assert commands["toyqa"] == ["embtune", "prepare-pnd", "toyqa", "--files", "data/raw/hf/me/toy/t.jsonl",
                                 "--min-negatives", "2", "--lowercase", "--out", f"{tmp_path}/p/toyqa"]
    assert commands["hotpotqa"] == [
        "embtune", "prepare-pnd", "hotpotqa", "--files", "data/demo/hotpotqa/hotpot_train_v1.1.json",
        "data/demo/hotpotqa/hotpot_dev_distractor_v1.json", "--min-passages", "10", "--levels", "easy", "medium",
        "hard", "--out", f"{tmp_path}/p/hotpotqa"]
    assert commands["squad"][-4:] == ["--positive-rule", "text", "--out", f"{tmp_path}/p/squad"]
    # the toy's hub file: downloaded by fetch_hf, and its record staged in (hf_sources)
    assert re.search(r"embtune fetch --uri hf://datasets/me/toy/t\.jsonl ", out), out[-3000:]
    stage_in = next(line for line in out.splitlines() if line.startswith("Shell command: embtune stage-in manifest"))
    assert "me/toy/t.jsonl.json" in stage_in
