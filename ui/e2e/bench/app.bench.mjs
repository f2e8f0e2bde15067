// The desktop app's benchmark (docs/benchmarks.md, "The desktop app"): the real app binary under
// tauri-driver + WebKitWebDriver in Xvfb (ui/e2e/harness.mjs), the official MCP TypeScript SDK client as
// the agent. Measures, never asserts:
//  (a) cold start: the app process's start (from /proc) to the inbox loaded (the page's `data-loaded-at`),
//      BENCH_RUNS fresh starts;
//  (b) resident memory of the app and every process under it (WebKitWebProcess, WebKitNetworkProcess):
//      RSS and PSS summed over /proc, idle with the hub running;
//  (c) a prompted call asked at the gateway (the approval's `requested_at`) to its card on screen (the
//      card's `data-shown-at`), BENCH_CARDS calls, each then denied through the operator HTTP API;
//  (d) the live view under BENCH_RATE calls/s for BENCH_SECONDS (ui/e2e/bench/load.mjs: BENCH_CLIENTS SDK
//      sessions calling `read`): frames longer than 50 ms (requestAnimationFrame gaps, and 'longtask'
//      entries where WebKit has them) and the missed events the view shows.
// Prints a JSON report on stdout. Run through scripts/bench-app.sh.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { agent, appBin, descendants, freePort, hubInfo, startApp, world } from "../harness.mjs";
import { callToCard } from "./cards.mjs";

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const RUNS = env("BENCH_RUNS", 5);
const CARDS = env("BENCH_CARDS", 20);
const RATE = env("BENCH_RATE", 1000);
const SECONDS = env("BENCH_SECONDS", 30);
const CLIENTS = env("BENCH_CLIENTS", 16);
const IDLE_MS = env("BENCH_IDLE_MS", 5000);

