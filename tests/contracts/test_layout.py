"""embtune.core.layout is the one map of the data and results folders.

Every path is compared with a string written out by hand here (not built by the module), the rule
files are scanned for path literals that would bypass the layout, and the library's writers and
readers are checked to take their paths from it.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from embtune.core import layout
from embtune.core.layout import Layout, Processed, QueryRuns, Runs

REPO = Path(__file__).resolve().parents[2]
PATHS = {"raw": "data/raw", "processed": "data/processed/demo", "results": "results/demo"}

# (the expression, evaluated with L = Layout.from_paths(PATHS), -> the hand-written path)
EXPECTED = {
    'L.raw_hf("{path}")': "data/raw/hf/{path}",
    'L.raw / "x/y.zip"': "data/raw/x/y.zip",
    'L.local_source("hf://datasets/org/name/train.parquet")': "data/raw/hf/org/name/train.parquet",
    'L.local_source("data/demo/bge/*.jsonl")': "data/demo/bge/*.jsonl",
    # processed datasets
    "L.processed.tokenizer()": "data/processed/demo/tokenizer",
    "L.processed.bge()": "data/processed/demo/bge",
    'L.processed.bge_part("spill", "{part}", 3)': "data/processed/demo/bge_parts/spill-{part}-of-3",
    'L.processed.bge_part("shards", 2, 4)': "data/processed/demo/bge_parts/shards-2-of-4",
    "L.processed.bge_packed()": "data/processed/demo/bge_packed",
    "L.processed.msmarco()": "data/processed/demo/msmarco",
    'L.processed.msmarco_split("eval_hard")': "data/processed/demo/msmarco/eval_hard.parquet",
    "L.processed.arxiv()": "data/processed/demo/arxiv",
    "L.processed.arxiv_negatives()": "data/processed/demo/arxiv/negatives.parquet",
    'L.processed.arxiv_triplets("title", 7)': "data/processed/demo/arxiv/triplets_title_L7.parquet",
    'L.processed.arxiv_narrow("math", "val")': "data/processed/demo/arxiv/narrow_math_val.parquet",
    'L.processed.pnd_dir("squad")': "data/processed/demo/squad",
    'L.processed.pnd_dir("hotpotqa")': "data/processed/demo/hotpotqa",
    "L.processed.xnli_test()": "data/processed/demo/xnli/test.parquet",
    "L.processed.mteb()": "data/processed/demo/mteb",
    # the PND data files (paper 2 App. A-D, H) and the stage outputs they come from
    'L.processed.pnd_file("msmarco")': "data/processed/demo/msmarco/eval.parquet",
    'L.processed.pnd_file("msmarco-hard")': "data/processed/demo/msmarco/eval_hard.parquet",
    'L.processed.pnd_file("arxiv-first")': "data/processed/demo/arxiv/triplets_first_L21.parquet",
    'L.processed.pnd_file("arxiv-title")': "data/processed/demo/arxiv/triplets_title_L21.parquet",
    'L.processed.pnd_file("squad")': "data/processed/demo/squad/eval.parquet",
    'L.processed.pnd_file("squad-min5")': "data/processed/demo/squad/eval_min5.parquet",
    'L.processed.pnd_file("hotpotqa-easy")': "data/processed/demo/hotpotqa/eval_easy.parquet",
    'L.processed.pnd_file("hotpotqa-medium")': "data/processed/demo/hotpotqa/eval_medium.parquet",
    'L.processed.pnd_file("hotpotqa-hard")': "data/processed/demo/hotpotqa/eval_hard.parquet",
    'L.processed.pnd_file("xnli")': "data/processed/demo/xnli/test.parquet",
    'L.processed.pnd_source("msmarco-hard")': "data/processed/demo/msmarco",
    'L.processed.pnd_source("arxiv-title")': "data/processed/demo/arxiv",
    'L.processed.pnd_source("squad-min5")': "data/processed/demo/squad",
    'L.processed.pnd_source("hotpotqa-hard")': "data/processed/demo/hotpotqa",
    'L.processed.pnd_source("xnli")': "data/processed/demo/xnli/test.parquet",
    # query-tower training data (App. K narrow domains)
    'L.processed.query_train_files("msmarco")[0]': "data/processed/demo/msmarco/train.parquet",
    'L.processed.query_train_files("msmarco")[1]': "data/processed/demo/msmarco/val.parquet",
    'L.processed.query_train_files("arxiv-math")[0]': "data/processed/demo/arxiv/narrow_math_train.parquet",
    'L.processed.query_train_files("arxiv-math")[1]': "data/processed/demo/arxiv/narrow_math_val.parquet",
    # results
    'L.results.base_model("pythia-14m")': "results/demo/base_models/pythia-14m",
    'L.results.runs.dir("{run}")': "results/demo/runs/{run}",
    'L.results.runs.file("r1", "metrics.json")': "results/demo/runs/r1/metrics.json",
    'L.results.runs.file("{run}", "mteb_results")': "results/demo/runs/{run}/mteb_results",
    'L.results.checkpoint("{run}")': "results/demo/checkpoints/{run}",
    "L.results.query_runs.root": "results/demo/query_runs",
    'L.results.query_runs.dir("{qmodel}", "{qrun}")': "results/demo/query_runs/{qmodel}/{qrun}",
    'L.results.query_runs.base("e5")': "results/demo/query_runs/e5/base",
    'L.results.query_runs.encoder("e5")': "results/demo/query_runs/e5/encoder",
    'L.results.query_runs.file("e5", "lr-1e-05", "pnd.json")': "results/demo/query_runs/e5/lr-1e-05/pnd.json",
    'L.results.embed_cache("{qmodel}")': "results/demo/embed_cache/{qmodel}",
    'L.results.analysis("runs.parquet")': "results/demo/analysis/runs.parquet",
    'L.results.analysis("query_tuning")': "results/demo/analysis/query_tuning",
    'L.results.recipe("1e+18")': "results/demo/analysis/recipes/recipe_c1e+18.json",
    "L.results.summary()": "results/demo/metrics.json",
    'L.results.log("train/{run}")': "results/demo/logs/train/{run}.log",
    'L.results.log("plan")': "results/demo/logs/plan.log",
    'L.results.benchmark("evaluate_pnd/{qmodel}/base")': "results/demo/benchmarks/evaluate_pnd/{qmodel}/base.tsv",
}


@pytest.mark.parametrize("expr", sorted(EXPECTED))
def test_every_path_matches_the_hand_written_one(expr: str) -> None:
    got = eval(expr, {"L": Layout.from_paths(PATHS)})  # noqa: S307  (expressions of this file)
    assert str(got) == EXPECTED[expr]


def test_file_names_match_the_hand_written_ones() -> None:
    names = {"METRICS_JSON": "metrics.json", "MANIFEST_JSON": "manifest.json", "CURVE_CSV": "curve.csv",
             "MODEL_DIR": "model", "TRAINED_DIR": "trained", "TRAINED_MERGED_DIR": "trained_merged",
             "MTEB_JSON": "mteb.json", "MTEB_PARQUET": "mteb.parquet",
             "MTEB_RESULTS": "mteb_results", "PND_JSON": "pnd.json", "XNLI_COUNTS": "xnli_counts.parquet",
             "LAYER_CHANGES": "layer_changes.csv", "BASE_RUN": "base", "ENCODER_DIR": "encoder",
             "ARXIV_NEGATIVES": "negatives.parquet", "XNLI_TEST": "xnli/test.parquet"}
    assert {k: getattr(layout, k) for k in names} == names


@pytest.mark.parametrize("bad", ["a/b", "..", ".", ""])
def test_a_name_is_one_path_component(bad: str) -> None:
    with pytest.raises(ValueError, match="single path component"):
        Runs(Path("r")).dir(bad)


def test_unknown_datasets_are_named() -> None:
    with pytest.raises(ValueError, match="unknown PND dataset 'nope'"):
        Processed(Path("p")).pnd_file("nope")
    with pytest.raises(ValueError, match="unknown train_data 'squad'"):
        Processed(Path("p")).query_train_files("squad")


def test_query_runs_lists_evaluated_models_and_their_runs(tmp_path: Path) -> None:
    for rel in ("e5/base/pnd.json", "e5/lr-2/metrics.json", "e5/lr-1/pnd.json", "e5/.tmp-x/pnd.json",
                "gte/lr-1/pnd.json", "gte/base/xnli_counts.parquet"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    runs = QueryRuns(tmp_path)
    assert runs.evaluated_models() == ["e5"]          # gte has no base/pnd.json yet
    assert runs.run_ids("e5") == ["lr-1", "lr-2"]     # not base/, not hidden temp folders


# ---------------------------------------------------------------- no path spelled outside the layout
#: Fragments of the layout that only embtune.core.layout may spell (a rule writing one bypasses it).
FORBIDDEN = ("query_runs", "embed_cache", "runs/", "base_models", "bge_packed", "bge_parts", "checkpoints",
             "analysis/", "recipes/", "benchmarks/", "logs/", "metrics.json", "pnd.json", "xnli_counts",
             "mteb.json", "mteb.parquet", "manifest.json", "curve.csv", "test.parquet", "/tokenizer",
             "/msmarco", "/arxiv", "/squad", "/hotpotqa", "/mteb", "/bge", "/hf/", '["paths"]', "['paths']")


def literal_paths(source: str) -> list[str]:
    """String literals (f-strings included; comments and triple-quoted docstrings are prose) of a
    Snakemake file that spell a piece of the layout, or read config["paths"] behind the Layout's back."""
    hits = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        prose = tok.string.lstrip("rbfRBF").startswith(('"""', "'''"))
        if tok.type == tokenize.STRING and not prose and any(f in tok.string for f in FORBIDDEN):
            hits.append(f"line {tok.start[0]}: {tok.string}")
    text_hits = [f"line {n}: {line.strip()}" for n, line in enumerate(source.splitlines(), 1)
                 if ('config["paths"]' in line or "config['paths']" in line)
                 and "Layout.from_paths(" not in line and not line.lstrip().startswith("#")]
    return hits + text_hits


