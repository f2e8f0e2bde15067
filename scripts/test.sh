#!/usr/bin/env bash
# Every test of the workspace, as CI runs it: the UI's lint, typecheck and unit tests (and its build, which
# the app crate embeds), formatting, lints, smoke runs of the benches (their figures are not asserted;
# benchmarks are not tests), unit, integration, conformance, crash and CLI tests, then the desktop app
# driven end to end in a virtual display.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== desktop dependencies (installs only what is missing)"
bash scripts/desktop-deps.sh --with-driver

echo "== UI: lint (no @tauri-apps/* outside src/backend), typecheck, unit tests, build"
npm --prefix ui run lint --silent
npm --prefix ui run typecheck --silent
npm --prefix ui test --silent -- --reporter=dot
npm --prefix ui run build --silent

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (workspace, all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

echo "== bench smoke runs (debug builds, small sizes; figures are not asserted; each builds its example first)"
smoke() {
  local package=$1 example=$2
  shift 2
  echo "   $example ($package) $*"
  cargo run --quiet --locked -p "$package" --example "$example" -- "$@" >/dev/null
}
smoke portcullis-harness dispatch_bench 2000
smoke portcullis-ledger ledger_bench 500 2000
smoke portcullis-policy eval_bench 200
smoke portcullis-hub gateway_bench 50
smoke portcullis-coding sandbox_bench 20
smoke portcullis-hub workbench_bench 50
echo "bench smoke runs: ok"

echo "== tests (workspace, all features)"
if cargo nextest --version >/dev/null 2>&1; then
  # nextest does not run doc tests: run them first, so nextest's summary closes the output
  cargo test --workspace --all-features --locked --doc --quiet
  cargo nextest run --workspace --all-features --locked --no-fail-fast
else
  cargo test --workspace --all-features --locked --lib --tests --no-fail-fast
fi

echo "== desktop app end to end (tauri-driver + WebKitWebDriver under Xvfb)"
bash scripts/e2e.sh