const POLICY = `{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "read-only", "pattern": [["ls", "cat", "echo", "pwd", "grep", "wc"]], "decision": "allow" },
      { "id": "git-push", "pattern": ["git", "push"], "decision": "prompt" }
    ]
  }
}
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(...a);
const ticks = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

function quantile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}
const summary = (values) => ({
  n: values.length,
  p50: quantile(values, 0.5),
  p95: quantile(values, 0.95),
  max: Math.max(...values),
  min: Math.min(...values),
});

/** When process `pid` started, in epoch ms (10 ms resolution): its start in clock ticks since boot,
 * placed on the wall clock through /proc/uptime read at the same moment. */
function startedAt(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const startTicks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
  const now = Date.now();
  const uptime = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
  return now - uptime * 1000 + (startTicks / ticks) * 1000;
}

const comm = (pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim();

function appPid(driverPid) {
  const name = path.basename(appBin).slice(0, 15);
  return descendants(driverPid).find((pid) => {
    try {
      return comm(pid) === name;
    } catch {
      return false;
    }
  });
}

/** RSS and PSS (MB) of `pid` and every process under it, with each process's name. */
function memory(pid) {
  const rows = [];
  for (const p of [pid, ...descendants(pid)]) {
    try {
      const status = readFileSync(`/proc/${p}/status`, "utf8");
      const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, "utf8");
      const pss = Number(/Pss:\s+(\d+)/.exec(rollup)?.[1] ?? 0) / 1024;
      rows.push({ pid: p, name: comm(p), rss: Math.round(rss), pss: Math.round(pss) });
    } catch {
      // ended meanwhile
    }
  }
  const total = (k) => Math.round(rows.reduce((s, r) => s + r[k], 0));
  return { rssMB: total("rss"), pssMB: total("pss"), processes: rows };
}

async function withApp(run) {
  const w = world(POLICY);
  const app = await startApp(w, await freePort());
  try {
    return await run(w, app);
  } finally {
    await app.stop();
  }
}

const loadedAt = (browser) =>
  browser.waitUntil(
    () => browser.execute(() => globalThis.document.querySelector("section.approvals")?.getAttribute("data-loaded-at")),
    { timeout: 30_000, interval: 20 },
  );

// (a) cold starts
const starts = [];
for (let i = 0; i < RUNS; i++) {
  const ms = await withApp(async (w, app) => {
    const loaded = Number(await loadedAt(app.browser));
    const pid = appPid(app.driverPid);
    return { spawnToInbox: Math.round(loaded - startedAt(pid)), sessionToInbox: loaded - app.started };
  });
  log(`start ${i + 1}/${RUNS}: process start to inbox loaded ${ms.spawnToInbox} ms (WebDriver session asked: ${ms.sessionToInbox} ms)`);
  starts.push(ms);
}

const report = {
  machine: `${(await import("node:os")).cpus().length} cores, ${(await import("node:os")).cpus()[0]?.model}`,
  binary: appBin,
  coldStart: {
    processStartToInboxMs: summary(starts.map((s) => s.spawnToInbox)),
    sessionAskedToInboxMs: summary(starts.map((s) => s.sessionToInbox)),
    runs: starts,
  },
};

// (b), (c), (d) in one app
await withApp(async (w, app) => {
  const { browser } = app;
  await loadedAt(browser);
  const info = await hubInfo(w);
  const pid = appPid(app.driverPid);
  await sleep(IDLE_MS);
  report.idleMemory = memory(pid);
  log(`idle memory: RSS ${report.idleMemory.rssMB} MB, PSS ${report.idleMemory.pssMB} MB (${report.idleMemory.processes.map((p) => `${p.name} ${p.rss}`).join(", ")})`);

  // (c) call asked -> card shown
  const steps = Array.from({ length: CARDS }, () => ({ op: "call", name: "shell", arguments: { command: "git push origin main" } }));
  const { latencies, agentExit: code } = await callToCard(browser, {
    base: info.mcp_url.replace(/\/mcp$/, ""),
    operatorToken: readFileSync(`${w.config}/operator-token`, "utf8").trim(),
    count: CARDS,
    calls: agent(info, w, steps),
  });
  report.callToCardMs = { ...summary(latencies.map((l) => Math.round(l * 10) / 10)), agentExit: code };
  log(`call asked to card shown: p50 ${report.callToCardMs.p50} ms, p95 ${report.callToCardMs.p95} ms over ${CARDS}`);

  // (d) the live view under load
  await browser.$('[data-testid="nav-live"]').click();
  await browser.execute(() => {
    const b = { frames: 0, long: 0, dropped: 0, worst: 0, longtasks: 0, longtaskSupported: true, last: 0, on: true };
    globalThis.__frames = b;
    const tick = (t) => {
      if (b.last) {
        const gap = t - b.last;
        b.frames += 1;
        if (gap > 50) b.long += 1;
        b.dropped += Math.max(0, Math.round(gap / (1000 / 60)) - 1);
        b.worst = Math.max(b.worst, gap);
      }
      b.last = t;
      if (b.on) globalThis.requestAnimationFrame(tick);
    };
    globalThis.requestAnimationFrame(tick);
    try {
      new globalThis.PerformanceObserver((list) => (b.longtasks += list.getEntries().length)).observe({ type: "longtask" });
    } catch {
      b.longtaskSupported = false;
    }
  });
  const frames = async (reset) =>
    browser.execute((r) => {
      const b = globalThis.__frames;
      const out = { frames: b.frames, long: b.long, dropped: b.dropped, worst: Math.round(b.worst), longtasks: b.longtasks, longtaskSupported: b.longtaskSupported };
      if (r) Object.assign(b, { frames: 0, long: 0, dropped: 0, worst: 0, longtasks: 0 });
      return out;
    }, reset);
  await sleep(3000);
  const idleFrames = await frames(true);
  const token = readFileSync(`${w.config}/token`, "utf8").trim();
  const load = spawn(
    "node",
    [path.join(import.meta.dirname, "load.mjs"), JSON.stringify({ url: info.mcp_url, token, rate: RATE, seconds: SECONDS, clients: CLIENTS, tool: "read", arguments: { path: "README.md", limit: 1 } })],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  load.stdout.on("data", (d) => (out += d));
  const loadDone = new Promise((r) => load.on("exit", r));
  const cpuBefore = cpuTicks(pid);
  await loadDone;
  const cpuAfter = cpuTicks(pid);
  const underLoad = await frames(false);
  await sleep(1000);
  const missedText = await browser.$('[data-testid="live-missed"]').getText();
  const rows = await browser.execute(() => globalThis.document.querySelectorAll(".live-table tbody tr").length);
  report.liveUnderLoad = {
    asked: { rate: RATE, seconds: SECONDS, clients: CLIENTS },
    load: JSON.parse(out.trim() || "null"),
    idleFrames3s: idleFrames,
    framesUnderLoad: underLoad,
    liveMissed: missedText,
    liveRows: rows,
    appTreeCpuSecondsDuringLoad: Math.round((cpuAfter - cpuBefore) / ticks),
    memoryAfter: memory(pid),
  };
  log(`live view: ${JSON.stringify(report.liveUnderLoad.load)}; frames ${JSON.stringify(underLoad)}; ${missedText}`);
});

/** User + system CPU ticks of `pid` and every process under it. */
function cpuTicks(pid) {
  let sum = 0;
  for (const p of [pid, ...descendants(pid)]) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      sum += Number(fields[11]) + Number(fields[12]);
    } catch {
      // ended meanwhile
    }
  }
  return sum;
}

process.stdout.write(JSON.stringify(report, null, 2) + "\n");
