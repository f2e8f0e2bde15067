#!/usr/bin/env bash
# One command to the desktop app on a fresh machine of this kind: installs what is missing (system
# packages, node modules), builds the UI when its sources changed, then builds (optimized, once: later
# runs reuse the build) and runs the app. Arguments go to the app (`--project DIR`, `--port N`,
# `--db FILE`; defaults as `portcullis serve`: this folder, 7391, the user's ledger).
#
# The first run compiles everything optimized: about 12 minutes on 2 cores (docs/benchmarks.md); a run
# with nothing changed starts in seconds. Why optimized: the debug app judges a call in ~1 ms (the
# optimized one in ~50 µs) and idles at ~240 MB; the operator should meet the real thing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# No display, no window: say so before the long build, and point to the headless hub and its console.
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "app.sh: this machine has no display for a window (DISPLAY and WAYLAND_DISPLAY are unset)." >&2
  echo "app.sh: run the hub headless instead: cargo run --release -p portcullis -- serve" >&2
  echo "app.sh: it serves the same views in a browser: open the login link it prints (from another machine: ssh -L 7391:127.0.0.1:7391 HOST)." >&2
  exit 3
fi
bash "$root/scripts/desktop-deps.sh"
# The app embeds ui/dist: rebuild it only when a source is newer than the last build.
dist="$root/ui/dist/index.html"
if [ ! -f "$dist" ] || [ -n "$(find "$root/ui/src" "$root/ui/index.html" "$root/ui/package.json" "$root/ui/package-lock.json" \
  "$root"/ui/vite.config.* -newer "$dist" -print -quit 2>/dev/null)" ]; then
  npm --prefix "$root/ui" run build --silent
fi
# The app and the sandbox launcher its hub starts for every command (found beside the app's binary).
if [ ! -x "${CARGO_TARGET_DIR:-$root/target}/release/portcullis-app" ]; then
  echo "app.sh: first build of the optimized app (about 12 minutes on 2 cores; later runs reuse it)" >&2
fi
cargo build --release --manifest-path "$root/Cargo.toml" -p portcullis-app -p portcullis-sandbox --locked
exec "${CARGO_TARGET_DIR:-$root/target}/release/portcullis-app" "$@"
