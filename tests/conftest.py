"""Shared test set-up: offline always, few threads, repo-root paths, and the xdist groups.

The suite is in tiers: ``tests/unit/<subpackage>/`` (one library module's behaviour against an
independent reference), ``tests/contracts/`` (how the code is put together: import layers, the
path layout, registries, params coverage, rerun hashes, security rules) and ``tests/e2e/`` (the
workflow through Snakemake, DVC, SLURM, a browser). ``make test-fast`` runs the first two without
the slow tests; ``make test`` runs everything on two xdist workers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# two xdist workers share the 2 cores: one BLAS thread each (a lone pytest keeps two)
os.environ.setdefault("OMP_NUM_THREADS", "1" if os.environ.get("PYTEST_XDIST_WORKER") else "2")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def fixture_dirs(tmp_path_factory):
    """A tiny pre-trained base model and packed pairs (64 training, 10 held out, vocab 190,
    context 12), built once per session: the training, failure and export tests only read them."""
    from helpers_train import make_base_model, make_shards

    root = tmp_path_factory.mktemp("train_fixture")
    return make_base_model(root), make_shards(root / "bge", 64, 10, 190, 12)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


#: Test files that must share one xdist worker: those reading the session's one demo pipeline run
#: (``demo_run``: on two workers it would run twice) and those starting a SLURM cluster (one per
#: machine: its daemons and ports). Every other file is its own unit, so a module-scoped fixture
#: (a pipeline, a DVC remote) is built once.
XDIST_GROUPS = {
    "tests/e2e/test_pipeline_demo.py": "demo", "tests/e2e/test_rerun_identity.py": "demo",
    "tests/e2e/test_launch.py": "demo",
    "tests/e2e/test_slurm.py": "slurm", "tests/e2e/test_rehearsal.py": "slurm",
}


#: Collection order of the groups above: the longest first, each on its own worker from the start.
GROUP_ORDER = ("demo", "slurm")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The demo pipeline's files first, the SLURM ones next, the other end-to-end files, then
    the rest in their own order. With the scheduler below each worker takes one group and no
    more while it has more than 2 tests pending, so the two long groups start at once, one per
    worker, and the short files fill in around them. (In path order the contract tests came first
    and the demo pipeline, the longest path of ``make test``, started minutes late.)"""
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        group = XDIST_GROUPS.get(path)
        if group in GROUP_ORDER:
            return GROUP_ORDER.index(group)
        return len(GROUP_ORDER) + (0 if path.startswith("tests/e2e/") else 1)

    items.sort(key=rank)      # stable: files keep their order within a rank, tests within a file


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 (xdist's hook)
    """``make test``'s scheduler: whole files (or the groups above) per worker, in collection
    order (:func:`pytest_collection_modifyitems`), so the minutes-long groups start first and do
    not start last on one worker while the other idles.

    Why not ``--dist loadgroup`` with ``xdist_group`` marks: with pytest 9 (constraints.txt) xdist
    3.8 renames a grouped test by setting ``item._nodeid``, which pytest 9 no longer reads, so the
    marks group nothing (two demo pipelines ran). ``_split_scope`` is loadscope's own extension
    point (``--dist loadfile`` overrides it the same way)."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False      # not by test count: collection order (above)

    class FileAndGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return XDIST_GROUPS.get(path, path)

    return FileAndGroupScheduling(config, log)


# ------------------------------------------------------------------ fixtures shared by several modules
@pytest.fixture(scope="module")
def paper() -> dict:
    """The paper-scale params.yaml, loaded and validated (defaults filled) as the workflow does."""
    from embtune.plan.config import load_params

    return load_params([REPO / "params.yaml"])


@pytest.fixture
def package_tree(tmp_path: Path):
    """A factory writing a hand-built ``embtune`` package ({relative path: source}) under tmp_path:
    the import-graph checkers' tests run on trees whose edges they know."""
    import textwrap

    def make(files: dict[str, str]) -> Path:
        root = tmp_path / "embtune"
        for rel, text in {"__init__.py": "", **files}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(textwrap.dedent(text))
        return root

    return make


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny byte-level BPE tokenizer folder (built once per module)."""
    from helpers_tokenizer import build_tiny_tokenizer

    return build_tiny_tokenizer(tmp_path_factory.mktemp("tok") / "tok")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo pipeline (presets/demo.yaml + presets/test.yaml), finished, on a copy of the repo:
    once per session for every test that reads a finished pipeline (tests/helpers_pipeline.py)."""
    from helpers_pipeline import run_demo

    work = tmp_path_factory.mktemp("pipeline") / "repo"
    failure = run_demo(work)
    if failure:
        pytest.fail(failure)
    return work


# A running single-node SLURM (module scope; skips loudly when SLURM cannot be had).
from slurm_cluster import slurm_cluster  # noqa: E402,F401  (the fixture, shared by the SLURM tests)


# the tiny saved model of the bad-input tests (tests/unit/core/test_bad_input*.py)
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tokenizer_dir) -> Path:
    """A tiny GPT-NeoX saved as ``embtune train`` saves a full model (run_dir/trained)."""
    import torch
    from transformers import AutoModel, AutoTokenizer, GPTNeoXConfig

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    cfg = GPTNeoXConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                        vocab_size=len(tok), rotary_pct=0.25, max_position_embeddings=64,
                        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    out = tmp_path_factory.mktemp("run") / "trained"
    AutoModel.from_config(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    (out / "embedding_config.json").write_text(json.dumps({"pooling": "mean", "max_length": 16}))
    return out
