"""Render an HTML file in real headless Chromium and check that its images load.

Why no browser-automation package: Chromium's own ``--dump-dom`` (the DOM after scripts ran,
``--virtual-time-budget`` lets timers and image decoding finish) and ``--screenshot`` are enough.
A small script is appended to a copy of the page; on ``load`` it decodes every image the page
holds (its ``<img>`` elements and every ``data:image/...`` URI embedded in it, which is how
Snakemake's report carries its figures) and writes ``naturalWidth`` of each into a ``<pre>`` that
the dumped DOM returns.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
#: Where the landing-page screenshots are kept (gitignored) besides the pytest tmp dir.
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

CHECK = """
<script>
window.addEventListener('load', async () => {
  const srcs = new Set([...document.images].map(i => i.currentSrc || i.src));
  const re = /data:image\\/(?:png|jpeg|gif|webp|svg\\+xml)[;,][^"'\\s)]*?base64,[A-Za-z0-9+\\/=]+/g;
  for (const m of document.documentElement.innerHTML.matchAll(re)) srcs.add(m[0]);
  const shown = [...document.images].map(i => i.naturalWidth);
  const res = await Promise.all([...srcs].map(src => new Promise(done => {
    const im = new Image();
    im.onload = () => done({src: src.slice(0, 120), w: im.naturalWidth, h: im.naturalHeight});
    im.onerror = () => done({src: src.slice(0, 120), w: 0, h: 0});
    im.src = src;
  })));
  const pre = document.createElement('pre');
  pre.id = 'embtune-check';
  pre.textContent = JSON.stringify({images: res, shown: shown, title: document.title});
  document.body.appendChild(pre);
});
</script>
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    return None


def check_images(html: Path, work: Path, timeout: int = 120) -> dict:
    """``{"images": [{src, w, h}], "shown": [naturalWidth of each <img> in the DOM], "title"}``."""
    exe = chromium()
    assert exe, "no chromium"
    page = work / "checked.html"
    text = html.read_text(encoding="utf-8")
    page.write_text(text.replace("</body>", CHECK + "</body>") if "</body>" in text else text + CHECK,
                    encoding="utf-8")
    proc = subprocess.run([exe, *FLAGS, f"--user-data-dir={work / 'profile-dom'}", "--virtual-time-budget=15000",
                           "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=timeout)
    found = re.search(r'<pre id="embtune-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the check script did not run (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">"))


def screenshot(html: Path, out: Path, work: Path, size: str = "1280,900", timeout: int = 120) -> Path:
    """A PNG of the page as Chromium renders it (the landing page of a report)."""
    exe = chromium()
    assert exe, "no chromium"
    subprocess.run([exe, *FLAGS, f"--user-data-dir={work / 'profile-shot'}", "--virtual-time-budget=10000",
                    f"--window-size={size}", f"--screenshot={out}", html.as_uri()],
                   capture_output=True, text=True, timeout=timeout)
    assert out.is_file() and out.stat().st_size > 0, "chromium wrote no screenshot"
    return out


def keep_artifact(path: Path) -> Path:
    """Copy a test artifact to tests/artifacts/ (gitignored), where CI and people find it."""
    ARTIFACTS.mkdir(exist_ok=True)
    return Path(shutil.copy2(path, ARTIFACTS / path.name))
