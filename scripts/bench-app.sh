#!/usr/bin/env bash
# The desktop app's benchmark (ui/e2e/bench/app.bench.mjs): cold start, idle memory, call-to-card latency,
# and the live view under load, measured on the real app binary under Xvfb; figures are printed, never
# asserted (docs/benchmarks.md, "The desktop app"). Builds the UI and the app first.
#   bash scripts/bench-app.sh             release build (cargo build --release -p portcullis-app)
#   bash scripts/bench-app.sh --debug     the debug build scripts/e2e.sh uses
#   BENCH_RUNS=5 BENCH_CARDS=20 BENCH_RATE=1000 BENCH_SECONDS=30 BENCH_CLIENTS=16  (the defaults)
# A smoke run with tiny numbers: BENCH_RUNS=1 BENCH_CARDS=2 BENCH_RATE=50 BENCH_SECONDS=2 bash scripts/bench-app.sh --debug
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
[[ "${1:-}" == "--debug" ]] && profile=debug
[[ -d tests/interop/node_modules/@modelcontextprotocol/sdk ]] || npm install --prefix tests/interop --no-audit --no-fund --loglevel=error
npm --prefix ui run build --silent >&2
if [[ $profile == release ]]; then
  cargo build --release --locked --quiet -p portcullis-app
else
  cargo build --workspace --all-features --all-targets --locked --quiet
fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
export PORTCULLIS_APP_BIN="$target/$profile/portcullis-app"
export PORTCULLIS_BIN="$target/debug/portcullis"
command -v tauri-driver >/dev/null && export TAURI_DRIVER="$(command -v tauri-driver)"
echo "app binary: $PORTCULLIS_APP_BIN ($profile)" >&2
xvfb-run -a -s "-screen 0 1280x900x24" node ui/e2e/bench/app.bench.mjs
