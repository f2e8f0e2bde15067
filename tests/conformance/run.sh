#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against URL and writes a comparable summary:
#   run.sh URL OUT_DIR [scenario...]     (no scenario named = every scenario of the run's set)
# The set: with CONFORMANCE_REQUIREMENTS=<revision> (2025-11-25 or 2026-07-28) the scenarios that revision's
# frozen requirement file lists for servers (required and not scored), each run at that revision's wire (the
# suite's --requirements); without it, every server scenario (--suite all), as before.
# Writes OUT_DIR/summary.json {"scenario": "pass"|"warn"|"hollow"|"fail"|"error"}, OUT_DIR/details.json (counts,
# the failing/warning checks, whether the revision requires the scenario, and the answers its passing checks
# saw: `answers.ok` results, `answers.error` JSON-RPC errors or isError tool results), OUT_DIR/raw/ (the suite's
# own checks.json per scenario) and OUT_DIR/conformance.log (the suite's console output, kept off stdout: its
# "Total: N passed, N failed" line would read as a test-runner result). Prints one line per scenario.
# hollow = nothing failed but nothing was tested either: every check other than the wire-schema one SKIPPED.
# Exits 0 whenever the suite ran (the caller compares summaries); 2 if it could not run (not installed, bad
# arguments, unknown scenario or revision).
# Env: CONFORMANCE_REQUIREMENTS (revision, see above), CONFORMANCE_SUITE_TIMEOUT (s, whole-suite run, default
# 300), CONFORMANCE_SCENARIO_TIMEOUT (s, default 90).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$HERE/node_modules/.bin/node"          # node 22 from the npm `node` package: the suite needs node >= 22
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ $# -lt 2 ]]; then echo "usage: $0 URL OUT_DIR [scenario...]" >&2; exit 2; fi
URL="$1"; OUT="$2"; shift 2
if [[ ! -x "$NODE" || ! -f "$CLI" ]]; then
  echo "conformance suite not installed: run 'npm ci' in $HERE" >&2; exit 2
fi

