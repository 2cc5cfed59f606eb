"""Re-run only when results can change: the code hash ignores comments, docstrings and
formatting; the run's identity leaves out log/checkpoint intervals, the GradCache chunk and paths.

The pipeline test asks ``snakemake -n`` how many training jobs each edit re-plans on the finished
demo that tests/e2e/test_pipeline_demo.py checks (one run per session: conftest.py's ``demo_run``).
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
from helpers_pipeline import DEMO_PRESETS, jobs_of, snakemake

from embtune.core import run_identity
from embtune.core.codeversion import code_version, normalised_source

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"


def _copy_src(tmp_path: Path) -> Path:
    root = tmp_path / "embtune"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


# ------------------------------------------------------------------ the code hash
def test_comments_docstrings_and_formatting_leave_the_code_version(tmp_path: Path) -> None:
    root = _copy_src(tmp_path)
    before = code_version("train", root=root)
    io_py = root / "core" / "io.py"
    text = io_py.read_text()
    # a comment, a changed module docstring, a blank line and a re-wrapped call
    doc_end = text.index('"""', 3)
    edited = text[:doc_end] + "An added docstring sentence.\n" + text[doc_end:]
    edited = edited.replace("\nimport ", "\n# an added comment\n\nimport ", 1)
    io_py.write_text(edited + "\n\n# trailing comment\n")
    assert io_py.read_text() != text
    assert code_version("train", root=root) == before
    # a function's docstring too
    first_def = edited.index('    """', edited.index("\ndef "))
    io_py.write_text(edited[:first_def + 7] + "Reworded, at length. " + edited[first_def + 7:])
    assert code_version("train", root=root) == before


def test_a_change_to_the_loss_code_changes_the_code_version(tmp_path: Path) -> None:
    root = _copy_src(tmp_path)
    before = code_version("train", root=root)
    _edit_loss(root / "train" / "losses.py")
    assert code_version("train", root=root) != before


def _edit_loss(losses: Path) -> None:
    """The symmetric InfoNCE averaged differently: one operator of the loss changed."""
    text = losses.read_text()
    old = "F.cross_entropy(logits.T, labels)) / 2"
    assert text.count(old) == 1
    losses.write_text(text.replace(old, "F.cross_entropy(logits.T, labels)) * 0.5"))


