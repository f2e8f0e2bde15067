// The policy workbench's benchmark (docs/benchmarks.md, "The policy workbench"): the real app binary under
// tauri-driver + WebKitWebDriver in Xvfb with a policy of BENCH_RULES rules (two examples each). Types
// BENCH_KEYS characters into one rule's example, a key at a time, and reads after each how long the
// draft's check took round trip in the window (the draft bar's "checked in N ms", measured by the page
// around `checkPolicyDraft`); then the time from the key to its mark on screen. Prints JSON; never asserts.
// Usage: PORTCULLIS_APP_BIN=target/release/portcullis-app xvfb-run -a node ui/e2e/bench/workbench.bench.mjs
import { freePort, startApp, world, hubInfo } from "../harness.mjs";

const RULES = Number(process.env.BENCH_RULES ?? 1000);
const KEYS = Number(process.env.BENCH_KEYS ?? 20);

function policy(rules) {
  const body = [];
  for (let i = 0; i < rules; i++) {
    const decision = ["allow", "prompt", "forbidden"][i % 3];
    body.push(`      { "id": "r${i}", "pattern": ["tool${i}", ["run", "check"]], "decision": "${decision}", "match": ["tool${i} run --x"], "not_match": ["tool${i} stop"] }`);
  }
  return `{\n  "commands": {\n    "default": "prompt",\n    "rules": [\n${body.join(",\n")}\n    ]\n  }\n}\n`;
}

const quantile = (values, q) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};

const w = world(policy(RULES));
const app = await startApp(w, await freePort());
try {
  await hubInfo(w);
  const { browser } = app;
  await browser.$('[data-testid="nav-policy"]').click();
  await browser.$('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 60_000 });
  const target = `r${Math.floor(RULES / 2)}`;
  const filter = browser.$('input[aria-label="Filter rules"]');
  await filter.setValue(target);
  const card = browser.$(`[data-rule-id="${target}"]`);
  await card.waitForDisplayed({ timeout: 10_000 });
  const example = card.$('input[aria-label="matches example 1"]');
  await example.click();
  await browser.keys(["End"]);
  const checks = [];
  const toMark = [];
  for (let k = 0; k < KEYS; k++) {
    // Alternating: a key that breaks the example (the mark turns to a failure), then one that mends it.
    const breaking = k % 2 === 0;
    const started = Date.now();
    await browser.keys(breaking ? ["Home", "x"] : ["Home", "Delete"]);
    const want = breaking ? "fail" : "pass";
    await card.$(`[data-testid="example"][data-mark="${want}"]`).waitForExist({ timeout: 10_000, interval: 2 });
    toMark.push(Date.now() - started);
    const title = await browser.$('[data-testid="draft-state"]').getAttribute("title");
    const ms = Number(/checked in (\d+) ms/.exec(title ?? "")?.[1]);
    if (Number.isFinite(ms)) checks.push(ms);
  }
  console.log(
    JSON.stringify({
      bench: "workbench_retype",
      rules: RULES,
      keys: KEYS,
      check_round_trip_ms: { p50: quantile(checks, 0.5), p90: quantile(checks, 0.9), max: Math.max(...checks) },
      key_to_mark_ms: { p50: quantile(toMark, 0.5), p90: quantile(toMark, 0.9), max: Math.max(...toMark) },
    }),
  );
} finally {
  await app.stop();
}