REQ="${CONFORMANCE_REQUIREMENTS:-}"
REQ_FILE="$HERE/node_modules/@modelcontextprotocol/conformance/requirements/$REQ.yaml"
if [[ -n "$REQ" ]]; then
  if [[ ! -f "$REQ_FILE" ]]; then echo "unknown requirement revision: $REQ" >&2; exit 2; fi
  # "name required|not_scored" for the server leg of the revision's requirement file.
  mapfile -t SET < <(cd "$HERE" && "$NODE" --input-type=module -e "
    import { readFileSync } from 'node:fs'; import { parse } from 'yaml';
    const r = parse(readFileSync(process.argv[1], 'utf8'));
    for (const s of r.server ?? []) console.log(s + ' required');
    for (const n of r.not_scored ?? []) if (n.leg === 'server') console.log(n.scenario + ' not_scored');
  " "$REQ_FILE")
  ALL=("${SET[@]%% *}")
  REQUIRED=$(printf '%s\n' "${SET[@]}" | sed -n 's/ required$//p' | paste -sd, -)
else
  mapfile -t ALL < <("$NODE" "$CLI" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
  REQUIRED=$(printf '%s\n' "${ALL[@]}" | paste -sd, -)
fi
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
  if [[ -n "$REQ" ]]; then FAST=(--requirements "$REQ"); else FAST=(--suite all); fi
  timeout "${CONFORMANCE_SUITE_TIMEOUT:-300}" "$NODE" "$CLI" server --url "$URL" "${FAST[@]}" -o "$OUT/raw" >> "$LOG" 2>&1
fi
ONE=(); [[ -n "$REQ" ]] && ONE=(--spec-version "$REQ")
for s in "${WANT[@]}"; do
  have_result "$s" && continue
  echo "=== $s (single run)" >> "$LOG"
  timeout "${CONFORMANCE_SCENARIO_TIMEOUT:-90}" "$NODE" "$CLI" server --url "$URL" --scenario "$s" "${ONE[@]}" -o "$OUT/raw" >> "$LOG" 2>&1
done

# Summarise: fail = any FAILURE; warn = WARNINGs only; hollow = no FAILURE/WARNING but every check other than
# the wire-schema one SKIPPED (or none); pass otherwise; error = no result. INFO checks are neutral.
"$NODE" --input-type=module - "$OUT" "$URL" "$REQ" "$REQUIRED" "${WANT[@]}" <<'EOF'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
const [out, url, revision, requiredList, ...want] = process.argv.slice(2);
const required = new Set(requiredList.split(','));
const latest = {};
for (const d of readdirSync(`${out}/raw`).sort()) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(d);
  if (m) latest[m[1]] = d; // sorted by timestamp, so the last one wins
}
// The answers a check's details carry: a JSON-RPC error object or an isError tool result is an error answer,
// any other result an ok one (details without an answer count as neither).
function answers(v, acc, key = '') {
  if (!v || typeof v !== 'object') return acc;
  if (Array.isArray(v)) { for (const x of v) answers(x, acc, key); return acc; }
  if (typeof v.code === 'number' && typeof v.message === 'string' && (key === 'error' || key === '')) { acc.error++; return acc; }
  if (key === 'result' || key === 'response' || key === 'tamperedResponse') {
    if (v.error || v.isError === true || v.result?.isError === true) { acc.error++; return acc; }
    if (key === 'result' || v.result) { acc.ok++; return acc; }
  }
  for (const [k, x] of Object.entries(v)) answers(x, acc, k);
  return acc;
}
const META = new Set(['wire-schema-valid']);
const summary = {}, details = {};
for (const s of want) {
  let checks = null;
  try { checks = JSON.parse(readFileSync(`${out}/raw/${latest[s]}/checks.json`, 'utf8')); } catch {}
  const req = required.has(s);
  if (!Array.isArray(checks)) {
    summary[s] = 'error'; details[s] = { status: 'error', required: req, reason: 'no checks.json (crash or timeout)' }; continue;
  }
  const by = (st) => checks.filter((c) => c.status === st);
  const [ok, bad, warn, skipped] = [by('SUCCESS'), by('FAILURE'), by('WARNING'), by('SKIPPED')];
  const tested = ok.filter((c) => !META.has(c.id));
  summary[s] = bad.length ? 'fail' : warn.length ? 'warn' : tested.length === 0 ? 'hollow' : 'pass';
  const acc = { ok: 0, error: 0 };
  for (const c of tested) answers(c.details, acc);
  const brief = (c) => ({ id: c.id, message: c.errorMessage ?? c.description });
  details[s] = { status: summary[s], required: req, success: ok.length, failure: bad.length, warning: warn.length,
    skipped: skipped.length, answers: acc, failures: bad.map(brief), warnings: warn.map(brief),
    ...(summary[s] === 'hollow' ? { reason: 'every check was skipped' } : {}),
    resultDir: latest[s] ? `raw/${latest[s]}` : null };
}
writeFileSync(`${out}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
writeFileSync(`${out}/details.json`, JSON.stringify({ url, requirements: revision || null, details }, null, 2) + '\n');
const w = Math.max(...want.map((s) => s.length));
const count = {};
for (const s of want) {
  const d = details[s];
  count[d.status] = (count[d.status] ?? 0) + 1;
  const extra = d.status === 'error' ? d.reason
    : `${d.success} ok, ${d.failure} failing, ${d.warning} warning, ${d.skipped} skipped checks`;
  const why = [...(d.failures ?? []), ...(d.warnings ?? [])].map((c) => c.id).join(' ');
  console.log(`${s.padEnd(w)}  ${d.status.padEnd(6)} ${d.required ? 'required  ' : 'not scored'}  ${extra}${why ? `  [${why}]` : ''}`);
}
const req = want.filter((s) => details[s].required);
console.log(`scenarios${revision ? ` at ${revision}` : ''}: ${Object.entries(count).map(([k, v]) => `${k}=${v}`).join(' ')} (of ${want.length}; `
  + `required: ${req.filter((s) => summary[s] === 'pass').length} of ${req.length} pass; ${out}/summary.json)`);
EOF
exit 0
