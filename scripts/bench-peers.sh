#!/usr/bin/env bash
# The gateway beside its peers, side by side in one run (outside CI): the reference MCP server
# (`server-everything`) directly over stdio, behind `mcp-proxy` 0.6.0 (a Rust MCP gateway, installed
# into a folder of this bench's own), behind `portcullis serve --single-upstream`, and Portcullis's
# built-in `read` tool; each with 1 client and with 32. See crates/api/examples/peers_bench.rs.
#
#   bash scripts/bench-peers.sh [N] [ROUNDS]     (default 2000 calls per round and target, 3 rounds)
#
# Needs node and the npm peers (`npm ci --prefix tests/interop`); the first run compiles mcp-proxy
# (several minutes on 2 cores) into target/bench-peers/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-2000}
rounds=${2:-3}
peers="$root/target/bench-peers"
proxy="$peers/mcp-proxy/bin/mcp-proxy"
if [[ ! -x "$proxy" ]]; then
  mkdir -p "$peers"
  cargo install mcp-proxy --version 0.6.0 --locked --root "$peers/mcp-proxy"
fi
if [[ ! -d tests/interop/node_modules/@modelcontextprotocol/server-everything ]]; then
  npm ci --prefix tests/interop --no-audit --no-fund
fi
cargo build --release -p portcullis --bin portcullis -p portcullis-api --example peers_bench
"$root/target/release/examples/peers_bench" "$n" --rounds "$rounds" \
  --portcullis "$root/target/release/portcullis" --mcp-proxy "$proxy"
