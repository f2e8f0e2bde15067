#!/usr/bin/env bash
# The gateway's latency for MCP 2026-07-28 stateless calls and 2025-11-25 session calls, side by side in
# one run (outside CI): a release `portcullis serve` whose policy allows the built-in `read` and the
# `echo` tool of `tests/interop/v2-server.mjs` (the official v2 SDK, over stdio); the official v2
# client, pinned and in legacy mode, times both (`tests/interop/bench-revisions.mjs`).
#
#   bash scripts/bench-revisions.sh [N]      (default 1000 calls per figure; PORTCULLIS_BIN=... skips the build)
#
# Needs node and the npm peers (`npm ci --prefix tests/interop`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-1000}
[[ -d tests/interop/node_modules/@modelcontextprotocol/client ]] || npm ci --prefix tests/interop --no-audit --no-fund
bin=${PORTCULLIS_BIN:-}
[[ -z "$bin" || "$bin" == /* ]] || bin="$root/$bin"
if [[ -z "$bin" ]]; then
  cargo build --release -p portcullis --bin portcullis
  bin="$root/target/release/portcullis"
fi
work=$(mktemp -d)
trap 'kill "$hub" 2>/dev/null || true; wait "$hub" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/proj/.portcullis" "$work/home"
echo "bench contents" > "$work/proj/bench.txt"
cat > "$work/proj/.portcullis/policy.json" <<EOF
{ "grants": [ { "name": "bench", "allow": ["read", "mcp:v2:echo"] } ],
  "paths": { "roots": [ { "path": ".", "access": "read" } ] },
  "servers": [ { "id": "v2", "command": "node", "args": ["$root/tests/interop/v2-server.mjs"] } ] }
EOF
(cd "$work/proj" && HOME="$work/home" PORTCULLIS_CONFIG_DIR="$work/config" RUST_LOG=warn \
  exec "$bin" serve --port 0 --approver none --db "$work/ledger.db") \
  > "$work/hub.out" 2> "$work/hub.err" &
hub=$!
for _ in $(seq 150); do [[ -f "$work/config/hub.json" ]] && break; sleep 0.2; done
url=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$work/config/hub.json','utf8')).mcp_url)")
api=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$work/config/hub.json','utf8')).api_url)")
token=$(cat "$work/config/token")
for _ in $(seq 150); do
  curl -s -H "Authorization: Bearer $token" "$api/health" | grep -q '"state":"ready"' && break
  sleep 0.2
done
sleep 1
node tests/interop/bench-revisions.mjs "$url" "$token" "$n"
