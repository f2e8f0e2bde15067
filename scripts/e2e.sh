#!/usr/bin/env bash
# The desktop app's end-to-end specs (ui/e2e/*.e2e.mjs), one spec file at a time, each driving the real
# app binary through tauri-driver + WebKitWebDriver in a virtual X display. Builds the UI and the
# binaries first (`--all-targets --all-features`: the feature set of the workspace tests, so after them
# nothing is rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d tests/interop/node_modules/@modelcontextprotocol/sdk ]] || npm install --prefix tests/interop --no-audit --no-fund --loglevel=error
[[ -f ui/dist/index.html ]] || npm --prefix ui run build --silent
cargo build --workspace --all-features --all-targets --locked --quiet
export PORTCULLIS_APP_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/portcullis-app"
export PORTCULLIS_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/portcullis"
command -v tauri-driver >/dev/null && export TAURI_DRIVER="$(command -v tauri-driver)"
status=0
for spec in ui/e2e/*.e2e.mjs; do
  echo "   $spec"
  xvfb-run -a -s "-screen 0 1280x900x24" node --test --test-reporter=spec "$spec" || status=1
done
exit $status
