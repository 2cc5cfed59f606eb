"""Write the HTML template `dvc plots show` fills, with Vega, Vega-Lite and Vega-Embed inline.

Why: DVC's own page loads the three libraries from a CDN, so on a compute node, a laptop on a
train or any machine without the internet it draws no chart at all. The libraries come from the
npm registry (`npm pack`, the ordinary client) at the versions DVC's page names, each tarball
checked against the registry's pinned sha512 integrity before anything is taken from it, and
are written inline into the template `.dvc/config` points at (`[plots] html_template`).

    python workflow/scripts/vega_bundle.py --out .venv/share/embtune/dvc-plots.html
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# name, version, file in the tarball, the registry's sha512 integrity (npm view NAME@VER dist.integrity)
PACKAGES = (
    ("vega", "5.20.2", "package/build/vega.min.js",
     "qmH7aD9GGPpssVdxL1xgcdxTbQzyRUeRR16Os385ymvQhiwCYQNA6+eXUPAZDTVLfk0RXu6Jzj6kUE5jQ80EVw=="),
    ("vega-lite", "5.2.0", "package/build/vega-lite.min.js",
     "Yxcg8MvYfxHcG6BbkaKT0oVCIMIcE19UvqIsEwBmyd/7h2nzW7oRnID81T8UrY7hpDrIr6wa2JADOT2dhGNErw=="),
    ("vega-embed", "6.18.2", "package/build/vega-embed.min.js",
     "wcDyQPE4J5aiCDc3/suH5RQDvrKkjuLkhzUcbOLwEkNF8/+pp17tS0JghzEvAPNRg+5aG1/N2ydixq8Lk3dOlg=="),
)

PAGE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>embtune: DVC plots</title>
{inline_scripts}
    <style>
        body { font-family: sans-serif; margin: 16px; }
        table { border-spacing: 15px; }
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def fetch(work: Path) -> list[str]:
    """The three libraries' source, each from its integrity-checked npm tarball."""
    sources = []
    for name, version, member, integrity in PACKAGES:
        out = subprocess.run(["npm", "pack", "--silent", f"{name}@{version}", "--pack-destination", str(work)],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise SystemExit(f"vega_bundle: npm pack {name}@{version} failed: {out.stderr.strip()[-300:]}")
        tarball = work / out.stdout.strip().splitlines()[-1]
        digest = base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
        if digest != integrity:
            raise SystemExit(f"vega_bundle: {tarball.name}: sha512 {digest} is not the pinned {integrity}")
        with tarfile.open(tarball) as tar:
            member_file = tar.extractfile(member)
            if member_file is None:
                raise SystemExit(f"vega_bundle: {tarball.name} has no {member}")
            sources.append(member_file.read().decode("utf-8"))
    return sources


def page(sources: list[str]) -> str:
    # "</script" inside a library would end its tag early; the minified builds escape it, check anyway
    for source in sources:
        if "</script" in source.lower():
            raise SystemExit("vega_bundle: a library contains '</script': cannot inline it")
    inline = "\n".join(f'    <script type="text/javascript">{s}</script>' for s in sources)
    return PAGE.replace("{inline_scripts}", inline)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cdn", action="store_true",
                    help="no npm here: write the page with DVC's own CDN scripts (draws only online)")
    args = ap.parse_args(argv)
    if args.cdn:
        text = PAGE.replace("{inline_scripts}", "{scripts}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            text = page(fetch(Path(tmp)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(args.out)
    print(f"vega_bundle: {args.out} ({len(text) // 1024} KiB, {'CDN scripts' if args.cdn else 'Vega inline'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
