"""Generate the shipped offline demo data under data/demo/{corpus,bge,msmarco,xnli}/.

Kept for provenance only: the generated files are committed and the demo never re-runs this.
All text is real English: Python standard-library docstrings (parsed with ``ast``, never
imported, so no module side effects) and the license texts in /usr/share/common-licenses. The
XNLI pairs (40 per label) are written by hand in English and translated into the 14 other XNLI
languages (``XNLI_TEXT`` at the end). Files written:

  corpus/licenses.txt, corpus/stdlib-docstrings-{0,1,2}.txt   ~1.5 MB prose (BPE + LM pre-training)
  bge/pairs.jsonl          FlagEmbedding {query, pos, neg}: docstring summary -> body,
                           "what does <name> do" -> summary (+ body), license sentence -> rest
  msmarco/msmarco-triplets.jsonl.gz   1000 samples, ~30% list form [q, pos, neg], others dict
                           form with 1-3 positives and 1-12 negatives (same-module docstrings)
  xnli/<lang>/test-00000-of-00001.parquet   premise, hypothesis, label (0/1/2), hub layout

BGE and MSMARCO use disjoint quarters of the documented names (crc32 bucket) so MSMARCO
evaluation passages are not BGE training pairs.

Usage: python workflow/scripts/make_demo_data.py [--out data/demo] [--seed 0]
Output depends on the Python version's stdlib text (generated with CPython 3.11).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
import random
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "turtledemo",
             "ensurepip", "config-3.11-x86_64-linux-gnu"}
LICENSE_DIR = Path("/usr/share/common-licenses")
CORPUS_BYTES = 2_000_000
BGE_PAIRS = 7000
MSMARCO_SAMPLES = 1000
PASSAGE_CHARS = 480


@dataclass(frozen=True)
class Doc:
    """One documented object: dotted name, its summary line and the prose that follows."""

    name: str
    summary: str
    body: str


def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS)
             and not p.name.startswith("test_")]
    return sorted(files, key=lambda p: str(p.relative_to(root)))


def module_name(path: Path) -> str:
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def prose(text: str) -> str:
    """Drop doctest/code lines and collapse whitespace inside paragraphs; keep paragraph breaks."""
    paras = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in para.splitlines()]
        if any(ln.startswith((">>>", "...", "$ ", "%")) for ln in lines):
            continue
        joined = " ".join(ln for ln in lines if ln)
        words = re.findall(r"[A-Za-z]+", joined)
        if len(words) >= 4 and sum(c.isalpha() or c.isspace() for c in joined) > 0.8 * len(joined):
            paras.append(joined)
    return "\n\n".join(paras)


def iter_docs(path: Path) -> Iterator[Doc]:
    """Module, class and function docstrings of one file, in source order."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return
    for name, node in documented(tree, module_name(path)):
        doc = ast.get_docstring(node)
        if not doc:
            continue
        text = prose(doc)
        if not text:
            continue
        summary, _, body = text.partition("\n\n")
        yield Doc(name, summary.strip(), body.strip())


def documented(node: ast.AST, name: str) -> Iterator[tuple[str, ast.AST]]:
    """The node and its public classes/functions, named ``module.Class.method``."""
    yield name, node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not child.name.startswith("_"):
            yield from documented(child, f"{name}.{child.name}")


def clip(text: str, limit: int = PASSAGE_CHARS) -> str:
    """Cut at a sentence end before ``limit`` characters (or a word end) so passages stay prose."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return cut[:end + 1] if end > limit // 3 else cut[:cut.rfind(" ")] + "."


def humanise(name: str) -> str:
    return name.rsplit(".", 1)[-1].replace("_", " ").strip()


def license_paragraphs() -> list[str]:
    paras: list[str] = []
    for path in sorted(LICENSE_DIR.iterdir()):
        if path.is_file() and not path.is_symlink():
            text = path.read_text(encoding="utf-8", errors="replace")
            paras += [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 8]
    return paras


def write_corpus(out: Path, docs: list[Doc]) -> None:
    """~2 MB of prose in a few files: licenses first, then docstrings until the byte budget."""
    out.mkdir(parents=True, exist_ok=True)
    lic = "\n\n".join(license_paragraphs()) + "\n"
    (out / "licenses.txt").write_text(lic, encoding="utf-8")
    budget, buf, size, seen = CORPUS_BYTES - len(lic.encode()), [], 0, set()
    for doc in docs:
        paras = [p for p in (doc.summary, *doc.body.split("\n\n")) if p and p not in seen]
        seen.update(paras)  # boilerplate (copyright lines) appears once, not per module
        if not paras:
            continue
        para = "\n\n".join(paras) + "\n\n"
        buf.append(para)
        size += len(para.encode())
        if size >= budget:
            break
    text = "".join(buf)
    chunk = len(text) // 3 + 1
    for part in range(3):
        (out / f"stdlib-docstrings-{part}.txt").write_text(text[part * chunk:(part + 1) * chunk], encoding="utf-8")


def bge_pairs(docs: list[Doc], rng: random.Random) -> list[dict]:
    """FlagEmbedding pairs: summary -> body, and "what does X do" -> summary (+ body)."""
    bodies = [clip(d.body) for d in docs if len(d.body) >= 80]
    pairs = []
    for d in docs:
        if len(d.body) >= 80 and len(d.summary.split()) >= 3:
            pairs.append({"query": d.summary, "pos": [clip(d.body)]})
        if len(d.summary.split()) >= 4:
            pos = clip(d.summary + (" " + d.body if d.body else ""))
            pairs.append({"query": f"what does {d.name} do", "pos": [pos]})
    for para in license_paragraphs():  # first sentence -> rest of the paragraph
        first, sep, rest = para.partition(". ")
        if sep and len(first.split()) >= 5 and len(rest.split()) >= 10:
            pairs.append({"query": first + ".", "pos": [clip(rest)]})
    rng.shuffle(pairs)
    pairs = pairs[:BGE_PAIRS]
    for p in pairs:
        p["neg"] = [b for b in rng.sample(bodies, 2) if b != p["pos"][0]][:1]
    return pairs


def msmarco_samples(docs: list[Doc], rng: random.Random) -> list[object]:
    """Retrieval-like samples: a question about an object; positives are its docstring
    paragraphs; negatives are docstrings of other objects in the same module (hard-ish)."""
    by_module: dict[str, list[Doc]] = {}
    for d in docs:
        by_module.setdefault(d.name.rsplit(".", 1)[0], []).append(d)
    candidates = [d for d in docs if len(d.summary.split()) >= 4 and "." in d.name]
    rng.shuffle(candidates)
    samples: list[object] = []
    for d in candidates:
        siblings = [clip(s.summary + " " + s.body) for s in by_module[d.name.rsplit(".", 1)[0]] if s.name != d.name]
        others = [clip(o.summary + " " + o.body) for o in rng.sample(docs, 12) if o.name != d.name]
        negatives = list(dict.fromkeys(siblings[:10] + others))
        paras = [d.summary] + [p for p in d.body.split("\n\n") if len(p.split()) >= 6]
        positives = [clip(" ".join(paras[:2]))] + [clip(p) for p in paras[2:4]]
        query = rng.choice(["what does {} do", "what is {} for", "how to use {} in python",
                            "{} python documentation"]).format(humanise(d.name) if rng.random() < 0.5 else d.name)
        form = rng.random()
        if form < 0.3:
            samples.append([query, positives[0], negatives[0]])
        else:
            n_neg = rng.choice([1, 2, 3, 5, 8, 9, 10, 12])
            samples.append({"query": query, "pos": positives, "neg": negatives[:n_neg]})
        if len(samples) == MSMARCO_SAMPLES:
            break
    return samples


def write_jsonl(path: Path, rows: list[object], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    if gz:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as fh:  # mtime=0: reproducible
            fh.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


def write_xnli(out: Path) -> None:
    """One parquet per language, hub layout, same pair order and labels everywhere."""
    labels = [label for label, _ in XNLI_PAIRS]
    for lang in XNLI_LANGUAGES:
        frame = pl.DataFrame(
            {"premise": [texts[lang][0] for _, texts in XNLI_PAIRS],
             "hypothesis": [texts[lang][1] for _, texts in XNLI_PAIRS], "label": labels},
            schema={"premise": pl.String, "hypothesis": pl.String, "label": pl.Int64},
        )
        path = out / lang / "test-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(path, compression="zstd", statistics=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/demo")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    docs = [d for f in stdlib_files() for d in iter_docs(f)]
    # Disjoint halves (by name hash) so MSMARCO passages are not BGE training text.
    msm_docs = [d for d in docs if hash_bucket(d.name) == 0]
    write_corpus(out / "corpus", docs)
    write_jsonl(out / "bge" / "pairs.jsonl", bge_pairs([d for d in docs if hash_bucket(d.name)], random.Random(args.seed)))
    write_jsonl(out / "msmarco" / "msmarco-triplets.jsonl.gz", msmarco_samples(msm_docs, random.Random(args.seed + 1)), gz=True)
    write_xnli(out / "xnli")


def hash_bucket(name: str, n: int = 4) -> int:
    """Stable (not PYTHONHASHSEED-dependent) bucket of a name."""
    import zlib

    return zlib.crc32(name.encode()) % n


XNLI_LANGUAGES = ["ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"]


# --- XNLI demo pairs -------------------------------------------------------------------------
# Written by hand: 40 English premises, each with an entailed, a neutral and a contradicting
# hypothesis, translated into the other 14 XNLI languages. One line per sentence, fields in
# XNLI_COLUMNS order separated by " | "; blocks of 4 lines: premise, entailment, neutral,
# contradiction.
XNLI_COLUMNS = ["en", "de", "es", "fr", "bg", "ru", "el", "tr", "sw", "vi", "ar", "ur", "hi", "th", "zh"]
XNLI_TEXT = """
The man is playing a guitar on the street. | Der Mann spielt auf der Straße Gitarre. | El hombre está tocando la guitarra en la calle. | L'homme joue de la guitare dans la rue. | Мъжът свири на китара на улицата. | Мужчина играет на гитаре на улице. | Ο άντρας παίζει κιθάρα στον δρόμο. | Adam sokakta gitar çalıyor. | Mwanamume anapiga gitaa barabarani. | Người đàn ông đang chơi đàn ghi-ta trên đường phố. | الرجل يعزف على الغيتار في الشارع. | آدمی سڑک پر گٹار بجا رہا ہے۔ | आदमी सड़क पर गिटार बजा रहा है। | ผู้ชายกำลังเล่นกีตาร์อยู่บนถนน | 那个男人正在街上弹吉他。
A man is making music outdoors. | Ein Mann macht draußen Musik. | Un hombre está haciendo música al aire libre. | Un homme fait de la musique en plein air. | Един мъж прави музика навън. | Мужчина исполняет музыку на открытом воздухе. | Ένας άντρας παίζει μουσική έξω. | Bir adam dışarıda müzik yapıyor. | Mwanamume anapiga muziki nje. | Một người đàn ông đang chơi nhạc ngoài trời. | رجل يعزف الموسيقى في الهواء الطلق. | ایک آدمی باہر موسیقی بجا رہا ہے۔ | एक आदमी बाहर संगीत बजा रहा है। | ผู้ชายคนหนึ่งกำลังเล่นดนตรีกลางแจ้ง | 一个男人正在户外演奏音乐。
The man is playing for money. | Der Mann spielt für Geld. | El hombre está tocando por dinero. | L'homme joue pour de l'argent. | Мъжът свири за пари. | Мужчина играет за деньги. | Ο άντρας παίζει για χρήματα. | Adam para için çalıyor. | Mwanamume anapiga ili apate pesa. | Người đàn ông chơi đàn để kiếm tiền. | الرجل يعزف من أجل المال. | آدمی پیسوں کے لیے بجا رہا ہے۔ | आदमी पैसों के लिए बजा रहा है। | ผู้ชายเล่นดนตรีเพื่อหาเงิน | 那个男人在为钱演奏。
The man is sleeping at home. | Der Mann schläft zu Hause. | El hombre está durmiendo en casa. | L'homme dort à la maison. | Мъжът спи вкъщи. | Мужчина спит дома. | Ο άντρας κοιμάται στο σπίτι. | Adam evde uyuyor. | Mwanamume amelala nyumbani. | Người đàn ông đang ngủ ở nhà. | الرجل نائم في المنزل. | آدمی گھر پر سو رہا ہے۔ | आदमी घर पर सो रहा है। | ผู้ชายกำลังนอนหลับอยู่ที่บ้าน | 那个男人正在家里睡觉。

Two children are swimming in a lake. | Zwei Kinder schwimmen in einem See. | Dos niños están nadando en un lago. | Deux enfants nagent dans un lac. | Две деца плуват в езеро. | Двое детей плавают в озере. | Δύο παιδιά κολυμπούν σε μια λίμνη. | İki çocuk bir gölde yüzüyor. | Watoto wawili wanaogelea ziwani. | Hai đứa trẻ đang bơi trong hồ. | طفلان يسبحان في بحيرة. | دو بچے ایک جھیل میں تیر رہے ہیں۔ | दो बच्चे एक झील में तैर रहे हैं। | เด็กสองคนกำลังว่ายน้ำในทะเลสาบ | 两个孩子正在湖里游泳。
Kids are in the water. | Kinder sind im Wasser. | Hay niños en el agua. | Des enfants sont dans l'eau. | Деца са във водата. | Дети находятся в воде. | Παιδιά είναι μέσα στο νερό. | Çocuklar suyun içinde. | Watoto wako majini. | Những đứa trẻ đang ở dưới nước. | الأطفال في الماء. | بچے پانی میں ہیں۔ | बच्चे पानी में हैं। | เด็ก ๆ อยู่ในน้ำ | 孩子们在水里。
The children are on vacation with their parents. | Die Kinder sind mit ihren Eltern im Urlaub. | Los niños están de vacaciones con sus padres. | Les enfants sont en vacances avec leurs parents. | Децата са на почивка с родителите си. | Дети отдыхают в отпуске с родителями. | Τα παιδιά είναι διακοπές με τους γονείς τους. | Çocuklar aileleriyle birlikte tatilde. | Watoto wako likizoni pamoja na wazazi wao. | Những đứa trẻ đang đi nghỉ cùng bố mẹ. | الأطفال في إجازة مع والديهم. | بچے اپنے والدین کے ساتھ چھٹیوں پر ہیں۔ | बच्चे अपने माता-पिता के साथ छुट्टी पर हैं। | เด็ก ๆ กำลังไปเที่ยวพักผ่อนกับพ่อแม่ | 孩子们正和父母一起度假。
The children are sitting in a classroom. | Die Kinder sitzen in einem Klassenzimmer. | Los niños están sentados en un aula. | Les enfants sont assis dans une salle de classe. | Децата седят в класна стая. | Дети сидят в классе. | Τα παιδιά κάθονται σε μια τάξη. | Çocuklar bir sınıfta oturuyor. | Watoto wamekaa darasani. | Những đứa trẻ đang ngồi trong lớp học. | الأطفال يجلسون في فصل دراسي. | بچے ایک کلاس روم میں بیٹھے ہیں۔ | बच्चे एक कक्षा में बैठे हैं। | เด็ก ๆ กำลังนั่งอยู่ในห้องเรียน | 孩子们正坐在教室里。

