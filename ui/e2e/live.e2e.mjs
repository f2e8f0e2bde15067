// The live calls and connections views, end to end: the real app binary under tauri-driver +
// WebKitWebDriver (Xvfb), its in-process hub with one upstream MCP server (the reference "everything"
// server from tests/interop), and the official MCP TypeScript SDK client as the agents. (a) Calls the
// agents make appear one row per call; expanding one shows its stages (policy, execution) with their
// times from the call's start and who decided. (b) The upstream server, killed from outside, shows as
// down and restarting, then connected again with one restart counted. Both views are captured
// (live-calls.png, connections.png: into PORTCULLIS_SCREENSHOTS when set, else ui/e2e/out).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { agent, descendants, openApp, repo, screenshot } from "./harness.mjs";

const EVERYTHING = path.join(repo, "tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js");

const POLICY = JSON.stringify(
  {
    commands: {
      default: "prompt",
      rules: [
        { id: "read-only", pattern: [["ls", "cat", "echo", "pwd", "grep", "wc", "git"]], decision: "allow" },
        { id: "no-rm", pattern: ["rm"], decision: "forbidden", justification: "deleting is not for agents" },
      ],
    },
    servers: [{ id: "everything", command: "node", args: [EVERYTHING, "stdio"] }],
  },
  null,
  2,
);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let w, app, info;

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
});

after(async () => {
  await app?.stop();
});

/** Waits until `check` (run in the test) holds, polling. */
async function until(what, check, timeoutMs = 30_000) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

test("agent calls appear one row per call; a row expands into its stages with times and deciders", async () => {
  const { browser } = app;
  await browser.$('[data-testid="nav-live"]').click();
  await browser.$('[data-testid="live-empty"]').waitForDisplayed({ timeout: 10_000 });
  // Wait until the upstream server's tools are there, so the agent sees them.
  await until("the everything server's tools", async () => {
    const { report } = await agent(info, w, [{ op: "list" }]);
    return report?.results?.[0]?.tools?.some((t) => t.name === "everything__echo");
  });
  const asked = Date.now();
  const claude = agent(info, w, [
    { op: "call", name: "shell", arguments: { command: "echo hi" } },
    { op: "call", name: "shell", arguments: { command: "git status --short" } },
    { op: "call", name: "shell", arguments: { command: "rm -rf build" } },
    { op: "call", name: "everything__echo", arguments: { message: "hello from the agent" } },
  ]);
  const codex = agent(info, w, [
    { op: "call", name: "read", arguments: { path: "README.md" } },
    { op: "call", name: "shell", arguments: { command: "ls -la" } },
  ], "codex");
  const [a, b] = await Promise.all([claude, codex]);
  assert.equal(a.code, 0, JSON.stringify(a.report));
  assert.equal(b.code, 0, JSON.stringify(b.report));
  assert.match(JSON.stringify(a.report.results[0].result.content), /hi/);
  await until("six call rows", async () => (await browser.$$('[data-testid="live-call"]')).length >= 6, 15_000);
  console.log(`six calls made to six rows shown: ${Date.now() - asked} ms (includes two clients' start)`);

  const rowOf = async (text) => {
    const seen = [];
    for (const row of await browser.$$('[data-testid="live-call"]')) {
      const said = await row.getProperty("textContent");
      if (said.includes(text)) return row;
      seen.push(said);
    }
    throw new Error(`no row with ${text} among ${JSON.stringify(seen)}`);
  };
  const echo = await rowOf("echo hi");
  assert.equal(await echo.getAttribute("data-state"), "finished");
  assert.match(await echo.getProperty("textContent"), /allow/);
  await echo.$('[data-testid="live-call-toggle"]').click();
  const steps = await browser.$('[data-testid="live-steps"]');
  await steps.waitForDisplayed({ timeout: 5_000 });
  const lines = await steps.$$('[data-testid="live-step"]');
  const stages = [];
  for (const line of lines) stages.push(`${await line.getAttribute("data-stage")} ${await line.getAttribute("data-outcome")}`);
  assert.deepEqual(stages, [
    "grant passed",
    "arguments passed",
    "policy passed",
    "ledger passed",
    "execution started",
    "redaction passed",
    "execution finished",
  ]);
  const grantLine = await lines[0].getProperty("textContent");
  assert.match(grantLine, /^\+0\.0 msgrant\d/, grantLine);
  const policyLine = await lines[2].getProperty("textContent");
  assert.match(policyLine, /policy[\d.]+ (µs|ms)passed/, policyLine);
  assert.match(policyLine, /rule read-only \(.*\.portcullis\/policy\.json\)/, policyLine);
  // Every check says how long it took; the run's own time is the row's "took".
  for (const line of lines.slice(0, 4)) {
    const text = await line.$(".took").getProperty("textContent");
    assert.match(text, /^[\d.]+ (µs|ms)$/, text);
  }
  const took = await echo.$(".took").getProperty("textContent");
  assert.equal(await lines[6].$(".took").getProperty("textContent"), took);

  const rm = await rowOf("rm -rf build");
  assert.equal(await rm.getAttribute("data-state"), "blocked");
  await rm.$('[data-testid="live-call-toggle"]').click();
  await until("the forbidden call's steps", async () => (await browser.$$('[data-testid="live-steps"]')).length === 2);
  const forbidden = await browser.$('[data-testid="live-step"][data-outcome="blocked"]').getProperty("textContent");
  assert.match(forbidden, /forbidden/);
  assert.match(forbidden, /rule no-rm/);

  await browser.$("h1").moveTo();
  await screenshot(browser, "live-calls.png");
});

