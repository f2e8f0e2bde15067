// The ledger browser end to end in the real app (tauri-driver + WebKitWebDriver under Xvfb): the hub's
// own ledger written by real MCP calls (the official SDK client as the agent) — filter and search narrow
// the rows, the detail shows a redacted secret as redacted and never its value, the live tail shows a
// call made while the view is open — and a generated 1,000,000-call ledger opened by path: first rows,
// a filter and a search narrow to the expected calls (checked against `portcullis ledger query`), a
// session's timeline lists exactly that session's calls, an export writes exactly the filtered calls;
// and a file that is not a ledger is refused and left byte for byte as it was.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { agent, cliBin, ledgerRow, openApp, repo, screenshot } from "./harness.mjs";

const POLICY = `{
  "approvals": { "timeout_seconds": 2 },
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "echo", "pattern": [["echo", "export", "ls"]], "decision": "allow" },
      { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "justification": "deleting is for people" }
    ]
  }
}
`;
// A GitHub token's shape: the redactor replaces it before anything is recorded.
const SECRET = "ghp_" + "Zq7".repeat(12);
const BIG_CALLS = Number(process.env.PORTCULLIS_E2E_LEDGER_CALLS ?? 1_000_000);
const target = process.env.CARGO_TARGET_DIR ?? path.join(repo, "target");
const fixtureBin = process.env.PORTCULLIS_FIXTURE_BIN ?? path.join(target, "debug/examples/ledger_fixture");

let w, app, info, big;
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const $ = (sel) => app.browser.$(sel);
const $$ = (sel) => app.browser.$$(sel);
const rowTexts = async () => (await $$('[data-testid="call-row"]').map((r) => r.getText()));
const cli = (...args) => JSON.parse(execFileSync(cliBin, ["ledger", ...args, "--json"], { env: w.env, maxBuffer: 1 << 28 }).toString());

