#!/usr/bin/env bash
# Install what the report-page tests need: Debian's headless Chromium (chromium-headless-shell) and the Noto
# CJK fonts (fonts-noto-cjk), from the system's apt sources. Idempotent: when both are there it only says so.
# Needs root (CI runs as root) or sudo; without either it says what to run and exits 0, and the browser
# tests are skipped (outside CI) or fail (in CI, where $CI is set).
set -euo pipefail
pkgs=(chromium-headless-shell fonts-noto-cjk)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: browser for the report-page tests ready ($(chromium-headless-shell --version 2>/dev/null || echo chromium-headless-shell))"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "setup: no apt-get: install ${missing[*]} (or any Chromium, NLSIM_BROWSER=path) for the report-page tests"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "setup: not root: run 'sudo apt-get install --no-install-recommends ${missing[*]}' for the report-page tests"
    exit 0
  fi
fi
echo "setup: installing ${missing[*]} with apt-get (about 150 MB to download, 380 MB on disk; a minute or two)"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -20 "$log" >&2
  rm -f "$log"
  echo "setup: apt-get failed (above): the report-page tests will be skipped, or fail under CI" >&2
  exit 0
fi
rm -f "$log"
echo "setup: installed $(chromium-headless-shell --version)"
