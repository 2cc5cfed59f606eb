"""Write the small offline MTEB demo data to data/demo/mteb/<Task>/ (layout of embtune.data.mteb_data).

Why: the CPU demo must run the real mteb evaluators on all 8 pinned tasks in seconds, with no
network, and its MTEB average must measure what the demo's contrastive fine-tuning teaches, as
real MTEB measures what the BGE data teach (paper 1 App. C: rho(loss, MTEB) = -0.892). So five
tasks hold real text of the training pairs' kinds (data/demo/bge) that is not in them:

  docstrings  summary line -> body of pinned packages that are NOT sources of the training pairs
              (``STANDIN_PACKAGES``; parsed with ``ast`` and filtered as make_demo_pairs.py's
              pydoc pairs; bodies clipped to ``BODY_CHARS``)
  WordNet     a noun synset's lemmas -> its gloss, for the synsets whose gloss (3-5 words) is too
              short for the training pairs (make_demo_pairs keeps >= 6), in 6 lexnames (``LEXNAMES``)

Every text whose case/whitespace-folded form is a query, positive or negative of data/demo/bge/*
is dropped, so no stand-in text is a training or validation text, and each pair serves one task:

  SciFact                    retrieval: summary/lemmas -> its body among 200 (both sources)
  AskUbuntuDupQuestions      reranking: summary/lemmas; its body + 7 bodies of the same module/lexname
  SprintDuplicateQuestions   pair classification: (summary, its body) = 1, (summary, another body
                             of the same group) = 0 (both sources)
  TwentyNewsgroupsClustering cluster lemmas by lexname (3 sets of 6 lexnames x 12)
  EmotionClassification      classify lemmas by lexname (6 labels, 16 train + 16 test each)

Sizes keep the evaluation cheap (0.3-1 CPU-s more per run than the template tasks, mostly mteb's
classifier): the tiny models read 32 tokens, so bodies are clipped to ``BODY_CHARS``.

STS15, SummEval and Tatoeba stay hand-written templates (graded sentence pairs, news stories with
summaries, sentence translations): this machine has no real text of those kinds. Measured on the
77 runs of a finished demo: rho(val_loss, MTEB average) -0.07 with the old template tasks, see
data/demo/mteb/README.md for the new value. Deterministic: re-running with the same packages
(constraints.txt) and WordNet (Debian wordnet-base) writes identical files (texts are ordered by a
crc32 of their name, sampling uses ``random.Random(seed)``).

    .venv/bin/python workflow/scripts/make_demo_mteb.py [--out data/demo/mteb] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import random
import shutil
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from embtune.data.mteb_data import TaskFrames, write_task

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_demo_pairs as pairs  # noqa: E402  (the pydoc pairs' parser and filters)

#: Pinned packages (constraints.txt) whose docstrings are the stand-ins' text: none is a source of
#: data/demo/bge (make_demo_pairs.PYDOC_PACKAGES, the stdlib), each its own topic (the labels).
STANDIN_PACKAGES = ("scikit-learn", "pandas", "matplotlib", "SQLAlchemy", "dulwich", "hypothesis")
BGE_DIR = Path("data/demo/bge")
BODY_CHARS = 400          # the demo's models read 32 tokens; longer bodies only cost encoding time


# ------------------------------------------------------------------ docstring source


@dataclass(frozen=True)
class Doc:
    """One text pair: a docstring's summary line -> its body, or a synset's lemmas -> its gloss.
    ``group`` is its package or WordNet lexname (the topic labels and the hard negatives)."""

    group: str
    name: str
    summary: str
    body: str

    @property
    def module(self) -> str:
        """A docstring's package and first sub-package ("sklearn.metrics"), a synset's lexname:
        the nearest neighbours a reranker must order."""
        return self.group if self.name.startswith("wordnet:") else ".".join(self.name.split(".")[:2])


def training_keys(bge_dir: Path = BGE_DIR) -> set[str]:
    """Folded queries, positives and negatives of every file the demo trains and validates on."""
    keys: set[str] = set()
    for path in sorted(bge_dir.glob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                obj = json.loads(line)
                keys.update(pairs.norm(t) for t in [obj["query"], *obj.get("pos", []), *obj.get("neg", [])])
    return keys


def package_docs(dist: str) -> list[Doc]:
    """A package's docstring pairs, filtered exactly as make_demo_pairs.pydoc_pairs filters them."""
    out = []
    for module, path in pairs.package_files(dist):
        for doc in pairs.iter_docs(module, path):
            body = [p for p in doc.body.split("\n\n") if not p.startswith(pairs.SECTION_HEADS)]
            text = " ".join(body[:2])
            if (pairs.words(doc.summary) >= pairs.MIN_QUERY_WORDS + 1 and pairs.words(text) >= pairs.MIN_POS_WORDS
                    and doc.summary[:1].isalpha() and "::" not in doc.summary):
                out.append(Doc(dist, doc.name, doc.summary, pairs.clip(text, BODY_CHARS)))
    return out


