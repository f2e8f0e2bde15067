// Recoverable effects in the real app (tauri-driver + WebKitWebDriver under Xvfb), the official MCP SDK
// client as the agent: a call with an idempotency key is running on `portcullis serve` when the hub is
// SIGKILLed; after the restart the agent's retry is refused as "outcome unknown", the app (attached to
// the served hub) shows the call in its inbox, the ledger browser finds the refused retry by "Why
// refused", and the operator's "Run it again" lets the next retry run.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { agent, cliBin, freePort, hubInfo, screenshot, startApp, waitFor, world } from "./harness.mjs";

const POLICY = `{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "prompt", "rules": [
    { "id": "counting", "pattern": [["echo", "wc", "sleep"]], "decision": "allow" } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}`;
const SLOW = { command: "sleep 4 && echo ran >> migrated.txt && wc -l < migrated.txt" };
const keyed = { op: "call", name: "shell", arguments: SLOW, idempotencyKey: "migrate-2026-12" };

let w, serve, app, port, info;

function startServe() {
  rmSync(`${w.config}/hub.json`, { force: true });
  serve = spawn(cliBin, ["serve", "--port", String(port), "--approver", "none", "--project", w.proj, "--db", w.ledger], {
    env: w.env,
    stdio: "ignore",
  });
  return hubInfo(w);
}

before(async () => {
  w = world(POLICY);
  port = await freePort();
  info = await startServe();
  // The hub dies while the keyed call runs: after `started`, before its end.
  const first = agent(info, w, [keyed]);
  await waitFor("the call to run", () => (runningCalls().length ? true : null));
  const killed = serve;
  const gone = new Promise((resolve) => (killed.exitCode != null || killed.signalCode != null ? resolve() : killed.once("exit", resolve)));
  killed.kill("SIGKILL");
  await gone;
  // Not awaited: the client may wait out its own timeout for the answer that never comes.
  void first;
  info = await startServe();
  const retry = await agent(info, w, [keyed]);
  assert.equal(retry.code, 0, JSON.stringify(retry.report));
  const refused = retry.report.results[0].result;
  assert.ok(refused.isError, JSON.stringify(refused));
  assert.match(refused.content[0].text, /outcome_unknown/);
  assert.ok(!existsSync(`${w.proj}/migrated.txt`), "never run again by itself");
});

/** The ledger's calls started and not ended. */
function runningCalls() {
  const out = execFileSync(cliBin, ["ledger", "query", "--json", "--status", "running", "--db", w.ledger], { env: w.env });
  return JSON.parse(out.toString()).calls;
}

after(async () => {
  await app?.stop();
  serve?.kill("SIGTERM");
});

test("the operator sees the unknown outcome, finds the refused retry, and lets the next retry run", async () => {
  app = await startApp(w, port);
  const { browser } = app;
  const row = browser.$('[data-testid="unknown-outcome"]');
  await row.waitForDisplayed({ timeout: 20_000 });
  const text = await row.getText();
  assert.match(text, /migrate-2026-12/);
  assert.match(text, /default/);
  assert.match(text, /shell/);
  assert.match(text, /sleep 4 && echo ran >> migrated\.txt/);
  await screenshot(browser, "unknown-outcome.png");

  // The ledger browser: "Why refused" → outcome_unknown selects the refused retry.
  await browser.$('[data-testid="nav-ledger"]').click();
  await browser.$('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 });
  await browser.$('[data-testid="facet-reasons"]').click();
  const menu = browser.$('[data-testid="facet-menu-reasons"]');
  await menu.waitForDisplayed();
  await menu.$("label*=outcome_unknown").click();
  await browser.$('[data-testid="facet-reasons"]').click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="call-row"]')).length === 1, {
    timeout: 10_000,
    timeoutMsg: "one refused retry",
  });
  assert.match(await browser.execute(() => globalThis.location.hash), /reason=outcome_unknown/);
  await screenshot(browser, "ledger-outcome-unknown.png");

  // Back to the inbox: "Run it again" frees the key; the retry runs once.
  await browser.$('[data-testid="nav-approvals"]').click();
  await browser.$('[data-testid="unknown-outcome"] [data-testid="mark-retryable"]').click();
  await browser.$('[data-testid="unknown-outcomes"]').waitForDisplayed({ reverse: true, timeout: 10_000 });
  const ran = await agent(info, w, [keyed]);
  assert.equal(ran.code, 0, JSON.stringify(ran.report));
  const result = ran.report.results[0].result;
  assert.ok(!result.isError, JSON.stringify(result));
  assert.equal(result.content[0].text.split("\n")[0].trim(), "1");
  assert.equal(readFileSync(`${w.proj}/migrated.txt`, "utf8"), "ran\n");
});
