"""The second round of paper readings each have a ledger row (docs/fidelity.md), parsed as the ledger test does."""

from __future__ import annotations

import pytest
from test_fidelity_ledger import ledger_rows

READING_ROWS = (
    "P2-DIST-EMBEDDINGS",        # dist on the vectors before Normalize (Tables 1, 3)
    "P2-MAX-SEQ-LENGTH",         # encoder length, counted never silently cut
    "P1-FINAL-LOSS",             # the fitted loss never averages warm-up
    "P2-SCHEDULERS",             # the epoch clock by default (Table 17)
    "P1-LAW-PINNED",             # a_s = 0, b_s = 1 for full; b_s = 1 for bias-only
    "P2-ARXIV-SINGLE-SENTENCE",  # arxiv-first below 253,140
    "P1-PYTHIA-VARIANT",         # standard vs deduplicated
    "P1-N-POSITION-EMBEDDINGS",  # GPT-2 wpe in N
    "P2-FIG3", "P2-FIG-GRIDS", "P2-FIG7-8", "P1-MTEB-TASK-SELECTION",
)


@pytest.mark.parametrize("rid", READING_ROWS)
def test_issue24_row_exists_with_a_verdict(rid: str) -> None:
    rows = dict(ledger_rows())
    assert rid in rows, f"docs/fidelity.md lacks the row {rid}"
    assert not rows[rid][4].startswith("NOT IMPLEMENTED"), f"{rid} is still marked not implemented"