test("an upstream server killed from outside shows as restarting, then connected again", async () => {
  const { browser } = app;
  // An agent stays connected meanwhile (the sessions table then shows it, with its calls).
  const lingering = agent(info, w, [
    { op: "call", name: "shell", arguments: { command: "pwd" } },
    { op: "wait", ms: 15_000 },
  ]);
  await browser.$('[data-testid="nav-connections"]').click();
  const row = () => browser.$('[data-testid="server"][data-server="everything"]');
  await row().waitForDisplayed({ timeout: 10_000 });
  await until("the server connected", async () => (await row().getAttribute("data-state")) === "ready");
  assert.match(await row().$('[data-testid="server-state"]').getText(), /connected/);
  // Every state the row shows from now on, recorded in the page (a restart can be quick).
  await browser.execute(() => {
    const seen = [];
    globalThis.__serverStates = seen;
    const note = () => {
      const el = globalThis.document.querySelector('[data-server="everything"]');
      const state = el?.getAttribute("data-state");
      const words = el?.querySelector('[data-testid="server-state"]')?.textContent;
      if (state && seen[seen.length - 1]?.state !== state) seen.push({ state, words });
    };
    note();
    new globalThis.MutationObserver(note).observe(globalThis.document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  const servers = descendants(app.driverPid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("server-everything/dist/index.js");
    } catch {
      return false;
    }
  });
  assert.equal(servers.length, 1, `the everything server's process: ${servers}`);
  process.kill(servers[0], "SIGKILL");
  await until("one restart counted", async () => (await row().$('[data-testid="server-restarts"]').getText()) === "1", 30_000);
  await until("the server connected again", async () => (await row().getAttribute("data-state")) === "ready", 30_000);
  const states = await browser.execute(() => globalThis.__serverStates);
  console.log(`server states seen: ${JSON.stringify(states)}`);
  assert.equal(states[0].state, "ready");
  assert.ok(states.some((s) => s.state !== "ready" && /restarting/.test(s.words)), JSON.stringify(states));
  assert.equal(states[states.length - 1].state, "ready");
  assert.match(await row().$('[data-testid="server-state"]').getText(), /connected/);
  assert.match(await row().getText(), /exited|closed|ended/i);

  const sessions = [];
  await until("the lingering agent's session with its call", async () => {
    for (const s of await browser.$$('[data-testid="session"]')) {
      const said = await s.getText();
      sessions.push(said);
      if (said.startsWith("claude-code") && (await s.getAttribute("data-calls")) === "1") return true;
    }
    return false;
  }, 10_000).catch((e) => {
    throw new Error(`${e.message}; sessions seen: ${JSON.stringify(sessions.slice(-3))}`);
  });
  const snippets = await browser.$$('[data-testid="hookup-snippet"]');
  assert.equal(snippets.length, 3);
  // Claude Code reaches the hub through the stdio relay, told this hub's config folder: no token in
  // the snippet (issue 52).
  const relay = await snippets[0].getText();
  assert.match(relay, /claude mcp add --scope user/);
  assert.ok(relay.includes(`PORTCULLIS_CONFIG_DIR=`) && relay.includes(w.config), relay);
  assert.ok(!relay.includes("Bearer") && !relay.includes("/token"), relay);
  await snippets[0].$('[data-testid="copy-snippet"]').click();
  await until("the copy said", async () => /Copied|selected/.test(await snippets[0].getText()), 5_000);
  await browser.$("h1").moveTo();
  await screenshot(browser, "connections.png");
  assert.equal((await lingering).code, 0);
});

test("a burst of calls from several agents: the view keeps the last 500 (laying out only what is in view), stays responsive, counts what it missed", async () => {
  const { browser } = app;
  await browser.$('[data-testid="nav-live"]').click();
  await browser.$("h1").moveTo();
  const perClient = 600;
  const clients = 4;
  const steps = Array.from({ length: perClient }, () => ({ op: "call", name: "no-such-tool", arguments: {} }));
  const started = Date.now();
  const runs = await Promise.all(Array.from({ length: clients }, (_, i) => agent(info, w, steps, `burst-${i}`)));
  const took = (Date.now() - started) / 1000;
  for (const r of runs) assert.equal(r.code, 0, JSON.stringify(r.report).slice(0, 500));
  const calls = perClient * clients;
  console.log(`burst: ${calls} calls from ${clients} clients in ${took.toFixed(1)} s (${Math.round(calls / took)} calls/s, clients' start included)`);
  const counted = await until("the view to hold the last 500", async () => {
    const text = await browser.$('[data-testid="live-count"]').getText();
    return /of 500 calls/.test(text) ? text : null;
  }, 15_000);
  const missed = await browser.$('[data-testid="live-missed"]').getText();
  console.log(`after the burst: "${counted}"; "${missed}"`);
  // The view holds 500 calls but lays out only those in view (and a few beyond).
  const rows = await browser.$$('[data-testid="live-call"]');
  assert.ok(rows.length > 10 && rows.length < 80, `${rows.length} rows in the page`);
  // Scrolled to the end, the oldest kept calls are there.
  await browser.execute(() => {
    const area = globalThis.document.querySelector('[data-testid="live-scroll"]');
    area.scrollTop = area.scrollHeight;
  });
  await until("the last rows rendered", async () => {
    const all = await browser.$$('[data-testid="live-call"]');
    return all.length > 0 && (await browser.execute(() => globalThis.document.querySelector('[data-testid="live-scroll"]').scrollTop > 0));
  }, 5_000);
  await browser.execute(() => {
    globalThis.document.querySelector('[data-testid="live-scroll"]').scrollTop = 0;
  });
  // The list lays out only what is in view, so the rows found before scrolling may have been replaced:
  // look for the top row again once it is back in view.
  await until("the first rows back in view", async () => (await browser.$$('[data-testid="live-call"]')).length > 0, 5_000);
  const asked = Date.now();
  await browser.$('[data-testid="live-call"] [data-testid="live-call-toggle"]').click();
  await browser.$('[data-testid="live-steps"]').waitForDisplayed({ timeout: 5_000 });
  console.log(`expanding a call after the burst: ${Date.now() - asked} ms to its steps`);
  const blocked = await browser.$('[data-testid="live-step"]').getProperty("textContent");
  assert.match(blocked, /grant.*blocked.*denied/);
});