A woman is reading a book in the park. | Eine Frau liest im Park ein Buch. | Una mujer está leyendo un libro en el parque. | Une femme lit un livre dans le parc. | Жена чете книга в парка. | Женщина читает книгу в парке. | Μια γυναίκα διαβάζει ένα βιβλίο στο πάρκο. | Bir kadın parkta kitap okuyor. | Mwanamke anasoma kitabu bustanini. | Một người phụ nữ đang đọc sách trong công viên. | امرأة تقرأ كتابا في الحديقة. | ایک عورت پارک میں کتاب پڑھ رہی ہے۔ | एक महिला पार्क में किताब पढ़ रही है। | ผู้หญิงคนหนึ่งกำลังอ่านหนังสืออยู่ในสวนสาธารณะ | 一位女士正在公园里看书。
A woman is reading outside. | Eine Frau liest draußen. | Una mujer está leyendo al aire libre. | Une femme lit dehors. | Жена чете навън. | Женщина читает на улице. | Μια γυναίκα διαβάζει έξω. | Bir kadın dışarıda okuyor. | Mwanamke anasoma nje. | Một người phụ nữ đang đọc sách ngoài trời. | امرأة تقرأ في الخارج. | ایک عورت باہر پڑھ رہی ہے۔ | एक महिला बाहर पढ़ रही है। | ผู้หญิงคนหนึ่งกำลังอ่านหนังสืออยู่ข้างนอก | 一位女士在户外看书。
The woman is reading a novel for her class. | Die Frau liest einen Roman für ihren Kurs. | La mujer está leyendo una novela para su clase. | La femme lit un roman pour son cours. | Жената чете роман за своя курс. | Женщина читает роман для своих занятий. | Η γυναίκα διαβάζει ένα μυθιστόρημα για το μάθημά της. | Kadın dersi için bir roman okuyor. | Mwanamke anasoma riwaya kwa ajili ya darasa lake. | Người phụ nữ đang đọc một cuốn tiểu thuyết cho lớp học của mình. | المرأة تقرأ رواية من أجل دروسها. | عورت اپنی کلاس کے لیے ایک ناول پڑھ رہی ہے۔ | महिला अपनी कक्षा के लिए एक उपन्यास पढ़ रही है। | ผู้หญิงกำลังอ่านนวนิยายสำหรับชั้นเรียนของเธอ | 这位女士正在为她的课程读一本小说。
The woman is watching television indoors. | Die Frau sieht drinnen fern. | La mujer está viendo la televisión dentro de casa. | La femme regarde la télévision à l'intérieur. | Жената гледа телевизия вътре. | Женщина смотрит телевизор в помещении. | Η γυναίκα βλέπει τηλεόραση μέσα στο σπίτι. | Kadın içeride televizyon izliyor. | Mwanamke anatazama televisheni ndani ya nyumba. | Người phụ nữ đang xem tivi trong nhà. | المرأة تشاهد التلفاز في الداخل. | عورت گھر کے اندر ٹیلی وژن دیکھ رہی ہے۔ | महिला घर के अंदर टेलीविज़न देख रही है। | ผู้หญิงกำลังดูโทรทัศน์อยู่ในบ้าน | 这位女士正在室内看电视。

The train left the station at eight in the morning. | Der Zug verließ den Bahnhof um acht Uhr morgens. | El tren salió de la estación a las ocho de la mañana. | Le train a quitté la gare à huit heures du matin. | Влакът тръгна от гарата в осем часа сутринта. | Поезд отправился со станции в восемь утра. | Το τρένο έφυγε από τον σταθμό στις οκτώ το πρωί. | Tren sabah saat sekizde istasyondan ayrıldı. | Treni iliondoka kituoni saa mbili asubuhi. | Tàu rời ga lúc tám giờ sáng. | غادر القطار المحطة في الساعة الثامنة صباحا. | ٹرین صبح آٹھ بجے اسٹیشن سے روانہ ہوئی۔ | ट्रेन सुबह आठ बजे स्टेशन से निकली। | รถไฟออกจากสถานีเวลาแปดโมงเช้า | 火车早上八点离开了车站。
The train departed in the morning. | Der Zug fuhr am Morgen ab. | El tren partió por la mañana. | Le train est parti le matin. | Влакът замина сутринта. | Поезд ушёл утром. | Το τρένο αναχώρησε το πρωί. | Tren sabah yola çıktı. | Treni iliondoka asubuhi. | Tàu khởi hành vào buổi sáng. | انطلق القطار في الصباح. | ٹرین صبح روانہ ہوئی۔ | ट्रेन सुबह रवाना हुई। | รถไฟออกเดินทางในตอนเช้า | 火车在早上出发了。
The train was full of passengers. | Der Zug war voller Fahrgäste. | El tren estaba lleno de pasajeros. | Le train était plein de passagers. | Влакът беше пълен с пътници. | Поезд был полон пассажиров. | Το τρένο ήταν γεμάτο επιβάτες. | Tren yolcularla doluydu. | Treni ilikuwa imejaa abiria. | Tàu chật kín hành khách. | كان القطار مليئا بالركاب. | ٹرین مسافروں سے بھری ہوئی تھی۔ | ट्रेन यात्रियों से भरी हुई थी। | รถไฟเต็มไปด้วยผู้โดยสาร | 火车上坐满了乘客。
The train never left the station. | Der Zug hat den Bahnhof nie verlassen. | El tren nunca salió de la estación. | Le train n'a jamais quitté la gare. | Влакът така и не тръгна от гарата. | Поезд так и не ушёл со станции. | Το τρένο δεν έφυγε ποτέ από τον σταθμό. | Tren istasyondan hiç ayrılmadı. | Treni haikuondoka kituoni kamwe. | Tàu chưa bao giờ rời ga. | لم يغادر القطار المحطة أبدا. | ٹرین کبھی اسٹیشن سے روانہ نہیں ہوئی۔ | ट्रेन कभी स्टेशन से नहीं निकली। | รถไฟไม่เคยออกจากสถานีเลย | 火车从未离开车站。

The old dog is sleeping next to the fire. | Der alte Hund schläft neben dem Feuer. | El perro viejo está durmiendo junto al fuego. | Le vieux chien dort près du feu. | Старото куче спи до огъня. | Старая собака спит у огня. | Ο γέρικος σκύλος κοιμάται δίπλα στη φωτιά. | Yaşlı köpek ateşin yanında uyuyor. | Mbwa mzee amelala karibu na moto. | Con chó già đang ngủ bên cạnh đống lửa. | الكلب العجوز نائم بجانب النار. | بوڑھا کتا آگ کے پاس سو رہا ہے۔ | बूढ़ा कुत्ता आग के पास सो रहा है। | สุนัขแก่กำลังนอนหลับอยู่ข้างกองไฟ | 那只老狗正睡在火堆旁边。
An animal is resting. | Ein Tier ruht sich aus. | Un animal está descansando. | Un animal se repose. | Едно животно почива. | Животное отдыхает. | Ένα ζώο ξεκουράζεται. | Bir hayvan dinleniyor. | Mnyama anapumzika. | Một con vật đang nghỉ ngơi. | حيوان يستريح. | ایک جانور آرام کر رہا ہے۔ | एक जानवर आराम कर रहा है। | สัตว์ตัวหนึ่งกำลังพักผ่อน | 一只动物正在休息。
The dog is tired after a long walk. | Der Hund ist nach einem langen Spaziergang müde. | El perro está cansado después de un largo paseo. | Le chien est fatigué après une longue promenade. | Кучето е уморено след дълга разходка. | Собака устала после долгой прогулки. | Ο σκύλος είναι κουρασμένος μετά από μια μεγάλη βόλτα. | Köpek uzun bir yürüyüşten sonra yorgun. | Mbwa amechoka baada ya matembezi marefu. | Con chó mệt sau một chuyến đi dạo dài. | الكلب متعب بعد نزهة طويلة. | کتا لمبی سیر کے بعد تھکا ہوا ہے۔ | कुत्ता लंबी सैर के बाद थका हुआ है। | สุนัขเหนื่อยหลังจากเดินเล่นมาเป็นเวลานาน | 那只狗散了很久的步后累了。
The dog is running in the garden. | Der Hund rennt im Garten. | El perro está corriendo en el jardín. | Le chien court dans le jardin. | Кучето тича в градината. | Собака бегает в саду. | Ο σκύλος τρέχει στον κήπο. | Köpek bahçede koşuyor. | Mbwa anakimbia bustanini. | Con chó đang chạy trong vườn. | الكلب يركض في الحديقة. | کتا باغ میں دوڑ رہا ہے۔ | कुत्ता बगीचे में दौड़ रहा है। | สุนัขกำลังวิ่งอยู่ในสวน | 那只狗正在花园里跑。

A chef is cutting vegetables in the kitchen. | Ein Koch schneidet in der Küche Gemüse. | Un cocinero está cortando verduras en la cocina. | Un chef coupe des légumes dans la cuisine. | Готвач нарязва зеленчуци в кухнята. | Повар режет овощи на кухне. | Ένας σεφ κόβει λαχανικά στην κουζίνα. | Bir aşçı mutfakta sebze doğruyor. | Mpishi anakata mboga jikoni. | Một đầu bếp đang thái rau trong bếp. | طاه يقطع الخضروات في المطبخ. | ایک باورچی باورچی خانے میں سبزیاں کاٹ رہا ہے۔ | एक रसोइया रसोई में सब्ज़ियाँ काट रहा है। | พ่อครัวคนหนึ่งกำลังหั่นผักอยู่ในครัว | 一名厨师正在厨房里切菜。
Someone is preparing food. | Jemand bereitet Essen zu. | Alguien está preparando comida. | Quelqu'un prépare à manger. | Някой приготвя храна. | Кто-то готовит еду. | Κάποιος ετοιμάζει φαγητό. | Birisi yemek hazırlıyor. | Mtu anaandaa chakula. | Ai đó đang chuẩn bị thức ăn. | شخص ما يحضر الطعام. | کوئی کھانا تیار کر رہا ہے۔ | कोई खाना तैयार कर रहा है। | มีคนกำลังเตรียมอาหาร | 有人正在准备食物。
The chef is making soup for dinner. | Der Koch kocht Suppe zum Abendessen. | El cocinero está haciendo sopa para la cena. | Le chef prépare une soupe pour le dîner. | Готвачът прави супа за вечеря. | Повар готовит суп на ужин. | Ο σεφ φτιάχνει σούπα για το δείπνο. | Aşçı akşam yemeği için çorba yapıyor. | Mpishi anapika supu kwa ajili ya chakula cha jioni. | Đầu bếp đang nấu súp cho bữa tối. | الطاهي يعد الحساء للعشاء. | باورچی رات کے کھانے کے لیے سوپ بنا رہا ہے۔ | रसोइया रात के खाने के लिए सूप बना रहा है। | พ่อครัวกำลังทำซุปสำหรับมื้อเย็น | 厨师正在为晚餐做汤。
The kitchen is empty. | Die Küche ist leer. | La cocina está vacía. | La cuisine est vide. | Кухнята е празна. | Кухня пуста. | Η κουζίνα είναι άδεια. | Mutfak boş. | Jiko liko tupu. | Nhà bếp trống không. | المطبخ فارغ. | باورچی خانہ خالی ہے۔ | रसोई खाली है। | ห้องครัวว่างเปล่า | 厨房里空无一人。

The students passed the difficult exam. | Die Studenten haben die schwierige Prüfung bestanden. | Los estudiantes aprobaron el examen difícil. | Les étudiants ont réussi l'examen difficile. | Студентите издържаха трудния изпит. | Студенты сдали трудный экзамен. | Οι φοιτητές πέρασαν τη δύσκολη εξέταση. | Öğrenciler zor sınavı geçti. | Wanafunzi walifaulu mtihani mgumu. | Các sinh viên đã vượt qua kỳ thi khó. | نجح الطلاب في الامتحان الصعب. | طلبہ نے مشکل امتحان پاس کر لیا۔ | छात्रों ने कठिन परीक्षा पास कर ली। | นักเรียนสอบผ่านการสอบที่ยาก | 学生们通过了那场很难的考试。
The students succeeded in the exam. | Die Studenten waren in der Prüfung erfolgreich. | Los estudiantes tuvieron éxito en el examen. | Les étudiants ont réussi à l'examen. | Студентите се справиха успешно с изпита. | Студенты успешно справились с экзаменом. | Οι φοιτητές τα πήγαν καλά στην εξέταση. | Öğrenciler sınavda başarılı oldu. | Wanafunzi walifanikiwa katika mtihani. | Các sinh viên đã thành công trong kỳ thi. | حقق الطلاب النجاح في الامتحان. | طلبہ امتحان میں کامیاب ہوئے۔ | छात्र परीक्षा में सफल हुए। | นักเรียนประสบความสำเร็จในการสอบ | 学生们考试成功了。
The students studied all week. | Die Studenten haben die ganze Woche gelernt. | Los estudiantes estudiaron toda la semana. | Les étudiants ont étudié toute la semaine. | Студентите учиха цяла седмица. | Студенты занимались всю неделю. | Οι φοιτητές διάβαζαν όλη την εβδομάδα. | Öğrenciler bütün hafta çalıştı. | Wanafunzi walisoma wiki nzima. | Các sinh viên đã học cả tuần. | درس الطلاب طوال الأسبوع. | طلبہ نے پورا ہفتہ پڑھائی کی۔ | छात्रों ने पूरे हफ़्ते पढ़ाई की। | นักเรียนอ่านหนังสือทั้งสัปดาห์ | 学生们学习了一整个星期。
All the students failed the exam. | Alle Studenten sind durch die Prüfung gefallen. | Todos los estudiantes suspendieron el examen. | Tous les étudiants ont échoué à l'examen. | Всички студенти се провалиха на изпита. | Все студенты провалили экзамен. | Όλοι οι φοιτητές κόπηκαν στην εξέταση. | Bütün öğrenciler sınavda başarısız oldu. | Wanafunzi wote walishindwa mtihani. | Tất cả sinh viên đều trượt kỳ thi. | رسب جميع الطلاب في الامتحان. | تمام طلبہ امتحان میں فیل ہو گئے۔ | सभी छात्र परीक्षा में फ़ेल हो गए। | นักเรียนทุกคนสอบตก | 所有学生都没有通过考试。

It is raining heavily in the city today. | Heute regnet es in der Stadt stark. | Hoy llueve mucho en la ciudad. | Il pleut beaucoup en ville aujourd'hui. | Днес в града вали силен дъжд. | Сегодня в городе идёт сильный дождь. | Σήμερα βρέχει δυνατά στην πόλη. | Bugün şehirde şiddetli yağmur yağıyor. | Leo kunanyesha mvua kubwa mjini. | Hôm nay trời mưa to trong thành phố. | تمطر بغزارة في المدينة اليوم. | آج شہر میں تیز بارش ہو رہی ہے۔ | आज शहर में तेज़ बारिश हो रही है। | วันนี้ฝนตกหนักในเมือง | 今天城里下着大雨。
The weather in the city is wet today. | Das Wetter in der Stadt ist heute nass. | Hoy hace un tiempo lluvioso en la ciudad. | Le temps est humide en ville aujourd'hui. | Времето в града днес е дъждовно. | Сегодня в городе сырая погода. | Ο καιρός στην πόλη είναι βροχερός σήμερα. | Bugün şehirde hava yağışlı. | Hali ya hewa mjini leo ni ya mvua. | Thời tiết trong thành phố hôm nay ẩm ướt. | الطقس في المدينة ممطر اليوم. | آج شہر کا موسم برساتی ہے۔ | आज शहर का मौसम बरसाती है। | วันนี้อากาศในเมืองเปียกชื้น | 今天城里的天气很潮湿。
The streets are flooded. | Die Straßen sind überflutet. | Las calles están inundadas. | Les rues sont inondées. | Улиците са наводнени. | Улицы затоплены. | Οι δρόμοι έχουν πλημμυρίσει. | Sokakları su bastı. | Barabara zimefurika maji. | Các con đường bị ngập nước. | الشوارع غارقة بالمياه. | سڑکیں پانی میں ڈوبی ہوئی ہیں۔ | सड़कों पर पानी भर गया है। | ถนนน้ำท่วม | 街道被水淹了。
The sun is shining and the sky is clear. | Die Sonne scheint und der Himmel ist klar. | Brilla el sol y el cielo está despejado. | Le soleil brille et le ciel est dégagé. | Слънцето грее и небето е ясно. | Светит солнце, и небо ясное. | Ο ήλιος λάμπει και ο ουρανός είναι καθαρός. | Güneş parlıyor ve gökyüzü açık. | Jua linawaka na anga ni safi. | Mặt trời đang chiếu sáng và bầu trời quang đãng. | الشمس مشرقة والسماء صافية. | سورج چمک رہا ہے اور آسمان صاف ہے۔ | सूरज चमक रहा है और आसमान साफ़ है। | แดดออกและท้องฟ้าแจ่มใส | 阳光明媚，天空晴朗。

