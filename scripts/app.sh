#!/usr/bin/env bash
# One command to the desktop app on a fresh machine of this kind: installs what is missing (system
# packages, node modules), builds the UI, then builds and runs the app. Arguments go to the app
# (`--project DIR`, `--port N`, `--db FILE`; defaults as `portcullis serve`: this folder, 7391, the
# user's ledger).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/desktop-deps.sh"
npm --prefix "$root/ui" run build --silent
# The app and the sandbox launcher its hub starts for every command (found beside the app's binary).
cargo build --manifest-path "$root/Cargo.toml" -p portcullis-app -p portcullis-sandbox --locked
exec "${CARGO_TARGET_DIR:-$root/target}/debug/portcullis-app" "$@"