def unique_docs(docs: Iterable[Doc], seen: set[str]) -> list[Doc]:
    """Docs in a stable hash order whose folded summary and body are new (``seen``, updated: the
    training texts and the docs kept before), and whose summary does not open its body."""
    kept = []
    for d in sorted(docs, key=lambda d: (zlib.crc32(f"{d.group}:{d.name}".encode()), d.group, d.name)):
        q, b = pairs.norm(d.summary), pairs.norm(d.body)
        if q in seen or b in seen or q in b[:len(q) + 5]:
            continue
        seen.update((q, b))
        kept.append(d)
    return kept


def standin_docs(bge_dir: Path = BGE_DIR, packages: Iterable[str] = STANDIN_PACKAGES) -> dict[str, list[Doc]]:
    """Group (package, then lexname) -> its usable docs, hash-ordered: no folded summary or body
    is a training text or another doc's."""
    seen = training_keys(bge_dir)
    docs = {dist: unique_docs(package_docs(dist), seen) for dist in packages}
    by_lex = wordnet_docs()
    return docs | {lex: unique_docs(by_lex[lex], seen) for lex in LEXNAMES.values()}


#: WordNet 3.0 lexicographer files (lexnames(5WN), a synset's ``lex_filenum``) whose noun synsets
#: are the label tasks' text, each lexname a label.
LEXNAMES = {"04": "noun.act", "05": "noun.animal", "06": "noun.artifact", "13": "noun.food",
            "18": "noun.person", "20": "noun.plant"}
MIN_GLOSS_WORDS = 3       # "a kind act"; make_demo_pairs trains on glosses of >= 6 words


def wordnet_docs(data: Path | None = None) -> dict[str, list[Doc]]:
    """Lexname -> its noun synsets whose gloss is too short for the training pairs (3-5 words,
    make_demo_pairs.MIN_GLOSS_WORDS = 6): lemmas ("ambush, ambuscade") -> gloss, in file order."""
    by_lex: dict[str, list[Doc]] = {name: [] for name in LEXNAMES.values()}
    for offset, lex, lemmas, gloss in pairs.wordnet_synsets(data or pairs.WORDNET / "data.noun"):
        if lex in LEXNAMES and lemmas and MIN_GLOSS_WORDS <= pairs.words(gloss) < pairs.MIN_GLOSS_WORDS:
            by_lex[LEXNAMES[lex]].append(Doc(LEXNAMES[lex], f"wordnet:noun:{offset}", ", ".join(lemmas), gloss))
    return by_lex


def package_versions(packages: Iterable[str] = STANDIN_PACKAGES) -> dict[str, str]:
    return {dist: importlib.metadata.version(dist) for dist in packages}


class Pool:
    """Hands out each package's docs in order, so every doc serves one task only."""

    def __init__(self, docs: dict[str, list[Doc]]) -> None:
        self.docs = {k: list(v) for k, v in docs.items()}

    def take(self, group: str, n: int) -> list[Doc]:
        if len(self.docs[group]) < n:
            raise SystemExit(f"{group}: {len(self.docs[group])} unused texts left, {n} needed")
        out, self.docs[group] = self.docs[group][:n], self.docs[group][n:]
        return out

    def take_mixed(self, n: int) -> list[Doc]:
        """``n`` docs drawn round-robin over all groups (both sources, every topic in every task)."""
        names = sorted(self.docs)
        return [d for k in range(n) for d in self.take(names[k % len(names)], 1)]


