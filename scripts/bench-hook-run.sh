#!/usr/bin/env bash
# What a Claude Code `Bash` call costs through Portcullis (issue 52): the hook's answer (a process that
# asks the running hub, which judges the call and issues a ticket), then `portcullis run` redeeming the
# ticket (a process that streams the sandboxed run back), against the command run by bash itself.
# Sequential, after a warm-up; medians and 90th percentiles in milliseconds, one JSON object per line.
#
#   bash scripts/bench-hook-run.sh [RUNS] [PORTCULLIS]     (default 50 runs, target/release/portcullis)
#
# The figures are in docs/benchmarks.md ("Issue 52"). CI runs it with 3 runs on the debug build as a smoke
# test: its figures are not asserted.
set -euo pipefail
runs=${1:-50}
bin=$(realpath "${2:-target/release/portcullis}")
work=$(mktemp -d)
hub_pid=
cleanup() {
  [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/proj/.portcullis" "$work/home"
cat >"$work/proj/.portcullis/policy.json" <<'EOF'
{ "commands": { "default": "prompt", "rules": [ { "id": "t", "pattern": [["true", "cat"]], "decision": "allow" } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] } }
EOF
export HOME=$work/home PORTCULLIS_CONFIG_DIR=$work/config RUST_LOG=error
(cd "$work/proj" && exec "$bin" serve --port 0 --approver none --db "$work/ledger.db" </dev/null >/dev/null 2>&1) &
hub_pid=$!
for _ in $(seq 200); do [ -f "$work/config/hub.json" ] && break; sleep 0.05; done
[ -f "$work/config/hub.json" ] || { echo "the hub did not start" >&2; exit 1; }

now() { date +%s%N; }
input() {
  printf '{"session_id":"bench","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"%s","tool_input":%s,"tool_use_id":"t%s"}' \
    "$work/proj" "$1" "$2" "$3"
}
hook_ms=() run_ms=() bash_ms=() read_ms=()
for i in $(seq 0 "$runs"); do
  t0=$(now)
  answer=$(input Bash '{"command":"true"}' "$i" | "$bin" hook claude)
  th=$(now)
  command=$(printf '%s' "$answer" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hookSpecificOutput"]["updatedInput"]["command"])')
  t1=$(now) # reading the answer is Claude Code's part, not timed
  (cd "$work/proj" && bash -c "$command")
  t2=$(now)
  (cd "$work/proj" && bash -c true)
  t3=$(now)
  # A tool Claude Code runs itself: the hook only judges (its row waits for a report that never comes).
  input Read "{\"file_path\":\"$work/proj/x\"}" "r$i" | "$bin" hook claude >/dev/null
  t4=$(now)
  if [ "$i" -gt 0 ]; then # the first round warms up
    hook_ms+=($(((th - t0) / 1000))) run_ms+=($(((t2 - t1) / 1000))) bash_ms+=($(((t3 - t2) / 1000)))
    read_ms+=($(((t4 - t3) / 1000)))
  fi
done
stats() { # name, microseconds...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '{ a[NR] = $1 } END {
    printf "{\"bench\":\"hook_run\",\"step\":\"%s\",\"runs\":%d,\"median_ms\":%.2f,\"p90_ms\":%.2f}\n",
      name, NR, a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.9 + 0.999)] / 1000 }'
}
stats "hook answer, Bash (judged, ticket issued)" "${hook_ms[@]}"
stats "portcullis run (ticket redeemed, sandboxed true, output streamed)" "${run_ms[@]}"
stats "bash -c true (the command alone)" "${bash_ms[@]}"
stats "hook answer, Read (judged only)" "${read_ms[@]}"
