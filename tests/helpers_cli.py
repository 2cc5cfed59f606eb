"""What every bad-input test asserts about a stage's refusal: the exit code, no traceback, and
exactly one line `embtune <stage>: error: ...`, which it returns for the test to read."""

from __future__ import annotations


def one_error(rc: int, err: str, stage: str, code: int = 2) -> str:
    assert rc == code, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"embtune {stage}: error: "), err
    return lines[0]
