// The browser console's benchmark (docs/benchmarks.md, "The browser console"): a real `portcullis serve`
// (PORTCULLIS_BIN; the release build for figures), Debian's headless Chromium through chromedriver
// (ui/e2e/browser.mjs), the official MCP TypeScript SDK client as the agent. Measures, never asserts:
//  (a) a login link opened to the console's first paint (the `/` page's first-contentful-paint, on the
//      page's clock placed on the wall clock by performance.timeOrigin) and to the inbox loaded (the
//      view's `data-loaded-at`), BENCH_RUNS fresh one-time links;
//  (b) a prompted call asked at the gateway (the approval's `requested_at`) to its card on screen (the
//      card's `data-shown-at`), BENCH_CARDS calls, each then denied through the operator HTTP API.
// Prints a JSON report on stdout.
//   cargo build --release -p portcullis && PORTCULLIS_BIN=target/release/portcullis node ui/e2e/bench/console.bench.mjs
import { readFileSync } from "node:fs";
import { agent } from "../harness.mjs";
import { operatorLink, serveHub, startBrowser } from "../browser.mjs";
import { callToCard } from "./cards.mjs";

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const RUNS = env("BENCH_RUNS", 10);
const CARDS = env("BENCH_CARDS", 30);
const log = (...a) => console.error(...a);

const POLICY = `{
  "commands": {
    "default": "prompt",
    "rules": [ { "id": "read-only", "pattern": [["ls", "cat", "echo"]], "decision": "allow" } ]
  }
}
`;

function quantile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] : null;
}
const round = (v) => Math.round(v * 10) / 10;
const summary = (values) => ({
  n: values.length,
  p50: round(quantile(values, 0.5)),
  p95: round(quantile(values, 0.95)),
  min: round(Math.min(...values)),
  max: round(Math.max(...values)),
});

const hub = await serveHub(POLICY);
const chrome = await startBrowser();
const report = { binary: process.env.PORTCULLIS_BIN ?? "target/debug/portcullis", runs: RUNS, cards: CARDS };
try {
  const { browser } = chrome;
  // (a) login link -> first paint, -> inbox loaded
  const paint = [];
  const loaded = [];
  for (let i = 0; i < RUNS; i++) {
    const link = i === 0 ? hub.link : operatorLink(hub.w, "bench");
    await browser.url("about:blank");
    const opened = Date.now();
    await browser.url(link);
    await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 }).catch(async (e) => {
      const page = await browser.execute(() => [globalThis.location.href, globalThis.document.body.innerText.slice(0, 400)]);
      throw new Error(`run ${i}: ${e.message}; the page: ${JSON.stringify(page)}`);
    });
    const page = await browser.execute(() => {
      const fcp = globalThis.performance.getEntriesByName("first-contentful-paint")[0];
      const view = globalThis.document.querySelector("[data-loaded-at]");
      return {
        origin: globalThis.performance.timeOrigin,
        fcp: fcp ? fcp.startTime : null,
        loadedAt: view ? Number(view.getAttribute("data-loaded-at")) : null,
      };
    });
    if (page.fcp != null) paint.push(page.origin + page.fcp - opened);
    if (page.loadedAt) loaded.push(page.loadedAt - opened);
  }
  report.linkToFirstPaintMs = summary(paint);
  report.linkToInboxLoadedMs = summary(loaded);
  log(`login link to first paint: p50 ${report.linkToFirstPaintMs.p50} ms; to the inbox loaded: p50 ${report.linkToInboxLoadedMs.p50} ms`);

  // (b) call asked -> card shown in the browser
  const steps = Array.from({ length: CARDS }, (_, i) => ({ op: "call", name: "shell", arguments: { command: `git push origin main-${i}` } }));
  const { latencies, agentExit: code } = await callToCard(browser, {
    base: `http://127.0.0.1:${hub.port}`,
    operatorToken: readFileSync(`${hub.w.config}/operator-token`, "utf8").trim(),
    count: CARDS,
    calls: agent(hub.info, hub.w, steps),
  });
  report.callToCardMs = { ...summary(latencies), agentExit: code };
  log(`call asked to card shown in the browser: p50 ${report.callToCardMs.p50} ms, p95 ${report.callToCardMs.p95} ms over ${CARDS}`);
} finally {
  await chrome.stop();
  await hub.stop();
}
console.log(JSON.stringify(report, null, 2));
