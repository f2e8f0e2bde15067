#!/usr/bin/env bash
# Installs what the desktop app needs to build, run and be tested, when it is missing: Debian's WebKitGTK
# and Tauri build packages, Xvfb and WebKitWebDriver (window tests), the UI's node modules (pinned by
# ui/package-lock.json), and with --with-driver tauri-driver and Chromium with its chromedriver (the
# browser console's tests). Used by .ci/run and scripts/app.sh. Needs root for apt.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

packages=(libwebkit2gtk-4.1-dev build-essential file libssl-dev libayatana-appindicator3-dev librsvg2-dev
  libxdo-dev xvfb xauth webkit2gtk-driver git dbus-daemon xdotool)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "desktop: installing ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# `npm install` honours the lock (see .ci/run on why not `npm ci`); skipped when nothing changed.
if [[ ! -f ui/node_modules/.package-lock.json || ui/package-lock.json -nt ui/node_modules/.package-lock.json ]]; then
  npm install --prefix ui --no-audit --no-fund --loglevel=error
fi

# The browser console's end-to-end specs drive Debian's Chromium through its chromedriver.
if [[ "${1:-}" == "--with-driver" ]] && ! { command -v chromium && command -v chromedriver; } >/dev/null; then
  echo "desktop: installing chromium chromium-driver (the browser console's tests)"
  apt-get update -q
  apt-get install -y -q --no-install-recommends chromium chromium-driver
fi

if [[ "${1:-}" == "--with-driver" ]] && ! command -v tauri-driver >/dev/null && [[ ! -x "$HOME/.cargo/bin/tauri-driver" ]]; then
  # crates.io's newest tauri-driver is a 3.0 alpha: stay on 2.x.
  cargo install tauri-driver --version ^2 --locked
fi
