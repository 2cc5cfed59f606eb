"""Generate the demo's extra (query, positive) pairs from real offline text: data/demo/bge/*.jsonl.gz.

Kept for provenance: the generated files are committed and the demo never re-runs this. Each
source is real English written by people, read from the files of this machine's Debian image or
of the pinned Python packages (parsed, never imported):

  dpkg-descriptions.jsonl.gz   /var/lib/dpkg/status: a package's short description (the
                               ``Description:`` line) -> its long description
  man-pages.jsonl.gz           /usr/share/man/man[1-8] (English pages only): the NAME line's
                               summary ("list directory contents") -> the first DESCRIPTION
                               paragraphs, roff markup removed
  pydoc-packages.jsonl.gz      docstrings of pinned installed packages (PYDOC_PACKAGES): a
                               docstring's summary line -> the rest of it, as the stdlib pairs of
                               make_demo_data.py (same ``ast`` parser, same prose filter)

Every record is the FlagEmbedding format {query, pos: [..], neg: [..]} that embtune's BGE loader
reads (the negative is another record's positive from the same source, seeded). Exact duplicate
pairs (man pages shipped under two names, docstrings repeated across classes) are dropped here;
embtune prepare-bge would drop them too. Output is deterministic for a given machine image and
package set: inputs are read in sorted order, sampling uses ``random.Random(seed)``, and the gzip
header carries no file name or mtime. ``data/demo/bge/PROVENANCE.md`` (written too) records the
command, the Python version, the package versions and the counts.

Usage: python workflow/scripts/make_demo_pairs.py [--out data/demo] [--seed 0]
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
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_demo_data import Doc, clip, documented, prose  # noqa: E402  (the stdlib pairs' docstring parser)

DPKG_STATUS = Path("/var/lib/dpkg/status")
DPKG_INFO = Path("/var/lib/dpkg/info")
MAN_ROOT = Path("/usr/share/man")
#: Distributions whose docstrings are read (the demo's pinned ML/data stack; constraints.txt).
PYDOC_PACKAGES = ("numpy", "scipy", "torch", "transformers", "polars", "networkx", "sympy")
#: Pairs kept per source (a stable hash order picks them): a few MB of gzip in all.
MAX_PAIRS = {"dpkg-descriptions": 2000, "man-pages": 6000, "pydoc-packages": 8000}
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


def words(text: str) -> int:
    return len(re.findall(r"[A-Za-z]+", text))


def para_text(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


# ---------------------------------------------------------------- dpkg
def dpkg_records(status: Path = DPKG_STATUS) -> Iterator[tuple[str, str, str, str]]:
    """(package, version, short description, long description) of every installed package."""
    text = status.read_text(encoding="utf-8", errors="replace")
    for block in text.split("\n\n"):
        fields: dict[str, list[str]] = {}
        key = None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key].append(line[1:])
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = [value.strip()]
        if "Package" in fields and "Description" in fields:
            desc = fields["Description"]
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


def dpkg_pairs() -> tuple[list[dict], dict[str, str]]:
    pairs, versions = [], {}
    for pkg, version, short, long in dpkg_records():
        versions[pkg] = version
        if words(short) >= MIN_QUERY_WORDS and words(long) >= MIN_POS_WORDS:
            pairs.append({"query": short, "pos": [clip(long, PASSAGE_CHARS)], "source": f"dpkg:{pkg}={version}"})
    return pairs, versions


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
def select(pairs: list[dict], limit: int, rng: random.Random) -> list[dict]:
    """Drop exact duplicates and pairs whose query is its own positive, keep ``limit`` of them in
    a stable hash order (independent of input order), add one seeded negative from the same source."""
    seen, unique = set(), []
    for p in pairs:
        key = (p["query"].lower(), p["pos"][0].lower())
        if key in seen or p["query"].lower() in p["pos"][0].lower()[:len(p["query"]) + 5]:
            continue
        seen.add(key)
        unique.append(p)
    unique.sort(key=lambda p: (zlib.crc32((p["query"] + "\x00" + p["pos"][0]).encode()), p["query"], p["pos"][0]))
    kept = unique[:limit]
    positives = [p["pos"][0] for p in unique]
    out = []
    for p in kept:
        neg = rng.choice(positives)
        while neg == p["pos"][0]:
            neg = rng.choice(positives)
        out.append({"query": p["query"], "pos": p["pos"], "neg": [neg]})
    return out


def gzip_jsonl(rows: list[dict]) -> bytes:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(data)
    return buf.getvalue()


def provenance_md(counts: dict[str, tuple[int, int]], dpkg_versions: dict[str, str], man_pkgs: dict[str, str],
                  py_versions: dict[str, str], seed: int) -> str:
    lines = [
        "# Provenance of data/demo/bge",
        "",
        "All pairs are real English text written by people; nothing is generated by a model.",
        "",
        "| file | source | pairs (kept / candidates) | generator |",
        "|---|---|---|---|",
        "| `pairs.jsonl` | CPython 3.11 standard-library docstrings; /usr/share/common-licenses | see script | "
        "`python workflow/scripts/make_demo_data.py --out data/demo --seed 0` |",
    ]
    what = {"dpkg-descriptions": "/var/lib/dpkg/status: short description -> long description",
            "man-pages": "/usr/share/man/man[1-8]: NAME summary -> DESCRIPTION",
            "pydoc-packages": "docstrings of " + ", ".join(f"{k}=={v}" for k, v in py_versions.items())
                              + ": summary line -> body"}
    for name, (kept, cands) in counts.items():
        lines.append(f"| `{name}.jsonl.gz` | {what[name]} | {kept} / {cands} | "
                     f"`python workflow/scripts/make_demo_pairs.py --out data/demo --seed {seed}` |")
    lines += [
        "",
        f"Generated with Python {platform.python_version()} on {platform.system()} (Debian image below); the "
        "shipped files are byte-identical on a re-run with the same image and packages "
        "(tests/unit/data/test_demo_pairs.py checks their format and content rules).",
        "",
        "Licences: Debian package descriptions and man pages are distributed with their packages under "
        "the packages' licences (see /usr/share/doc/<package>/copyright); the docstrings are those of "
        "the listed open-source Python packages (BSD/MIT/Apache-2.0).",
        "",
        f"## Debian packages read for `dpkg-descriptions` ({len(dpkg_versions)})",
        "",
        ", ".join(f"{k}={v}" for k, v in sorted(dpkg_versions.items())),
        "",
        f"## Debian packages shipping the man pages read for `man-pages` ({len(man_pkgs)})",
        "",
        ", ".join(f"{k}={v}" for k, v in sorted(man_pkgs.items())),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/demo")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out) / "bge"
    out.mkdir(parents=True, exist_ok=True)
    dpkg, dpkg_versions = dpkg_pairs()
    man = cap_families([p for path in man_pages() if (p := man_pair(path))], MAN_FAMILY_CAP)
    pydoc, py_versions = pydoc_pairs()
    counts = {}
    for i, (name, pairs) in enumerate((("dpkg-descriptions", dpkg), ("man-pages", man), ("pydoc-packages", pydoc))):
        rows = select(pairs, MAX_PAIRS[name], random.Random(args.seed + i))
        (out / f"{name}.jsonl.gz").write_bytes(gzip_jsonl(rows))
        counts[name] = (len(rows), len(pairs))
        print(f"{name}: {len(rows)} pairs of {len(pairs)} candidates")
    (out / "PROVENANCE.md").write_text(provenance_md(counts, dpkg_versions, man_owners(), py_versions, args.seed),
                                       encoding="utf-8")


if __name__ == "__main__":
    main()
