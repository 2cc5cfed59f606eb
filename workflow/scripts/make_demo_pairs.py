"""Generate the demo's extra (query, positive) pairs from real offline text: data/demo/bge/*.jsonl.gz.

Kept for provenance: the generated files are committed and the demo never re-runs this. Each
source is real English written by people, read from this machine's Debian image and apt index or
from the pinned Python packages (parsed, never imported):

  debian-descriptions.jsonl.gz the whole Debian archive index (every package of bookworm main,
                               updates and security; ``apt-get update -o Acquire::Languages=en``
                               downloads its ``Translation-en`` files): a package's short
                               description -> its long description
  man-pages.jsonl.gz           /usr/share/man/man[1-8] (English pages only): the NAME line's
                               summary ("list directory contents") -> the first DESCRIPTION
                               paragraphs, roff markup removed
  pydoc-packages.jsonl.gz      docstrings of pinned installed packages (PYDOC_PACKAGES): a
                               docstring's summary line -> the rest of it, as the stdlib pairs of
                               make_demo_data.py (same ``ast`` parser, same prose filter)
  wordnet-glosses.jsonl.gz     WordNet 3.0 (Debian ``wordnet-base``): a synset's lemmas
                               ("dog, domestic dog, Canis familiaris") -> its gloss

Every record is the FlagEmbedding format {query, pos: [..], neg: [..]} that embtune's BGE loader
reads (the negative is another record's positive from the same source, seeded). No query or
positive, case and whitespace folded, is kept twice, within a source or across sources and the
stdlib pairs.jsonl (:func:`select`): the demo's validation slice shares no text with training and
in-batch negatives are true negatives. Output is deterministic for a given machine image, apt
index and package set: inputs are read in sorted order, sampling uses ``random.Random(seed)``,
and the gzip header carries no file name or mtime. ``data/demo/bge/PROVENANCE.md`` (written too)
records the command, the Python version, the indexes, package versions, counts and licences.

Usage (needs ``apt-get install wordnet-base`` and the English apt index):
  python workflow/scripts/make_demo_pairs.py [--out data/demo] [--seed 0]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import importlib.metadata
import io
import json
import platform
import random
import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_demo_data import Doc, clip, documented, prose  # noqa: E402  (the stdlib pairs' docstring parser)

DPKG_STATUS = Path("/var/lib/dpkg/status")
APT_LISTS = Path("/var/lib/apt/lists")
APT_HELPER = "/usr/lib/apt/apt-helper"
WORDNET = Path("/usr/share/wordnet")             # Debian package wordnet-base
WORDNET_POS = ("noun", "verb", "adj", "adv")
DPKG_INFO = Path("/var/lib/dpkg/info")
MAN_ROOT = Path("/usr/share/man")
#: Distributions whose docstrings are read (the demo's pinned ML/data stack; constraints.txt).
PYDOC_PACKAGES = ("numpy", "scipy", "torch", "transformers", "polars", "networkx", "sympy")
#: The sources in the order they claim texts (a text kept by one is not kept again by a later one).
SOURCES = ("man-pages", "pydoc-packages", "debian-descriptions", "wordnet-glosses")
#: A negative is the positive of one of the pairs this many places before (seeded).
NEG_WINDOW = 16
#: Pages kept per command family (the name before the first -, _ or .): the image ships 16,631
#: ``gcloud`` pages of 17,867 in man1, which would otherwise be most of the source.
MAN_FAMILY_CAP = 200
#: Docstring paragraphs that open a reference section, not prose (numpydoc / Google style).
SECTION_HEADS = ("Parameters", "Args", "Arguments", "Returns", "Return", "Yields", "Raises", "Attributes",
                 "Examples", "Example", "See Also", "Notes", "Note", "References", "Keyword", "Other Parameters",
                 "Warns", "Methods", "Inputs", "Outputs", "Shape", "..", ":")
PASSAGE_CHARS = 480
MIN_QUERY_WORDS = 3
MIN_POS_WORDS = 12
MIN_GLOSS_WORDS = 6          # WordNet glosses are short definitions: "an unexpected attack" is not kept


def words(text: str) -> int:
    return len(re.findall(r"[A-Za-z]+", text))


def para_text(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


# ---------------------------------------------------------------- Debian control files
def control_records(text: str, field: str = "Description") -> Iterator[tuple[str, str, str, str]]:
    """(package, version, short description, long description) of every stanza of a Debian control
    file that has ``field``: /var/lib/dpkg/status (``Description``) or an apt ``Translation-en``
    index (``Description-en``, no version)."""
    for block in text.split("\n\n"):
        fields: dict[str, list[str]] = {}
        key = None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key].append(line[1:])
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = [value.strip()]
        if "Package" in fields and field in fields:
            desc = fields[field]
            paras, cur = [], []
            for ln in desc[1:]:        # " ." is an empty line in Debian control syntax
                if ln.strip() == ".":
                    if cur:
                        paras.append(para_text(cur))
                    cur = []
                else:
                    cur.append(ln)
            if cur:
                paras.append(para_text(cur))
            # Bullet lists and ASCII tables are not prose: keep paragraphs of running text.
            prose_paras = [p for p in paras if not p.lstrip().startswith(("-", "*", "+", "o ")) and words(p) >= 6]
            yield fields["Package"][0], fields.get("Version", [""])[0], desc[0], " ".join(prose_paras)


def dpkg_records(status: Path = DPKG_STATUS) -> Iterator[tuple[str, str, str, str]]:
    """:func:`control_records` of the installed packages (their versions name the man pages' owners)."""
    yield from control_records(status.read_text(encoding="utf-8", errors="replace"))


def apt_indexes() -> list[tuple[Path, str]]:
    """(file, text) of every English description index apt downloaded, decompressed by apt itself."""
    files = sorted(APT_LISTS.glob("*_i18n_Translation-en*"))
    if not files:
        raise SystemExit(f"no *_i18n_Translation-en* index under {APT_LISTS}: run "
                         "`apt-get update -o Acquire::Languages=en` first")
    return [(f, subprocess.run([APT_HELPER, "cat-file", str(f)], check=True, capture_output=True)
             .stdout.decode("utf-8", errors="replace")) for f in files]


def debian_pairs(indexes: list[tuple[Path, str]]) -> list[dict]:
    """Each package of the whole archive index: its short description -> its long description."""
    pairs = []
    for path, text in indexes:
        suite = path.name.split("_dists_", 1)[-1].split("_", 1)[0]
        for pkg, _, short, long in control_records(text, "Description-en"):
            if words(short) >= MIN_QUERY_WORDS and words(long) >= MIN_POS_WORDS:
                pairs.append({"query": short, "pos": [clip(long, PASSAGE_CHARS)], "source": f"debian:{suite}:{pkg}"})
    return pairs


def index_dates(indexes: list[tuple[Path, str]]) -> dict[str, str]:
    """Suite -> the ``Date:`` of the signed InRelease file the index belongs to."""
    dates = {}
    for path, _ in indexes:
        release = path.parent / (path.name.split("_main_", 1)[0] + "_InRelease")
        text = release.read_text(encoding="utf-8", errors="replace") if release.exists() else ""
        match = re.search(r"^Date: (.+)$", text, re.M)
        dates[path.name.split("_main_", 1)[0]] = match.group(1) if match else "?"
    return dates


# ---------------------------------------------------------------- WordNet
def wordnet_synsets(path: Path) -> Iterator[tuple[str, str, list[str], str]]:
    """(synset offset, lexicographer file number, lemmas, gloss) of a WordNet 3.0 ``data.<pos>``
    file (wndb(5) format: the word count is hex, lemmas use ``_`` for spaces and adjectives may
    carry a ``(a)``-style marker)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):      # the licence header
                continue
            head, sep, gloss = line.partition(" | ")
            f = head.split()
            if not sep or len(f) < 4:
                continue
            lemmas = [re.sub(r"\([a-z]+\)$", "", f[4 + 2 * i]).replace("_", " ") for i in range(int(f[3], 16))]
            yield f[0], f[1], lemmas, " ".join(gloss.split())


def wordnet_records(path: Path) -> Iterator[tuple[str, list[str], str]]:
    """(synset offset, lemmas, gloss) of each synset of ``path`` (:func:`wordnet_synsets`)."""
    return ((offset, lemmas, gloss) for offset, _, lemmas, gloss in wordnet_synsets(path))


def wordnet_pairs() -> list[dict]:
    """Each synset: its lemmas ("dog, domestic dog, Canis familiaris") -> its gloss (definition and
    quoted examples)."""
    pairs = []
    for pos in WORDNET_POS:
        for offset, lemmas, gloss in wordnet_records(WORDNET / f"data.{pos}"):
            if lemmas and words(lemmas[0]) and words(gloss) >= MIN_GLOSS_WORDS:   # not "24/7"
                pairs.append({"query": ", ".join(lemmas), "pos": [clip(gloss, PASSAGE_CHARS)],
                              "source": f"wordnet:{pos}:{offset}"})
    return pairs


# ---------------------------------------------------------------- man pages
ROFF_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),          # font changes \fB \fI \fR \fP \f(CW \f[B]
    (re.compile(r"\\s[+-]?\d"), ""),                      # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),          # string interpolation
    (re.compile(r"\\\((em|en)"), " - "),
    (re.compile(r"\\\((aq|cq)"), "'"),
    (re.compile(r"\\\((lq|rq|dq)"), '"'),
    (re.compile(r"\\\((bu|co|rg|tm|de|mu|di|pl|mi|eq|ga|ha|ti|lh|rh)"), " "),
    (re.compile(r"\\\[[^\]]*\]"), " "),
    (re.compile(r"\\\(.."), " "),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\[&|^,/:%)]"), ""),
    (re.compile(r"\\ "), " "),
    (re.compile(r"\\c$"), ""),
    (re.compile(r"\\[a-zA-Z](\[[^\]]*\]|'[^']*')?"), ""),  # any other escape (\h'..', \v'..', \n[..])
]
FONT_MACROS = {"B", "I", "BI", "BR", "IB", "IR", "RB", "RI", "SM", "SB"}
BREAK_MACROS = {"PP", "P", "LP", "TP", "IP", "HP", "SH", "SS", "sp", "br", "RS", "RE", "TQ", "EX", "EE", "nf", "fi",
                "in", "ti", "TS", "TE", "Sh", "Ss", "Pp", "Bl", "El", "It", "Bd", "Ed"}


def unroff(line: str) -> str:
    for pat, rep in ROFF_ESCAPES:
        line = pat.sub(rep, line)
    return line.replace("\\\\", "\\")


def macro_args(rest: str) -> str:
    """Arguments of .B/.BR-style macros: quoted groups kept whole, joined by spaces."""
    return " ".join(a.strip('"') for a in re.findall(r'"[^"]*"|\S+', rest))


class _ManParser:
    """Line-by-line state of :func:`man_sections` (current section, paragraph, table/no-fill)."""

    def __init__(self) -> None:
        self.sections: dict[str, list[str]] = {}
        self.name: str | None = None
        self.cur: list[str] = []
        self.in_table = self.nofill = False

    def flush(self) -> None:
        if self.name is not None and self.cur:
            self.sections.setdefault(self.name, []).append(para_text(self.cur))
        self.cur.clear()

    def macro(self, raw: str) -> None:
        macro, _, rest = raw[1:].strip().partition(" ")
        if macro in ("TS", "EX", "nf"):
            self.in_table = macro == "TS"
            self.nofill = macro in ("EX", "nf")
        if macro in ("TE", "EE", "fi"):
            self.in_table = self.nofill = False
        if macro in ("SH", "Sh"):
            self.flush()
            self.name = unroff(rest).strip().strip('"').upper()
        elif macro in BREAK_MACROS:
            self.flush()
            if macro == "TP":       # a tagged paragraph: its tag line is not prose
                self.cur.append("\x00TAG")
        elif macro in FONT_MACROS and not self.in_table and not self.nofill:
            self.cur.append(unroff(macro_args(rest)))

    def text(self, raw: str) -> None:
        if self.in_table or self.nofill:
            return
        if self.cur and self.cur[-1] == "\x00TAG":
            self.cur.clear()             # drop the tag (an option name), keep its description
            return
        self.cur.append(unroff(raw))


def man_sections(text: str) -> dict[str, list[str]]:
    """Section name -> paragraphs of plain text (man(7) pages; mdoc pages return nothing useful)."""
    parser = _ManParser()
    for raw in text.splitlines():
        if raw.startswith((".\\\"", "'\\\"", '.\\"')):
            continue
        if raw.startswith((".", "'")):
            parser.macro(raw)
        else:
            parser.text(raw)
    parser.flush()
    return {k: [p.replace("\x00TAG", "").strip() for p in v if p.replace("\x00TAG", "").strip()]
            for k, v in parser.sections.items()}


def man_pages() -> Iterator[Path]:
    for section in range(1, 9):
        folder = MAN_ROOT / f"man{section}"
        if folder.is_dir():
            yield from sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())


def man_pair(path: Path) -> dict | None:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    text = raw.decode("utf-8", errors="replace")
    if text.lstrip().startswith(".so "):
        return None                 # an alias page (".so man1/other.1")
    sections = man_sections(text)
    name_line = " ".join(sections.get("NAME", []))
    _, sep, summary = name_line.partition(" - ")
    summary = summary.strip().rstrip(".")
    description = [p for p in sections.get("DESCRIPTION", []) if words(p) >= 6 and not p.startswith("-")]
    if not sep or words(summary) < MIN_QUERY_WORDS or not description:
        return None
    pos = clip(" ".join(description[:3]), PASSAGE_CHARS)
    if words(pos) < MIN_POS_WORDS:
        return None
    return {"query": summary, "pos": [pos], "source": f"man:{path.parent.name}/{path.name}",
            "family": man_family(path)}


def man_family(path: Path) -> str:
    return re.split(r"[-_.]", path.name, maxsplit=1)[0]


def cap_families(pairs: list[dict], cap: int) -> list[dict]:
    """At most ``cap`` pages per command family, picked in a stable hash order of the page name."""
    by_family: dict[str, list[dict]] = {}
    for p in pairs:
        by_family.setdefault(p["family"], []).append(p)
    kept = []
    for family in sorted(by_family):
        group = sorted(by_family[family], key=lambda p: (zlib.crc32(p["source"].encode()), p["source"]))
        kept += group[:cap]
    return kept


def man_owners() -> dict[str, str]:
    """Debian packages (name -> version) that ship files under /usr/share/man/man[1-8]."""
    versions = {pkg: ver for pkg, ver, _, _ in dpkg_records()}
    owners = {}
    for lst in sorted(DPKG_INFO.glob("*.list")):
        pkg = lst.stem.split(":")[0]
        with open(lst, encoding="utf-8", errors="replace") as fh:
            if any(re.match(r"/usr/share/man/man[1-8]/", ln) for ln in fh):
                owners[pkg] = versions.get(pkg, "?")
    return owners


# ---------------------------------------------------------------- Python docstrings
def package_files(dist: str) -> list[tuple[str, Path]]:
    """(dotted module name, file) of a distribution's Python files, tests excluded, sorted."""
    d = importlib.metadata.distribution(dist)
    out = []
    for f in d.files or []:
        if str(f).endswith(".py") and not ({"tests", "test", "testing", "_vendor", "vendored"} & set(f.parts)):
            path = Path(d.locate_file(f))
            if path.is_file():
                parts = list(f.with_suffix("").parts)
                out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return sorted(out)


def iter_docs(module: str, path: Path) -> Iterator[Doc]:
    """Module, class and function docstrings of one file (parsed with ``ast``, never imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    for name, node in documented(tree, module):
        doc = ast.get_docstring(node)
        text = prose(doc) if doc else ""
        if text:
            summary, _, body = text.partition("\n\n")
            yield Doc(name, summary.strip(), body.strip())


def pydoc_pairs() -> tuple[list[dict], dict[str, str]]:
    pairs, versions = [], {}
    for dist in PYDOC_PACKAGES:
        versions[dist] = importlib.metadata.version(dist)
        for module, path in package_files(dist):
            for doc in iter_docs(module, path):
                body = [p for p in doc.body.split("\n\n") if not p.startswith(SECTION_HEADS)]
                text = " ".join(body[:2])
                if (words(doc.summary) >= MIN_QUERY_WORDS + 1 and words(text) >= MIN_POS_WORDS
                        and doc.summary[:1].isalpha() and "::" not in doc.summary):
                    pairs.append({"query": doc.summary, "pos": [clip(text, PASSAGE_CHARS)],
                                  "source": f"pydoc:{dist}=={versions[dist]}:{doc.name}"})
    return pairs, versions


# ---------------------------------------------------------------- output
def norm(text: str) -> str:
    """The text two pairs are compared by: case and whitespace folded."""
    return " ".join(text.lower().split())


def select(pairs: list[dict], limit: int | None, rng: random.Random, seen: set[str] | None = None) -> list[dict]:
    """Keep ``limit`` pairs (all when None) in a stable hash order (independent of input order) whose
    normalised query and positive were not kept before, in this source or an earlier one (``seen``,
    updated): no text is a query or positive twice, so in-batch negatives are true negatives and
    the validation slice prepare-bge cuts shares no text with training. Pairs whose query opens
    its own positive are dropped. Each kept pair gets one seeded negative: the positive of one of
    the ``NEG_WINDOW`` pairs before it (so gzip stores it as a back-reference)."""
    seen = set() if seen is None else seen
    order = sorted(pairs, key=lambda p: (zlib.crc32((p["query"] + "\x00" + p["pos"][0]).encode()),
                                         p["query"], p["pos"][0]))
    kept = []
    for p in order:
        q, pos = norm(p["query"]), norm(p["pos"][0])
        if q in seen or pos in seen or q in pos[:len(q) + 5]:
            continue
        seen.update((q, pos))
        kept.append(p)
        if limit is not None and len(kept) == limit:
            break
    if len(kept) < 2:
        raise SystemExit(f"{len(kept)} pairs kept: a negative needs another pair of the same source")
    window = min(NEG_WINDOW, len(kept) - 1)
    return [{"query": p["query"], "pos": p["pos"], "neg": [kept[(i - rng.randint(1, window)) % len(kept)]["pos"][0]]}
            for i, p in enumerate(kept)]


def shipped_keys(path: Path) -> set[str]:
    """Normalised queries and positives of ``make_demo_data.py``'s pairs (shipped beside these)."""
    keys = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            keys.update((norm(obj["query"]), norm(obj["pos"][0])))
    return keys


def gzip_jsonl(rows: list[dict]) -> bytes:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(data)
    return buf.getvalue()


def provenance_md(counts: dict[str, tuple[int, int]], indexes: dict[str, str], man_pkgs: dict[str, str],
                  py_versions: dict[str, str], seed: int, licence: list[str]) -> str:
    cmd = f"`python workflow/scripts/make_demo_pairs.py --out data/demo --seed {seed}`"
    lines = [
        "# Provenance of data/demo/bge",
        "",
        "All pairs are real English text written by people; nothing is generated by a model. No "
        "query or positive (case and whitespace folded) occurs twice across all files, so the "
        "validation slice that prepare-bge cuts shares no text with training.",
        "",
        "| file | source | licence | pairs (kept / candidates) | generator |",
        "|---|---|---|---|---|",
        "| `pairs.jsonl` | CPython 3.11 standard-library docstrings; /usr/share/common-licenses | PSF-2.0 | "
        "see script | `python workflow/scripts/make_demo_data.py --out data/demo --seed 0` |",
    ]
    what = {
        "debian-descriptions": ("Debian 12 (bookworm) archive index, main + updates + security "
                                "(`apt-get update -o Acquire::Languages=en`; the `*_i18n_Translation-en` "
                                "files): each package's short description -> its long description",
                                "each package's licence (DFSG-free; /usr/share/doc/<package>/copyright)"),
        "man-pages": ("/usr/share/man/man[1-8] of this image: NAME summary -> DESCRIPTION",
                      "each package's licence (/usr/share/doc/<package>/copyright)"),
        "pydoc-packages": ("docstrings of " + ", ".join(f"{k}=={v}" for k, v in py_versions.items())
                           + ": summary line -> body", "BSD-3-Clause / MIT / Apache-2.0 (the packages')"),
        "wordnet-glosses": ("WordNet 3.0 (Debian `wordnet-base` 1:3.0-37, /usr/share/wordnet/data.*): "
                            "a synset's lemmas -> its gloss", "WordNet 3.0 licence (BSD-style; text below)"),
    }
    for name, (kept, cands) in counts.items():
        lines.append(f"| `{name}.jsonl.gz` | {what[name][0]} | {what[name][1]} | {kept} / {cands} | {cmd} |")
    lines += [
        "",
        f"Generated with Python {platform.python_version()} on {platform.system()} (Debian image below); the "
        "shipped files are byte-identical on a re-run with the same image, apt index and packages "
        "(tests/unit/data/test_demo_pairs.py checks their format and content rules).",
        "",
        "## Debian archive indexes read for `debian-descriptions`",
        "",
        *[f"- `{k}` (InRelease Date: {v})" for k, v in sorted(indexes.items())],
        "",
        f"## Debian packages shipping the man pages read for `man-pages` ({len(man_pkgs)})",
        "",
        ", ".join(f"{k}={v}" for k, v in sorted(man_pkgs.items())),
        "",
        "## WordNet 3.0 licence (`wordnet-glosses`)",
        "",
        *licence,
        "",
    ]
    return "\n".join(lines)


def wordnet_licence() -> list[str]:
    """The WordNet 3.0 licence text, which must accompany every copy (from the Debian copyright file)."""
    text = Path("/usr/share/doc/wordnet-base/copyright").read_text(encoding="utf-8")
    body = text.split("License: WordNet3.0", 1)[1].split("\nFiles:", 1)[0]
    return [ln[1:] if ln.strip() != "." else "" for ln in body.splitlines()[1:]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/demo")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out) / "bge"
    out.mkdir(parents=True, exist_ok=True)
    indexes = apt_indexes()
    pydoc, py_versions = pydoc_pairs()
    candidates = {
        "man-pages": cap_families([p for path in man_pages() if (p := man_pair(path))], MAN_FAMILY_CAP),
        "pydoc-packages": pydoc,
        "debian-descriptions": debian_pairs(indexes),
        "wordnet-glosses": wordnet_pairs(),
    }
    seen = shipped_keys(out / "pairs.jsonl")
    counts = {}
    for i, name in enumerate(SOURCES):
        rows = select(candidates[name], None, random.Random(args.seed + i), seen)
        (out / f"{name}.jsonl.gz").write_bytes(gzip_jsonl(rows))
        counts[name] = (len(rows), len(candidates[name]))
        print(f"{name}: {len(rows)} pairs of {len(candidates[name])} candidates")
    (out / "PROVENANCE.md").write_text(provenance_md(counts, index_dates(indexes), man_owners(), py_versions,
                                                     args.seed, wordnet_licence()), encoding="utf-8")


if __name__ == "__main__":
    main()
