"""docs/fidelity.md stays a ledger of the code.

Why: the ledger is what tells a researcher which sentence of which paper each mechanism follows.
It rots silently: a row can name a function or a params key that no longer exists, keep a
"fix in progress" mark after the fix merged, or a comment can cite a row id that was never
written. These tests read the ledger and the code as text, so they need no model and run in
well under a second.

Checked: (a) the ledger's rows parse, with unique, well-formed anchors; (b) every
``fidelity.md#<id>`` link (and a bare ``#P1-...`` / ``#P2-...`` reference) in the code, params,
README and docs resolves to an anchor; (c) a comment claiming "the paper's convention" or
"as in the paper" in src/ or workflow/ cites a row on the same or an adjacent line; (d) no row
still says "fix in progress"; (e) every row has a verdict from the allowed set; (f) the rows
names exist; and the code locations and params keys the rows name exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LEDGER = REPO / "docs" / "fidelity.md"
SELF = Path(__file__).resolve()

ROW = re.compile(r'^\| <a id="([^"]*)"></a>')
ID_FORMAT = re.compile(r"^P[12]-[A-Z0-9]+(?:-[A-Z0-9]+)*$")
VERDICTS = ("MATCH", "READING", "DEVIATION", "NOT IMPLEMENTED")
CELL_SPLIT = re.compile(r"(?<!\\)\|")
# A link into the ledger, or a bare row reference such as the second id in
# "(docs/fidelity.md#P1-FLOPS, #P1-LORA-FLOPS)".
LEDGER_LINK = re.compile(r"fidelity\.md#([A-Za-z0-9_-]+)")
BARE_ROW_REF = re.compile(r"(?<![\w/.])#(P[12]-[A-Z0-9-]*[A-Z0-9])")
IN_LEDGER_LINK = re.compile(r"\]\(#([A-Za-z0-9_-]+)\)")
CLAIM = re.compile(r"papers?['’]s? convention|as in the paper\b", re.IGNORECASE)

# The rows the ledger must have.
REQUIRED_ROWS = (
    "P1-LOGIT-SCALE",         # cos·exp(τ) (§3.3) vs cos/τ (App. D)
    "P1-LR-PEAK",             # §4.1's LR range vs App. D.1's ÷10 rule
    "P1-LR-SCHEDULE",         # cosine floor: peak/10 (§4.1) vs zero (App. D.1)
    "P1-MTEB-TRUNCATION",     # MTEB input truncation
    "P2-XNLI-PREFIX",         # E5 prefixes on XNLI
    "P2-PND-TIES",            # PND tie rule
    "P2-ZTEST",               # z-test formula
    "P1-D-TOKENS",            # what D counts
    "P2-ARXIV-NEGATIVES",     # the fixes of "Deliver" 2 ...
    "P1-LORA-FLOPS",
    "P1-TRAINABLE-FRACTION",
    "P1-LORA-ALPHA",
    "P1-LORA-TARGETS",
    "P1-FIT",
    "P2-SCHEDULERS",
    "P2-OPTIMIZERS",
    "P2-WEIGHT-DECAY",
    "P2-EMBED-DTYPE",
)
TOP_KEYS = ("seed", "paths", "tokenizer", "models", "data", "train", "evaluate", "query_tuning",
            "analyze")
CODE_SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".md", ".rst", ".toml", ".cfg"}


def ledger_text() -> str:
    return LEDGER.read_text(encoding="utf-8")


def ledger_rows() -> list[tuple[str, list[str]]]:
    """(anchor id, cells) of every table row that carries an anchor."""
    rows = []
    for line in ledger_text().splitlines():
        m = ROW.match(line)
        if m:
            cells = [c.strip() for c in CELL_SPLIT.split(line.strip())[1:-1]]
            rows.append((m.group(1), cells))
    return rows


def heading_slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    slug = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return slug.replace(" ", "-")


def anchors() -> set[str]:
    row_ids = {rid for rid, _ in ledger_rows()}
    headings = {heading_slug(m.group(1))
                for m in re.finditer(r"^#{1,6} (.+)$", ledger_text(), re.MULTILINE)}
    return row_ids | headings


def scanned_files(*tops: str) -> list[Path]:
    out = []
    for top in tops:
        path = REPO / top
        if path.is_file():
            out.append(path)
            continue
        for p in sorted(path.rglob("*")):
            if (p.is_file() and (p.suffix in CODE_SUFFIXES or p.name == "Snakefile")
                    and "__pycache__" not in p.parts and p.resolve() != SELF):
                out.append(p)
    return out


# ---------------------------------------------------------------- (a) parsing


def test_rows_parse_with_unique_well_formed_anchors() -> None:
    rows = ledger_rows()
    assert len(rows) >= 60, f"only {len(rows)} ledger rows parsed; is the table format intact?"
    seen: set[str] = set()
    for rid, cells in rows:
        assert ID_FORMAT.match(rid), f"ledger id {rid!r} is not of the form P1-XXX / P2-XXX"
        assert rid not in seen, f"ledger id {rid} appears twice"
        seen.add(rid)
        assert len(cells) == 5, (f"{rid}: expected 5 cells (id, spec, paper, embtune, verdict), "
                                 f"got {len(cells)}")
        shown = cells[0].split("</a>", 1)[1].strip("~ ")
        assert shown == rid, f"{rid}: the row shows {shown!r} next to its anchor"
        assert all(cells[1:4]), f"{rid}: an empty spec, paper or embtune cell"


def test_heading_slugs_follow_github() -> None:
    # The contents line links these; the slug rule must give what GitHub renders.
    assert heading_slug("P1: model and data") == "p1-model-and-data"
    assert heading_slug("Not implemented") == "not-implemented"


# ---------------------------------------------------------------- (b) links resolve


def test_every_ledger_link_resolves() -> None:
    known = anchors()
    bad = []
    for path in scanned_files("src", "workflow", "tests", "params.yaml", "README.md", "docs"):
        text = path.read_text(encoding="utf-8", errors="replace")
        refs = set(LEDGER_LINK.findall(text)) | set(BARE_ROW_REF.findall(text))
        if path == LEDGER:
            refs |= set(IN_LEDGER_LINK.findall(text))
        bad += [f"{path.relative_to(REPO)}: #{ref}" for ref in sorted(refs) if ref not in known]
    assert not bad, "links to missing docs/fidelity.md anchors:\n" + "\n".join(bad)


def test_link_scanner_sees_both_link_forms() -> None:
    line = "(docs/fidelity.md#P1-FLOPS, #P1-LORA-FLOPS) and url#not-a-row,"
    assert LEDGER_LINK.findall(line) == ["P1-FLOPS"]
    assert BARE_ROW_REF.findall(line) == ["P1-LORA-FLOPS"]


# ---------------------------------------------------------------- (c) claims cite a row


def uncited_claims(lines: list[str]) -> list[int]:
    """1-based numbers of lines that claim the paper's convention with no ledger link nearby."""
    out = []
    for i, line in enumerate(lines):
        if CLAIM.search(line):
            near = lines[max(0, i - 1):i + 2]
            if not any("fidelity.md#" in x for x in near):
                out.append(i + 1)
    return out


