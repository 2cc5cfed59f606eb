"""Write the shipped SQuAD v2 and HotpotQA demo files (paper 2, App. C and D) in the official formats.

Kept for provenance only: the generated files are committed and the demo never re-runs this.
All text is written by hand here (short encyclopaedic paragraphs); nothing is downloaded.

  data/demo/squad/train-v2.0.json, dev-v2.0.json
      SQuAD v2.0 layout: {"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id",
      "question", "answers": [{"text", "answer_start"}], "is_impossible"[, "plausible_answers"]}]}]}]}.
      30 train questions (1 answer each, as in train) and 12 dev questions (several annotators'
      answers, as in dev); 4 unanswerable ones; answer_start is located in the context here.
  data/demo/hotpotqa/hotpot_train_v1.1.json, hotpot_dev_distractor_v1.json
      HotpotQA layout: a list of {"_id", "question", "answer", "supporting_facts": [[title,
      sent_id]], "context": [[title, [sentences]]], "type", "level"}. 22 train questions (easy,
      medium, hard) and 8 dev questions (all "hard", as in the real dev set); each has its 2 gold
      paragraphs plus 8 distractors from the pool below, the ones sharing most words with the
      question and gold paragraphs (3 questions get 7: the "fewer than 10 passages" filter has
      something to drop). Non-first sentences keep a leading space, as in
      HotpotQA.

Usage: python workflow/scripts/make_demo_qa.py [--out data/demo]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from pathlib import Path

# ---------------------------------------------------------------- SQuAD v2
# (title, context, [(question, [answers]) ...]); answers [] = unanswerable, with a plausible one.
SQUAD_TRAIN = [
    ("Danube",
     "The Danube is the second-longest river in Europe, after the Volga. It rises in the Black "
     "Forest in Germany and flows for about 2,850 kilometres. The river passes through ten "
     "countries, more than any other river in the world. Four capital cities lie on its banks: "
     "Vienna, Bratislava, Budapest and Belgrade. It empties into the Black Sea through a large "
     "delta in Romania and Ukraine. The delta is a protected wetland and home to hundreds of "
     "bird species.",
     [("Which river in Europe is longer than the Danube?", ["the Volga"]),
      ("Where does the Danube rise?", ["the Black Forest in Germany"]),
      ("How many countries does the Danube pass through?", ["ten"]),
      ("Into which sea does the Danube empty?", ["the Black Sea"]),
      ("Which capital city was founded on the Volga?", [], "Belgrade")]),
    ("Marie_Curie",
     "Marie Curie was a physicist and chemist who conducted pioneering research on "
     "radioactivity. She was born in Warsaw in 1867 and moved to Paris in 1891 to study. In 1903 "
     "she shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel. Eight years "
     "later she received the Nobel Prize in Chemistry for the discovery of polonium and radium. "
     "She was the first person to win Nobel Prizes in two different sciences. Polonium was named "
     "after her native country, Poland.",
     [("In which city was Marie Curie born?", ["Warsaw"]),
      ("When did Marie Curie move to Paris?", ["1891"]),
      ("Which elements did Marie Curie discover?", ["polonium and radium"]),
      ("Polonium was named after which country?", ["Poland"]),
      ("Who shared the 1903 Nobel Prize in Physics with Marie Curie?",
       ["Pierre Curie and Henri Becquerel"])]),
    ("Photosynthesis",
     "Photosynthesis is the process by which plants, algae and some bacteria convert light "
     "energy into chemical energy. It takes place mainly in the chloroplasts of leaf cells. The "
     "process uses carbon dioxide and water and releases oxygen as a by-product. The green "
     "pigment chlorophyll absorbs mostly blue and red light.",
     [("Where in plant cells does photosynthesis mainly take place?", ["the chloroplasts"]),
      ("What gas is released by photosynthesis?", ["oxygen"]),
      ("Which pigment absorbs light in plants?", ["chlorophyll"]),
      ("Which animals perform photosynthesis at night?", [], "algae")]),
    ("Great_Wall_of_China",
     "The Great Wall of China is a series of fortifications built across the historical northern "
     "borders of Chinese states. Construction began as early as the 7th century BC, and several "
     "walls were later joined together. The best-known sections were built during the Ming "
     "dynasty, between 1368 and 1644. Including all its branches, the wall is estimated to "
     "measure more than 21,000 kilometres. Contrary to a popular belief, it is not visible to the "
     "naked eye from the Moon. Today it is a UNESCO World Heritage Site and attracts millions of "
     "visitors each year.",
     [("During which dynasty were the best-known sections of the Great Wall built?",
       ["the Ming dynasty"]),
      ("How long is the Great Wall including its branches?", ["more than 21,000 kilometres"]),
      ("When did construction of the Great Wall begin?", ["as early as the 7th century BC"]),
      ("What status does the Great Wall have today?", ["a UNESCO World Heritage Site"]),
      ("From where is the Great Wall said to be visible?", ["the Moon"])]),
    ("Python_(programming_language)",
     "Python is a high-level programming language created by Guido van Rossum. Its first version "
     "was released in 1991. Python emphasises code readability and uses indentation to delimit "
     "blocks. The language supports several programming paradigms, including procedural, "
     "object-oriented and functional programming. Python 3.0, released in 2008, was not fully "
     "backward compatible with earlier versions. The name of the language comes from the British "
     "comedy group Monty Python.",
     [("Who created Python?", ["Guido van Rossum"]),
      ("In what year was the first version of Python released?", ["1991"]),
      ("What does Python use to delimit blocks?", ["indentation"]),
      ("Where does the name Python come from?", ["the British comedy group Monty Python"]),
      ("When was Python 3.0 released?", ["2008"])]),
    ("Mount_Kilimanjaro",
     "Mount Kilimanjaro is a dormant volcano in Tanzania. Its highest peak, Uhuru, rises 5,895 "
     "metres above sea level. It is the highest mountain in Africa and the highest single "
     "free-standing mountain in the world.",
     [("In which country is Mount Kilimanjaro?", ["Tanzania"]),
      ("What is the name of the highest peak of Kilimanjaro?", ["Uhuru"]),
      ("How high is Uhuru peak?", ["5,895 metres"]),
      ("Who first climbed Mount Kilimanjaro in winter?", [], "Uhuru")]),
    ("Honey_bee",
     "Honey bees live in large colonies with a single queen. Honey bees make honey from the "
     "nectar of flowers.",
     [("What insects make honey from nectar?", ["Honey bees"]),   # in both sentences: no negative
      ("From what do honey bees make honey?", ["the nectar of flowers"])]),
]

SQUAD_DEV = [
    ("Amazon_River",
     "The Amazon River in South America is the largest river by discharge volume of water in the "
     "world. It flows through Peru, Colombia and Brazil before reaching the Atlantic Ocean. The "
     "Amazon basin covers about seven million square kilometres. Most of the basin is covered by "
     "the Amazon rainforest. The river has no bridges along its entire length, because much of it "
     "flows through rainforest with few roads. Its mouth is so wide that the river changes the "
     "colour of the ocean far from the shore.",
     [("Which ocean does the Amazon River flow into?", ["the Atlantic Ocean", "Atlantic Ocean", "Atlantic"]),
      ("How large is the Amazon basin?", ["about seven million square kilometres",
                                          "seven million square kilometres"]),
      ("Why are there no bridges across the Amazon?",
       ["much of it flows through rainforest with few roads"]),
      ("Through which countries does the Amazon flow?", ["Peru, Colombia and Brazil"]),
      ("Which bridge is the longest over the Amazon?", [], "Brazil")]),
    ("Johann_Sebastian_Bach",
     "Johann Sebastian Bach was a German composer of the Baroque period. He was born in Eisenach "
     "in 1685 into a family of musicians. Bach worked as an organist and later as music director "
     "in Leipzig. His works include the Brandenburg Concertos, the Mass in B minor and the "
     "Goldberg Variations. After his death in 1750 his music was neglected for several decades. "
     "Felix Mendelssohn helped to revive interest in Bach in the 19th century.",
     [("Where was Bach born?", ["Eisenach", "in Eisenach"]),
      ("In which city was Bach music director?", ["Leipzig", "in Leipzig"]),
      ("When did Bach die?", ["1750", "in 1750"]),
      ("Who helped revive interest in Bach's music?", ["Felix Mendelssohn", "Mendelssohn"])]),
    ("Solar_System",
     "The Solar System consists of the Sun and the objects that orbit it. The eight planets are "
     "Mercury, Venus, Earth, Mars, Jupiter, Saturn, Uranus and Neptune. Jupiter is the largest "
     "planet and has dozens of moons. Pluto was reclassified as a dwarf planet in 2006.",
     [("Which is the largest planet?", ["Jupiter"]),     # the name is in two sentences
      ("When was Pluto reclassified?", ["2006", "in 2006"]),
      ("How many planets are in the Solar System?", ["eight"])]),
]


def _id(*parts: str) -> str:
    """24 hex digits, like SQuAD's and HotpotQA's ids (stable: derived from the text)."""
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:24]


def _answer(context: str, text: str) -> dict[str, object]:
    start = context.find(text)
    if start < 0:
        raise ValueError(f"answer {text!r} not in context {context[:40]!r}")
    return {"text": text, "answer_start": start}


def squad_file(articles: list[tuple]) -> dict[str, object]:
    data = []
    for title, context, questions in articles:
        qas = []
        for question, answers, *plausible in questions:
            qa: dict[str, object] = {"question": question, "id": _id(title, question),
                                     "answers": [_answer(context, a) for a in answers],
                                     "is_impossible": not answers}
            if not answers:
                qa["plausible_answers"] = [_answer(context, plausible[0])]
            qas.append(qa)
        data.append({"title": title, "paragraphs": [{"qas": qas, "context": context}]})
    return {"version": "v2.0", "data": data}


# ---------------------------------------------------------------- HotpotQA
PARAGRAPHS = {
    "Lake Baikal": ["Lake Baikal is a rift lake in the south of Siberia, Russia.",
                    " It is the deepest lake in the world, reaching 1,642 metres.",
                    " The lake holds about a fifth of the world's unfrozen fresh surface water."],
    "Irkutsk": ["Irkutsk is a city in Siberia, Russia, and the administrative centre of Irkutsk Oblast.",
                " It lies on the Angara River, about 70 kilometres from Lake Baikal."],
    "Angara River": ["The Angara is a major river in Siberia.",
                     " It is the only river that flows out of Lake Baikal.",
                     " It joins the Yenisei near the town of Strelka."],
    "Yenisei": ["The Yenisei is one of the longest river systems in the world.",
                " It flows north into the Kara Sea of the Arctic Ocean."],
    "Ada Lovelace": ["Ada Lovelace was an English mathematician born in London in 1815.",
                     " She wrote what is often called the first computer program, for Charles "
                     "Babbage's Analytical Engine."],
    "Charles Babbage": ["Charles Babbage was an English mathematician and mechanical engineer.",
                        " He designed the Difference Engine and the Analytical Engine, early "
                        "mechanical computers.", " He was born in 1791."],
    "Analytical Engine": ["The Analytical Engine was a proposed general-purpose mechanical computer.",
                          " It was first described by Charles Babbage in 1837.",
                          " It was never completed during his lifetime."],
    "Alan Turing": ["Alan Turing was an English mathematician and computer scientist born in 1912.",
                    " He formalised the concepts of algorithm and computation with the Turing machine."],
    "Bletchley Park": ["Bletchley Park is an English country house in Buckinghamshire.",
                       " During the Second World War it was the centre of Allied code-breaking, "
                       "where Alan Turing worked."],
    "Grace Hopper": ["Grace Hopper was an American computer scientist and United States Navy rear admiral.",
                     " She developed one of the first compilers and influenced the language COBOL."],
    "COBOL": ["COBOL is a programming language designed for business use.",
              " It was first released in 1959."],
    "Fortran": ["Fortran is a programming language developed at IBM in the 1950s.",
                " It is still used for numerical computing."],
    "The Hobbit": ["The Hobbit is a children's fantasy novel by J. R. R. Tolkien.",
                   " It was published in 1937."],
    "J. R. R. Tolkien": ["John Ronald Reuel Tolkien was an English writer and philologist.",
                         " He was a professor at the University of Oxford."],
    "University of Oxford": ["The University of Oxford is a collegiate research university in Oxford, England.",
                             " It is the oldest university in the English-speaking world."],
    "Pride and Prejudice": ["Pride and Prejudice is a novel by Jane Austen published in 1813."],
    "Jane Austen": ["Jane Austen was an English novelist born in 1775 in Steventon, Hampshire.",
                    " Her novels include Sense and Sensibility and Emma."],
    "Mary Shelley": ["Mary Shelley was an English novelist born in 1797.",
                     " She wrote Frankenstein, published in 1818."],
    "Frankenstein": ["Frankenstein; or, The Modern Prometheus is a novel by Mary Shelley.",
                     " It is often regarded as an early work of science fiction."],
    "Mount Elbrus": ["Mount Elbrus is a dormant volcano in the Caucasus Mountains.",
                     " At 5,642 metres it is the highest mountain in Europe."],
    "Mont Blanc": ["Mont Blanc is the highest mountain in the Alps, at 4,806 metres.",
                   " It lies on the border between France and Italy."],
    "Chamonix": ["Chamonix is a resort town in the French Alps at the foot of Mont Blanc.",
                 " It hosted the first Winter Olympics in 1924."],
    "1924 Winter Olympics": ["The 1924 Winter Olympics were held in Chamonix, France.",
                             " Norway won the most medals."],
    "Danube Delta": ["The Danube Delta is the second largest river delta in Europe.",
                     " Most of it lies in Romania."],
    "Vienna": ["Vienna is the capital of Austria and lies on the Danube.",
               " It was the home of composers such as Mozart and Beethoven."],
    "Wolfgang Amadeus Mozart": ["Wolfgang Amadeus Mozart was a composer of the Classical period "
                                "born in Salzburg in 1756.", " He composed more than 800 works."],
    "Salzburg": ["Salzburg is a city in Austria near the border with Germany.",
                 " Its old town is a UNESCO World Heritage Site."],
    "Ludwig van Beethoven": ["Ludwig van Beethoven was a German composer born in Bonn in 1770.",
                             " He moved to Vienna in 1792."],
    "Bonn": ["Bonn is a city on the Rhine in Germany.",
             " It was the capital of West Germany from 1949 to 1990."],
    "Rhine": ["The Rhine is a river that rises in the Swiss Alps.",
              " It flows into the North Sea in the Netherlands."],
    "Marie Curie": ["Marie Curie was a physicist and chemist born in Warsaw.",
                    " She won Nobel Prizes in Physics and Chemistry."],
    "Warsaw": ["Warsaw is the capital and largest city of Poland.", " It lies on the Vistula River."],
    "Vistula": ["The Vistula is the longest river in Poland.",
                " It flows into the Baltic Sea near Gdańsk."],
    "Niels Bohr": ["Niels Bohr was a Danish physicist born in Copenhagen in 1885.",
                   " He received the Nobel Prize in Physics in 1922."],
    "Copenhagen": ["Copenhagen is the capital of Denmark.", " It lies on the island of Zealand."],
    "Albert Einstein": ["Albert Einstein was a theoretical physicist born in Ulm in 1879.",
                        " He received the Nobel Prize in Physics in 1921."],
    "Ulm": ["Ulm is a city on the Danube in the German state of Baden-Württemberg.",
            " Its minster has the tallest church steeple in the world."],
    "Kara Sea": ["The Kara Sea is part of the Arctic Ocean north of Siberia.",
                 " It is frozen for most of the year."],
}

# (question, answer, type, level, [(title, sent_id), (title, sent_id)], n_distractors)
HOTPOT_TRAIN = [
    ("Which river flows out of the lake that is the deepest in the world?", "Angara", "bridge",
     "easy", [("Lake Baikal", 1), ("Angara River", 1)], 8),
    ("Into which sea does the river that the Angara joins flow?", "Kara Sea", "bridge", "medium",
     [("Angara River", 2), ("Yenisei", 1)], 8),
    ("The first computer program was written for a machine designed by a mathematician born in "
     "which year?", "1791", "bridge", "hard", [("Ada Lovelace", 1), ("Charles Babbage", 2)], 8),
    ("Who was born first, Ada Lovelace or Alan Turing?", "Ada Lovelace", "comparison", "easy",
     [("Ada Lovelace", 0), ("Alan Turing", 0)], 8),
    ("At which English country house did the creator of the Turing machine work during the war?",
     "Bletchley Park", "bridge", "medium", [("Alan Turing", 1), ("Bletchley Park", 1)], 8),
    ("When was the programming language influenced by Grace Hopper first released?", "1959",
     "bridge", "medium", [("Grace Hopper", 1), ("COBOL", 1)], 7),
    ("At which university did the author of The Hobbit teach?", "University of Oxford", "bridge",
     "easy", [("The Hobbit", 0), ("J. R. R. Tolkien", 1)], 8),
    ("Which novel was published first, Pride and Prejudice or Frankenstein?", "Pride and Prejudice",
     "comparison", "medium", [("Pride and Prejudice", 0), ("Mary Shelley", 1)], 8),
    ("Which mountain is higher, Mount Elbrus or Mont Blanc?", "Mount Elbrus", "comparison", "easy",
     [("Mount Elbrus", 1), ("Mont Blanc", 0)], 8),
    ("Which country won the most medals at the Winter Olympics hosted by the town at the foot of "
     "Mont Blanc?", "Norway", "bridge", "hard", [("Chamonix", 1), ("1924 Winter Olympics", 1)], 8),
    ("Mozart's birthplace lies near the border with which country?", "Germany", "bridge", "medium",
     [("Wolfgang Amadeus Mozart", 0), ("Salzburg", 0)], 8),
    ("Into which sea does the river on which Bonn lies flow?", "North Sea", "bridge", "medium",
     [("Bonn", 0), ("Rhine", 1)], 8),
    ("Who was born earlier, Mozart or Beethoven?", "Mozart", "comparison", "easy",
     [("Wolfgang Amadeus Mozart", 0), ("Ludwig van Beethoven", 0)], 8),
    ("The birthplace of Marie Curie lies on which river?", "Vistula", "bridge", "easy",
     [("Marie Curie", 0), ("Warsaw", 1)], 8),
    ("Into which sea does the river that flows through the capital of Poland flow?", "Baltic Sea",
     "bridge", "medium", [("Warsaw", 1), ("Vistula", 1)], 8),
    ("Who received the Nobel Prize in Physics earlier, Niels Bohr or Albert Einstein?",
     "Albert Einstein", "comparison", "hard", [("Niels Bohr", 1), ("Albert Einstein", 1)], 8),
    ("On which island is the birthplace of Niels Bohr?", "Zealand", "bridge", "medium",
     [("Niels Bohr", 0), ("Copenhagen", 1)], 8),
    ("Which river flows through Albert Einstein's birthplace?", "Danube", "bridge", "easy",
     [("Albert Einstein", 0), ("Ulm", 0)], 8),
    ("Which language was developed at IBM, Fortran or COBOL?", "Fortran", "comparison", "medium",
     [("Fortran", 0), ("COBOL", 0)], 7),
    ("The Analytical Engine was described by a man born in which year?", "1791", "bridge", "hard",
     [("Analytical Engine", 1), ("Charles Babbage", 2)], 8),
    ("Which city lies on the only river flowing out of Lake Baikal?", "Irkutsk", "bridge", "medium",
     [("Angara River", 1), ("Irkutsk", 1)], 8),
    ("In which country does most of the delta of the river through Vienna lie?", "Romania",
     "bridge", "hard", [("Vienna", 0), ("Danube Delta", 1)], 8),
]

HOTPOT_DEV = [
    ("In what year was the author of Frankenstein born?", "1797", "bridge", "hard",
     [("Frankenstein", 0), ("Mary Shelley", 0)], 8),
    ("Which novelist was born earlier, Jane Austen or Mary Shelley?", "Jane Austen", "comparison",
     "hard", [("Jane Austen", 0), ("Mary Shelley", 0)], 8),
    ("Which is the oldest university in the English-speaking world, where Tolkien was a professor?",
     "University of Oxford", "bridge", "hard", [("J. R. R. Tolkien", 1), ("University of Oxford", 1)], 8),
    ("In which year did the city where Beethoven was born stop being the capital of West Germany?",
     "1990", "bridge", "hard", [("Ludwig van Beethoven", 0), ("Bonn", 1)], 7),
    ("Where does the river that flows through Bonn rise?", "the Swiss Alps", "bridge", "hard",
     [("Bonn", 0), ("Rhine", 0)], 8),
    ("How high is the highest mountain of the Alps, at whose foot Chamonix lies?", "4,806 metres",
     "bridge", "hard", [("Chamonix", 0), ("Mont Blanc", 0)], 8),
    ("Which river flows through both Ulm and Vienna?", "Danube", "comparison", "hard",
     [("Ulm", 0), ("Vienna", 0)], 8),
    ("Which is the largest city of the country where the Vistula flows?", "Warsaw", "bridge", "hard",
     [("Vistula", 0), ("Warsaw", 0)], 8),
]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def distractors(question: str, gold: list[str], n: int, rng: random.Random) -> list[str]:
    """HotpotQA's distractors are retrieved with the question as the query (bigram tf-idf); here
    the pool paragraphs sharing the most words with the question and the gold paragraphs (ties
    broken at random), so they are related rather than random."""
    query = _words(question) | {w for t in gold for w in _words(" ".join(PARAGRAPHS[t]))}
    pool = sorted(t for t in PARAGRAPHS if t not in gold)
    rng.shuffle(pool)
    pool.sort(key=lambda t: -len(query & _words(t + " " + " ".join(PARAGRAPHS[t]))))
    return pool[:n]


def hotpot_file(questions: list[tuple], seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out = []
    for question, answer, qtype, level, facts, n_distractors in questions:
        gold = sorted({t for t, _ in facts})
        titles = gold + distractors(question, gold, n_distractors, rng)
        rng.shuffle(titles)
        out.append({"_id": _id(question), "answer": answer, "question": question,
                    "supporting_facts": [[t, i] for t, i in facts],
                    "context": [[t, PARAGRAPHS[t]] for t in titles],
                    "type": qtype, "level": level})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("data/demo"))
    args = ap.parse_args()
    files = {
        "squad/train-v2.0.json": squad_file(SQUAD_TRAIN),
        "squad/dev-v2.0.json": squad_file(SQUAD_DEV),
        "hotpotqa/hotpot_train_v1.1.json": hotpot_file(HOTPOT_TRAIN, seed=1),
        "hotpotqa/hotpot_dev_distractor_v1.json": hotpot_file(HOTPOT_DEV, seed=2),
    }
    for rel, obj in files.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