My sister bought a red car last year. | Meine Schwester hat letztes Jahr ein rotes Auto gekauft. | Mi hermana compró un coche rojo el año pasado. | Ma sœur a acheté une voiture rouge l'année dernière. | Сестра ми купи червена кола миналата година. | Моя сестра купила красную машину в прошлом году. | Η αδερφή μου αγόρασε ένα κόκκινο αυτοκίνητο πέρσι. | Kız kardeşim geçen yıl kırmızı bir araba aldı. | Dada yangu alinunua gari jekundu mwaka jana. | Chị gái tôi đã mua một chiếc ô tô màu đỏ vào năm ngoái. | اشترت أختي سيارة حمراء في العام الماضي. | میری بہن نے پچھلے سال ایک لال گاڑی خریدی۔ | मेरी बहन ने पिछले साल एक लाल कार खरीदी। | พี่สาวของฉันซื้อรถสีแดงเมื่อปีที่แล้ว | 我姐姐去年买了一辆红色的汽车。
My sister owns a car. | Meine Schwester besitzt ein Auto. | Mi hermana tiene un coche. | Ma sœur possède une voiture. | Сестра ми има кола. | У моей сестры есть машина. | Η αδερφή μου έχει αυτοκίνητο. | Kız kardeşimin bir arabası var. | Dada yangu ana gari. | Chị gái tôi có một chiếc ô tô. | أختي تملك سيارة. | میری بہن کے پاس ایک گاڑی ہے۔ | मेरी बहन के पास एक कार है। | พี่สาวของฉันมีรถยนต์ | 我姐姐有一辆汽车。
My sister drives to work every day. | Meine Schwester fährt jeden Tag mit dem Auto zur Arbeit. | Mi hermana va en coche al trabajo todos los días. | Ma sœur va au travail en voiture tous les jours. | Сестра ми всеки ден кара до работа. | Моя сестра каждый день ездит на работу на машине. | Η αδερφή μου οδηγεί κάθε μέρα για να πάει στη δουλειά. | Kız kardeşim her gün işe arabayla gidiyor. | Dada yangu huendesha gari kwenda kazini kila siku. | Chị gái tôi lái xe đi làm mỗi ngày. | تقود أختي سيارتها إلى العمل كل يوم. | میری بہن روزانہ گاڑی چلا کر کام پر جاتی ہے۔ | मेरी बहन हर दिन गाड़ी चलाकर काम पर जाती है। | พี่สาวของฉันขับรถไปทำงานทุกวัน | 我姐姐每天开车去上班。
My sister has never had a car. | Meine Schwester hatte noch nie ein Auto. | Mi hermana nunca ha tenido coche. | Ma sœur n'a jamais eu de voiture. | Сестра ми никога не е имала кола. | У моей сестры никогда не было машины. | Η αδερφή μου δεν είχε ποτέ αυτοκίνητο. | Kız kardeşimin hiç arabası olmadı. | Dada yangu hajawahi kuwa na gari. | Chị gái tôi chưa bao giờ có ô tô. | لم تمتلك أختي سيارة قط. | میری بہن کے پاس کبھی گاڑی نہیں رہی۔ | मेरी बहन के पास कभी कार नहीं रही। | พี่สาวของฉันไม่เคยมีรถยนต์เลย | 我姐姐从来没有过汽车。

The museum is closed on Mondays. | Das Museum ist montags geschlossen. | El museo cierra los lunes. | Le musée est fermé le lundi. | Музеят е затворен в понеделник. | По понедельникам музей закрыт. | Το μουσείο είναι κλειστό τις Δευτέρες. | Müze pazartesi günleri kapalı. | Jumba la makumbusho hufungwa siku za Jumatatu. | Bảo tàng đóng cửa vào các ngày thứ Hai. | المتحف مغلق أيام الاثنين. | عجائب گھر پیر کے دن بند رہتا ہے۔ | संग्रहालय सोमवार को बंद रहता है। | พิพิธภัณฑ์ปิดทุกวันจันทร์ | 博物馆每周一闭馆。
You cannot visit the museum on Monday. | Am Montag kann man das Museum nicht besuchen. | No se puede visitar el museo el lunes. | On ne peut pas visiter le musée le lundi. | В понеделник не можеш да посетиш музея. | В понедельник нельзя посетить музей. | Δεν μπορείς να επισκεφθείς το μουσείο τη Δευτέρα. | Pazartesi günü müzeyi ziyaret edemezsiniz. | Huwezi kutembelea jumba la makumbusho siku ya Jumatatu. | Bạn không thể tham quan bảo tàng vào thứ Hai. | لا يمكنك زيارة المتحف يوم الاثنين. | آپ پیر کو عجائب گھر نہیں دیکھ سکتے۔ | आप सोमवार को संग्रहालय नहीं देख सकते। | คุณไม่สามารถเข้าชมพิพิธภัณฑ์ในวันจันทร์ได้ | 周一不能参观博物馆。
The museum is very popular with tourists. | Das Museum ist bei Touristen sehr beliebt. | El museo es muy popular entre los turistas. | Le musée est très apprécié des touristes. | Музеят е много популярен сред туристите. | Музей очень популярен у туристов. | Το μουσείο είναι πολύ δημοφιλές στους τουρίστες. | Müze turistler arasında çok popüler. | Jumba la makumbusho linapendwa sana na watalii. | Bảo tàng rất được khách du lịch yêu thích. | المتحف مشهور جدا بين السياح. | عجائب گھر سیاحوں میں بہت مقبول ہے۔ | संग्रहालय पर्यटकों में बहुत लोकप्रिय है। | พิพิธภัณฑ์เป็นที่นิยมมากในหมู่นักท่องเที่ยว | 这家博物馆很受游客欢迎。
The museum is open every day of the week. | Das Museum ist an jedem Tag der Woche geöffnet. | El museo abre todos los días de la semana. | Le musée est ouvert tous les jours de la semaine. | Музеят работи всеки ден от седмицата. | Музей открыт каждый день недели. | Το μουσείο είναι ανοιχτό κάθε μέρα της εβδομάδας. | Müze haftanın her günü açık. | Jumba la makumbusho liko wazi kila siku ya wiki. | Bảo tàng mở cửa tất cả các ngày trong tuần. | المتحف مفتوح كل أيام الأسبوع. | عجائب گھر ہفتے کے ہر دن کھلا رہتا ہے۔ | संग्रहालय हफ़्ते के हर दिन खुला रहता है। | พิพิธภัณฑ์เปิดทุกวันตลอดสัปดาห์ | 博物馆一周七天都开放。

A group of friends is eating pizza together. | Eine Gruppe von Freunden isst zusammen Pizza. | Un grupo de amigos está comiendo pizza juntos. | Un groupe d'amis mange une pizza ensemble. | Група приятели ядат пица заедно. | Компания друзей вместе ест пиццу. | Μια παρέα φίλων τρώει πίτσα μαζί. | Bir grup arkadaş birlikte pizza yiyor. | Kikundi cha marafiki kinakula piza pamoja. | Một nhóm bạn đang cùng nhau ăn pizza. | مجموعة من الأصدقاء يأكلون البيتزا معا. | دوستوں کا ایک گروہ مل کر پیزا کھا رہا ہے۔ | दोस्तों का एक समूह साथ मिलकर पिज़्ज़ा खा रहा है। | เพื่อนกลุ่มหนึ่งกำลังกินพิซซ่าด้วยกัน | 一群朋友正在一起吃比萨。
People are sharing a meal. | Menschen teilen sich eine Mahlzeit. | Unas personas están compartiendo una comida. | Des gens partagent un repas. | Хора споделят храна заедно. | Люди вместе едят. | Άνθρωποι μοιράζονται ένα γεύμα. | İnsanlar bir yemeği paylaşıyor. | Watu wanashiriki chakula. | Mọi người đang cùng nhau dùng bữa. | أشخاص يتشاركون وجبة. | لوگ مل کر کھانا کھا رہے ہیں۔ | लोग मिलकर खाना खा रहे हैं। | ผู้คนกำลังรับประทานอาหารร่วมกัน | 人们在一起吃饭。
The friends are celebrating a birthday. | Die Freunde feiern einen Geburtstag. | Los amigos están celebrando un cumpleaños. | Les amis fêtent un anniversaire. | Приятелите празнуват рожден ден. | Друзья празднуют день рождения. | Οι φίλοι γιορτάζουν γενέθλια. | Arkadaşlar bir doğum gününü kutluyor. | Marafiki wanasherehekea siku ya kuzaliwa. | Những người bạn đang tổ chức sinh nhật. | الأصدقاء يحتفلون بعيد ميلاد. | دوست سالگرہ منا رہے ہیں۔ | दोस्त जन्मदिन मना रहे हैं। | กลุ่มเพื่อนกำลังฉลองวันเกิด | 朋友们正在庆祝生日。
Nobody is eating anything. | Niemand isst etwas. | Nadie está comiendo nada. | Personne ne mange rien. | Никой не яде нищо. | Никто ничего не ест. | Κανείς δεν τρώει τίποτα. | Kimse bir şey yemiyor. | Hakuna mtu anayekula chochote. | Không ai đang ăn gì cả. | لا أحد يأكل أي شيء. | کوئی کچھ نہیں کھا رہا۔ | कोई कुछ नहीं खा रहा है। | ไม่มีใครกินอะไรเลย | 没有人在吃东西。

The farmer is feeding the cows in the morning. | Der Bauer füttert am Morgen die Kühe. | El granjero está dando de comer a las vacas por la mañana. | Le fermier nourrit les vaches le matin. | Фермерът храни кравите сутринта. | Фермер утром кормит коров. | Ο αγρότης ταΐζει τις αγελάδες το πρωί. | Çiftçi sabahleyin inekleri besliyor. | Mkulima anawalisha ng'ombe asubuhi. | Người nông dân đang cho bò ăn vào buổi sáng. | المزارع يطعم الأبقار في الصباح. | کسان صبح کے وقت گایوں کو چارہ ڈال رہا ہے۔ | किसान सुबह गायों को चारा खिला रहा है। | ชาวนากำลังให้อาหารวัวในตอนเช้า | 农夫早上正在喂牛。
The cows are getting food. | Die Kühe bekommen Futter. | Las vacas están recibiendo comida. | Les vaches reçoivent de la nourriture. | Кравите получават храна. | Коровы получают корм. | Οι αγελάδες παίρνουν τροφή. | İnekler yem alıyor. | Ng'ombe wanapata chakula. | Những con bò đang được cho ăn. | الأبقار تحصل على الطعام. | گایوں کو کھانا مل رہا ہے۔ | गायों को खाना मिल रहा है। | วัวกำลังได้รับอาหาร | 牛正在吃到饲料。
The farmer has twenty cows. | Der Bauer hat zwanzig Kühe. | El granjero tiene veinte vacas. | Le fermier a vingt vaches. | Фермерът има двадесет крави. | У фермера двадцать коров. | Ο αγρότης έχει είκοσι αγελάδες. | Çiftçinin yirmi ineği var. | Mkulima ana ng'ombe ishirini. | Người nông dân có hai mươi con bò. | يملك المزارع عشرين بقرة. | کسان کے پاس بیس گائیں ہیں۔ | किसान के पास बीस गायें हैं। | ชาวนามีวัวยี่สิบตัว | 农夫有二十头牛。
The farmer is asleep in bed. | Der Bauer schläft im Bett. | El granjero está dormido en la cama. | Le fermier dort dans son lit. | Фермерът спи в леглото. | Фермер спит в постели. | Ο αγρότης κοιμάται στο κρεβάτι. | Çiftçi yatakta uyuyor. | Mkulima amelala kitandani. | Người nông dân đang ngủ trên giường. | المزارع نائم في السرير. | کسان بستر پر سو رہا ہے۔ | किसान बिस्तर पर सो रहा है। | ชาวนากำลังนอนหลับอยู่บนเตียง | 农夫正躺在床上睡觉。

The doctor told him to drink more water. | Der Arzt sagte ihm, er solle mehr Wasser trinken. | El médico le dijo que bebiera más agua. | Le médecin lui a dit de boire plus d'eau. | Лекарят му каза да пие повече вода. | Врач сказал ему пить больше воды. | Ο γιατρός του είπε να πίνει περισσότερο νερό. | Doktor ona daha fazla su içmesini söyledi. | Daktari alimwambia anywe maji zaidi. | Bác sĩ bảo anh ấy uống nhiều nước hơn. | قال له الطبيب أن يشرب المزيد من الماء. | ڈاکٹر نے اسے زیادہ پانی پینے کو کہا۔ | डॉक्टर ने उससे ज़्यादा पानी पीने को कहा। | หมอบอกให้เขาดื่มน้ำให้มากขึ้น | 医生让他多喝水。
He received advice from a doctor. | Er hat von einem Arzt einen Rat bekommen. | Recibió un consejo de un médico. | Il a reçu un conseil d'un médecin. | Той получи съвет от лекар. | Он получил совет от врача. | Πήρε μια συμβουλή από έναν γιατρό. | Bir doktordan tavsiye aldı. | Alipokea ushauri kutoka kwa daktari. | Anh ấy đã nhận được lời khuyên từ bác sĩ. | تلقى نصيحة من طبيب. | اسے ایک ڈاکٹر سے مشورہ ملا۔ | उसे एक डॉक्टर से सलाह मिली। | เขาได้รับคำแนะนำจากหมอ | 他得到了医生的建议。
He had been feeling sick for a week. | Er fühlte sich seit einer Woche krank. | Llevaba una semana sintiéndose enfermo. | Il se sentait malade depuis une semaine. | От една седмица той се чувстваше болен. | Он чувствовал себя плохо уже неделю. | Ένιωθε άρρωστος εδώ και μια εβδομάδα. | Bir haftadır kendini hasta hissediyordu. | Alikuwa akijisikia mgonjwa kwa wiki moja. | Anh ấy đã cảm thấy ốm suốt một tuần. | كان يشعر بالمرض منذ أسبوع. | وہ ایک ہفتے سے بیمار محسوس کر رہا تھا۔ | वह एक हफ़्ते से बीमार महसूस कर रहा था। | เขารู้สึกไม่สบายมาหนึ่งสัปดาห์แล้ว | 他已经感觉不舒服一个星期了。
The doctor told him to stop drinking water. | Der Arzt sagte ihm, er solle aufhören, Wasser zu trinken. | El médico le dijo que dejara de beber agua. | Le médecin lui a dit d'arrêter de boire de l'eau. | Лекарят му каза да спре да пие вода. | Врач сказал ему перестать пить воду. | Ο γιατρός του είπε να σταματήσει να πίνει νερό. | Doktor ona su içmeyi bırakmasını söyledi. | Daktari alimwambia aache kunywa maji. | Bác sĩ bảo anh ấy ngừng uống nước. | قال له الطبيب أن يتوقف عن شرب الماء. | ڈاکٹر نے اسے پانی پینا چھوڑنے کو کہا۔ | डॉक्टर ने उससे पानी पीना बंद करने को कहा। | หมอบอกให้เขาหยุดดื่มน้ำ | 医生让他别再喝水。