/** Goes to the ledger view with this query string (as a bookmark would). */
async function go(params) {
  await app.browser.execute((hash) => {
    globalThis.location.hash = hash;
  }, `#ledger?${params}`);
}

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
  const { code, report } = await agent(info, w, [
    shell("echo hello-ledger"),
    shell(`echo GITHUB_TOKEN=${SECRET} && echo token-set`),
    shell("rm -rf build"),
    shell("ls"),
  ]);
  assert.equal(code, 0, JSON.stringify(report));
  await ledgerRow(w, (c) => c.status === "blocked");
  big = `${w.base}/big.ledger`;
  const started = Date.now();
  const made = JSON.parse(execFileSync(fixtureBin, [big, String(BIG_CALLS)], { env: w.env }).toString());
  console.log(`generated ${made.calls} calls in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await $('[data-testid="nav-ledger"]').click();
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 }).catch(async (e) => {
    await screenshot(app.browser, "ledger-failed-to-open.png");
    throw e;
  });
});

after(async () => {
  await app?.stop();
  // the generated ledger is over a gigabyte: a CI machine's disk is not the place to keep it
  if (big) for (const suffix of ["", "-wal", "-shm"]) rmSync(big + suffix, { force: true });
});

test("the hub's ledger: filter and search narrow the rows to the expected calls", async () => {
  assert.match(await $('[data-testid="ledger-name"]').getText(), /hub's ledger/);
  await app.browser.waitUntil(async () => (await rowTexts()).length === 4, { timeout: 10_000, timeoutMsg: "four calls" });
  await $('[data-testid="facet-statuses"]').click();
  const menu = $('[data-testid="facet-menu-statuses"]');
  await menu.waitForDisplayed();
  await menu.$("label*=blocked").click();
  await $('[data-testid="facet-statuses"]').click();
  await app.browser.waitUntil(async () => (await rowTexts()).length === 1, { timeout: 10_000, timeoutMsg: "one blocked call" });
  assert.match((await rowTexts())[0], /rm -rf build/);
  assert.match(await app.browser.execute(() => globalThis.location.hash), /status=blocked/);
  await $('[data-testid="chip"] button').click();
  await $('[data-testid="ledger-search"]').setValue("hello");
  await app.browser.waitUntil(async () => (await rowTexts()).length === 1, { timeout: 10_000, timeoutMsg: "one search hit" });
  assert.equal(await $('[data-testid="call-row"] mark').getText(), "hello");
  await $('[data-testid="ledger-search"]').clearValue();
  await go("");
  await app.browser.waitUntil(async () => (await rowTexts()).length === 4, { timeout: 10_000 });
});

test("the detail shows a redacted secret as redacted and never its value", async () => {
  const rows = await $$('[data-testid="call-row"]');
  let clicked = false;
  for (const r of rows) {
    if ((await r.getText()).includes("GITHUB_TOKEN")) {
      await r.click();
      clicked = true;
      break;
    }
  }
  assert.ok(clicked, `the call with the token is listed: ${JSON.stringify(await rowTexts())}`);
  const args = $('[data-testid="drawer-arguments"]');
  await args.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await args.$('[data-testid="redacted-span"]').getText(), "[REDACTED]");
  const page = await app.browser.execute(() => globalThis.document.body.innerText + globalThis.document.body.innerHTML);
  assert.ok(!page.includes(SECRET), "the secret's value is nowhere in the window");
  assert.ok(!page.includes(SECRET.slice(4, 20)), "nor any part of it");
  assert.match(await $('[data-testid="drawer-decider"]').getText(), /rule/);
  // Each record on one line, in the words `portcullis ledger show` prints (the secret redacted there too).
  const summaries = await $$('[data-testid="drawer-record-summary"]').map((s) => s.getText());
  assert.ok(summaries.some((s) => /GITHUB_TOKEN/.test(s) && /REDACTED/.test(s)), JSON.stringify(summaries));
  await screenshot(app.browser, "ledger-detail.png");
  await app.browser.keys(["Escape"]);
  await $('[data-testid="call-drawer"]').waitForDisplayed({ reverse: true, timeout: 5_000 });
});

test("a call goes from its detail to the policy playground and to a rule", async () => {
  const open = async () => {
    await $('[data-testid="nav-ledger"]').click();
    const row = await app.browser.waitUntil(
      async () => {
        for (const r of await $$('[data-testid="call-row"]')) if ((await r.getText()).includes("echo hello-ledger")) return r;
        return false;
      },
      { timeout: 10_000, timeoutMsg: "the echo call is not listed" },
    );
    await row.click();
    await $('[data-testid="drawer-arguments"]').waitForDisplayed({ timeout: 10_000 });
  };
  await open();
  await $('[data-testid="try-in-playground"]').click();
  const box = $('[data-testid="playground-command"]');
  await box.waitForDisplayed({ timeout: 20_000 });
  assert.equal(await box.getValue(), "echo hello-ledger");
  await open();
  await $('[data-testid="make-rule"]').click();
  const offered = $('[data-testid="ledger-candidate"]');
  await offered.waitForDisplayed({ timeout: 20_000 });
  assert.match(await offered.getText(), /echo hello-ledger/);
  assert.ok(await offered.$('[data-testid="candidate-add"]').isExisting(), "one simple command: offered as a rule");
  await $('[data-testid="nav-ledger"]').click();
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 10_000 });
  await app.browser.keys(["Escape"]);
});

test("the live tail shows a call made while the view is open", async () => {
  const nonce = `tail-${Date.now()}`;
  const { code } = await agent(info, w, [shell(`echo ${nonce}`)]);
  assert.equal(code, 0);
  await app.browser.waitUntil(async () => (await rowTexts()).some((t) => t.includes(nonce)), {
    timeout: 10_000,
    timeoutMsg: "the new call did not appear",
  }).catch(async (e) => {
    await screenshot(app.browser, "ledger-tail-failed.png");
    throw new Error(`${e.message}: ${JSON.stringify(await rowTexts())}`);
  });
});

test("a file that is not a ledger is refused and left byte for byte as it was", async () => {
  const file = `${w.base}/notes.db`;
  const bytes = Buffer.from("these are not the calls you are looking for\n".repeat(200));
  writeFileSync(file, bytes);
  const before = statSync(file);
  await $('[data-testid="ledger-path"]').setValue(file);
  await $('[data-testid="ledger-open"]').click();
  const error = $('[data-testid="ledger-error"]');
  await error.waitForDisplayed({ timeout: 10_000 });
  assert.match(await error.getText(), /not a Portcullis ledger[\s\S]*not_a_ledger/);
  await screenshot(app.browser, "ledger-refused.png");
  assert.deepEqual(readFileSync(file), bytes);
  assert.equal(statSync(file).mtimeMs, before.mtimeMs);
  assert.deepEqual(
    execFileSync("ls", ["-a", w.base]).toString().split("\n").filter((n) => n.startsWith("notes.db")),
    ["notes.db"],
    "no -wal or -shm beside it",
  );
});

test("a 1M-call ledger opened by path: first rows, filter and search narrow to the expected calls", async () => {
  await $('[data-testid="ledger-path"]').setValue(big);
  await $('[data-testid="ledger-open"]').click();
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 });
  assert.match(await $('[data-testid="ledger-summary"]').getText(), new RegExp(`${BIG_CALLS.toLocaleString("en-US")} calls`));
  await screenshot(app.browser, "ledger-calls.png");
  // Blocked kubectl calls: the rows are exactly the newest of what the CLI lists for the same filter.
  await go(`file=${encodeURIComponent(big)}&status=blocked&q=kubectl`);
  const expected = cli("query", "--db", big, "--status", "blocked", "--search", "kubectl", "--limit", "20").calls;
  assert.ok(expected.length > 0);
  await app.browser.waitUntil(
    async () => (await $$('[data-testid="call-row"]').map((r) => r.getAttribute("data-call"))).slice(0, 20).join() === expected.map((c) => c.call_id).join(),
    { timeout: 20_000, timeoutMsg: "the rows are not the CLI's" },
  );
  for (const text of (await rowTexts()).slice(0, 20)) assert.match(text, /(blocked|timed out)[\s\S]*kubectl/);
  await screenshot(app.browser, "ledger-search.png");
});

test("a session's timeline lists exactly that session's calls", async () => {
  const session = cli("query", "--db", big, "--limit", "1").calls[0].session_id;
  await go(`file=${encodeURIComponent(big)}&tab=sessions&session=${encodeURIComponent(session)}`);
  const timeline = $('[data-testid="session-timeline"]');
  await timeline.waitForDisplayed({ timeout: 20_000 });
  const shown = await $$('[data-testid="timeline-call"]').map((c) => c.getAttribute("data-call"));
  const expected = cli("query", "--db", big, "--session", session, "--limit", "1000").calls.map((c) => c.call_id);
  assert.deepEqual([...shown].sort(), [...expected].sort());
  await screenshot(app.browser, "ledger-sessions.png");
});

test("stats over the 1M calls, filterable like the table", async () => {
  await go(`file=${encodeURIComponent(big)}&tab=stats`);
  const total = $('[data-testid="stat-total"]');
  await total.waitForDisplayed({ timeout: 20_000 }).catch(async (e) => {
    await screenshot(app.browser, "ledger-stats-failed.png");
    throw e;
  });
  assert.equal(await total.getText(), BIG_CALLS.toLocaleString("en-US"));
  await $('[data-testid="time-chart"] canvas').waitForDisplayed({ timeout: 10_000 });
  await screenshot(app.browser, "ledger-stats.png");
  await go(`file=${encodeURIComponent(big)}&tab=stats&tool=shell`);
  const shellCalls = cli("stats", "--db", big, "--tool", "shell").total;
  await app.browser.waitUntil(async () => (await total.getText()) === shellCalls.toLocaleString("en-US"), { timeout: 20_000 });
});

test("an export writes exactly the filtered calls", async () => {
  await go(`file=${encodeURIComponent(big)}&status=blocked&q=kubectl`);
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 });
  const out = `${w.base}/blocked-kubectl.jsonl`;
  await $('[data-testid="ledger-export"]').click();
  await $('[data-testid="export-file"]').setValue(out);
  await $('[data-testid="export-start"]').click();
  await $('[data-testid="export-done"]').waitForDisplayed({ timeout: 60_000 });
  await screenshot(app.browser, "ledger-export.png");
  const exported = new Set(
    readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .map((r) => `${r.session_id}/${r.call_id}`),
  );
  const expected = new Set();
  let cursor = null;
  do {
    const page = cli("query", "--db", big, "--status", "blocked", "--search", "kubectl", "--limit", "1000", ...(cursor ? ["--before", cursor] : []));
    for (const c of page.calls) expected.add(`${c.session_id}/${c.call_id}`);
    cursor = page.next;
  } while (cursor);
  assert.deepEqual([...exported].sort(), [...expected].sort());
  await $('[data-testid="export-dialog"]').$("button=Close").click();
});
