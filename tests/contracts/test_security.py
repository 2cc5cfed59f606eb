"""Hostile params: nothing from a params file reaches a shell unquoted, becomes a `..` path, or
runs as code. Each case checks that the error names the file and key, and that the injected
command did not run (its marker file does not exist) and no output tree was created."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embtune.plan.config import ParamsError, load_params

REPO = Path(__file__).resolve().parents[2]
BASE = [REPO / "params.yaml", REPO / "presets/demo.yaml"]
TINY = {"source": "tiny", "hidden_size": 64, "num_layers": 2, "pretrain_peak_lr": 1.0e-3}


def _preset(tmp_path: Path, text: str, name: str = "hostile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(files: list[Path]) -> str:
    with pytest.raises(ParamsError) as info:
        load_params(files)
    return str(info.value)


def _snakemake_n(*configfiles: Path, cwd: Path = REPO, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", *extra]
    if configfiles:
        args += ["--configfile", *map(str, configfiles)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------ injection strings, at validation
def _injections(marker: Path) -> dict[str, tuple[str, str]]:
    """case -> (YAML fragment with a command that would create ``marker``, key path it sits at)."""
    m = str(marker)
    return {
        "xnli language $()": (f'data: {{xnli: {{languages: ["de$(touch {m})"]}}}}', "data.xnli.languages[0]"),
        "xnli language ;": (f'data: {{xnli: {{languages: [en, "de; touch {m}"]}}}}', "data.xnli.languages[1]"),
        "xnli split": (f'data: {{xnli: {{split: "test`touch {m}`"}}}}', "data.xnli.split"),
        "mteb task": (f'evaluate: {{mteb: {{tasks: ["STS15 && touch {m}"]}}}}', "evaluate.mteb.tasks[0]"),
        "mteb excluded task": (f'evaluate: {{mteb: {{tasks: [STS15], exclude_from_average: ["$(touch {m})"]}}}}',
                               "evaluate.mteb.exclude_from_average[0]"),
        "paths.results $()": (f'paths: {{results: "$(touch {m})"}}', "paths.results"),
        "paths.processed space": (f'paths: {{processed: "data/x; touch {m}"}}', "paths.processed"),
        "paths.raw option": ('paths: {raw: "--delete"}', "paths.raw"),
        "paths.results wildcard brace": ('paths: {results: "results/{run}"}', "paths.results"),
        "paths.plots second brace": ('paths: {plots: "results/{run}/{kind}.csv"}', "paths.plots"),
        "paths.plots $()": (f'paths: {{plots: "results/{{kind}}/$(touch {m}).csv"}}', "paths.plots"),
        "bge file breaks hand quoting": (f"data: {{bge: {{files: [\"x'; touch {m}; '\"]}}}}", "data.bge.files[0]"),
        "msmarco file": (f'data: {{msmarco: {{file: "a|touch {m}"}}}}', "data.msmarco.file"),
        "arxiv snapshot": (f'data: {{arxiv: {{snapshot: "a>{m}"}}}}', "data.arxiv.snapshot"),
        "mteb local_dir": (f'data: {{mteb: {{source: local, local_dir: "$(touch {m})"}}}}', "data.mteb.local_dir"),
        "tokenizer id quote": (f"tokenizer: {{source: hub, id: \"gpt2'; touch {m}; '\"}}", "tokenizer.id"),
        "tokenizer corpus": (f'tokenizer: {{train_corpus: ["c/*.txt $(touch {m})"]}}', "tokenizer.train_corpus[0]"),
        "model name $()": (f'models: [{{name: "m$(touch {m})", {_flow(TINY)}}}]', "models[0].name"),
        "hub id traversal": ('models: [{name: p, source: hub, id: "../../etc", hidden_size: 64, num_layers: 2, '
                             'pretrain_peak_lr: 1.0e-3}]', "models[0].id"),
        "package id": (f'query_tuning: {{models: [{{name: e, source: package, id: "os;touch {m}"}}]}}',
                       "query_tuning.models[0].id"),
        "freeze spec sweep": (f'query_tuning: {{sweeps: {{freeze: [emb, "emb$(touch {m})"]}}}}',
                              "query_tuning.sweeps.freeze[1]"),
    }


def _flow(d: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


INJECTION_CASES = sorted(_injections(Path("/x")))


@pytest.mark.parametrize("case", INJECTION_CASES)
def test_injection_refused_at_validation(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "injected"
    fragment, key = _injections(marker)[case]
    preset = _preset(tmp_path, fragment)
    msg = _refused([*BASE, preset])
    assert f"{preset}: {key}:" in msg, msg
    assert not marker.exists()


@pytest.mark.parametrize("name", [".", "..", "../x", "a/b", "a..b", ".hidden", "-rf", "a__b", "a b", "x" * 101])
@pytest.mark.parametrize("where", ["models", "query_tuning.models"])
def test_dot_and_separator_names_refused(tmp_path: Path, name: str, where: str) -> None:
    entry = (f"{{name: {json.dumps(name)}, {_flow(TINY)}}}" if where == "models"
             else f"{{name: {json.dumps(name)}, source: hub, id: org/model}}")
    text = f"models: [{entry}]" if where == "models" else f"query_tuning: {{models: [{entry}]}}"
    preset = _preset(tmp_path, text)
    msg = _refused([*BASE, preset])
    assert f"{preset}: {where}[0].name:" in msg, msg


def test_real_names_and_hub_ids_pass() -> None:
    """The model's *name* is a path component; its hub *id* (org/name) is not, and may hold a '/'."""
    params = load_params([REPO / "params.yaml"])
    assert {m["name"] for m in params["models"]} >= {"pythia-1.4b", "pythia-160m"}
    assert params["models"][3]["id"] == "EleutherAI/pythia-160m"
    for extra in (["presets/demo.yaml"], ["presets/demo.yaml", "presets/ci.yaml"],
                  ["presets/demo.yaml", "presets/test.yaml"]):
        load_params([REPO / "params.yaml", *(REPO / e for e in extra)])


