"""Generate the shipped offline demo data under data/demo/{corpus,bge,msmarco,xnli}/.

Kept for provenance only: the generated files are committed and the demo never re-runs this.
All text is real English: Python standard-library docstrings (parsed with ``ast``, never
imported, so no module side effects) and the license texts in /usr/share/common-licenses; the
XNLI sentences are written by hand
in English and translated into the 14 other XNLI languages (``XNLI_TEXT`` at the end).

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
# Written by hand: 16 English premises, each with an entailed, a neutral and a contradicting
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
