#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against URL and writes a comparable summary:
#   run.sh URL OUT_DIR [scenario...]     (no scenario named = every server scenario, pending ones included)
# Writes OUT_DIR/summary.json {"scenario": "pass"|"warn"|"fail"|"error"}, OUT_DIR/details.json (counts and the
# failing/warning checks per scenario), OUT_DIR/raw/ (the suite's own checks.json per scenario) and
# OUT_DIR/conformance.log (the suite's console output, kept off stdout: its "Total: N passed, N failed" line would
# read as a test-runner result). Prints one line per scenario. Exits 0 whenever the suite ran (the caller compares
# summaries); 2 if it could not run (not installed, bad arguments, unknown scenario).
# Env: CONFORMANCE_SUITE_TIMEOUT (s, whole-suite run, default 300), CONFORMANCE_SCENARIO_TIMEOUT (s, default 90).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$HERE/node_modules/.bin/node"          # node 22 from the npm `node` package: the suite needs node >= 22
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ $# -lt 2 ]]; then echo "usage: $0 URL OUT_DIR [scenario...]" >&2; exit 2; fi
URL="$1"; OUT="$2"; shift 2
if [[ ! -x "$NODE" || ! -f "$CLI" ]]; then
  echo "conformance suite not installed: run 'npm ci' in $HERE" >&2; exit 2
fi

mapfile -t ALL < <("$NODE" "$CLI" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
if [[ ${#ALL[@]} -eq 0 ]]; then echo "could not list the suite's server scenarios" >&2; exit 2; fi
for s in "$@"; do
  if ! printf '%s\n' "${ALL[@]}" | grep -qxF -- "$s"; then
    echo "unknown scenario: $s (known: ${ALL[*]})" >&2; exit 2
  fi
done

rm -rf "$OUT/raw"; mkdir -p "$OUT/raw"
LOG="$OUT/conformance.log"; : > "$LOG"
WANT=("$@"); [[ ${#WANT[@]} -eq 0 ]] && WANT=("${ALL[@]}")

# Results land in raw/server-<scenario>-<timestamp>/checks.json; a scenario has run once such a file exists.
have_result() { compgen -G "$OUT/raw/server-$1-[0-9][0-9][0-9][0-9]-*/checks.json" > /dev/null; }

# Fast path: the whole suite in one process (about 2 s). Anything it left without results (a hang cut off by
# the timeout, a crash) is then run on its own under a per-scenario timeout.
if [[ $# -eq 0 ]]; then
  timeout "${CONFORMANCE_SUITE_TIMEOUT:-300}" "$NODE" "$CLI" server --url "$URL" --suite all -o "$OUT/raw" >> "$LOG" 2>&1
fi
for s in "${WANT[@]}"; do
  have_result "$s" && continue
  echo "=== $s (single run)" >> "$LOG"
  timeout "${CONFORMANCE_SCENARIO_TIMEOUT:-90}" "$NODE" "$CLI" server --url "$URL" --scenario "$s" -o "$OUT/raw" >> "$LOG" 2>&1
done

# Summarise: pass = no FAILURE and no WARNING check; warn = WARNINGs only; fail = any FAILURE; error = no result.
"$NODE" --input-type=module - "$OUT" "$URL" "${WANT[@]}" <<'EOF'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
const [out, url, ...want] = process.argv.slice(2);
const latest = {};
for (const d of readdirSync(`${out}/raw`).sort()) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(d);
  if (m) latest[m[1]] = d; // sorted by timestamp, so the last one wins
}
const summary = {}, details = {};
for (const s of want) {
  let checks = null;
  try { checks = JSON.parse(readFileSync(`${out}/raw/${latest[s]}/checks.json`, 'utf8')); } catch {}
  if (!Array.isArray(checks)) { summary[s] = 'error'; details[s] = { status: 'error', reason: 'no checks.json (crash or timeout)' }; continue; }
  const by = (st) => checks.filter((c) => c.status === st);
  const [ok, bad, warn] = [by('SUCCESS'), by('FAILURE'), by('WARNING')];
  summary[s] = bad.length ? 'fail' : warn.length ? 'warn' : 'pass';
  const brief = (c) => ({ id: c.id, message: c.errorMessage ?? c.description });
  details[s] = { status: summary[s], success: ok.length, failure: bad.length, warning: warn.length,
    failures: bad.map(brief), warnings: warn.map(brief), resultDir: latest[s] ? `raw/${latest[s]}` : null };
}
writeFileSync(`${out}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
writeFileSync(`${out}/details.json`, JSON.stringify({ url, details }, null, 2) + '\n');
const w = Math.max(...want.map((s) => s.length));
const count = {};
for (const s of want) {
  const d = details[s];
  count[d.status] = (count[d.status] ?? 0) + 1;
  const extra = d.status === 'error' ? d.reason : `${d.success} ok, ${d.failure} failing, ${d.warning} warning checks`;
  const why = [...(d.failures ?? []), ...(d.warnings ?? [])].map((c) => c.id).join(' ');
  console.log(`${s.padEnd(w)}  ${d.status.padEnd(5)}  ${extra}${why ? `  [${why}]` : ''}`);
}
console.log(`scenarios: ${Object.entries(count).map(([k, v]) => `${k}=${v}`).join(' ')} (of ${want.length}; ${out}/summary.json)`);
EOF
exit 0