# ------------------------------------------------------------ executable YAML
def test_use_yte_refused_by_the_library_and_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "yte_ran"
    preset = _preset(tmp_path, f"__use_yte__: true\nseed: ?__import__('pathlib').Path('{marker}').touch() or 0\n")
    msg = _refused([*BASE, preset])
    assert f"{preset}:1: __use_yte__" in msg
    assert not marker.exists()


def test_python_tags_refused_and_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "tag_ran"
    preset = _preset(tmp_path, f"seed: !!python/object/apply:os.system ['touch {marker}']\n")
    msg = _refused([*BASE, preset])
    assert str(preset) in msg and "python/object/apply" in msg
    assert not marker.exists()


def test_use_yte_in_params_yaml_never_reaches_snakemake(tmp_path: Path) -> None:
    """The Snakefile reads params.yaml strictly *before* its `configfile:` directive hands it to
    Snakemake's YTE-aware loader, so the expression is never evaluated."""
    marker = tmp_path / "yte_ran"
    wf = tmp_path / "wf"
    wf.mkdir()
    (wf / "Snakefile").write_text((REPO / "Snakefile").read_text())
    for link in ("workflow", "src", "data", "presets"):
        (wf / link).symlink_to(REPO / link)
    body = "".join(line for line in (REPO / "params.yaml").read_text().splitlines(True)
                   if not line.startswith("seed:"))
    (wf / "params.yaml").write_text(
        f"__use_yte__: true\nseed: ?__import__('pathlib').Path('{marker}').touch() or 0\n{body}")
    proc = _snakemake_n(cwd=wf)
    assert proc.returncode != 0
    assert "params.yaml:1: __use_yte__" in proc.stdout + proc.stderr
    assert not marker.exists()


def test_use_yte_in_a_preset_stops_the_workflow(tmp_path: Path) -> None:
    """Snakemake evaluates --configfile files (YTE) before the Snakefile runs, so a workflow
    cannot stop that evaluation (see README / config.py); it refuses to go on with the file."""
    results = tmp_path / "results"
    preset = _preset(tmp_path, f"__use_yte__: true\npaths: {{results: {results}}}\n")
    proc = _snakemake_n(REPO / "presets/demo.yaml", preset)
    assert proc.returncode != 0
    assert f"{preset}:1: __use_yte__" in proc.stdout + proc.stderr
    assert not results.exists()


