#!/usr/bin/env bash
# Installs whatever is missing on a bare machine (npm packages, Python packages,
# Debian's chromium and firefox-esr), builds the site once, then runs every check and test.
# Usage: npm test   (extra arguments go to pytest: npm test -- -k parse, npm test -- -m "not browser")
# PERPENDIS_TORCH_MATRIX=1 adds the torch tests under PERPENDIS_TORCH_VERSIONS (scripts/torch_matrix.sh).
# The tests use this build of dist/ (PERPENDIS_SITE, tests/conftest.py) rather than building
# their own, so one run builds the site once.
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser tests run in three engines: Chromium through Playwright, Firefox ESR through
# puppeteer-core over WebDriver BiDi (tests/firefox/run.mjs), and WebKitGTK's MiniBrowser
# under Xvfb over W3C WebDriver (tests/browser/webkit.py).
BROWSERS=""
[ -x /usr/bin/chromium ] || BROWSERS="$BROWSERS chromium"
[ -x /usr/bin/firefox-esr ] || BROWSERS="$BROWSERS firefox-esr"
command -v WebKitWebDriver >/dev/null || BROWSERS="$BROWSERS webkit2gtk-driver"
command -v Xvfb >/dev/null || BROWSERS="$BROWSERS xvfb"
if [ -n "$BROWSERS" ]; then
  echo "== installing Debian's$BROWSERS"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $BROWSERS >/dev/null
fi

echo "== installing npm packages"
npm ci --no-audit --no-fund --loglevel=error

echo "== installing Python packages"
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# Model Explorer's node-data classes, for tests/test_model_explorer.py's schema check: its
# 2.2 MB wheel alone (with its dependencies and adapter it is about 780 MB, for a server
# the tests never start).
python3 -m pip install -q --disable-pip-version-check --no-deps "ai-edge-model-explorer==0.1.34"

echo "== building dist/"
python3 build.py

echo "== ruff"
python3 -m ruff check .

# The tests read this build (tests/conftest.py, fixture `site`) rather than making their own.
export PERPENDIS_SITE="$PWD/dist"

# pytest's "no tests collected" (5) is not a failure of a lane that a selection left empty.
lane() { python3 -m pytest -q "$@" || [ $? -eq 5 ]; }

if [ $# -eq 0 ]; then
  echo "== pytest: native lane, on every core"
  lane -m "not browser" -n auto --dist loadfile
  echo "== pytest: browser lane, one browser at a time"
  lane -m browser
else
  echo "== pytest $*"
  lane "$@"
fi

# Optional: the torch-driven tests again under other torch releases (scripts/torch_matrix.sh).
if [ "${PERPENDIS_TORCH_MATRIX:-0}" = 1 ]; then
  scripts/torch_matrix.sh
fi