The little girl is drawing a picture of a house. | Das kleine Mädchen malt ein Bild von einem Haus. | La niña pequeña está dibujando una casa. | La petite fille dessine une maison. | Малкото момиче рисува къща. | Маленькая девочка рисует дом. | Το κοριτσάκι ζωγραφίζει ένα σπίτι. | Küçük kız bir ev resmi çiziyor. | Msichana mdogo anachora picha ya nyumba. | Cô bé đang vẽ một bức tranh ngôi nhà. | الفتاة الصغيرة ترسم صورة منزل. | چھوٹی لڑکی ایک گھر کی تصویر بنا رہی ہے۔ | छोटी लड़की एक घर का चित्र बना रही है। | เด็กหญิงตัวเล็กกำลังวาดรูปบ้าน | 小女孩正在画一座房子。
A child is drawing. | Ein Kind malt. | Un niño está dibujando. | Un enfant dessine. | Едно дете рисува. | Ребёнок рисует. | Ένα παιδί ζωγραφίζει. | Bir çocuk resim çiziyor. | Mtoto anachora. | Một đứa trẻ đang vẽ. | طفل يرسم. | ایک بچہ تصویر بنا رہا ہے۔ | एक बच्चा चित्र बना रहा है। | เด็กคนหนึ่งกำลังวาดรูป | 一个孩子在画画。
The girl is drawing her own house. | Das Mädchen malt ihr eigenes Haus. | La niña está dibujando su propia casa. | La fille dessine sa propre maison. | Момичето рисува собствената си къща. | Девочка рисует свой собственный дом. | Το κορίτσι ζωγραφίζει το δικό του σπίτι. | Kız kendi evini çiziyor. | Msichana anachora nyumba yake mwenyewe. | Cô bé đang vẽ chính ngôi nhà của mình. | الفتاة ترسم منزلها. | لڑکی اپنے ہی گھر کی تصویر بنا رہی ہے۔ | लड़की अपने ही घर का चित्र बना रही है। | เด็กหญิงกำลังวาดบ้านของตัวเอง | 女孩正在画她自己的家。
The girl is singing a song. | Das Mädchen singt ein Lied. | La niña está cantando una canción. | La fille chante une chanson. | Момичето пее песен. | Девочка поёт песню. | Το κορίτσι τραγουδάει ένα τραγούδι. | Kız bir şarkı söylüyor. | Msichana anaimba wimbo. | Cô bé đang hát một bài hát. | الفتاة تغني أغنية. | لڑکی ایک گانا گا رہی ہے۔ | लड़की एक गाना गा रही है। | เด็กหญิงกำลังร้องเพลง | 女孩正在唱歌。

The shop sells fresh bread every morning. | Der Laden verkauft jeden Morgen frisches Brot. | La tienda vende pan fresco todas las mañanas. | Le magasin vend du pain frais chaque matin. | Магазинът продава пресен хляб всяка сутрин. | Магазин каждое утро продаёт свежий хлеб. | Το μαγαζί πουλάει φρέσκο ψωμί κάθε πρωί. | Dükkân her sabah taze ekmek satıyor. | Duka linauza mkate mpya kila asubuhi. | Cửa hàng bán bánh mì tươi mỗi buổi sáng. | يبيع المتجر الخبز الطازج كل صباح. | دکان ہر صبح تازہ روٹی بیچتی ہے۔ | दुकान हर सुबह ताज़ी ब्रेड बेचती है। | ร้านขายขนมปังสดทุกเช้า | 这家商店每天早上卖新鲜面包。
Bread can be bought at the shop. | Im Laden kann man Brot kaufen. | En la tienda se puede comprar pan. | On peut acheter du pain au magasin. | В магазина може да се купи хляб. | В магазине можно купить хлеб. | Μπορείς να αγοράσεις ψωμί στο μαγαζί. | Dükkândan ekmek alınabilir. | Mkate unaweza kununuliwa dukani. | Có thể mua bánh mì ở cửa hàng. | يمكن شراء الخبز من المتجر. | دکان سے روٹی خریدی جا سکتی ہے۔ | दुकान से ब्रेड खरीदी जा सकती है। | สามารถซื้อขนมปังได้ที่ร้าน | 在这家商店可以买到面包。
The bread is baked by the owner. | Das Brot wird vom Besitzer gebacken. | El pan lo hornea el dueño. | Le pain est cuit par le propriétaire. | Хлябът се пече от собственика. | Хлеб печёт сам владелец. | Το ψωμί το ψήνει ο ιδιοκτήτης. | Ekmeği dükkânın sahibi pişiriyor. | Mkate huokwa na mwenye duka. | Bánh mì do chính chủ cửa hàng nướng. | يخبز صاحب المتجر الخبز بنفسه. | روٹی دکان کا مالک خود پکاتا ہے۔ | ब्रेड दुकान का मालिक खुद बनाता है। | เจ้าของร้านเป็นคนอบขนมปังเอง | 面包是店主亲自烤的。
The shop never sells bread. | Der Laden verkauft nie Brot. | La tienda nunca vende pan. | Le magasin ne vend jamais de pain. | Магазинът никога не продава хляб. | Магазин никогда не продаёт хлеб. | Το μαγαζί δεν πουλάει ποτέ ψωμί. | Dükkân hiçbir zaman ekmek satmıyor. | Duka haliuzi mkate kamwe. | Cửa hàng không bao giờ bán bánh mì. | المتجر لا يبيع الخبز أبدا. | دکان کبھی روٹی نہیں بیچتی۔ | दुकान कभी ब्रेड नहीं बेचती। | ร้านนี้ไม่เคยขายขนมปัง | 这家商店从不卖面包。

Two men are climbing a high mountain. | Zwei Männer besteigen einen hohen Berg. | Dos hombres están escalando una montaña alta. | Deux hommes escaladent une haute montagne. | Двама мъже се изкачват на висока планина. | Двое мужчин поднимаются на высокую гору. | Δύο άντρες ανεβαίνουν σε ένα ψηλό βουνό. | İki adam yüksek bir dağa tırmanıyor. | Wanaume wawili wanapanda mlima mrefu. | Hai người đàn ông đang leo một ngọn núi cao. | رجلان يتسلقان جبلا عاليا. | دو آدمی ایک اونچے پہاڑ پر چڑھ رہے ہیں۔ | दो आदमी एक ऊँचे पहाड़ पर चढ़ रहे हैं। | ผู้ชายสองคนกำลังปีนภูเขาสูง | 两个男人正在攀登一座高山。
People are climbing. | Menschen klettern. | Unas personas están escalando. | Des gens grimpent. | Хора се катерят. | Люди совершают восхождение. | Άνθρωποι σκαρφαλώνουν. | İnsanlar tırmanıyor. | Watu wanapanda. | Có người đang leo núi. | أشخاص يتسلقون. | لوگ چڑھائی کر رہے ہیں۔ | लोग चढ़ाई कर रहे हैं। | ผู้คนกำลังปีนเขา | 有人在攀登。
The men are professional climbers. | Die Männer sind professionelle Bergsteiger. | Los hombres son escaladores profesionales. | Les hommes sont des alpinistes professionnels. | Мъжете са професионални алпинисти. | Эти мужчины профессиональные альпинисты. | Οι άντρες είναι επαγγελματίες ορειβάτες. | Adamlar profesyonel dağcılar. | Wanaume hao ni wataalamu wa kupanda milima. | Hai người đàn ông là những nhà leo núi chuyên nghiệp. | الرجلان متسلقان محترفان. | یہ آدمی پیشہ ور کوہ پیما ہیں۔ | ये आदमी पेशेवर पर्वतारोही हैं। | ผู้ชายทั้งสองเป็นนักปีนเขามืออาชีพ | 这两个男人是职业登山者。
The men are swimming in the sea. | Die Männer schwimmen im Meer. | Los hombres están nadando en el mar. | Les hommes nagent dans la mer. | Мъжете плуват в морето. | Мужчины плавают в море. | Οι άντρες κολυμπούν στη θάλασσα. | Adamlar denizde yüzüyor. | Wanaume wanaogelea baharini. | Những người đàn ông đang bơi ở biển. | الرجلان يسبحان في البحر. | آدمی سمندر میں تیر رہے ہیں۔ | आदमी समुद्र में तैर रहे हैं। | ผู้ชายกำลังว่ายน้ำอยู่ในทะเล | 那些男人正在海里游泳。

A boy is riding a bicycle down the hill. | Ein Junge fährt mit dem Fahrrad den Hügel hinunter. | Un niño baja la colina en bicicleta. | Un garçon descend la colline à vélo. | Едно момче кара колело надолу по хълма. | Мальчик едет на велосипеде с холма. | Ένα αγόρι κατεβαίνει τον λόφο με ποδήλατο. | Bir çocuk bisikletle tepeden aşağı iniyor. | Mvulana anaendesha baiskeli kuteremka kilima. | Một cậu bé đang đạp xe xuống đồi. | صبي يركب دراجة نازلا من التل. | ایک لڑکا سائیکل پر پہاڑی سے نیچے جا رہا ہے۔ | एक लड़का साइकिल से पहाड़ी से नीचे जा रहा है। | เด็กผู้ชายคนหนึ่งกำลังปั่นจักรยานลงเนินเขา | 一个男孩正骑着自行车下山坡。
A child is on a bicycle. | Ein Kind sitzt auf einem Fahrrad. | Un niño va en bicicleta. | Un enfant est à vélo. | Едно дете е на колело. | Ребёнок едет на велосипеде. | Ένα παιδί είναι πάνω σε ποδήλατο. | Bir çocuk bisiklet üzerinde. | Mtoto yuko juu ya baiskeli. | Một đứa trẻ đang ở trên xe đạp. | طفل على دراجة. | ایک بچہ سائیکل پر ہے۔ | एक बच्चा साइकिल पर है। | เด็กคนหนึ่งอยู่บนจักรยาน | 一个孩子在骑自行车。
The boy is riding to school. | Der Junge fährt zur Schule. | El niño va en bicicleta a la escuela. | Le garçon va à l'école à vélo. | Момчето кара към училище. | Мальчик едет в школу. | Το αγόρι πηγαίνει στο σχολείο με το ποδήλατο. | Çocuk bisikletle okula gidiyor. | Mvulana anaendesha kwenda shuleni. | Cậu bé đang đạp xe đến trường. | الصبي ذاهب إلى المدرسة بالدراجة. | لڑکا سائیکل پر اسکول جا رہا ہے۔ | लड़का साइकिल से स्कूल जा रहा है। | เด็กผู้ชายกำลังปั่นจักรยานไปโรงเรียน | 男孩正骑车去上学。
The boy is walking up the hill. | Der Junge geht zu Fuß den Hügel hinauf. | El niño está subiendo la colina a pie. | Le garçon monte la colline à pied. | Момчето върви пеша нагоре по хълма. | Мальчик идёт пешком в гору. | Το αγόρι ανεβαίνει τον λόφο με τα πόδια. | Çocuk tepeye yürüyerek çıkıyor. | Mvulana anatembea kupanda kilima. | Cậu bé đang đi bộ lên đồi. | الصبي يمشي صاعدا التل. | لڑکا پیدل پہاڑی پر چڑھ رہا ہے۔ | लड़का पैदल पहाड़ी पर चढ़ रहा है। | เด็กผู้ชายกำลังเดินขึ้นเนินเขา | 男孩正步行上山坡。

The baby is crying in her mother's arms. | Das Baby weint in den Armen seiner Mutter. | La bebé está llorando en los brazos de su madre. | Le bébé pleure dans les bras de sa mère. | Бебето плаче в ръцете на майка си. | Малышка плачет на руках у мамы. | Το μωρό κλαίει στην αγκαλιά της μητέρας του. | Bebek annesinin kollarında ağlıyor. | Mtoto mchanga analia mikononi mwa mama yake. | Em bé đang khóc trong vòng tay mẹ. | الطفلة تبكي بين ذراعي أمها. | بچی اپنی ماں کی گود میں رو رہی ہے۔ | बच्ची अपनी माँ की गोद में रो रही है। | ทารกกำลังร้องไห้อยู่ในอ้อมแขนของแม่ | 婴儿在妈妈怀里哭。
A mother is holding her baby. | Eine Mutter hält ihr Baby. | Una madre tiene a su bebé en brazos. | Une mère tient son bébé. | Майка държи бебето си. | Мать держит своего ребёнка. | Μια μητέρα κρατάει το μωρό της. | Bir anne bebeğini tutuyor. | Mama amembeba mtoto wake. | Một người mẹ đang bế con. | أم تحمل طفلتها. | ایک ماں اپنی بچی کو اٹھائے ہوئے ہے۔ | एक माँ अपनी बच्ची को गोद में लिए हुए है। | แม่คนหนึ่งกำลังอุ้มลูกของเธอ | 一位母亲抱着她的孩子。
The baby is hungry. | Das Baby hat Hunger. | La bebé tiene hambre. | Le bébé a faim. | Бебето е гладно. | Малышка голодна. | Το μωρό πεινάει. | Bebek aç. | Mtoto mchanga ana njaa. | Em bé đang đói. | الطفلة جائعة. | بچی بھوکی ہے۔ | बच्ची भूखी है। | ทารกหิว | 婴儿饿了。
The baby is sleeping quietly in her bed. | Das Baby schläft ruhig in seinem Bett. | La bebé duerme tranquila en su cama. | Le bébé dort paisiblement dans son lit. | Бебето спи спокойно в леглото си. | Малышка тихо спит в своей кроватке. | Το μωρό κοιμάται ήσυχα στο κρεβάτι του. | Bebek yatağında sessizce uyuyor. | Mtoto mchanga amelala kimya kitandani mwake. | Em bé đang ngủ yên trên giường. | الطفلة نائمة بهدوء في سريرها. | بچی اپنے بستر میں سکون سے سو رہی ہے۔ | बच्ची अपने बिस्तर में चुपचाप सो रही है। | ทารกกำลังนอนหลับอย่างสงบบนเตียงของเธอ | 婴儿正安静地睡在自己的床上。

The company hired fifty new workers this year. | Die Firma hat dieses Jahr fünfzig neue Mitarbeiter eingestellt. | La empresa contrató a cincuenta trabajadores nuevos este año. | L'entreprise a embauché cinquante nouveaux employés cette année. | Компанията нае петдесет нови работници тази година. | В этом году компания наняла пятьдесят новых работников. | Η εταιρεία προσέλαβε πενήντα νέους εργαζόμενους φέτος. | Şirket bu yıl elli yeni çalışan işe aldı. | Kampuni iliajiri wafanyakazi hamsini wapya mwaka huu. | Công ty đã tuyển năm mươi nhân viên mới trong năm nay. | وظفت الشركة خمسين عاملا جديدا هذا العام. | کمپنی نے اس سال پچاس نئے ملازم رکھے۔ | कंपनी ने इस साल पचास नए कर्मचारी रखे। | บริษัทจ้างพนักงานใหม่ห้าสิบคนในปีนี้ | 这家公司今年雇用了五十名新员工。
The company has new employees. | Die Firma hat neue Mitarbeiter. | La empresa tiene empleados nuevos. | L'entreprise a de nouveaux employés. | Компанията има нови служители. | У компании есть новые сотрудники. | Η εταιρεία έχει νέους υπαλλήλους. | Şirketin yeni çalışanları var. | Kampuni ina wafanyakazi wapya. | Công ty có nhân viên mới. | لدى الشركة موظفون جدد. | کمپنی کے پاس نئے ملازمین ہیں۔ | कंपनी में नए कर्मचारी हैं। | บริษัทมีพนักงานใหม่ | 这家公司有新员工。
The company is growing quickly. | Die Firma wächst schnell. | La empresa está creciendo rápidamente. | L'entreprise se développe rapidement. | Компанията расте бързо. | Компания быстро растёт. | Η εταιρεία αναπτύσσεται γρήγορα. | Şirket hızla büyüyor. | Kampuni inakua kwa haraka. | Công ty đang phát triển nhanh chóng. | الشركة تنمو بسرعة. | کمپنی تیزی سے ترقی کر رہی ہے۔ | कंपनी तेज़ी से बढ़ रही है। | บริษัทกำลังเติบโตอย่างรวดเร็ว | 这家公司发展得很快。
The company did not hire anyone this year. | Die Firma hat dieses Jahr niemanden eingestellt. | La empresa no contrató a nadie este año. | L'entreprise n'a embauché personne cette année. | Компанията не нае никого тази година. | В этом году компания никого не наняла. | Η εταιρεία δεν προσέλαβε κανέναν φέτος. | Şirket bu yıl kimseyi işe almadı. | Kampuni haikuajiri mtu yeyote mwaka huu. | Công ty không tuyển ai trong năm nay. | لم توظف الشركة أحدا هذا العام. | کمپنی نے اس سال کسی کو ملازم نہیں رکھا۔ | कंपनी ने इस साल किसी को नहीं रखा। | บริษัทไม่ได้จ้างใครเลยในปีนี้ | 这家公司今年没有雇用任何人。

