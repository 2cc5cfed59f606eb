#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for the report's browser test
# (tests/e2e/test_pipeline_demo.py::test_report_renders_in_headless_chromium). Idempotent and quiet;
# needs root (or passwordless sudo) and apt.
# Exit status: 0 = installed; 1 = could not install (the browser test then skips LOUDLY).
set -euo pipefail

for bin in chromium chromium-browser google-chrome; do
    if command -v "$bin" >/dev/null 2>&1; then echo "install_chromium: already installed ($bin)"; exit 0; fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        echo "install_chromium: not root and no passwordless sudo" >&2; exit 1; fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium: no apt-get on this machine" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium >"$log" 2>&1; then
    $SUDO apt-get update -qq >>"$log" 2>&1 || true
    $SUDO apt-get install -y -qq --no-install-recommends chromium >>"$log" 2>&1 || {
        echo "install_chromium: apt-get failed:" >&2; tail -5 "$log" >&2; exit 1; }
fi
echo "install_chromium: $(chromium --version 2>/dev/null || echo installed)"