# ------------------------------------------------------------------ EmotionClassification


def emotion_frames(pool: Pool, n_train: int = 16, n_test: int = 16) -> TaskFrames:
    """Lemmas labelled by lexname (label id = its place in LEXNAMES; 6 labels, as the real task)."""
    train, test = [], []
    for label, dist in enumerate(LEXNAMES.values()):
        docs = pool.take(dist, n_train + n_test)
        train += [{"text": d.summary, "label": label} for d in docs[:n_train]]
        test += [{"text": d.summary, "label": label} for d in docs[n_train:]]
    schema = {"text": pl.String, "label": pl.Int64}
    return {("default", "train"): {"": pl.DataFrame(train, schema=schema)},
            ("default", "test"): {"": pl.DataFrame(test, schema=schema)}}


# ------------------------------------------------------------------ TwentyNewsgroupsClustering


def newsgroup_frames(pool: Pool, rng: random.Random, n_sets: int = 3, per_label: int = 12) -> TaskFrames:
    """Cluster sets of lemmas; the label is the lexname."""
    rows = []
    for _ in range(n_sets):
        items = [(d.summary, lex) for lex in LEXNAMES.values() for d in pool.take(lex, per_label)]
        rng.shuffle(items)
        rows.append({"sentences": [s for s, _ in items], "labels": [g for _, g in items]})
    schema = {"sentences": pl.List(pl.String), "labels": pl.List(pl.String)}
    return {("default", "test"): {"": pl.DataFrame(rows, schema=schema)}}


# ------------------------------------------------------------------ SprintDuplicateQuestions


def sprint_frames(pool: Pool, rng: random.Random, n: int = 60) -> TaskFrames:
    """(summary, its body) = 1 and (summary, the body of another doc of the same group) = 0."""
    docs = pool.take_mixed(n)
    rows = []
    for d in docs:
        others = [o for o in docs if o.group == d.group and o is not d]
        rows.append({"sentence1": d.summary, "sentence2": d.body, "labels": 1})
        rows.append({"sentence1": d.summary, "sentence2": rng.choice(others).body, "labels": 0})
    rng.shuffle(rows)
    schema = {"sentence1": pl.String, "sentence2": pl.String, "labels": pl.Int64}
    return {("default", "test"): {"": pl.DataFrame(rows, schema=schema)}}


# ------------------------------------------------------------------ AskUbuntuDupQuestions


def _retrieval_tables(corpus: list, queries: list, qrels: list, top: list | None) -> dict[str, pl.DataFrame]:
    out = {"corpus": pl.DataFrame(corpus, schema={"id": pl.String, "text": pl.String, "title": pl.String}),
           "queries": pl.DataFrame(queries, schema={"id": pl.String, "text": pl.String}),
           "qrels": pl.DataFrame(qrels, schema={"query-id": pl.String, "corpus-id": pl.String, "score": pl.Int64})}
    if top is not None:
        out["top_ranked"] = pl.DataFrame(top, schema={"query-id": pl.String, "corpus-ids": pl.List(pl.String)})
    return out


def askubuntu_frames(pool: Pool, rng: random.Random, n_queries: int = 36, n_candidates: int = 8) -> TaskFrames:
    """Rerank a summary's candidates: its own body and ``n_candidates - 1`` bodies of its group,
    those of its own module first (the near misses a reranker must order)."""
    corpus, queries, qrels, top = [], [], [], []
    groups = sorted(pool.docs)
    per_group = n_queries // len(groups) + 1
    chosen = {g: pool.take(g, per_group * n_candidates) for g in groups}
    for qi in range(n_queries):
        dist = groups[qi % len(groups)]
        group, chosen[dist] = chosen[dist][:n_candidates], chosen[dist][n_candidates:]
        query, rest = group[0], group[1:]
        rest.sort(key=lambda d: d.module != query.module)   # stable: same-module bodies first
        cands = [(query, 1)] + [(d, 0) for d in rest]
        rng.shuffle(cands)
        qid = f"q{qi}"
        queries.append({"id": qid, "text": query.summary})
        ids = [f"d{qi}_{k}" for k in range(len(cands))]
        corpus += [{"id": cid, "text": d.body, "title": ""} for cid, (d, _) in zip(ids, cands)]
        qrels += [{"query-id": qid, "corpus-id": cid, "score": rel} for cid, (_, rel) in zip(ids, cands)]
        top.append({"query-id": qid, "corpus-ids": ids})
    return {("default", "test"): _retrieval_tables(corpus, queries, qrels, top)}