An old woman is selling fruit at the market. | Eine alte Frau verkauft auf dem Markt Obst. | Una anciana está vendiendo fruta en el mercado. | Une vieille femme vend des fruits au marché. | Възрастна жена продава плодове на пазара. | Пожилая женщина продаёт фрукты на рынке. | Μια ηλικιωμένη γυναίκα πουλάει φρούτα στην αγορά. | Yaşlı bir kadın pazarda meyve satıyor. | Bibi kizee anauza matunda sokoni. | Một bà cụ đang bán trái cây ở chợ. | امرأة عجوز تبيع الفاكهة في السوق. | ایک بوڑھی عورت بازار میں پھل بیچ رہی ہے۔ | एक बूढ़ी औरत बाज़ार में फल बेच रही है। | หญิงชราคนหนึ่งกำลังขายผลไม้ที่ตลาด | 一位老太太正在市场上卖水果。
Fruit is being sold at the market. | Auf dem Markt wird Obst verkauft. | Se vende fruta en el mercado. | On vend des fruits au marché. | На пазара се продават плодове. | На рынке продают фрукты. | Στην αγορά πωλούνται φρούτα. | Pazarda meyve satılıyor. | Matunda yanauzwa sokoni. | Trái cây đang được bán ở chợ. | تباع الفاكهة في السوق. | بازار میں پھل بیچے جا رہے ہیں۔ | बाज़ार में फल बेचे जा रहे हैं। | มีการขายผลไม้ที่ตลาด | 市场上有人在卖水果。
The woman grows the fruit herself. | Die Frau baut das Obst selbst an. | La mujer cultiva la fruta ella misma. | La femme cultive elle-même les fruits. | Жената сама отглежда плодовете. | Женщина сама выращивает эти фрукты. | Η γυναίκα καλλιεργεί η ίδια τα φρούτα. | Kadın meyveleri kendisi yetiştiriyor. | Mwanamke huyo hulima matunda hayo mwenyewe. | Bà cụ tự trồng trái cây. | المرأة تزرع الفاكهة بنفسها. | عورت پھل خود اگاتی ہے۔ | औरत फल खुद उगाती है। | หญิงชราปลูกผลไม้เอง | 水果是这位女士自己种的。
The market is closed and empty. | Der Markt ist geschlossen und leer. | El mercado está cerrado y vacío. | Le marché est fermé et vide. | Пазарът е затворен и празен. | Рынок закрыт и пуст. | Η αγορά είναι κλειστή και άδεια. | Pazar kapalı ve boş. | Soko limefungwa na liko tupu. | Chợ đã đóng cửa và vắng tanh. | السوق مغلق وفارغ. | بازار بند اور خالی ہے۔ | बाज़ार बंद और खाली है। | ตลาดปิดและว่างเปล่า | 市场关门了，空无一人。

The teacher is writing on the board. | Die Lehrerin schreibt an die Tafel. | La profesora está escribiendo en la pizarra. | L'enseignante écrit au tableau. | Учителката пише на дъската. | Учительница пишет на доске. | Η δασκάλα γράφει στον πίνακα. | Öğretmen tahtaya yazıyor. | Mwalimu anaandika ubaoni. | Cô giáo đang viết lên bảng. | المعلمة تكتب على السبورة. | استانی تختے پر لکھ رہی ہے۔ | अध्यापिका बोर्ड पर लिख रही है। | ครูกำลังเขียนบนกระดาน | 老师正在黑板上写字。
Someone is writing. | Jemand schreibt. | Alguien está escribiendo. | Quelqu'un écrit. | Някой пише. | Кто-то пишет. | Κάποιος γράφει. | Birisi yazı yazıyor. | Mtu anaandika. | Ai đó đang viết. | شخص ما يكتب. | کوئی لکھ رہا ہے۔ | कोई लिख रहा है। | มีคนกำลังเขียนหนังสือ | 有人在写字。
The teacher is explaining a math problem. | Die Lehrerin erklärt eine Matheaufgabe. | La profesora está explicando un problema de matemáticas. | L'enseignante explique un problème de mathématiques. | Учителката обяснява задача по математика. | Учительница объясняет задачу по математике. | Η δασκάλα εξηγεί ένα πρόβλημα μαθηματικών. | Öğretmen bir matematik problemini açıklıyor. | Mwalimu anaeleza swali la hesabu. | Cô giáo đang giảng một bài toán. | المعلمة تشرح مسألة رياضيات. | استانی ریاضی کا ایک سوال سمجھا رہی ہے۔ | अध्यापिका गणित का एक सवाल समझा रही है। | ครูกำลังอธิบายโจทย์คณิตศาสตร์ | 老师正在讲解一道数学题。
The teacher is sitting silently at home. | Die Lehrerin sitzt schweigend zu Hause. | La profesora está sentada en silencio en casa. | L'enseignante est assise en silence chez elle. | Учителката седи мълчаливо вкъщи. | Учительница молча сидит дома. | Η δασκάλα κάθεται σιωπηλή στο σπίτι. | Öğretmen evde sessizce oturuyor. | Mwalimu amekaa kimya nyumbani. | Cô giáo đang ngồi im lặng ở nhà. | المعلمة تجلس صامتة في المنزل. | استانی گھر پر خاموش بیٹھی ہے۔ | अध्यापिका घर पर चुपचाप बैठी है। | ครูกำลังนั่งเงียบ ๆ อยู่ที่บ้าน | 老师正一声不响地坐在家里。

A cat is sitting on the window sill. | Eine Katze sitzt auf dem Fensterbrett. | Un gato está sentado en el alféizar de la ventana. | Un chat est assis sur le rebord de la fenêtre. | Котка седи на перваза на прозореца. | Кошка сидит на подоконнике. | Μια γάτα κάθεται στο περβάζι του παραθύρου. | Bir kedi pencerenin kenarında oturuyor. | Paka ameketi kwenye kingo ya dirisha. | Một con mèo đang ngồi trên bậu cửa sổ. | قطة تجلس على حافة النافذة. | ایک بلی کھڑکی کی چوکھٹ پر بیٹھی ہے۔ | एक बिल्ली खिड़की की चौखट पर बैठी है। | แมวตัวหนึ่งกำลังนั่งอยู่บนขอบหน้าต่าง | 一只猫正坐在窗台上。
An animal is near the window. | Ein Tier ist in der Nähe des Fensters. | Hay un animal cerca de la ventana. | Un animal est près de la fenêtre. | Едно животно е близо до прозореца. | У окна находится животное. | Ένα ζώο είναι κοντά στο παράθυρο. | Pencerenin yanında bir hayvan var. | Kuna mnyama karibu na dirisha. | Có một con vật ở gần cửa sổ. | يوجد حيوان بالقرب من النافذة. | کھڑکی کے پاس ایک جانور ہے۔ | खिड़की के पास एक जानवर है। | มีสัตว์ตัวหนึ่งอยู่ใกล้หน้าต่าง | 窗户旁边有一只动物。
The cat is watching birds outside. | Die Katze beobachtet draußen Vögel. | El gato está mirando a los pájaros de fuera. | Le chat regarde les oiseaux dehors. | Котката наблюдава птиците навън. | Кошка смотрит на птиц за окном. | Η γάτα παρακολουθεί τα πουλιά έξω. | Kedi dışarıdaki kuşları izliyor. | Paka anatazama ndege walio nje. | Con mèo đang ngắm chim ở bên ngoài. | القطة تراقب الطيور في الخارج. | بلی باہر پرندوں کو دیکھ رہی ہے۔ | बिल्ली बाहर पक्षियों को देख रही है। | แมวกำลังมองนกที่อยู่ข้างนอก | 猫正在看外面的鸟。
There is no animal in the house. | Im Haus ist kein Tier. | No hay ningún animal en la casa. | Il n'y a aucun animal dans la maison. | В къщата няма животни. | В доме нет животных. | Δεν υπάρχει κανένα ζώο στο σπίτι. | Evde hiç hayvan yok. | Hakuna mnyama ndani ya nyumba. | Không có con vật nào trong nhà. | لا يوجد أي حيوان في المنزل. | گھر میں کوئی جانور نہیں ہے۔ | घर में कोई जानवर नहीं है। | ไม่มีสัตว์อยู่ในบ้านเลย | 房子里没有任何动物。

The bus arrived ten minutes late. | Der Bus kam zehn Minuten zu spät. | El autobús llegó diez minutos tarde. | Le bus est arrivé avec dix minutes de retard. | Автобусът пристигна с десет минути закъснение. | Автобус пришёл на десять минут позже. | Το λεωφορείο έφτασε με δέκα λεπτά καθυστέρηση. | Otobüs on dakika geç geldi. | Basi lilifika likiwa limechelewa kwa dakika kumi. | Xe buýt đến muộn mười phút. | وصلت الحافلة متأخرة عشر دقائق. | بس دس منٹ دیر سے پہنچی۔ | बस दस मिनट देर से पहुँची। | รถเมล์มาถึงช้าไปสิบนาที | 公交车晚到了十分钟。
The bus was not on time. | Der Bus war nicht pünktlich. | El autobús no llegó a tiempo. | Le bus n'était pas à l'heure. | Автобусът не пристигна навреме. | Автобус пришёл не вовремя. | Το λεωφορείο δεν ήρθε στην ώρα του. | Otobüs zamanında gelmedi. | Basi halikufika kwa wakati. | Xe buýt không đến đúng giờ. | لم تصل الحافلة في موعدها. | بس وقت پر نہیں آئی۔ | बस समय पर नहीं आई। | รถเมล์มาไม่ตรงเวลา | 公交车没有准时到达。
There was a lot of traffic. | Es gab viel Verkehr. | Había mucho tráfico. | Il y avait beaucoup de circulation. | Имаше много трафик. | На дорогах были большие пробки. | Υπήρχε πολλή κίνηση. | Trafik çok yoğundu. | Kulikuwa na msongamano mkubwa wa magari. | Giao thông rất đông đúc. | كانت حركة المرور كثيفة. | سڑک پر بہت ٹریفک تھی۔ | सड़क पर बहुत ट्रैफ़िक था। | รถติดมาก | 路上交通很拥堵。
The bus arrived early. | Der Bus kam zu früh. | El autobús llegó temprano. | Le bus est arrivé en avance. | Автобусът пристигна по-рано. | Автобус пришёл раньше времени. | Το λεωφορείο έφτασε νωρίτερα. | Otobüs erken geldi. | Basi lilifika mapema. | Xe buýt đến sớm. | وصلت الحافلة مبكرا. | بس جلدی پہنچ گئی۔ | बस जल्दी पहुँच गई। | รถเมล์มาถึงก่อนเวลา | 公交车提前到了。

The boy broke the window with a ball. | Der Junge hat mit einem Ball das Fenster zerbrochen. | El niño rompió la ventana con una pelota. | Le garçon a cassé la fenêtre avec un ballon. | Момчето счупи прозореца с топка. | Мальчик разбил окно мячом. | Το αγόρι έσπασε το παράθυρο με μια μπάλα. | Çocuk topla pencereyi kırdı. | Mvulana alivunja dirisha kwa mpira. | Cậu bé làm vỡ cửa sổ bằng một quả bóng. | كسر الصبي النافذة بكرة. | لڑکے نے گیند سے کھڑکی توڑ دی۔ | लड़के ने गेंद से खिड़की तोड़ दी। | เด็กผู้ชายทำหน้าต่างแตกด้วยลูกบอล | 男孩用球打碎了窗户。
The window is broken. | Das Fenster ist kaputt. | La ventana está rota. | La fenêtre est cassée. | Прозорецът е счупен. | Окно разбито. | Το παράθυρο είναι σπασμένο. | Pencere kırık. | Dirisha limevunjika. | Cửa sổ bị vỡ. | النافذة مكسورة. | کھڑکی ٹوٹی ہوئی ہے۔ | खिड़की टूटी हुई है। | หน้าต่างแตก | 窗户碎了。
The boy was playing football. | Der Junge hat Fußball gespielt. | El niño estaba jugando al fútbol. | Le garçon jouait au football. | Момчето играеше футбол. | Мальчик играл в футбол. | Το αγόρι έπαιζε ποδόσφαιρο. | Çocuk futbol oynuyordu. | Mvulana alikuwa akicheza mpira wa miguu. | Cậu bé đang chơi bóng đá. | كان الصبي يلعب كرة القدم. | لڑکا فٹ بال کھیل رہا تھا۔ | लड़का फ़ुटबॉल खेल रहा था। | เด็กผู้ชายกำลังเล่นฟุตบอล | 男孩当时在踢足球。
The window was not damaged. | Das Fenster wurde nicht beschädigt. | La ventana no sufrió ningún daño. | La fenêtre n'a pas été abîmée. | Прозорецът не беше повреден. | Окно не пострадало. | Το παράθυρο δεν έπαθε ζημιά. | Pencere hasar görmedi. | Dirisha halikuharibika. | Cửa sổ không bị hư hại gì. | لم تتضرر النافذة. | کھڑکی کو کوئی نقصان نہیں پہنچا۔ | खिड़की को कोई नुकसान नहीं हुआ। | หน้าต่างไม่ได้รับความเสียหาย | 窗户没有受损。

Two women are drinking tea in a café. | Zwei Frauen trinken in einem Café Tee. | Dos mujeres están tomando té en una cafetería. | Deux femmes boivent du thé dans un café. | Две жени пият чай в едно кафене. | Две женщины пьют чай в кафе. | Δύο γυναίκες πίνουν τσάι σε ένα καφέ. | İki kadın bir kafede çay içiyor. | Wanawake wawili wanakunywa chai katika mgahawa. | Hai người phụ nữ đang uống trà trong một quán cà phê. | امرأتان تشربان الشاي في مقهى. | دو عورتیں ایک کیفے میں چائے پی رہی ہیں۔ | दो महिलाएँ एक कैफ़े में चाय पी रही हैं। | ผู้หญิงสองคนกำลังดื่มชาอยู่ในร้านกาแฟ | 两位女士正在咖啡馆里喝茶。
Two people are having a drink. | Zwei Menschen trinken etwas. | Dos personas están tomando algo. | Deux personnes boivent quelque chose. | Двама души пият нещо. | Два человека что-то пьют. | Δύο άνθρωποι πίνουν κάτι. | İki kişi bir şeyler içiyor. | Watu wawili wanakunywa kinywaji. | Hai người đang uống nước. | شخصان يتناولان مشروبا. | دو لوگ کچھ پی رہے ہیں۔ | दो लोग कुछ पी रहे हैं। | คนสองคนกำลังดื่มเครื่องดื่ม | 两个人在喝东西。
The women are old friends. | Die Frauen sind alte Freundinnen. | Las mujeres son viejas amigas. | Les femmes sont de vieilles amies. | Жените са стари приятелки. | Эти женщины старые подруги. | Οι γυναίκες είναι παλιές φίλες. | Kadınlar eski arkadaşlar. | Wanawake hao ni marafiki wa muda mrefu. | Hai người phụ nữ là bạn lâu năm. | المرأتان صديقتان قديمتان. | یہ عورتیں پرانی سہیلیاں ہیں۔ | ये महिलाएँ पुरानी सहेलियाँ हैं। | ผู้หญิงทั้งสองเป็นเพื่อนเก่ากัน | 这两位女士是老朋友。
The women are running in a race. | Die Frauen laufen bei einem Wettrennen mit. | Las mujeres están corriendo en una carrera. | Les femmes courent dans une course. | Жените тичат в състезание. | Женщины бегут в забеге. | Οι γυναίκες τρέχουν σε έναν αγώνα. | Kadınlar bir yarışta koşuyor. | Wanawake wanakimbia katika mashindano. | Hai người phụ nữ đang chạy trong một cuộc đua. | المرأتان تركضان في سباق. | عورتیں ایک دوڑ میں بھاگ رہی ہیں۔ | महिलाएँ एक दौड़ में भाग रही हैं। | ผู้หญิงกำลังวิ่งแข่ง | 这两位女士正在参加赛跑。