def test_claims_of_the_papers_convention_cite_a_row() -> None:
    bad = []
    for path in scanned_files("src", "workflow"):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        bad += [f"{path.relative_to(REPO)}:{n}" for n in uncited_claims(lines)]
    assert not bad, ("comments claiming the paper's convention without a docs/fidelity.md#<id> "
                     "link on the same or an adjacent line:\n" + "\n".join(bad))


def test_claim_check_catches_an_uncited_claim() -> None:
    lines = ["x = 1", "# scale as in the paper", "y = 2",
             "# the Paper's convention", "# (docs/fidelity.md#P1-FLOPS)"]
    assert uncited_claims(lines) == [2]


# ---------------------------------------------------------------- (d), (e), (f)


def test_no_row_is_marked_fix_in_progress() -> None:
    stale = [rid for rid, cells in ledger_rows() if "fix in progress" in " ".join(cells).lower()]
    assert not stale, f"rows still marked 'fix in progress': {stale}"
    assert "fix in progress" not in ledger_text().lower()


def test_every_row_has_an_allowed_verdict() -> None:
    bad = [rid for rid, cells in ledger_rows()
           if not cells[4].lstrip("~* ").startswith(VERDICTS)]
    assert not bad, f"rows whose verdict is not one of {VERDICTS}: {bad}"


@pytest.mark.parametrize("rid", REQUIRED_ROWS)
def test_required_row_exists(rid: str) -> None:
    assert rid in {r for r, _ in ledger_rows()}, f"docs/fidelity.md lacks the row {rid}"


# ---------------------------------------------------------------- what the rows name exists


def backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_named_modules_and_test_files_exist() -> None:
    bad = []
    for rid, cells in ledger_rows():
        for token in backticked(" ".join(cells[1:])):
            for path in re.findall(r"[\w/]+\.py\b", token):
                if "/" not in path:
                    continue
                if not ((REPO / "src" / "embtune" / path).is_file() or (REPO / path).is_file()):
                    bad.append(f"{rid}: {path}")
    assert not bad, "ledger rows name files that do not exist:\n" + "\n".join(bad)


def resolves(params: object, dotted: str) -> bool:
    node = params
    for part in dotted.split("."):
        part = part.removesuffix("[]")
        if part in ("", "*"):
            return True
        if isinstance(node, list):
            node = next((x[part] for x in node if isinstance(x, dict) and part in x), None)
            if node is None:
                return False
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def test_named_params_keys_exist() -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    bad = []
    for rid, cells in ledger_rows():
        for token in backticked(cells[3]):
            key = re.match(r"[A-Za-z0-9_.\[\]*]+", token)
            if not key or "." not in key.group(0) or key.group(0).endswith(".py"):
                continue
            dotted = key.group(0)
            if dotted.split(".")[0].removesuffix("[]") in TOP_KEYS and not resolves(params, dotted):
                bad.append(f"{rid}: {dotted}")
    assert not bad, "ledger rows name params.yaml keys that do not exist:\n" + "\n".join(bad)


def test_key_resolver_walks_lists_and_rejects_typos() -> None:
    params = {"models": [{"name": "a", "hidden_size": 1}], "train": {"lora": {"alpha": 8}}}
    assert resolves(params, "models[].hidden_size")
    assert resolves(params, "train.lora.*")
    assert not resolves(params, "train.lora.alpah")
    assert not resolves(params, "models[].hiden_size")
