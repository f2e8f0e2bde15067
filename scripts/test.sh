#!/usr/bin/env bash
# Every test of the workspace, as CI runs it: formatting, lints, smoke runs of the benches (their figures
# are not asserted; benchmarks are not tests), then unit, integration, conformance, crash and CLI tests.
set -euo pipefail
cd "$(dirname "$0")/.."

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
echo "bench smoke runs: ok"

echo "== tests (workspace, all features)"
if cargo nextest --version >/dev/null 2>&1; then
  # nextest does not run doc tests: run them first, so nextest's summary closes the output
  cargo test --workspace --all-features --locked --doc --quiet
  cargo nextest run --workspace --all-features --locked --no-fail-fast
else
  cargo test --workspace --all-features --locked --lib --tests --no-fail-fast
fi