def test_the_checker_catches_a_literal_path() -> None:
    assert literal_paths('rule x:\n    output:\n        f"{RES}/runs/{{run}}/metrics.json",\n')
    assert literal_paths('RES = config["paths"]["results"]\n')
    assert literal_paths('    params:\n        cache="results/embed_cache/{qmodel}",\n')
    assert literal_paths('def f(w):\n    return f"{PROC}/msmarco"\n')
    assert not literal_paths('# results/query_runs/<model>\nL = Layout.from_paths(config["paths"])\n')


def test_rule_files_take_every_path_from_the_layout() -> None:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    hits = {f.name: got for f in files if (got := literal_paths(f.read_text()))}
    assert not hits, f"paths spelled outside embtune.core.layout (use L.* or rules.<name>.output): {hits}"


def test_the_layout_is_built_once_in_common_smk() -> None:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    built = {f.name: f.read_text().count("Layout.from_paths(") for f in files}
    assert {k: v for k, v in built.items() if v} == {"common.smk": 1}


# ---------------------------------------------------------------- the library's writers and readers
USERS = ("evaluate/pnd_eval.py", "train/triplets.py", "stages/build_arxiv_negatives.py",
         "evaluate/query_table.py", "evaluate/paper2_tables.py", "scaling/runs_table.py", "plan/sweep.py",
         "stages/evaluate_pnd.py", "stages/tune_query.py", "stages/train.py")
