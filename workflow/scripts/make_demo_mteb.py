"""Write the small offline MTEB demo data to data/demo/mteb/<Task>/ (layout of embtune.data.mteb_data).

Why: the CPU demo must run the real mteb evaluators on all 8 pinned tasks in seconds, with no
network. The texts are written here (hand-written phrases composed by small templates, so the
language is real and the labels are true by construction): emotion sentences, newsgroup-style
subject lines, duplicate questions, claims with abstracts, graded sentence pairs, news stories
with summaries, and sentence translations. Deterministic: re-running writes identical files.

    .venv/bin/python workflow/scripts/make_demo_mteb.py [--out data/demo/mteb]
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

import polars as pl

from embtune.data.mteb_data import TaskFrames, write_task

# ------------------------------------------------------------------ EmotionClassification

# label ids as in the real dataset: sadness 0, joy 1, love 2, anger 3, fear 4, surprise 5
EMOTIONS: dict[int, list[str]] = {
    0: ["heartbroken", "miserable", "lonely", "gloomy", "hopeless", "homesick", "defeated", "empty",
        "so low", "crushed"],
    1: ["cheerful", "delighted", "thrilled", "content", "so happy", "grateful", "joyful", "glad",
        "on top of the world", "relaxed and happy"],
    2: ["loved", "tender", "adored", "affectionate", "so fond of everyone", "romantic", "caring",
        "passionate", "devoted", "warm inside"],
    3: ["furious", "irritated", "so angry", "annoyed", "resentful", "outraged", "bitter",
        "fed up", "livid", "cranky"],
    4: ["terrified", "anxious", "scared", "nervous", "frightened", "uneasy", "panicky",
        "worried sick", "afraid", "shaky"],
    5: ["amazed", "astonished", "shocked", "stunned", "surprised", "taken aback", "curious",
        "startled", "dazed", "impressed"],
}
EMOTION_CONTEXTS = [
    "i feel {e} today", "i have been feeling {e} since this morning", "honestly i feel {e} right now",
    "i feel {e} after talking to my sister", "i woke up feeling {e}", "i feel {e} about the news",
    "i feel {e} when i think about work", "tonight i feel {e}", "i feel {e} and i do not know why",
    "i keep feeling {e} about the whole thing", "walking home i felt {e}",
    "i felt {e} reading the message", "i am still feeling {e} after the weekend",
    "i feel {e} every time the phone rings", "i feel {e} about moving to a new city",
    "i feel {e} watching the rain",
]


def emotion_frames(rng: random.Random) -> TaskFrames:
    rows = [{"text": ctx.format(e=word), "label": label}
            for label, words in EMOTIONS.items() for word in words for ctx in EMOTION_CONTEXTS]
    rng.shuffle(rows)
    train, test = [], []
    counts: dict[tuple[str, int], int] = {}
    for row in rows:
        split = "train" if counts.get(("train", row["label"]), 0) < 20 else "test"
        if split == "test" and counts.get(("test", row["label"]), 0) >= 12:
            continue
        counts[(split, row["label"])] = counts.get((split, row["label"]), 0) + 1
        (train if split == "train" else test).append(row)
    schema = {"text": pl.String, "label": pl.Int64}
    return {("default", "train"): {"": pl.DataFrame(train, schema=schema)},
            ("default", "test"): {"": pl.DataFrame(test, schema=schema)}}


# ------------------------------------------------------------------ TwentyNewsgroupsClustering

NEWSGROUPS: dict[str, list[str]] = {
    "comp.graphics": ["3D rendering", "JPEG compression", "ray tracing", "polygon shading",
                      "image file formats", "texture mapping", "VGA palettes", "GIF viewers"],
    "rec.autos": ["the new Civic", "brake pads", "engine oil", "a used Toyota pickup",
                  "tire pressure", "my transmission", "car insurance rates", "a V8 engine"],
    "sci.space": ["the Hubble telescope", "shuttle launches", "the lunar lander",
                  "orbital mechanics", "Mars probes", "satellite tracking", "rocket fuel",
                  "the space station"],
    "sci.med": ["migraine headaches", "blood pressure medication", "vitamin C doses",
                "Lyme disease", "allergy shots", "chronic back pain", "cholesterol levels",
                "antibiotic resistance"],
    "rec.sport.hockey": ["the Stanley Cup playoffs", "the Penguins goalie", "NHL trades",
                         "power play stats", "the Bruins defense", "hockey sticks",
                         "the Maple Leafs", "overtime rules"],
    "soc.religion.christian": ["the Gospel of John", "infant baptism", "prayer and faith",
                               "the resurrection", "church attendance", "the Trinity",
                               "Sunday worship", "reading the Psalms"],
    "talk.politics.guns": ["gun control laws", "the Second Amendment", "concealed carry permits",
                           "the assault weapons ban", "firearm registration", "handgun waiting periods",
                           "the NRA", "gun show sales"],
    "comp.sys.mac.hardware": ["the PowerBook 170", "Quadra memory upgrades", "SCSI drives on a Mac",
                              "the Centris 650", "Mac monitor cables", "LC II video RAM",
                              "the Apple keyboard", "SIMM slots"],
}
SUBJECT_PATTERNS = ["Re: {x}", "Question about {x}", "Looking for info on {x}", "Help with {x}",
                    "Re: Thoughts on {x}?", "FAQ: {x}", "Opinions on {x} wanted", "Re: {x} again"]


def newsgroup_frames(rng: random.Random, n_sets: int = 3, per_group: int = 6) -> TaskFrames:
    rows = []
    for _ in range(n_sets):
        pairs = [(pat.format(x=topic), group) for group, topics in NEWSGROUPS.items()
                 for topic in rng.sample(topics, per_group) for pat in [rng.choice(SUBJECT_PATTERNS)]]
        rng.shuffle(pairs)
        rows.append({"sentences": [s for s, _ in pairs], "labels": [g for _, g in pairs]})
    schema = {"sentences": pl.List(pl.String), "labels": pl.List(pl.String)}
    return {("default", "test"): {"": pl.DataFrame(rows, schema=schema)}}


# ------------------------------------------------------------------ SprintDuplicateQuestions

SPRINT_ACTIONS = [
    "activate my new phone", "check my data usage", "reset my voicemail password",
    "transfer my number to a new phone", "turn on mobile hotspot", "pay my bill online",
    "add a line to my plan", "unlock my phone for international use", "set up visual voicemail",
    "block a phone number", "change my plan", "update my phone software", "find my account pin",
    "turn off data roaming", "set up call forwarding", "return a damaged phone",
    "check my signal coverage", "enable wifi calling", "change my billing address",
    "cancel my international add on", "recover deleted text messages", "upgrade my device early",
    "stop spam text messages", "restore my contacts from backup",
]
SPRINT_PATTERNS = ["How do I {a}?", "What is the way to {a}?", "Can someone tell me how to {a}?",
                   "Steps to {a} on Sprint", "I need to {a}, how?", "Is it possible to {a} myself?"]


def sprint_frames(rng: random.Random) -> TaskFrames:
    rows = []
    for i, action in enumerate(SPRINT_ACTIONS):
        p1, p2 = rng.sample(SPRINT_PATTERNS, 2)
        rows.append({"sentence1": p1.format(a=action), "sentence2": p2.format(a=action), "labels": 1})
        other = SPRINT_ACTIONS[(i + rng.randrange(1, len(SPRINT_ACTIONS))) % len(SPRINT_ACTIONS)]
        for _ in range(3):
            q1, q2 = rng.sample(SPRINT_PATTERNS, 2)
            rows.append({"sentence1": q1.format(a=action), "sentence2": q2.format(a=other), "labels": 0})
            other = rng.choice([a for a in SPRINT_ACTIONS if a != action])
    schema = {"sentence1": pl.String, "sentence2": pl.String, "labels": pl.Int64}
    return {("default", "test"): {"": pl.DataFrame(rows, schema=schema)}}


# ------------------------------------------------------------------ AskUbuntuDupQuestions

UBUNTU_TOPICS = [
    ("install nvidia drivers", "the proprietary graphics driver"),
    ("mount a usb drive", "an external usb stick"), ("change the default shell", "zsh as login shell"),
    ("upgrade to the next release", "do-release-upgrade"), ("fix a broken grub", "the boot loader"),
    ("connect to wifi from the terminal", "nmcli"), ("add a ppa", "a personal package archive"),
    ("remove old kernels", "unused linux images"), ("set a static ip", "netplan addresses"),
    ("enable ssh login", "the openssh server"), ("increase swap size", "the swap file"),
    ("install google chrome", "the chrome deb package"), ("schedule a cron job", "crontab entries"),
    ("change screen resolution", "xrandr modes"), ("fix no sound after update", "pulseaudio output"),
    ("create a desktop shortcut", "a .desktop launcher"),
]
UBUNTU_Q = ["How can I {a} on Ubuntu?", "What is the correct way to {a}?", "Unable to {a} in 22.04",
            "{A} - step by step?", "Best way to {a} with {d}?", "Trouble when I try to {a} using {d}"]


def _ubuntu_question(pattern: str, action: str, detail: str) -> str:
    return pattern.format(a=action, A=action[0].upper() + action[1:], d=detail)


def askubuntu_frames(rng: random.Random, n_candidates: int = 8) -> TaskFrames:
    corpus, queries, qrels, top = [], [], [], []
    for qi, (action, detail) in enumerate(UBUNTU_TOPICS):
        patterns = rng.sample(UBUNTU_Q, 3)
        qid = f"q{qi}"
        queries.append({"id": qid, "text": _ubuntu_question(patterns[0], action, detail)})
        cands = [(f"d{qi}_{k}", _ubuntu_question(p, action, detail), 1) for k, p in enumerate(patterns[1:])]
        others = rng.sample([t for t in UBUNTU_TOPICS if t[0] != action], n_candidates - len(cands))
        cands += [(f"d{qi}_{k + 2}", _ubuntu_question(rng.choice(UBUNTU_Q), a, d), 0)
                  for k, (a, d) in enumerate(others)]
        rng.shuffle(cands)
        corpus += [{"id": cid, "text": text, "title": ""} for cid, text, _ in cands]
        qrels += [{"query-id": qid, "corpus-id": cid, "score": rel} for cid, _, rel in cands]
        top.append({"query-id": qid, "corpus-ids": [cid for cid, _, _ in cands]})
    return {("default", "test"): _retrieval_tables(corpus, queries, qrels, top)}


def _retrieval_tables(corpus: list, queries: list, qrels: list, top: list | None) -> dict[str, pl.DataFrame]:
    out = {"corpus": pl.DataFrame(corpus, schema={"id": pl.String, "text": pl.String, "title": pl.String}),
           "queries": pl.DataFrame(queries, schema={"id": pl.String, "text": pl.String}),
           "qrels": pl.DataFrame(qrels, schema={"query-id": pl.String, "corpus-id": pl.String, "score": pl.Int64})}
    if top is not None:
        out["top_ranked"] = pl.DataFrame(top, schema={"query-id": pl.String, "corpus-ids": pl.List(pl.String)})
    return out


# ------------------------------------------------------------------ SciFact

# (exposure, outcome, population, direction of the finding)
SCIFACT_FACTS = [
    ("vitamin D supplementation", "the risk of respiratory infections", "older adults", "reduces"),
    ("statin therapy", "LDL cholesterol", "patients with diabetes", "reduces"),
    ("regular aerobic exercise", "insulin sensitivity", "overweight adults", "increases"),
    ("smoking", "the incidence of lung cancer", "adult men", "increases"),
    ("aspirin", "the rate of recurrent stroke", "stroke survivors", "reduces"),
    ("sleep deprivation", "cortisol levels", "healthy volunteers", "increases"),
    ("breastfeeding", "the risk of childhood asthma", "infants", "reduces"),
    ("high salt intake", "systolic blood pressure", "middle-aged adults", "increases"),
    ("metformin", "hepatic glucose production", "mice", "reduces"),
    ("the BRCA1 mutation", "the lifetime risk of breast cancer", "women", "increases"),
    ("air pollution exposure", "hospital admissions for asthma", "children", "increases"),
    ("a Mediterranean diet", "cardiovascular events", "high-risk adults", "reduces"),
    ("the measles vaccine", "measles incidence", "school-age children", "reduces"),
    ("chronic alcohol use", "liver fibrosis", "adult patients", "increases"),
    ("tumour necrosis factor inhibitors", "joint inflammation", "patients with rheumatoid arthritis", "reduces"),
    ("obesity", "the risk of type 2 diabetes", "adolescents", "increases"),
    ("hand washing programmes", "diarrhoeal illness", "households in low-income countries", "reduces"),
    ("antibiotic overuse", "carriage of resistant bacteria", "hospital patients", "increases"),
    ("mindfulness training", "symptoms of anxiety", "university students", "reduces"),
    ("folic acid supplementation", "neural tube defects", "pregnant women", "reduces"),
]
ABSTRACT = ("We studied whether {x} affects {y} in {p}. In a randomised cohort of {n} participants "
            "followed for {m} months, {x} {v} {y} compared with controls (p < 0.01). {extra} "
            "These findings indicate that {x} {v} {y} in {p}.")
EXTRAS = ["The effect was consistent across subgroups.", "Adverse events were rare.",
          "Results were adjusted for age and sex.", "A dose-response relationship was observed."]
OPPOSITE = {"reduces": "increases", "increases": "reduces"}


def scifact_frames(rng: random.Random) -> TaskFrames:
    corpus, queries, qrels = [], [], []
    for i, (x, y, p, v) in enumerate(SCIFACT_FACTS):
        doc = f"{1000 + i}"
        text = ABSTRACT.format(x=x, y=y, p=p, v=v, n=rng.randrange(80, 4000),
                               m=rng.choice([6, 12, 24, 36]), extra=rng.choice(EXTRAS))
        corpus.append({"id": doc, "text": text, "title": f"Effect of {x} on {y} in {p}"})
        queries.append({"id": str(i), "text": f"{x[0].upper() + x[1:]} {v} {y}."})
        qrels.append({"query-id": str(i), "corpus-id": doc, "score": 1})
        # a distractor abstract on the same exposure but another outcome keeps retrieval honest
        y2 = SCIFACT_FACTS[(i + 7) % len(SCIFACT_FACTS)][1]
        corpus.append({"id": f"{2000 + i}", "title": f"{x[0].upper() + x[1:]} and {y2}",
                       "text": ABSTRACT.format(x=x, y=y2, p=p, v=OPPOSITE[v], n=rng.randrange(80, 4000),
                                               m=rng.choice([6, 12, 24]), extra=rng.choice(EXTRAS))})
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


def all_frames(seed: int = 0) -> dict[str, TaskFrames]:
    """Every demo task's tables, deterministic in ``seed``."""
    rng = random.Random(seed)
    return {
        "EmotionClassification": emotion_frames(rng),
        "TwentyNewsgroupsClustering": newsgroup_frames(rng),
        "SprintDuplicateQuestions": sprint_frames(rng),
        "AskUbuntuDupQuestions": askubuntu_frames(rng),
        "SciFact": scifact_frames(rng),
        "STS15": sts_frames(rng),
        "SummEval": summeval_frames(rng),
        "Tatoeba": tatoeba_frames(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("data/demo/mteb"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, frames in all_frames(args.seed).items():
        if (args.out / name).exists():
            shutil.rmtree(args.out / name)
        write_task(frames, args.out / name)
        rows = sum(f.height for tables in frames.values() for f in tables.values())
        print(f"{name:<28} {rows:>5} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
