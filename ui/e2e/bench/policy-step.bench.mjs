// The policy stage's time per call as the operator reads it in the live view (docs/benchmarks.md, "The
// desktop app"): the real app binary (PORTCULLIS_APP_BIN: the release build scripts/app.sh runs, or the
// debug one) under tauri-driver + WebKitWebDriver in Xvfb, the official MCP SDK client as the agent
// making BENCH_CALLS allowed `echo` calls; each row is expanded and its policy step's time read off the
// screen. Prints a JSON report; never asserts. Usage:
//   PORTCULLIS_APP_BIN=target/release/portcullis-app xvfb-run -a -s "-screen 0 1280x900x24" \
//     node ui/e2e/bench/policy-step.bench.mjs
import { agent, appBin, freePort, hubInfo, startApp, world } from "../harness.mjs";

const CALLS = Number(process.env.BENCH_CALLS ?? 30);
const POLICY = `{
  "commands": { "default": "prompt", "rules": [
    { "id": "read-only", "pattern": [["ls", "cat", "echo", "pwd", "grep", "wc"]], "decision": "allow" }
  ] }
}
`;

/** `932 µs`, `1.2 ms` as the live view writes them, in µs. */
const micros = (text) => {
  const m = /([\d.]+)\s*(µs|ms|s)/.exec(text);
  if (!m) return null;
  return Number(m[1]) * { µs: 1, ms: 1000, s: 1_000_000 }[m[2]];
};

const w = world(POLICY);
const app = await startApp(w, await freePort());
try {
  const info = await hubInfo(w);
  const { browser } = app;
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 30_000 });
  await browser.$('[data-testid="nav-live"]').click();
  await browser.$('[data-testid="live-empty"]').waitForDisplayed({ timeout: 10_000 });
  const steps = Array.from({ length: CALLS }, (_, i) => ({ op: "call", name: "shell", arguments: { command: `echo bench-${i}` } }));
  const { code } = await agent(info, w, steps);
  if (code !== 0) throw new Error(`the agent exited ${code}`);
  await browser.waitUntil(async () => (await browser.$$('[data-testid="live-call"]')).length >= CALLS, { timeout: 20_000 });
  await browser.$('[data-testid="live-pause"]').click();
  const times = [];
  for (const row of await browser.$$('[data-testid="live-call"]')) {
    await row.$('[data-testid="live-call-toggle"]').click();
    // One row is open at a time: its steps are the only ones on screen.
    const took = browser.$('[data-testid="live-steps"] [data-stage="policy"] .took');
    await took.waitForExist({ timeout: 5_000 });
    const text = await took.getProperty("textContent");
    const us = text == null ? null : micros(text);
    if (us != null) times.push(us);
    await row.$('[data-testid="live-call-toggle"]').click();
  }
  times.sort((a, b) => a - b);
  const q = (p) => times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)];
  console.log(JSON.stringify({ app: appBin, calls: CALLS, read: times.length, policy_us: { p50: q(0.5), p95: q(0.95), min: times[0], max: times.at(-1) } }, null, 2));
} finally {
  await app.stop();
}