# ------------------------------------------------------------------ SciFact


def scifact_frames(pool: Pool, n_queries: int = 60, n_docs: int = 200) -> TaskFrames:
    """Retrieve a summary's body from ``n_docs`` bodies (the other ``n_docs - n_queries`` are
    bodies whose summaries are not asked)."""
    docs = pool.take_mixed(n_docs)
    corpus = [{"id": f"{1000 + i}", "text": d.body, "title": ""} for i, d in enumerate(docs)]
    queries = [{"id": str(i), "text": d.summary} for i, d in enumerate(docs[:n_queries])]
    qrels = [{"query-id": str(i), "corpus-id": f"{1000 + i}", "score": 1} for i in range(n_queries)]
    return {("default", "test"): _retrieval_tables(corpus, queries, qrels, None)}


# ------------------------------------------------------------------ STS15

# each slot: list of synonymous phrasings; sentences = subject + verb phrase + place
STS_SUBJECTS = [["A man", "A guy"], ["A woman", "A lady"], ["A child", "A kid"], ["Two dogs", "A pair of dogs"],
                ["The chef", "The cook"], ["A group of students", "Several students"]]
STS_VERBS = [["is playing a guitar", "plays the guitar"], ["is reading a book", "reads a novel"],
             ["is cutting vegetables", "is chopping vegetables"], ["is running", "is jogging"],
             ["is eating lunch", "is having lunch"], ["is riding a bicycle", "is cycling"]]
STS_PLACES = [["in the park", "at the park"], ["on the beach", "by the sea"], ["in the kitchen", "inside the kitchen"],
              ["on the street", "along the road"], ["at home", "in the house"]]


def _sts_sentence(s: int, v: int, p: int, variant: int) -> str:
    return f"{STS_SUBJECTS[s][variant]} {STS_VERBS[v][variant]} {STS_PLACES[p][variant]}."


def sts_frames(rng: random.Random, n: int = 90) -> TaskFrames:
    """Score = 5 with all three slots shared (paraphrased), minus ~1.7 per changed slot."""
    rows = []
    for _ in range(n):
        a = (rng.randrange(len(STS_SUBJECTS)), rng.randrange(len(STS_VERBS)), rng.randrange(len(STS_PLACES)))
        changed = rng.choice([0, 0, 1, 1, 2, 3])
        slots = rng.sample(range(3), changed)
        sizes = (len(STS_SUBJECTS), len(STS_VERBS), len(STS_PLACES))
        b = tuple((a[k] + rng.randrange(1, sizes[k])) % sizes[k] if k in slots else a[k] for k in range(3))
        weights = (1.4, 2.0, 1.2)  # the action matters most, the place least
        score = round(max(0.0, 5.0 - sum(weights[k] for k in slots) - 0.2 * rng.random()), 2)
        rows.append({"sentence1": _sts_sentence(*a, 0), "sentence2": _sts_sentence(*b, rng.randrange(2)),
                     "score": score})
    return {("default", "test"): {"": pl.DataFrame(rows, schema={"sentence1": pl.String, "sentence2": pl.String,
                                                                 "score": pl.Float64})}}


# ------------------------------------------------------------------ SummEval

