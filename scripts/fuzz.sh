#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) for N seconds each, one after the other, starting from the
# committed corpora (fuzz/corpus/<target>/, read-only here: new inputs go to $FUZZ_WORK/<target>/).
# Not for CI: it needs the nightly toolchain and installs cargo-fuzz when missing. Results and the
# figures of the first campaign: docs/benchmarks.md, "Fuzzing (issue 13)".
#
#   scripts/fuzz.sh [seconds]            # default 60 s per target
#   FUZZ_TARGETS="shell_analyzer" scripts/fuzz.sh 600
#   FUZZ_CMIN=1 scripts/fuzz.sh 600      # then merge what was found into fuzz/corpus/ (cargo fuzz cmin)
#
# Environment: FUZZ_WORK (default fuzz/work), FUZZ_TARGETS (default all five), CARGO_TARGET_DIR (the
# build goes to $CARGO_TARGET_DIR/cargo-fuzz when set, else fuzz/target). A crash's input is written
# to fuzz/artifacts/<target>/; minimize it (`cargo +nightly fuzz tmin <target> <file>`) and keep it in
# fuzz/regressions/<target>/, which the crates' replay tests read.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
work="$(mkdir -p "${FUZZ_WORK:-fuzz/work}" && cd "${FUZZ_WORK:-fuzz/work}" && pwd)"
targets="${FUZZ_TARGETS:-shell_analyzer policy_document schema_arguments mcp_mapping claude_hook}"
target_dir="${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/cargo-fuzz}"
target_dir="${target_dir:-$root/fuzz/target}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
echo "$(cargo fuzz --version); $(rustc +nightly --version)"

# -O -a: optimized, with debug assertions and overflow checks (an overflow is a crash).
build=(-O -a --target-dir "$target_dir")
# The limits every target must hold: inputs up to 64 KiB, 5 s per input, 2 GiB of memory. One job and
# one worker: other builds share the machine.
limits=(-max_len=65536 -timeout=5 -rss_limit_mb=2048 -jobs=1 -workers=1 -print_final_stats=1)

failed=()
for t in $targets; do
  mkdir -p "$work/$t" "fuzz/corpus/$t"
  echo "== $t: $seconds s"
  # With -jobs, libFuzzer writes the run's output to fuzz-0.log in the current folder.
  rm -f "$work/fuzz-0.log"
  if ! (cd "$work" && nice -n 10 cargo +nightly fuzz run --fuzz-dir "$root/fuzz" "${build[@]}" "$t" \
    "$work/$t" "$root/fuzz/corpus/$t" -- "${limits[@]}" -max_total_time="$seconds"); then
    failed+=("$t")
  fi
  if [ -f "$work/fuzz-0.log" ]; then
    mv "$work/fuzz-0.log" "$work/$t.log"
    grep -E '^#[0-9]+ +(INITED|DONE)|^stat::|SUMMARY|panicked' "$work/$t.log" | tail -n 12 || true
  fi
  if [ "${FUZZ_CMIN:-0}" = 1 ]; then
    cp -n "$work/$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
    nice -n 10 cargo +nightly fuzz cmin --fuzz-dir "$root/fuzz" "${build[@]}" "$t" "fuzz/corpus/$t" -- -max_len=65536 -timeout=5 -rss_limit_mb=2048
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "crashed or failed: ${failed[*]} (inputs in fuzz/artifacts/; logs in $work)" >&2
  exit 1
fi
echo "no crash (logs in $work)"