The river flooded the village after the storm. | Nach dem Sturm überschwemmte der Fluss das Dorf. | El río inundó el pueblo después de la tormenta. | La rivière a inondé le village après la tempête. | След бурята реката наводни селото. | После бури река затопила деревню. | Το ποτάμι πλημμύρισε το χωριό μετά την καταιγίδα. | Fırtınadan sonra nehir köyü su altında bıraktı. | Mto ulifurika kijiji baada ya dhoruba. | Con sông đã làm ngập ngôi làng sau cơn bão. | أغرق النهر القرية بعد العاصفة. | طوفان کے بعد دریا نے گاؤں کو ڈبو دیا۔ | तूफ़ान के बाद नदी ने गाँव में बाढ़ ला दी। | แม่น้ำท่วมหมู่บ้านหลังพายุ | 暴风雨过后，河水淹没了村庄。
The village was flooded. | Das Dorf wurde überschwemmt. | El pueblo se inundó. | Le village a été inondé. | Селото беше наводнено. | Деревню затопило. | Το χωριό πλημμύρισε. | Köyü su bastı. | Kijiji kilifurika maji. | Ngôi làng bị ngập lụt. | غمرت المياه القرية. | گاؤں میں سیلاب آ گیا۔ | गाँव में बाढ़ आ गई। | หมู่บ้านถูกน้ำท่วม | 村庄被淹了。
Many families had to leave their homes. | Viele Familien mussten ihre Häuser verlassen. | Muchas familias tuvieron que abandonar sus casas. | De nombreuses familles ont dû quitter leur maison. | Много семейства трябваше да напуснат домовете си. | Многим семьям пришлось покинуть свои дома. | Πολλές οικογένειες χρειάστηκε να εγκαταλείψουν τα σπίτια τους. | Birçok aile evlerini terk etmek zorunda kaldı. | Familia nyingi zililazimika kuhama makazi yao. | Nhiều gia đình đã phải rời khỏi nhà. | اضطرت عائلات كثيرة إلى مغادرة منازلها. | بہت سے خاندانوں کو اپنے گھر چھوڑنے پڑے۔ | कई परिवारों को अपने घर छोड़ने पड़े। | หลายครอบครัวต้องออกจากบ้านของตน | 许多家庭不得不离开自己的家。
The village stayed dry during the storm. | Das Dorf blieb während des Sturms trocken. | El pueblo se mantuvo seco durante la tormenta. | Le village est resté au sec pendant la tempête. | По време на бурята селото остана сухо. | Во время бури деревня осталась сухой. | Το χωριό έμεινε στεγνό κατά τη διάρκεια της καταιγίδας. | Fırtına boyunca köy kuru kaldı. | Kijiji kilibaki kikavu wakati wa dhoruba. | Ngôi làng vẫn khô ráo trong suốt cơn bão. | بقيت القرية جافة أثناء العاصفة. | طوفان کے دوران گاؤں خشک رہا۔ | तूफ़ान के दौरान गाँव सूखा रहा। | หมู่บ้านยังคงแห้งอยู่ระหว่างพายุ | 暴风雨期间村庄一直没有进水。

He is painting the walls of his room blue. | Er streicht die Wände seines Zimmers blau. | Está pintando de azul las paredes de su habitación. | Il peint les murs de sa chambre en bleu. | Той боядисва стените на стаята си в синьо. | Он красит стены своей комнаты в синий цвет. | Βάφει τους τοίχους του δωματίου του μπλε. | Odasının duvarlarını maviye boyuyor. | Anapaka rangi ya buluu kuta za chumba chake. | Anh ấy đang sơn tường phòng mình màu xanh dương. | إنه يطلي جدران غرفته باللون الأزرق. | وہ اپنے کمرے کی دیواروں کو نیلا رنگ کر رہا ہے۔ | वह अपने कमरे की दीवारों को नीला रंग रहा है। | เขากำลังทาสีผนังห้องของเขาเป็นสีน้ำเงิน | 他正在把自己房间的墙刷成蓝色。
He is painting his room. | Er streicht sein Zimmer. | Está pintando su habitación. | Il peint sa chambre. | Той боядисва стаята си. | Он красит свою комнату. | Βάφει το δωμάτιό του. | Odasını boyuyor. | Anapaka rangi chumba chake. | Anh ấy đang sơn phòng của mình. | إنه يطلي غرفته. | وہ اپنے کمرے میں رنگ کر رہا ہے۔ | वह अपने कमरे को रंग रहा है। | เขากำลังทาสีห้องของเขา | 他正在粉刷自己的房间。
He has just moved into a new apartment. | Er ist gerade in eine neue Wohnung gezogen. | Acaba de mudarse a un piso nuevo. | Il vient d'emménager dans un nouvel appartement. | Той току-що се нанесе в нов апартамент. | Он только что переехал в новую квартиру. | Μόλις μετακόμισε σε ένα καινούργιο διαμέρισμα. | Yeni bir daireye daha yeni taşındı. | Amehamia nyumba mpya hivi karibuni. | Anh ấy vừa chuyển đến một căn hộ mới. | لقد انتقل للتو إلى شقة جديدة. | وہ ابھی ابھی ایک نئے فلیٹ میں منتقل ہوا ہے۔ | वह अभी-अभी एक नए फ़्लैट में आया है। | เขาเพิ่งย้ายเข้ามาอยู่อพาร์ตเมนต์ใหม่ | 他刚搬进一套新公寓。
He is painting the walls red. | Er streicht die Wände rot. | Está pintando las paredes de rojo. | Il peint les murs en rouge. | Той боядисва стените в червено. | Он красит стены в красный цвет. | Βάφει τους τοίχους κόκκινους. | Duvarları kırmızıya boyuyor. | Anapaka kuta rangi nyekundu. | Anh ấy đang sơn tường màu đỏ. | إنه يطلي الجدران باللون الأحمر. | وہ دیواروں کو لال رنگ کر رہا ہے۔ | वह दीवारों को लाल रंग रहा है। | เขากำลังทาสีผนังเป็นสีแดง | 他正在把墙刷成红色。

The plane landed safely in the snow. | Das Flugzeug ist sicher im Schnee gelandet. | El avión aterrizó sin problemas en la nieve. | L'avion a atterri sans encombre dans la neige. | Самолетът кацна безопасно в снега. | Самолёт благополучно приземлился в снегу. | Το αεροπλάνο προσγειώθηκε με ασφάλεια στο χιόνι. | Uçak karda güvenli bir şekilde indi. | Ndege ilitua salama kwenye theluji. | Máy bay đã hạ cánh an toàn trong tuyết. | هبطت الطائرة بسلام في الثلج. | ہوائی جہاز برف میں بحفاظت اتر گیا۔ | हवाई जहाज़ बर्फ़ में सुरक्षित उतर गया। | เครื่องบินลงจอดอย่างปลอดภัยท่ามกลางหิมะ | 飞机在雪中安全着陆了。
The plane reached the ground. | Das Flugzeug hat den Boden erreicht. | El avión llegó a tierra. | L'avion a touché le sol. | Самолетът стигна до земята. | Самолёт достиг земли. | Το αεροπλάνο έφτασε στο έδαφος. | Uçak yere indi. | Ndege ilifika ardhini. | Máy bay đã chạm đất. | وصلت الطائرة إلى الأرض. | ہوائی جہاز زمین پر پہنچ گیا۔ | हवाई जहाज़ ज़मीन पर पहुँच गया। | เครื่องบินแตะพื้นแล้ว | 飞机落到了地面上。
The passengers were afraid during the flight. | Die Passagiere hatten während des Fluges Angst. | Los pasajeros tuvieron miedo durante el vuelo. | Les passagers ont eu peur pendant le vol. | Пътниците се страхуваха по време на полета. | Пассажиры боялись во время полёта. | Οι επιβάτες φοβήθηκαν κατά τη διάρκεια της πτήσης. | Yolcular uçuş sırasında korktu. | Abiria waliogopa wakati wa safari ya ndege. | Hành khách đã sợ hãi trong suốt chuyến bay. | شعر الركاب بالخوف أثناء الرحلة. | پرواز کے دوران مسافر ڈرے ہوئے تھے۔ | उड़ान के दौरान यात्री डरे हुए थे। | ผู้โดยสารรู้สึกกลัวระหว่างเที่ยวบิน | 乘客们在飞行途中很害怕。
The plane crashed in the snow. | Das Flugzeug ist im Schnee abgestürzt. | El avión se estrelló en la nieve. | L'avion s'est écrasé dans la neige. | Самолетът се разби в снега. | Самолёт разбился в снегу. | Το αεροπλάνο συνετρίβη στο χιόνι. | Uçak karda düştü. | Ndege ilianguka kwenye theluji. | Máy bay đã bị rơi trong tuyết. | تحطمت الطائرة في الثلج. | ہوائی جہاز برف میں گر کر تباہ ہو گیا۔ | हवाई जहाज़ बर्फ़ में दुर्घटनाग्रस्त हो गया। | เครื่องบินตกในหิมะ | 飞机在雪地里坠毁了。

The children are building a snowman in the yard. | Die Kinder bauen im Hof einen Schneemann. | Los niños están haciendo un muñeco de nieve en el patio. | Les enfants font un bonhomme de neige dans la cour. | Децата правят снежен човек в двора. | Дети лепят снеговика во дворе. | Τα παιδιά φτιάχνουν έναν χιονάνθρωπο στην αυλή. | Çocuklar bahçede kardan adam yapıyor. | Watoto wanajenga sanamu ya theluji uwanjani. | Bọn trẻ đang đắp người tuyết trong sân. | الأطفال يصنعون رجل ثلج في الفناء. | بچے صحن میں برف کا پتلا بنا رہے ہیں۔ | बच्चे आँगन में बर्फ़ का पुतला बना रहे हैं। | เด็ก ๆ กำลังปั้นตุ๊กตาหิมะอยู่ในสนาม | 孩子们正在院子里堆雪人。
Children are playing in the snow. | Kinder spielen im Schnee. | Unos niños están jugando en la nieve. | Des enfants jouent dans la neige. | Деца играят в снега. | Дети играют в снегу. | Παιδιά παίζουν στο χιόνι. | Çocuklar karda oynuyor. | Watoto wanacheza kwenye theluji. | Trẻ em đang chơi trong tuyết. | أطفال يلعبون في الثلج. | بچے برف میں کھیل رہے ہیں۔ | बच्चे बर्फ़ में खेल रहे हैं। | เด็ก ๆ กำลังเล่นหิมะ | 孩子们在雪地里玩。
It is the first snow of the winter. | Es ist der erste Schnee des Winters. | Es la primera nevada del invierno. | C'est la première neige de l'hiver. | Това е първият сняг за зимата. | Это первый снег этой зимы. | Είναι το πρώτο χιόνι του χειμώνα. | Bu, kışın ilk karı. | Hii ni theluji ya kwanza ya msimu wa baridi. | Đây là trận tuyết đầu tiên của mùa đông. | إنه أول ثلج في فصل الشتاء. | یہ اس سردی کی پہلی برف ہے۔ | यह इस सर्दी की पहली बर्फ़ है। | นี่เป็นหิมะแรกของฤดูหนาว | 这是今年冬天的第一场雪。
The children are swimming in a warm pool. | Die Kinder schwimmen in einem warmen Becken. | Los niños están nadando en una piscina templada. | Les enfants nagent dans une piscine chauffée. | Децата плуват в топъл басейн. | Дети плавают в тёплом бассейне. | Τα παιδιά κολυμπούν σε μια ζεστή πισίνα. | Çocuklar ılık bir havuzda yüzüyor. | Watoto wanaogelea katika bwawa la maji ya joto. | Bọn trẻ đang bơi trong một hồ bơi nước ấm. | الأطفال يسبحون في مسبح دافئ. | بچے گرم پانی کے سوئمنگ پول میں تیر رہے ہیں۔ | बच्चे गर्म पानी के स्विमिंग पूल में तैर रहे हैं। | เด็ก ๆ กำลังว่ายน้ำในสระน้ำอุ่น | 孩子们正在温水泳池里游泳。

A young man is waiting for the bus in the rain. | Ein junger Mann wartet im Regen auf den Bus. | Un joven está esperando el autobús bajo la lluvia. | Un jeune homme attend le bus sous la pluie. | Млад мъж чака автобуса под дъжда. | Молодой человек ждёт автобус под дождём. | Ένας νεαρός περιμένει το λεωφορείο στη βροχή. | Genç bir adam yağmurda otobüs bekliyor. | Kijana anasubiri basi kwenye mvua. | Một chàng trai đang đợi xe buýt dưới mưa. | شاب ينتظر الحافلة تحت المطر. | ایک نوجوان بارش میں بس کا انتظار کر رہا ہے۔ | एक नौजवान बारिश में बस का इंतज़ार कर रहा है। | ชายหนุ่มคนหนึ่งกำลังรอรถเมล์ท่ามกลางสายฝน | 一个年轻人正在雨中等公交车。
A man is outside in the rain. | Ein Mann ist draußen im Regen. | Un hombre está fuera bajo la lluvia. | Un homme est dehors sous la pluie. | Един мъж е навън под дъжда. | Мужчина стоит на улице под дождём. | Ένας άντρας είναι έξω στη βροχή. | Bir adam dışarıda yağmurun altında. | Mwanamume yuko nje kwenye mvua. | Một người đàn ông đang ở ngoài trời mưa. | رجل في الخارج تحت المطر. | ایک آدمی باہر بارش میں ہے۔ | एक आदमी बाहर बारिश में है। | ผู้ชายคนหนึ่งอยู่ข้างนอกท่ามกลางฝน | 一个男人在外面淋着雨。
The young man is going to work. | Der junge Mann fährt zur Arbeit. | El joven va al trabajo. | Le jeune homme va au travail. | Младият мъж отива на работа. | Молодой человек едет на работу. | Ο νεαρός πηγαίνει στη δουλειά. | Genç adam işe gidiyor. | Kijana anaenda kazini. | Chàng trai đang đi làm. | الشاب ذاهب إلى العمل. | نوجوان کام پر جا رہا ہے۔ | नौजवान काम पर जा रहा है। | ชายหนุ่มกำลังจะไปทำงาน | 这个年轻人正要去上班。
The young man is driving his car. | Der junge Mann fährt sein Auto. | El joven está conduciendo su coche. | Le jeune homme conduit sa voiture. | Младият мъж кара колата си. | Молодой человек ведёт свою машину. | Ο νεαρός οδηγεί το αυτοκίνητό του. | Genç adam arabasını sürüyor. | Kijana anaendesha gari lake. | Chàng trai đang lái xe ô tô của mình. | الشاب يقود سيارته. | نوجوان اپنی گاڑی چلا رہا ہے۔ | नौजवान अपनी कार चला रहा है। | ชายหนุ่มกำลังขับรถของเขา | 这个年轻人正在开自己的车。