# (who, did what, where, when, consequence)
STORIES = [
    ("The city council", "approved a new budget for public transport", "in Leeds", "on Monday",
     "bus fares will fall by ten percent next year"),
    ("A storm", "knocked out power to thousands of homes", "along the east coast", "overnight",
     "repair crews expect to restore electricity by Friday"),
    ("The national football team", "won the regional championship", "in Lisbon", "on Sunday",
     "the coach will stay on for another season"),
    ("A technology company", "announced plans to cut 500 jobs", "in Dublin", "this week",
     "unions have called for talks with management"),
    ("Scientists", "discovered a new species of frog", "in the Peruvian rainforest", "last month",
     "the area may now be protected from logging"),
    ("The central bank", "raised interest rates by half a point", "in London", "on Thursday",
     "mortgage payments are expected to rise"),
    ("A local hospital", "opened a new children's ward", "in Bristol", "yesterday",
     "waiting times for young patients should shorten"),
    ("Firefighters", "rescued two hikers from a flooded canyon", "in Utah", "on Saturday",
     "park officials closed the trail until further notice"),
]


def _story(who: str, did: str, where: str, when: str, then: str) -> str:
    return (f"{who} {did} {where} {when}, officials said. The decision followed weeks of discussion "
            f"and drew strong reactions from residents. According to a spokesperson, {then}. "
            f"Critics argued that more information should have been shared earlier, while supporters "
            f"welcomed the news. Further updates are expected in the coming days.")


def summeval_frames(rng: random.Random) -> TaskFrames:
    rows = []
    for i, (who, did, where, when, then) in enumerate(STORIES):
        other = STORIES[(i + 3) % len(STORIES)]
        human = [f"{who} {did} {where} {when}; {then}.", f"{where[3:] if where.startswith('in ') else where}: {who.lower()} {did}."]
        machine = [(f"{who} {did} {where} {when}, and {then}.", 5.0),
                   (f"{who} {did} {where}.", 4.3),
                   (f"{who} {did}. Critics argued more information should have been shared.", 3.7),
                   (f"Residents reacted strongly to news {where}. Further updates are expected.", 2.3),
                   ("Officials said the decision followed weeks of discussion.", 1.7),
                   (f"{other[0]} {other[1]} {other[2]} {other[3]}.", 1.0)]
        rng.shuffle(machine)
        rows.append({"id": str(i), "text": _story(who, did, where, when, then), "human_summaries": human,
                     "machine_summaries": [m for m, _ in machine], "relevance": [r for _, r in machine]})
    schema = {"id": pl.String, "text": pl.String, "human_summaries": pl.List(pl.String),
              "machine_summaries": pl.List(pl.String), "relevance": pl.List(pl.Float64)}
    return {("default", "test"): {"": pl.DataFrame(rows, schema=schema)}}


# ------------------------------------------------------------------ Tatoeba

