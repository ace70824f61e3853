#!/usr/bin/env bash
# Installs whatever is missing on a bare machine (npm packages, Python packages,
# Debian's chromium), builds the site, then runs every check and test.
# Usage: npm test   (extra arguments go to pytest: npm test -- -k parse)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

echo "== installing npm packages"
npm ci --no-audit --no-fund --loglevel=error

echo "== installing Python packages"
python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt

echo "== building dist/"
python3 build.py

echo "== ruff"
python3 -m ruff check .

echo "== pytest"
python3 -m pytest -q "$@"