The police officer is helping an old man cross the street. | Der Polizist hilft einem alten Mann über die Straße. | El policía está ayudando a un anciano a cruzar la calle. | Le policier aide un vieil homme à traverser la rue. | Полицаят помага на възрастен мъж да пресече улицата. | Полицейский помогает пожилому мужчине перейти улицу. | Ο αστυνομικός βοηθάει έναν ηλικιωμένο να περάσει τον δρόμο. | Polis memuru yaşlı bir adamın karşıya geçmesine yardım ediyor. | Polisi anamsaidia mzee kuvuka barabara. | Viên cảnh sát đang giúp một cụ già qua đường. | الشرطي يساعد رجلا مسنا على عبور الشارع. | پولیس والا ایک بوڑھے آدمی کو سڑک پار کرنے میں مدد دے رہا ہے۔ | पुलिसवाला एक बूढ़े आदमी को सड़क पार करने में मदद कर रहा है। | ตำรวจกำลังช่วยชายชราข้ามถนน | 警察正在帮助一位老人过马路。
An old man is getting help. | Ein alter Mann bekommt Hilfe. | Un anciano está recibiendo ayuda. | Un vieil homme reçoit de l'aide. | Възрастен мъж получава помощ. | Пожилому мужчине помогают. | Ένας ηλικιωμένος δέχεται βοήθεια. | Yaşlı bir adama yardım ediliyor. | Mzee anapata msaada. | Một cụ già đang được giúp đỡ. | رجل مسن يتلقى المساعدة. | ایک بوڑھے آدمی کو مدد مل رہی ہے۔ | एक बूढ़े आदमी को मदद मिल रही है। | ชายชราคนหนึ่งกำลังได้รับความช่วยเหลือ | 一位老人正在得到帮助。
The old man cannot see well. | Der alte Mann kann nicht gut sehen. | El anciano no ve bien. | Le vieil homme ne voit pas bien. | Възрастният мъж не вижда добре. | Пожилой мужчина плохо видит. | Ο ηλικιωμένος δεν βλέπει καλά. | Yaşlı adam iyi göremiyor. | Mzee huyo haoni vizuri. | Cụ già không nhìn rõ. | الرجل المسن لا يرى جيدا. | بوڑھا آدمی ٹھیک سے دیکھ نہیں سکتا۔ | बूढ़ा आदमी ठीक से देख नहीं पाता। | ชายชรามองเห็นไม่ค่อยชัด | 这位老人视力不好。
The police officer is ignoring the old man. | Der Polizist beachtet den alten Mann nicht. | El policía está ignorando al anciano. | Le policier ignore le vieil homme. | Полицаят не обръща внимание на възрастния мъж. | Полицейский не обращает внимания на пожилого мужчину. | Ο αστυνομικός αγνοεί τον ηλικιωμένο. | Polis memuru yaşlı adamı görmezden geliyor. | Polisi anampuuza mzee. | Viên cảnh sát đang phớt lờ cụ già. | الشرطي يتجاهل الرجل المسن. | پولیس والا بوڑھے آدمی کو نظر انداز کر رہا ہے۔ | पुलिसवाला बूढ़े आदमी को अनदेखा कर रहा है। | ตำรวจกำลังเพิกเฉยต่อชายชรา | 警察对那位老人不理不睬。

She forgot her keys at the office. | Sie hat ihre Schlüssel im Büro vergessen. | Se olvidó las llaves en la oficina. | Elle a oublié ses clés au bureau. | Тя забрави ключовете си в офиса. | Она забыла ключи в офисе. | Ξέχασε τα κλειδιά της στο γραφείο. | Anahtarlarını ofiste unuttu. | Alisahau funguo zake ofisini. | Cô ấy để quên chìa khóa ở văn phòng. | نسيت مفاتيحها في المكتب. | وہ اپنی چابیاں دفتر میں بھول گئی۔ | वह अपनी चाबियाँ दफ़्तर में भूल गई। | เธอลืมกุญแจไว้ที่ออฟฟิศ | 她把钥匙忘在办公室了。
Her keys are at the office. | Ihre Schlüssel sind im Büro. | Sus llaves están en la oficina. | Ses clés sont au bureau. | Ключовете ѝ са в офиса. | Её ключи в офисе. | Τα κλειδιά της είναι στο γραφείο. | Anahtarları ofiste. | Funguo zake ziko ofisini. | Chìa khóa của cô ấy ở văn phòng. | مفاتيحها في المكتب. | اس کی چابیاں دفتر میں ہیں۔ | उसकी चाबियाँ दफ़्तर में हैं। | กุญแจของเธออยู่ที่ออฟฟิศ | 她的钥匙在办公室。
She cannot get into her house. | Sie kommt nicht in ihr Haus. | No puede entrar en su casa. | Elle ne peut pas entrer chez elle. | Тя не може да влезе в къщата си. | Она не может попасть домой. | Δεν μπορεί να μπει στο σπίτι της. | Evine giremiyor. | Hawezi kuingia nyumbani kwake. | Cô ấy không thể vào nhà. | لا تستطيع دخول منزلها. | وہ اپنے گھر میں داخل نہیں ہو سکتی۔ | वह अपने घर में नहीं घुस सकती। | เธอเข้าบ้านของตัวเองไม่ได้ | 她进不了家门。
She has her keys in her pocket. | Sie hat ihre Schlüssel in der Tasche. | Tiene las llaves en el bolsillo. | Elle a ses clés dans sa poche. | Ключовете са в джоба ѝ. | Ключи у неё в кармане. | Έχει τα κλειδιά της στην τσέπη της. | Anahtarları cebinde. | Ana funguo zake mfukoni. | Chìa khóa đang ở trong túi của cô ấy. | مفاتيحها في جيبها. | اس کی چابیاں اس کی جیب میں ہیں۔ | उसकी चाबियाँ उसकी जेब में हैं। | กุญแจอยู่ในกระเป๋าเสื้อของเธอ | 她的钥匙就在口袋里。

The restaurant was full on Saturday night. | Das Restaurant war am Samstagabend voll. | El restaurante estaba lleno el sábado por la noche. | Le restaurant était plein samedi soir. | Ресторантът беше пълен в събота вечерта. | В субботу вечером ресторан был полон. | Το εστιατόριο ήταν γεμάτο το βράδυ του Σαββάτου. | Restoran cumartesi akşamı doluydu. | Mgahawa ulijaa Jumamosi usiku. | Nhà hàng đã kín chỗ vào tối thứ Bảy. | كان المطعم ممتلئا ليلة السبت. | ہفتے کی رات ریستوران بھرا ہوا تھا۔ | शनिवार की रात रेस्टोरेंट भरा हुआ था। | ร้านอาหารเต็มในคืนวันเสาร์ | 星期六晚上这家餐馆坐满了人。
Many people ate at the restaurant on Saturday. | Am Samstag haben viele Menschen im Restaurant gegessen. | Mucha gente comió en el restaurante el sábado. | Beaucoup de gens ont mangé au restaurant samedi. | Много хора вечеряха в ресторанта в събота. | В субботу в ресторане ужинало много людей. | Πολλοί άνθρωποι έφαγαν στο εστιατόριο το Σάββατο. | Cumartesi günü restoranda birçok kişi yemek yedi. | Watu wengi walikula mgahawani Jumamosi. | Nhiều người đã ăn ở nhà hàng vào thứ Bảy. | تناول كثير من الناس الطعام في المطعم يوم السبت. | ہفتے کو بہت سے لوگوں نے ریستوران میں کھانا کھایا۔ | शनिवार को बहुत से लोगों ने रेस्टोरेंट में खाना खाया। | มีคนจำนวนมากมากินที่ร้านอาหารในวันเสาร์ | 星期六有很多人在这家餐馆吃饭。
The food at the restaurant is expensive. | Das Essen in dem Restaurant ist teuer. | La comida del restaurante es cara. | La nourriture du restaurant est chère. | Храната в ресторанта е скъпа. | Еда в этом ресторане дорогая. | Το φαγητό στο εστιατόριο είναι ακριβό. | Restorandaki yemekler pahalı. | Chakula katika mgahawa huo ni ghali. | Đồ ăn ở nhà hàng này đắt. | الطعام في المطعم غال. | ریستوران کا کھانا مہنگا ہے۔ | रेस्टोरेंट का खाना महँगा है। | อาหารที่ร้านนี้ราคาแพง | 这家餐馆的菜很贵。
Nobody came to the restaurant on Saturday. | Am Samstag kam niemand ins Restaurant. | Nadie fue al restaurante el sábado. | Personne n'est venu au restaurant samedi. | В събота никой не дойде в ресторанта. | В субботу в ресторан никто не пришёл. | Κανείς δεν ήρθε στο εστιατόριο το Σάββατο. | Cumartesi günü restorana kimse gelmedi. | Hakuna mtu aliyekuja mgahawani Jumamosi. | Không ai đến nhà hàng vào thứ Bảy. | لم يأت أحد إلى المطعم يوم السبت. | ہفتے کو کوئی ریستوران نہیں آیا۔ | शनिवार को कोई रेस्टोरेंट नहीं आया। | ไม่มีใครมาที่ร้านอาหารในวันเสาร์เลย | 星期六没有人来这家餐馆。

A fisherman is pulling a net out of the sea. | Ein Fischer zieht ein Netz aus dem Meer. | Un pescador está sacando una red del mar. | Un pêcheur tire un filet hors de la mer. | Рибар изтегля мрежа от морето. | Рыбак вытаскивает сеть из моря. | Ένας ψαράς τραβάει ένα δίχτυ από τη θάλασσα. | Bir balıkçı denizden ağ çekiyor. | Mvuvi anavuta wavu kutoka baharini. | Một ngư dân đang kéo lưới lên từ biển. | صياد يسحب شبكة من البحر. | ایک مچھیرا سمندر سے جال کھینچ رہا ہے۔ | एक मछुआरा समुद्र से जाल खींच रहा है। | ชาวประมงคนหนึ่งกำลังดึงอวนขึ้นจากทะเล | 一个渔夫正在从海里拉网。
Someone is fishing. | Jemand fischt. | Alguien está pescando. | Quelqu'un pêche. | Някой лови риба. | Кто-то ловит рыбу. | Κάποιος ψαρεύει. | Birisi balık tutuyor. | Mtu anavua samaki. | Ai đó đang đánh cá. | شخص ما يصطاد السمك. | کوئی مچھلی پکڑ رہا ہے۔ | कोई मछली पकड़ रहा है। | มีคนกำลังจับปลา | 有人在捕鱼。
The net is full of fish. | Das Netz ist voller Fische. | La red está llena de peces. | Le filet est plein de poissons. | Мрежата е пълна с риба. | Сеть полна рыбы. | Το δίχτυ είναι γεμάτο ψάρια. | Ağ balıkla dolu. | Wavu umejaa samaki. | Tấm lưới đầy cá. | الشبكة مليئة بالسمك. | جال مچھلیوں سے بھرا ہوا ہے۔ | जाल मछलियों से भरा हुआ है। | อวนเต็มไปด้วยปลา | 网里装满了鱼。
The fisherman is sleeping on the beach. | Der Fischer schläft am Strand. | El pescador está durmiendo en la playa. | Le pêcheur dort sur la plage. | Рибарят спи на плажа. | Рыбак спит на пляже. | Ο ψαράς κοιμάται στην παραλία. | Balıkçı sahilde uyuyor. | Mvuvi amelala ufukweni. | Người ngư dân đang ngủ trên bãi biển. | الصياد نائم على الشاطئ. | مچھیرا ساحل پر سو رہا ہے۔ | मछुआरा समुद्र तट पर सो रहा है। | ชาวประมงกำลังนอนหลับอยู่บนชายหาด | 渔夫正在海滩上睡觉。

The girl won first prize in the singing contest. | Das Mädchen hat beim Gesangswettbewerb den ersten Preis gewonnen. | La chica ganó el primer premio en el concurso de canto. | La jeune fille a gagné le premier prix du concours de chant. | Момичето спечели първа награда в конкурса по пеене. | Девушка заняла первое место в конкурсе певцов. | Το κορίτσι κέρδισε το πρώτο βραβείο στον διαγωνισμό τραγουδιού. | Kız şarkı yarışmasında birincilik ödülünü kazandı. | Msichana alishinda tuzo ya kwanza katika shindano la uimbaji. | Cô gái đã giành giải nhất trong cuộc thi hát. | فازت الفتاة بالجائزة الأولى في مسابقة الغناء. | لڑکی نے گانے کے مقابلے میں پہلا انعام جیتا۔ | लड़की ने गायन प्रतियोगिता में पहला इनाम जीता। | เด็กสาวได้รางวัลที่หนึ่งในการประกวดร้องเพลง | 那个女孩在歌唱比赛中获得了一等奖。
The girl won a contest. | Das Mädchen hat einen Wettbewerb gewonnen. | La chica ganó un concurso. | La jeune fille a gagné un concours. | Момичето спечели конкурс. | Девушка победила в конкурсе. | Το κορίτσι κέρδισε έναν διαγωνισμό. | Kız bir yarışma kazandı. | Msichana alishinda shindano. | Cô gái đã thắng một cuộc thi. | فازت الفتاة في مسابقة. | لڑکی نے ایک مقابلہ جیتا۔ | लड़की ने एक प्रतियोगिता जीती। | เด็กสาวชนะการประกวด | 那个女孩赢得了一场比赛。
The girl has been taking singing lessons for years. | Das Mädchen nimmt seit Jahren Gesangsunterricht. | La chica lleva años tomando clases de canto. | La jeune fille prend des cours de chant depuis des années. | Момичето взема уроци по пеене от години. | Девушка уже много лет берёт уроки пения. | Το κορίτσι κάνει μαθήματα τραγουδιού εδώ και χρόνια. | Kız yıllardır şan dersi alıyor. | Msichana amekuwa akichukua masomo ya uimbaji kwa miaka mingi. | Cô gái đã học hát nhiều năm nay. | تتلقى الفتاة دروسا في الغناء منذ سنوات. | لڑکی کئی سال سے گانے کی تربیت لے رہی ہے۔ | लड़की कई सालों से गाना सीख रही है। | เด็กสาวเรียนร้องเพลงมาหลายปีแล้ว | 那个女孩学唱歌已经好几年了。
The girl lost the singing contest. | Das Mädchen hat den Gesangswettbewerb verloren. | La chica perdió el concurso de canto. | La jeune fille a perdu le concours de chant. | Момичето загуби конкурса по пеене. | Девушка проиграла конкурс певцов. | Το κορίτσι έχασε στον διαγωνισμό τραγουδιού. | Kız şarkı yarışmasını kaybetti. | Msichana alishindwa katika shindano la uimbaji. | Cô gái đã thua trong cuộc thi hát. | خسرت الفتاة مسابقة الغناء. | لڑکی گانے کا مقابلہ ہار گئی۔ | लड़की गायन प्रतियोगिता हार गई। | เด็กสาวแพ้การประกวดร้องเพลง | 那个女孩在歌唱比赛中输了。