# English, German, French, Spanish
PARALLEL = [
    ("I am hungry.", "Ich habe Hunger.", "J'ai faim.", "Tengo hambre."),
    ("Where is the train station?", "Wo ist der Bahnhof?", "Où est la gare ?", "¿Dónde está la estación de tren?"),
    ("The cat is sleeping on the sofa.", "Die Katze schläft auf dem Sofa.", "Le chat dort sur le canapé.", "El gato duerme en el sofá."),
    ("I don't understand.", "Ich verstehe nicht.", "Je ne comprends pas.", "No entiendo."),
    ("What time is it?", "Wie spät ist es?", "Quelle heure est-il ?", "¿Qué hora es?"),
    ("My brother lives in Berlin.", "Mein Bruder wohnt in Berlin.", "Mon frère habite à Berlin.", "Mi hermano vive en Berlín."),
    ("It is raining today.", "Heute regnet es.", "Il pleut aujourd'hui.", "Hoy está lloviendo."),
    ("Can you help me?", "Kannst du mir helfen?", "Peux-tu m'aider ?", "¿Puedes ayudarme?"),
    ("I like to read books.", "Ich lese gern Bücher.", "J'aime lire des livres.", "Me gusta leer libros."),
    ("The water is cold.", "Das Wasser ist kalt.", "L'eau est froide.", "El agua está fría."),
    ("We are going to the beach tomorrow.", "Wir fahren morgen an den Strand.", "Nous allons à la plage demain.", "Mañana vamos a la playa."),
    ("She speaks three languages.", "Sie spricht drei Sprachen.", "Elle parle trois langues.", "Ella habla tres idiomas."),
    ("How much does this cost?", "Wie viel kostet das?", "Combien ça coûte ?", "¿Cuánto cuesta esto?"),
    ("I have two children.", "Ich habe zwei Kinder.", "J'ai deux enfants.", "Tengo dos hijos."),
    ("The shop opens at nine.", "Der Laden öffnet um neun.", "Le magasin ouvre à neuf heures.", "La tienda abre a las nueve."),
    ("Thank you very much.", "Vielen Dank.", "Merci beaucoup.", "Muchas gracias."),
    ("He forgot his keys.", "Er hat seine Schlüssel vergessen.", "Il a oublié ses clés.", "Olvidó sus llaves."),
    ("The book is on the table.", "Das Buch liegt auf dem Tisch.", "Le livre est sur la table.", "El libro está sobre la mesa."),
    ("I drink coffee every morning.", "Ich trinke jeden Morgen Kaffee.", "Je bois du café tous les matins.", "Bebo café todas las mañanas."),
    ("Our house has a small garden.", "Unser Haus hat einen kleinen Garten.", "Notre maison a un petit jardin.", "Nuestra casa tiene un jardín pequeño."),
    ("Please close the window.", "Bitte schließ das Fenster.", "Ferme la fenêtre, s'il te plaît.", "Cierra la ventana, por favor."),
    ("The children are playing outside.", "Die Kinder spielen draußen.", "Les enfants jouent dehors.", "Los niños juegan afuera."),
    ("I lost my wallet.", "Ich habe meine Geldbörse verloren.", "J'ai perdu mon portefeuille.", "Perdí mi cartera."),
    ("Tom is a doctor.", "Tom ist Arzt.", "Tom est médecin.", "Tom es médico."),
    ("The bus is late again.", "Der Bus ist wieder zu spät.", "Le bus est encore en retard.", "El autobús llega tarde otra vez."),
    ("I want to learn to swim.", "Ich möchte schwimmen lernen.", "Je veux apprendre à nager.", "Quiero aprender a nadar."),
    ("This soup is too salty.", "Diese Suppe ist zu salzig.", "Cette soupe est trop salée.", "Esta sopa está demasiado salada."),
    ("Do you have a dog?", "Hast du einen Hund?", "As-tu un chien ?", "¿Tienes un perro?"),
    ("The movie starts at eight.", "Der Film fängt um acht an.", "Le film commence à huit heures.", "La película empieza a las ocho."),
    ("My phone is broken.", "Mein Handy ist kaputt.", "Mon téléphone est cassé.", "Mi teléfono está roto."),
]
TATOEBA_SUBSETS = {"deu-eng": 1, "fra-eng": 2, "spa-eng": 3}


def tatoeba_frames() -> TaskFrames:
    schema = {"sentence1": pl.String, "sentence2": pl.String}
    return {(subset, "test"): {"": pl.DataFrame([{"sentence1": row[col], "sentence2": row[0]} for row in PARALLEL],
                                                schema=schema)}
            for subset, col in TATOEBA_SUBSETS.items()}


def all_frames(seed: int = 0, bge_dir: Path = BGE_DIR) -> dict[str, TaskFrames]:
    """Every demo task's tables, deterministic in ``seed``, the installed STANDIN_PACKAGES and WordNet."""
    rng = random.Random(seed)
    pool = Pool(standin_docs(bge_dir))
    return {
        "EmotionClassification": emotion_frames(pool),
        "TwentyNewsgroupsClustering": newsgroup_frames(pool, rng),
        "SprintDuplicateQuestions": sprint_frames(pool, rng),
        "AskUbuntuDupQuestions": askubuntu_frames(pool, rng),
        "SciFact": scifact_frames(pool),
        "STS15": sts_frames(rng),
        "SummEval": summeval_frames(rng),
        "Tatoeba": tatoeba_frames(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("data/demo/mteb"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bge-dir", type=Path, default=BGE_DIR, help="the training pairs no text may repeat")
    args = parser.parse_args()
    for name, frames in all_frames(args.seed, args.bge_dir).items():
        if (args.out / name).exists():
            shutil.rmtree(args.out / name)
        write_task(frames, args.out / name)
        rows = sum(f.height for tables in frames.values() for f in tables.values())
        print(f"{name:<28} {rows:>5} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