#: Names the layout owns: joining one of them onto a path by hand bypasses it.
OWNED = {"metrics.json", "manifest.json", "curve.csv", "model", "trained", "trained_merged", "mteb.json", "mteb.parquet", "mteb_results",
         "pnd.json", "xnli_counts.parquet", "layer_changes.csv", "base", "encoder", "negatives.parquet",
         "msmarco", "arxiv", "squad", "hotpotqa", "xnli", "mteb", "tokenizer", "bge", "bge_packed",
         "base_models", "runs", "query_runs", "embed_cache", "checkpoints", "analysis"}


@pytest.mark.parametrize("module", USERS)
def test_writers_and_readers_take_paths_from_the_layout(module: str) -> None:
    tree = ast.parse((REPO / "src/embtune" / module).read_text())
    imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "embtune.core.layout" in imports
    joined = [f"line {n.lineno}: / {n.right.value!r}" for n in ast.walk(tree)
              if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and isinstance(n.right, ast.Constant)
              and isinstance(n.right.value, str) and (n.right.value in OWNED or n.right.value.split("/")[0] in OWNED
                                                       or n.right.value.startswith(("triplets_", "narrow_")))]
    assert not joined, f"{module} joins layout names by hand: {joined}"


def test_the_roots_spell_the_validated_paths_as_given_without_the_plots_copies() -> None:
    """The plan rule's params hold the roots (workflow/rules/inputs.smk grid_json): the same
    strings as params.yaml's, so a study planned before keeps its plan."""
    from embtune.plan.config import load_params

    for stack in (["params.yaml"], ["params.yaml", "presets/demo.yaml"]):
        paths = load_params([REPO / f for f in stack])["paths"]
        assert Layout.from_paths(paths).roots() == {k: v for k, v in paths.items() if k != "plots"}
