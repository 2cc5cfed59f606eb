"""Single method-name comparisons outside the registry.

tests/contracts/test_method_registry.py catches a literal that *lists* two or more method names; this file
catches code that singles one out (``method == "lora"``, ``!= "lora"``, ``"freeze" in ...``),
which is how per-method behaviour leaks out of ``embtune.models.methods``. The known ones are
listed with what would remove them; the list may only shrink."""

from __future__ import annotations

import ast
from pathlib import Path

from embtune.models import methods as registry

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "embtune"
REGISTRY_FILE = SRC / "models" / "methods.py"

#: (file, method) -> how many comparisons, each with the registry field that would remove it.
KNOWN: dict[tuple[str, str], int] = {
    ("plots/findings.py", "bias"): 1,        # paper 1's claim about bias-only tuning, by name
}


def single_comparisons(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each comparison (==, !=, in, not in, is) with a method-name constant."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and operand.value in names:
                    found.append((node.lineno, operand.value))
    return found


def test_the_detector_finds_single_comparisons() -> None:
    code = ('if m == "lora": pass\nok = "freeze" in methods\nx = col("method") != "full"\n'
            'y = m == "lorax"\nz = ("full", "bias")\n')
    assert single_comparisons(code, {"full", "freeze", "bias", "lora"}) == [(1, "lora"), (2, "freeze"), (3, "full")]


def test_no_new_single_method_comparison_outside_the_registry() -> None:
    names = set(registry.names())
    counts: dict[tuple[str, str], int] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path == REGISTRY_FILE:
            continue
        for _, name in single_comparisons(path.read_text(encoding="utf-8"), names):
            key = (str(path.relative_to(SRC)), name)
            counts[key] = counts.get(key, 0) + 1
    new = {k: v for k, v in counts.items() if v > KNOWN.get(k, 0)}
    assert new == {}, f"method names compared outside embtune/models/methods.py (use the registry): {new}"
    gone = {k: v for k, v in KNOWN.items() if counts.get(k, 0) < v}
    assert gone == {}, f"lower these in KNOWN (fewer comparisons now): {gone}"
