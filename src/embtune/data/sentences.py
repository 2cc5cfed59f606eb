"""Rule-based English sentence splitter with character offsets (for SQuAD, paper 2 App. C).

Why rules and not punkt: paper 2 does not name its splitter; NLTK's punkt needs a model download
(not possible offline, and punkt models are pickles), and no splitter package is a dependency.
This is a small subset of the "Golden Rules" that pySBD (Sadvilkar & Neumann, 2020) implements,
enough for encyclopaedic prose like SQuAD's Wikipedia paragraphs:

* a boundary is a run of ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets),
  then whitespace, then a character that can start a sentence: an upper-case letter, a digit or
  an opening quote/bracket; a line break is always a boundary;
* no boundary after a known abbreviation (``Mr.``, ``Dr.``, ``St.``, ``e.g.``, ``Jan.``, ``No.``
  ...), after a single-letter initial (``J. R. R. Tolkien``) or inside a dotted acronym
  (``U.S.``, ``a.m.``); a decimal point has no whitespace after it, so it never splits.

It errs towards fewer, longer sentences (an acronym that does end a sentence is not split).
Offsets are returned so answer spans (``answer_start``) can be located exactly.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al ed eds inc ltd co corp bros dept univ assn
gen gov sen rep col lt sgt capt cmdr adm maj rev hon pres est approx ca
jan feb mar apr jun jul aug sep sept oct nov dec
""".split())
# Abbreviations that precede a number (``No. 5``, ``pp. 12``); elsewhere ``no.`` ends a sentence.
NUMBER_ABBREVIATIONS = frozenset("no nos vol vols pp p fig figs art".split())

_TERMINATOR = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
_OPENERS = "\"'“‘([¿¡"


def _token_before(text: str, end: int) -> str:
    """The whitespace-delimited token ending at ``end`` (the terminator excluded)."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _is_abbreviation(token: str, next_char: str) -> bool:
    """``token`` is the text before a final ``.``: a known abbreviation, an initial or an acronym."""
    word = token.lstrip("\"'“‘([").lower()
    if word in ABBREVIATIONS or (word in NUMBER_ABBREVIATIONS and next_char.isdigit()):
        return True
    if len(word) == 1 and word.isalpha():                  # J. R. R. Tolkien
        return True
    return bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))  # U.S. / a.m. / Ph.D (final dot cut)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences of ``text``, whitespace trimmed, in
    order; ``text[start:end]`` is a sentence. Empty text gives no spans."""
    cuts = [0]
    for m in _TERMINATOR.finditer(text):
        nxt = len(text) - len(text[m.end():].lstrip())
        if nxt == len(text):
            continue
        full_stop = m.group().rstrip("\"'”’)]") == "."
        if full_stop and _is_abbreviation(_token_before(text, m.start()), text[nxt]):
            continue
        if text[nxt].isupper() or text[nxt].isdigit() or text[nxt] in _OPENERS:
            cuts.append(m.end())
    cuts += [m.end() for m in re.finditer(r"\n+", text)]
    cuts = sorted(set(cuts)) + [len(text)]
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        chunk = text[a:b]
        if chunk.strip():
            left = a + len(chunk) - len(chunk.lstrip())
            spans.append((left, a + len(chunk.rstrip())))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`)."""
    return [text[a:b] for a, b in sentence_spans(text)]