# ------------------------------------------------------------ through snakemake -n
@pytest.mark.parametrize("case", ["xnli language $()", "paths.results $()"])
def test_snakemake_refuses_injection_before_any_job(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "injected"
    results = tmp_path / "results"
    fragment, key = _injections(marker)[case]
    preset = _preset(tmp_path, fragment)
    out = _preset(tmp_path, f"paths: {{results: {results}, processed: {tmp_path}/processed}}\n", "paths.yaml")
    # the hostile preset comes last, so it owns the key
    proc = _snakemake_n(REPO / "presets/demo.yaml", out, preset)
    assert proc.returncode != 0
    assert f"{preset}: {key}:" in proc.stdout + proc.stderr
    assert not marker.exists() and not results.exists()


def test_snakemake_refuses_dotdot_model_name(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "keep.txt").write_text("must survive")
    preset = _preset(tmp_path, f"paths: {{results: {results}}}\nmodels: [{{name: '..', {_flow(TINY)}}}]\n")
    proc = _snakemake_n(REPO / "presets/demo.yaml", preset)
    assert proc.returncode != 0
    assert f"{preset}: models[0].name:" in proc.stdout + proc.stderr
    assert (results / "keep.txt").read_text() == "must survive"
    assert sorted(p.name for p in results.iterdir()) == ["keep.txt"]


# ------------------------------------------------------------ what does reach the shell is quoted
def test_shell_placeholders_are_all_quoted_by_snakemake() -> None:
    """Every `{...}` in a rule's shell command carries Snakemake's `:q` (shlex.quote per item);
    no helper builds '...' quoting by hand."""
    unquoted = []
    for smk in sorted((REPO / "workflow/rules").glob("*.smk")):
        text = smk.read_text()
        for block in re.findall(r"^    shell:\n((?:        \".*\"\n?)+)", text, re.M):
            unquoted += [f"{smk.name}: {{{f}}}" for f in re.findall(r"\{([^{}]+)\}", block)
                         if not f.endswith(":q")]
    assert not unquoted, unquoted
    for smk in sorted((REPO / "workflow/rules").glob("*.smk")):  # the helpers live beside their rules
        common = smk.read_text()
        assert not re.search(r"""['"]'\{|\}'['"]""", common), f"hand-built '...' quoting in {smk.name}"


@pytest.mark.slow
def test_free_text_reaches_the_command_verbatim_and_inert(tmp_path: Path) -> None:
    """A query prefix is free text (it may hold spaces, quotes, `$`); it travels inside the
    JSON argument. Run the exact commands Snakemake printed, with a stub `embtune` that records
    its argv: the command substitutions do not run and the stub sees the text unchanged."""
    marker = tmp_path / "injected"
    prefix = f"q'; touch {marker}; echo '$(touch {marker}) `touch {marker}` \" \\"
    preset = _preset(tmp_path, yaml.safe_dump({
        "paths": {"results": str(tmp_path / "results"), "processed": str(tmp_path / "processed")},
        # grids: [] — demo.yaml's LR grid names its E5 model, which this preset replaces
        "query_tuning": {"models": [{"name": "enc", "source": "hub", "id": "org/enc", "revision": "main", "query_prefix": prefix}],
                         "grids": []}}))
    target = tmp_path / "results/query_runs/enc/base/pnd.json"
    proc = _snakemake_n(REPO / "presets/demo.yaml", preset, extra=("--printshellcmds", str(target)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    commands = [line.split("Shell command: ", 1)[1] for line in proc.stdout.splitlines()
                if line.startswith("Shell command: embtune evaluate-pnd")]
    assert len(commands) == 1
    assert "'\"'\"'" in commands[0]  # shlex.quote's escape of the prefix's single quote
    stub = tmp_path / "bin" / "embtune"
    stub.parent.mkdir()
    record = tmp_path / "argv.json"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\njson.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n")
    stub.chmod(0o755)
    log = Path(shlex.split(commands[0])[shlex.split(commands[0]).index(">") + 1])
    log.parent.mkdir(parents=True)
    subprocess.run(["bash", "-c", commands[0]], env={**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}"},
                   check=True, timeout=60)
    argv = json.loads(record.read_text())
    assert json.loads(argv[argv.index("--model-json") + 1])["query_prefix"] == prefix
    assert not marker.exists()