def test_normalised_source_is_the_ast_without_docstrings(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text('"""Doc."""\nimport os\n\n\ndef f(x):\n    """Doc."""\n    return x + 1  # comment\n')
    b.write_text("import os\ndef f(x):\n    return (x +\n            1)\n")
    c.write_text("import os\ndef f(x):\n    return x + 2\n")
    assert normalised_source(a) == normalised_source(b) != normalised_source(c)
    # a string that is not a docstring is code
    d = tmp_path / "d.py"
    d.write_text('import os\ndef f(x):\n    y = "Doc."\n    return x + 1\n')
    assert normalised_source(d) != normalised_source(b)


# ------------------------------------------------------------------ the run identity
def _run() -> dict:
    return {"run_id": "m__full__c1e12__s0", "model": {"name": "m"}, "method": "full", "budget": 1e12,
            "seed": 0, "peak_lr": 1e-4, "planned": {"tokens": 1.0},
            "train": {"batch_size": 8, "temperature": 0.025, "gradcache_chunk": 16,
                      "log_every_steps": 10, "checkpoint_every_steps": 200},
            "data": {"train_dir": "a", "tokenizer_dir": "b"}, "base_model_dir": "c"}


def test_identity_drops_exactly_the_runtime_keys_and_merge_restores_them() -> None:
    run = _run()
    ident = run_identity.identity(run)
    assert ident["train"] == {"batch_size": 8, "temperature": 0.025}
    assert "data" not in ident and "base_model_dir" not in ident
    rt = run_identity.runtime(run, gradcache_chunk=4)
    assert rt == {"train": {"gradcache_chunk": 4, "log_every_steps": 10, "checkpoint_every_steps": 200},
                  "data": {"train_dir": "a", "tokenizer_dir": "b"}, "base_model_dir": "c"}
    assert run_identity.merge(ident, run_identity.runtime(run)) == run
    changed = {**run, "train": {**run["train"], "log_every_steps": 1, "gradcache_chunk": 2},
               "data": {"train_dir": "x", "tokenizer_dir": "y"}}
    assert run_identity.identity(changed) == ident
    other = {**run, "train": {**run["train"], "temperature": 0.05}}
    assert run_identity.identity(other) != ident
    with pytest.raises(ValueError, match="train.batch_size"):
        run_identity.merge(ident, {"train": {"batch_size": 4}})
    with pytest.raises(ValueError, match="not a runtime key"):
        run_identity.runtime(run, batch_size=4)


# ------------------------------------------------------------------ a finished pipeline
def check_reruns(work: Path, presets: tuple[str, ...], results: str, *args: str) -> int:
    """On the finished pipeline in ``work``: harmless edits leave no training job to run (and
    code nothing runs, no job at all), a changed temperature or loss code re-plans every
    training run. Returns the runs' count.

    The demo trains in batches (train.runs_per_job 8): a changed run re-runs its batch job
    (train_batch), which retrains the changed members only (the reuse is tests/unit/stages/
    test_train_batch.py's), and every member's link job (train_contrastive) after it."""
    def train_jobs(*presets_: str) -> tuple[int, int]:
        out = snakemake(work, "-n", *args, presets=presets_ or presets, timeout=600)
        return jobs_of(out, "train_contrastive"), jobs_of(out, "train_batch")

    n_runs = len(list((work / results / "runs").glob("*/metrics.json")))
    n_batches = len(list((work / results / "logs" / "train_batch").glob("*.log")))
    assert n_runs > 0 and 0 < n_batches < n_runs
    assert train_jobs() == (0, 0)
    io_py = work / "src/embtune/core/io.py"
    original = io_py.read_text()
    try:
        io_py.write_text(original.replace("\nimport ", "\n# a harmless comment\nimport ", 1))
        assert train_jobs() == (0, 0)
    finally:
        io_py.write_text(original)
    # code nothing runs: a new helper in io.py (imported by nearly every stage), a new constant
    # in pnd_sets.py (imported by paper 1's training): no job at all re-plans
    for rel, text in (("src/embtune/core/io.py", "\n\ndef unused_helper(path):\n    return write_text(path, '')\n"),
                      ("src/embtune/core/pnd_sets.py", "\nUNUSED_CONSTANT = 3\n")):
        path = work / rel
        original = path.read_text()
        try:
            path.write_text(original + text)
            out = snakemake(work, "-n", *args, presets=presets, timeout=600)
            assert out.returncode == 0 and "Nothing to be done" in out.stdout + out.stderr, (rel, out.stdout[-3000:])
        finally:
            path.write_text(original)
    preset = work / "presets" / "intervals.yaml"
    try:
        preset.write_text("train:\n  log_every_steps: 3\n  checkpoint_every_steps: 7\n  gradcache_chunk: 4\n")
        assert train_jobs(*presets, "presets/intervals.yaml") == (0, 0)
        # a changed result: every run re-plans, but those whose study fixes tau by its own factor
        # (App. D.2's appD-temperature: inv_temperature-<k> in the id); their batches re-run
        fixed = len(list((work / results / "runs").glob("*__inv_temperature-*/metrics.json")))
        preset.write_text("train:\n  temperature: 0.05\n")
        links, batches = train_jobs(*presets, "presets/intervals.yaml")
        assert n_runs - fixed <= links <= n_runs and 0 < batches <= n_batches, (links, batches, n_runs, fixed)
        # A batch job that failed leaves no record of its temp() output (Snakemake drops it), so
        # the change must still re-plan from the link jobs' own records: once it did not, and
        # the diverged-bias demo re-run after a failed batch kept every old bias result.
        _forget_batch_records(work, results)
        assert train_jobs(*presets, "presets/intervals.yaml") == (links, batches)
    finally:
        preset.unlink()
    losses = work / "src/embtune/train/losses.py"
    original = losses.read_text()
    try:
        _edit_loss(losses)
        assert train_jobs() == (n_runs, n_batches)
    finally:
        losses.write_text(original)
    assert train_jobs() == (0, 0)
    return n_runs


def _forget_batch_records(work: Path, results: str) -> None:
    """Delete Snakemake's metadata of the training batches' outputs, as a failed batch does."""
    meta = work / ".snakemake" / "metadata"
    prefix = f"{results}/train_batches/"
    gone = [f for f in meta.iterdir() if _decoded(f.name).startswith(prefix)]
    assert gone, f"no metadata record under {prefix}"
    for f in gone:
        f.unlink()


def _decoded(name: str) -> str:
    try:
        return base64.urlsafe_b64decode(name).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


@pytest.mark.slow
def test_harmless_edits_replan_no_training_and_loss_code_replans_all(demo_run: Path) -> None:
    """On the finished demo (the session's, shared with tests/e2e/test_pipeline_demo.py)."""
    check_reruns(demo_run, DEMO_PRESETS, "results/demo")


@pytest.mark.slow
def test_a_new_query_run_replans_its_batch_alone(demo_run: Path) -> None:
    """query_tuning.runs_per_job 8 (presets/demo.yaml): a query run added to the finished demo
    re-plans one batch job (which tunes the new member alone and reuses the others:
    tests/unit/stages/test_tune_query_batch.py) and that batch's link jobs and PND evaluations,
    which re-score from the embedding cache: no other batch, no training, no base evaluation."""
    preset = demo_run / "presets" / "one_more_query_run.yaml"
    try:
        # the sweep's margin 0.05 is also fig12's and fig13's point: 0.07 adds one run, keeps all
        preset.write_text("query_tuning:\n  sweeps:\n    margin: [0.07]\n")
        out = snakemake(demo_run, "-n", presets=(*DEMO_PRESETS, "presets/one_more_query_run.yaml"), timeout=600)
    finally:
        preset.unlink()
    assert jobs_of(out, "tune_query_batch") == 1
    links = jobs_of(out, "tune_query")
    assert 1 <= links <= 8 and jobs_of(out, "evaluate_pnd_query") == links
    for rule in ("train_batch", "train_contrastive", "evaluate_pnd_base", "evaluate_mteb_batch"):
        assert jobs_of(out, rule) == 0, rule
