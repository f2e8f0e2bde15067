#!/usr/bin/env bash
# Every test of the workspace, as CI runs it: formatting, lints, unit + integration + conformance tests,
# and a smoke run of the dispatch bench (its figures are not asserted; benchmarks are not tests).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (workspace, all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

echo "== cargo test (workspace, all features)"
cargo test --workspace --all-features --locked

echo "== dispatch bench smoke run (debug build, 2,000 calls)"
cargo run --quiet --locked -p portcullis-harness --example dispatch_bench -- 2000 >/dev/null
echo "bench smoke run: ok"
