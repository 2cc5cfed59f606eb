"""The browser check of Snakemake's HTML report, on a two-figure workflow: every
figure the report embeds decodes in real headless Chromium, a corrupt one is caught, and the
landing page's screenshot is kept. The demo's own report: tests/e2e/test_pipeline_demo.py."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import helpers_browser as hb
import pytest

pytestmark = pytest.mark.skipif(hb.chromium() is None, reason=(
    "LOUD SKIP: no chromium on this machine (Debian package `chromium`, installed by "
    ".ci/install_chromium.sh in `make test`) - the report was NOT checked in a browser"))

SNAKEFILE = """
report: "workflow.rst"
rule all:
    input: "fig_a.png", "fig_b.png"
rule draw:
    output: report("{name}.png", caption="caption.rst", category="Paper 1")
    shell: "cp src_{wildcards.name}.png {output}"
"""


def _png(width: int, height: int) -> bytes:
    raw = b"".join(b"\x00" + b"\x20\x60\xc0" * width for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _report(work: Path, figures: dict[str, bytes]) -> Path:
    work.mkdir()
    (work / "Snakefile").write_text(SNAKEFILE)
    (work / "workflow.rst").write_text("Toy study\n=========\n\nTwo figures.\n")
    (work / "caption.rst").write_text("A figure.\n")
    for name, data in figures.items():
        (work / f"src_{name}.png").write_bytes(data)
    smk = [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"]
    subprocess.run(smk, cwd=work, check=True, capture_output=True, timeout=300)
    subprocess.run([*smk, "--report", "report.html"], cwd=work, check=True, capture_output=True, timeout=300)
    return work / "report.html"


def test_every_figure_of_a_snakemake_report_loads_in_chromium(tmp_path) -> None:
    report = _report(tmp_path / "wf", {"fig_a": _png(40, 30), "fig_b": _png(64, 48)})
    checked = hb.check_images(report, tmp_path)
    figures = {i["src"].split("filename=")[1].split(";")[0]: (i["w"], i["h"])
               for i in checked["images"] if "filename=" in i["src"] and "image/png" in i["src"]}
    assert all(i["w"] > 0 for i in checked["images"])                        # the logo too
    assert figures == {"fig_a.png": (40, 30), "fig_b.png": (64, 48)}      # sizes decoded by the browser
    shot = hb.screenshot(report, tmp_path / "toy_report_landing.png", tmp_path)
    assert shot.stat().st_size > 1000
    hb.keep_artifact(shot)


def test_a_corrupt_figure_is_caught(tmp_path) -> None:
    report = _report(tmp_path / "wf", {"fig_a": _png(40, 30), "fig_b": _png(8, 8)[:40]})
    checked = hb.check_images(report, tmp_path)
    widths = {i["src"].split("filename=")[1].split(";")[0]: i["w"] for i in checked["images"]
              if "filename=" in i["src"] and "image/png" in i["src"]}
    assert widths == {"fig_a.png": 40, "fig_b.png": 0}