The workers are repairing the road near the bridge. | Die Arbeiter reparieren die Straße in der Nähe der Brücke. | Los obreros están reparando la carretera cerca del puente. | Les ouvriers réparent la route près du pont. | Работниците ремонтират пътя близо до моста. | Рабочие ремонтируют дорогу у моста. | Οι εργάτες επισκευάζουν τον δρόμο κοντά στη γέφυρα. | İşçiler köprünün yakınındaki yolu onarıyor. | Wafanyakazi wanatengeneza barabara karibu na daraja. | Các công nhân đang sửa con đường gần cây cầu. | العمال يصلحون الطريق بالقرب من الجسر. | مزدور پل کے قریب سڑک کی مرمت کر رہے ہیں۔ | मज़दूर पुल के पास सड़क की मरम्मत कर रहे हैं। | คนงานกำลังซ่อมถนนใกล้สะพาน | 工人们正在修理桥边的道路。
The road is being repaired. | Die Straße wird repariert. | La carretera está siendo reparada. | La route est en réparation. | Пътят се ремонтира. | Дорогу ремонтируют. | Ο δρόμος επισκευάζεται. | Yol onarılıyor. | Barabara inatengenezwa. | Con đường đang được sửa chữa. | يجري إصلاح الطريق. | سڑک کی مرمت ہو رہی ہے۔ | सड़क की मरम्मत हो रही है। | ถนนกำลังได้รับการซ่อมแซม | 道路正在维修。
The road will be closed for a week. | Die Straße wird eine Woche lang gesperrt sein. | La carretera estará cerrada durante una semana. | La route sera fermée pendant une semaine. | Пътят ще бъде затворен за една седмица. | Дорога будет закрыта на неделю. | Ο δρόμος θα μείνει κλειστός για μια εβδομάδα. | Yol bir hafta boyunca kapalı olacak. | Barabara itafungwa kwa wiki moja. | Con đường sẽ bị đóng trong một tuần. | سيغلق الطريق لمدة أسبوع. | سڑک ایک ہفتے کے لیے بند رہے گی۔ | सड़क एक हफ़्ते के लिए बंद रहेगी। | ถนนจะถูกปิดเป็นเวลาหนึ่งสัปดาห์ | 这条路将封闭一个星期。
Nobody is working on the road. | Niemand arbeitet an der Straße. | Nadie está trabajando en la carretera. | Personne ne travaille sur la route. | Никой не работи по пътя. | На дороге никто не работает. | Κανείς δεν δουλεύει στον δρόμο. | Yolda kimse çalışmıyor. | Hakuna mtu anayefanya kazi barabarani. | Không có ai đang làm việc trên con đường. | لا أحد يعمل في الطريق. | سڑک پر کوئی کام نہیں کر رہا۔ | सड़क पर कोई काम नहीं कर रहा है। | ไม่มีใครทำงานบนถนนเลย | 没有人在修路。

My grandfather reads the newspaper every morning. | Mein Großvater liest jeden Morgen die Zeitung. | Mi abuelo lee el periódico todas las mañanas. | Mon grand-père lit le journal tous les matins. | Дядо ми чете вестник всяка сутрин. | Мой дедушка каждое утро читает газету. | Ο παππούς μου διαβάζει την εφημερίδα κάθε πρωί. | Dedem her sabah gazete okur. | Babu yangu husoma gazeti kila asubuhi. | Ông tôi đọc báo mỗi sáng. | يقرأ جدي الجريدة كل صباح. | میرے دادا ہر صبح اخبار پڑھتے ہیں۔ | मेरे दादाजी हर सुबह अख़बार पढ़ते हैं। | คุณปู่ของฉันอ่านหนังสือพิมพ์ทุกเช้า | 我爷爷每天早上看报纸。
My grandfather reads regularly. | Mein Großvater liest regelmäßig. | Mi abuelo lee con regularidad. | Mon grand-père lit régulièrement. | Дядо ми чете редовно. | Мой дедушка регулярно читает. | Ο παππούς μου διαβάζει τακτικά. | Dedem düzenli olarak okur. | Babu yangu husoma mara kwa mara. | Ông tôi đọc thường xuyên. | يقرأ جدي بانتظام. | میرے دادا باقاعدگی سے پڑھتے ہیں۔ | मेरे दादाजी नियमित रूप से पढ़ते हैं। | คุณปู่ของฉันอ่านหนังสือเป็นประจำ | 我爷爷经常阅读。
My grandfather reads the newspaper with his coffee. | Mein Großvater liest die Zeitung bei einer Tasse Kaffee. | Mi abuelo lee el periódico mientras toma café. | Mon grand-père lit le journal en buvant son café. | Дядо ми чете вестника, докато пие кафе. | Мой дедушка читает газету за чашкой кофе. | Ο παππούς μου διαβάζει την εφημερίδα πίνοντας τον καφέ του. | Dedem gazeteyi kahvesini içerken okur. | Babu yangu husoma gazeti akinywa kahawa. | Ông tôi vừa đọc báo vừa uống cà phê. | يقرأ جدي الجريدة وهو يشرب قهوته. | میرے دادا کافی پیتے ہوئے اخبار پڑھتے ہیں۔ | मेरे दादाजी कॉफ़ी पीते हुए अख़बार पढ़ते हैं। | คุณปู่ของฉันอ่านหนังสือพิมพ์ไปพร้อมกับดื่มกาแฟ | 我爷爷一边喝咖啡一边看报纸。
My grandfather never reads anything. | Mein Großvater liest nie etwas. | Mi abuelo nunca lee nada. | Mon grand-père ne lit jamais rien. | Дядо ми никога нищо не чете. | Мой дедушка никогда ничего не читает. | Ο παππούς μου δεν διαβάζει ποτέ τίποτα. | Dedem hiçbir şey okumaz. | Babu yangu hasomi chochote kamwe. | Ông tôi không bao giờ đọc gì cả. | جدي لا يقرأ أي شيء أبدا. | میرے دادا کبھی کچھ نہیں پڑھتے۔ | मेरे दादाजी कभी कुछ नहीं पढ़ते। | คุณปู่ของฉันไม่เคยอ่านอะไรเลย | 我爷爷从来不读任何东西。

A dog is chasing a ball across the beach. | Ein Hund jagt einem Ball über den Strand hinterher. | Un perro persigue una pelota por la playa. | Un chien court après une balle sur la plage. | Куче гони топка по плажа. | Собака гонится за мячом по пляжу. | Ένας σκύλος κυνηγάει μια μπάλα στην παραλία. | Bir köpek sahilde bir topun peşinden koşuyor. | Mbwa anafukuza mpira ufukweni. | Một con chó đang đuổi theo quả bóng trên bãi biển. | كلب يطارد كرة على الشاطئ. | ایک کتا ساحل پر گیند کے پیچھے بھاگ رہا ہے۔ | एक कुत्ता समुद्र तट पर गेंद के पीछे दौड़ रहा है। | สุนัขตัวหนึ่งกำลังวิ่งไล่ลูกบอลไปตามชายหาด | 一只狗正在沙滩上追一个球。
A dog is running on the beach. | Ein Hund rennt am Strand. | Un perro está corriendo en la playa. | Un chien court sur la plage. | Куче тича по плажа. | Собака бегает по пляжу. | Ένας σκύλος τρέχει στην παραλία. | Bir köpek sahilde koşuyor. | Mbwa anakimbia ufukweni. | Một con chó đang chạy trên bãi biển. | كلب يركض على الشاطئ. | ایک کتا ساحل پر دوڑ رہا ہے۔ | एक कुत्ता समुद्र तट पर दौड़ रहा है। | สุนัขตัวหนึ่งกำลังวิ่งอยู่บนชายหาด | 一只狗在沙滩上跑。
The dog belongs to a family on holiday. | Der Hund gehört einer Familie, die Urlaub macht. | El perro es de una familia que está de vacaciones. | Le chien appartient à une famille en vacances. | Кучето е на едно семейство на почивка. | Собака принадлежит семье, которая приехала отдыхать. | Ο σκύλος ανήκει σε μια οικογένεια που κάνει διακοπές. | Köpek tatildeki bir aileye ait. | Mbwa huyo ni wa familia iliyo likizoni. | Con chó là của một gia đình đang đi nghỉ. | الكلب ملك لعائلة في إجازة. | کتا چھٹیاں منانے والے ایک خاندان کا ہے۔ | कुत्ता छुट्टी मना रहे एक परिवार का है। | สุนัขเป็นของครอบครัวที่มาพักผ่อนวันหยุด | 这只狗属于一个来度假的家庭。
The dog is asleep in its bed. | Der Hund schläft in seinem Körbchen. | El perro está dormido en su cama. | Le chien dort dans son panier. | Кучето спи в леглото си. | Собака спит на своей лежанке. | Ο σκύλος κοιμάται στο κρεβάτι του. | Köpek yatağında uyuyor. | Mbwa amelala kitandani kwake. | Con chó đang ngủ trong ổ của nó. | الكلب نائم في سريره. | کتا اپنے بستر میں سو رہا ہے۔ | कुत्ता अपने बिस्तर में सो रहा है। | สุนัขกำลังนอนหลับอยู่ในที่นอนของมัน | 那只狗正睡在自己的窝里。

The lights in the building went out during the storm. | Während des Sturms ging im Gebäude das Licht aus. | Las luces del edificio se apagaron durante la tormenta. | Les lumières de l'immeuble se sont éteintes pendant la tempête. | По време на бурята светлините в сградата угаснаха. | Во время бури в здании погас свет. | Τα φώτα στο κτίριο έσβησαν κατά τη διάρκεια της καταιγίδας. | Fırtına sırasında binadaki ışıklar söndü. | Taa za jengo zilizimika wakati wa dhoruba. | Đèn trong tòa nhà đã tắt trong cơn bão. | انطفأت الأضواء في المبنى أثناء العاصفة. | طوفان کے دوران عمارت کی بتیاں بجھ گئیں۔ | तूफ़ान के दौरान इमारत की बत्तियाँ बुझ गईं। | ไฟในอาคารดับระหว่างพายุ | 暴风雨期间大楼里的灯灭了。
The building lost power during the storm. | Das Gebäude hatte während des Sturms keinen Strom. | El edificio se quedó sin electricidad durante la tormenta. | L'immeuble a perdu l'électricité pendant la tempête. | Сградата остана без ток по време на бурята. | Во время бури здание осталось без электричества. | Το κτίριο έμεινε χωρίς ρεύμα κατά τη διάρκεια της καταιγίδας. | Fırtına sırasında binanın elektriği kesildi. | Jengo lilikosa umeme wakati wa dhoruba. | Tòa nhà bị mất điện trong cơn bão. | انقطعت الكهرباء عن المبنى أثناء العاصفة. | طوفان کے دوران عمارت کی بجلی چلی گئی۔ | तूफ़ान के दौरान इमारत की बिजली चली गई। | อาคารไฟฟ้าดับระหว่างพายุ | 暴风雨期间大楼停电了。
The storm damaged a power line. | Der Sturm hat eine Stromleitung beschädigt. | La tormenta dañó un cable eléctrico. | La tempête a endommagé une ligne électrique. | Бурята повреди електропровод. | Буря повредила линию электропередачи. | Η καταιγίδα προκάλεσε ζημιά σε ένα καλώδιο ρεύματος. | Fırtına bir elektrik hattına zarar verdi. | Dhoruba iliharibu waya wa umeme. | Cơn bão đã làm hỏng một đường dây điện. | ألحقت العاصفة ضررا بخط كهرباء. | طوفان نے بجلی کی ایک لائن کو نقصان پہنچایا۔ | तूफ़ान ने बिजली की एक लाइन को नुकसान पहुँचाया। | พายุทำให้สายไฟเสียหาย | 暴风雨损坏了一条电线。
The lights stayed on all night. | Das Licht blieb die ganze Nacht an. | Las luces estuvieron encendidas toda la noche. | Les lumières sont restées allumées toute la nuit. | Светлините светеха цяла нощ. | Свет горел всю ночь. | Τα φώτα έμειναν αναμμένα όλη τη νύχτα. | Işıklar bütün gece açık kaldı. | Taa ziliwaka usiku kucha. | Đèn vẫn sáng suốt đêm. | بقيت الأضواء مضاءة طوال الليل. | بتیاں ساری رات جلتی رہیں۔ | बत्तियाँ पूरी रात जलती रहीं। | ไฟเปิดอยู่ตลอดทั้งคืน | 灯整晚都亮着。

Three boys are playing football in the park. | Drei Jungen spielen im Park Fußball. | Tres chicos están jugando al fútbol en el parque. | Trois garçons jouent au football dans le parc. | Три момчета играят футбол в парка. | Трое мальчиков играют в футбол в парке. | Τρία αγόρια παίζουν ποδόσφαιρο στο πάρκο. | Üç çocuk parkta futbol oynuyor. | Wavulana watatu wanacheza mpira wa miguu bustanini. | Ba cậu bé đang chơi bóng đá trong công viên. | ثلاثة أولاد يلعبون كرة القدم في الحديقة. | تین لڑکے پارک میں فٹ بال کھیل رہے ہیں۔ | तीन लड़के पार्क में फ़ुटबॉल खेल रहे हैं। | เด็กผู้ชายสามคนกำลังเล่นฟุตบอลในสวนสาธารณะ | 三个男孩正在公园里踢足球。
Boys are playing a game outside. | Jungen spielen draußen ein Spiel. | Unos chicos están jugando un partido al aire libre. | Des garçons jouent à un jeu dehors. | Момчета играят игра навън. | Мальчики играют в игру на улице. | Αγόρια παίζουν ένα παιχνίδι έξω. | Çocuklar dışarıda oyun oynuyor. | Wavulana wanacheza mchezo nje. | Mấy cậu bé đang chơi một trò chơi ngoài trời. | أولاد يلعبون لعبة في الخارج. | لڑکے باہر ایک کھیل کھیل رہے ہیں۔ | लड़के बाहर एक खेल खेल रहे हैं। | เด็กผู้ชายกำลังเล่นเกมอยู่ข้างนอก | 几个男孩在户外玩游戏。
The boys are on the same school team. | Die Jungen sind in derselben Schulmannschaft. | Los chicos juegan en el mismo equipo del colegio. | Les garçons sont dans la même équipe de l'école. | Момчетата са в един и същ училищен отбор. | Мальчики играют в одной школьной команде. | Τα αγόρια είναι στην ίδια σχολική ομάδα. | Çocuklar aynı okul takımında. | Wavulana hao wako katika timu moja ya shule. | Các cậu bé cùng ở một đội bóng của trường. | الأولاد في فريق المدرسة نفسه. | لڑکے اسکول کی ایک ہی ٹیم میں ہیں۔ | लड़के स्कूल की एक ही टीम में हैं। | เด็กผู้ชายเหล่านี้อยู่ทีมโรงเรียนเดียวกัน | 这几个男孩在同一支校队里。
The boys are doing their homework at home. | Die Jungen machen zu Hause ihre Hausaufgaben. | Los chicos están haciendo los deberes en casa. | Les garçons font leurs devoirs à la maison. | Момчетата пишат домашните си вкъщи. | Мальчики делают уроки дома. | Τα αγόρια κάνουν τα μαθήματά τους στο σπίτι. | Çocuklar evde ödevlerini yapıyor. | Wavulana wanafanya kazi ya shule wakiwa nyumbani. | Các cậu bé đang làm bài tập ở nhà. | الأولاد يؤدون واجباتهم المدرسية في المنزل. | لڑکے گھر پر اپنا ہوم ورک کر رہے ہیں۔ | लड़के घर पर अपना होमवर्क कर रहे हैं। | เด็กผู้ชายกำลังทำการบ้านอยู่ที่บ้าน | 男孩们正在家里做作业。
"""


def parse_xnli_text(text: str) -> list[tuple[int, dict[str, tuple[str, str]]]]:
    """Blocks of (premise, entailment, neutral, contradiction) -> [(label, {lang: (p, h)})]."""
    pairs = []
    for block in text.strip().split("\n\n"):
        rows = [dict(zip(XNLI_COLUMNS, (f.strip() for f in line.split(" | ")), strict=True))
                for line in block.strip().splitlines()]
        if len(rows) != 4:
            raise ValueError(f"XNLI block needs 4 lines, got {len(rows)}: {block[:60]!r}")
        premise = rows[0]
        for label, hyp in enumerate(rows[1:]):
            pairs.append((label, {lang: (premise[lang], hyp[lang]) for lang in XNLI_COLUMNS}))
    return pairs


XNLI_PAIRS = parse_xnli_text(XNLI_TEXT)


if __name__ == "__main__":
    main()
