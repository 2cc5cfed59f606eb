"""`dvc plots show` as a researcher opens it, offline: the demo's overlay charts (one per curve
kind, a line per run, from dvc.yaml as shipped, in a workspace where only the demo ran) render
in real headless Chromium with no network, the page loads no script from http(s), and DVC prints
nothing on stderr."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import helpers_browser as hb
import polars as pl
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = Path(sys.executable).parents[1] / "share" / "embtune" / "dvc-plots.html"

pytestmark = [
    pytest.mark.skipif(hb.chromium() is None, reason=(
        "LOUD SKIP: no chromium on this machine (Debian package `chromium`, installed by "
        ".ci/install_chromium.sh in `make test`) - the DVC plots were NOT checked in a browser")),
    pytest.mark.skipif(not TEMPLATE.is_file(), reason=(
        f"LOUD SKIP: {TEMPLATE} missing (make install writes it: workflow/scripts/vega_bundle.py)")),
]

DRAWN = """
<script>
window.addEventListener('load', () => setTimeout(() => {
  const divs = [...document.querySelectorAll('body > div[id]')];
  const drawn = divs.filter(d => d.querySelector('canvas, svg.marks'));
  const pre = document.createElement('pre');
  pre.id = 'embtune-drawn';
  pre.textContent = JSON.stringify({divs: divs.length, drawn: drawn.length});
  document.body.appendChild(pre);
}, 3000));
</script>
"""


def _curve_plots() -> list[dict]:
    """dvc.yaml's plots drawn by the project's own templates (.dvc/plots/): every one of them."""
    return [p for p in yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
            if isinstance(p, dict) and (REPO / ".dvc" / "plots" / f"{next(iter(p.values())).get('template')}.json").is_file()]


def _curves(root: Path) -> None:
    """The demo's file in each kind's folder (presets/demo.yaml's paths.plots), as `embtune
    curves` writes it: a line per run."""
    def write(kind: str, frame: pl.DataFrame) -> None:
        out = root / "results/plots" / kind / "demo.csv"
        out.parent.mkdir(parents=True)
        frame.write_csv(out)

    runs = [f"tiny-d{w}-l2__full__c{c}" for w in (32, 64) for c in ("5e10", "2e11")]
    steps = list(range(1, 41))
    train = pl.DataFrame({"run": [r for r in runs for _ in steps], "model": "m", "status": "ok", "method": "full",
                          "step": steps * len(runs),
                          "loss": [3.5 / (1 + 0.05 * s * (i + 1)) for i in range(len(runs)) for s in steps],
                          "lr": [1e-3 * min(1, s / 5) for _ in runs for s in steps]})
    write("train_loss", train.drop("lr"))
    write("lr", train.drop("loss"))
    epochs = list(range(0, 6))
    q = pl.DataFrame({"run": [f"e5/lr{r}" for r in ("1e-5", "1e-4") for _ in epochs], "model": "e5", "status": "ok",
                      "epoch": epochs * 2, "val_loss": [0.05 - 0.002 * e * k for k in (1, 3) for e in epochs],
                      "val_errors": [40 - e * k for k in (1, 2) for e in epochs],
                      "train_loss": [0.06 - 0.003 * e * k for k in (1, 2) for e in epochs]})
    for kind, col in (("query_val_loss", "val_loss"), ("query_val_errors", "val_errors"),
                      ("query_train_loss", "train_loss")):
        write(kind, q.select("run", "model", "status", "epoch", col))
    series = [f"tiny-d{w}-l2 full" for w in (32, 64)]
    write("val_loss", pl.DataFrame({"series": [s for s in series for _ in range(3)],
                                    "run": [f"{s}-{c}" for s in series for c in range(3)], "model": "m",
                                    "status": "ok", "method": "full", "tokens": [10_000, 20_000, 40_000] * 2,
                                    "val_loss": [3.0, 2.7, 2.4, 2.9, 2.6, 2.2]}))


def test_dvc_overlay_plots_draw_offline(tmp_path: Path) -> None:
    plots = _curve_plots()
    assert {next(iter(p)) for p in plots} >= {"results/plots/train_loss", "results/plots/query_val_loss",
                                             "results/plots/val_loss"}
    root = tmp_path / "repo"
    root.mkdir()
    dvc = str(Path(sys.executable).with_name("dvc"))
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=root, check=True)
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots", dirs_exist_ok=True)
    (root / "dvc.yaml").write_text(yaml.safe_dump({"plots": plots}, sort_keys=False))
    _curves(root)
    proc = subprocess.run([dvc, "plots", "show", "--html-template", str(TEMPLATE), "-o", "out"], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert not proc.stderr.strip(), proc.stderr
    html = (root / "out" / "index.html").read_text()
    assert not re.search(r"<script[^>]+src\s*=\s*[\"']https?:", html), "the page loads a script from the network"
    assert html.count("vegaEmbed(") == len(plots)
    for p in plots:
        assert p[next(iter(p))]["title"] in html
    page = root / "out" / "checked.html"
    head, tail = html.rsplit("</body>", 1)       # the last one: the inline libraries hold the string too
    page.write_text(head + DRAWN + "</body>" + tail)
    exe = hb.chromium()
    dom = subprocess.run([exe, *hb.FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="embtune-drawn">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-1500:]
    assert found.group(1).replace("&quot;", '"') == f'{{"divs":{len(plots)},"drawn":{len(plots)}}}'
    hb.keep_artifact(hb.screenshot(page, tmp_path / "dvc_plots.png", tmp_path, size="1200,1600"))
