// The what-if replay in the window (docs/benchmarks.md, "The policy workbench"): the real app under
// tauri-driver + WebKitWebDriver in Xvfb replays a draft over BENCH_LEDGER (e.g. the 1,000,000-call ledger
// of `ledger_bench`) and, while it runs, the page records the gaps between animation frames (what an
// operator would feel as a frozen window). Prints the replay's figures from its outcome and the frame gaps;
// never asserts. Usage:
//   PORTCULLIS_APP_BIN=target/release/portcullis-app BENCH_LEDGER=/tmp/demo.ledger \
//     xvfb-run -a -s "-screen 0 1280x900x24" node ui/e2e/bench/replay.bench.mjs
import { freePort, hubInfo, startApp, world } from "../harness.mjs";

const LEDGER = process.env.BENCH_LEDGER ?? "/tmp/demo.ledger";
const POLICY = `{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "reads", "pattern": [["ls", "cat", "grep", "wc"]], "decision": "allow" },
      { "id": "git", "pattern": ["git"], "decision": "prompt" }
    ]
  }
}
`;

const w = world(POLICY);
const app = await startApp(w, await freePort());
try {
  await hubInfo(w);
  const { browser } = app;
  await browser.$('[data-testid="nav-policy"]').click();
  await browser.$('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 30_000 });
  // The draft loosens `git` (prompt -> allow).
  await browser.$('[data-rule-id="git"] [data-testid="rule-decision-allow"]').click();
  await browser.$('[data-testid="panel-replay"]').click();
  await browser.$('[data-testid="replay-ledger"]').setValue(LEDGER);
  await browser.execute(() => {
    const gaps = [];
    let last = performance.now();
    const tick = (t) => {
      gaps.push(t - last);
      last = t;
      if (!globalThis.__stopFrames) globalThis.requestAnimationFrame(tick);
    };
    globalThis.__frameGaps = gaps;
    globalThis.requestAnimationFrame(tick);
  });
  const started = Date.now();
  await browser.$('[data-testid="replay-start"]').click();
  const outcome = browser.$('[data-testid="replay-outcome"]');
  await outcome.waitForDisplayed({ timeout: 600_000, interval: 250 });
  const wall = (Date.now() - started) / 1000;
  const gaps = await browser.execute(() => {
    globalThis.__stopFrames = true;
    return globalThis.__frameGaps;
  });
  const sorted = [...gaps].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  console.log(
    JSON.stringify({
      bench: "replay_in_window",
      ledger: LEDGER,
      outcome: await outcome.getText(),
      changed: Number(await outcome.getAttribute("data-changed")),
      wall_seconds: wall,
      frames: gaps.length,
      frame_gap_ms: { p50: q(0.5), p99: q(0.99), max: sorted.at(-1) },
      frames_over_50ms: gaps.filter((g) => g > 50).length,
    }),
  );
} finally {
  await app.stop();
}
