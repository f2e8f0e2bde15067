// The app's one inbox across two hubs: the app attaches to the hub `portcullis serve` runs for its user
// (hub A), then the operator attaches a second hub (B, another user's config folder and ledger) by its
// address and operator token in Connections. A prompted call on each hub is a card in the one inbox,
// each saying which hub it waits on; each answer reaches its own hub, whose agent gets it and whose
// ledger names the app's operator. The window's title counts the calls waiting on both hubs.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { agent, cliBin, freePort, hubInfo, ledgerRow, screenshot, startApp, world } from "./harness.mjs";

const POLICY = `{ "commands": { "default": "prompt" } }`;

/** Whether an X window is titled exactly `title` (the native title the app sets). */
function windowTitled(title) {
  try {
    const ids = execFileSync("xdotool", ["search", "--name", `^${title}$`], { stdio: ["ignore", "pipe", "ignore"] });
    return ids.toString().trim() !== "";
  } catch {
    return false;
  }
}
let a, b, app;

async function served(w) {
  const port = await freePort();
  const child = spawn(cliBin, ["serve", "--port", String(port), "--approver", "none", "--project", w.proj, "--db", w.ledger], {
    env: w.env,
    stdio: "ignore",
  });
  return { w, port, child, info: await hubInfo(w) };
}

before(async () => {
  a = await served(world(POLICY));
  b = await served(world(POLICY));
});

after(async () => {
  await app?.stop();
  a?.child.kill("SIGTERM");
  b?.child.kill("SIGTERM");
});

test("two hubs, one inbox: each card names its hub and each answer reaches its own hub", async () => {
  app = await startApp(a.w, a.port);
  const { browser } = app;
  const $ = (sel) => browser.$(sel);
  await $('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });

  await $('[data-testid="nav-connections"]').click();
  await $('[data-testid="attach-url"]').setValue(`http://127.0.0.1:${b.port}`);
  await $('[data-testid="attach-token"]').setValue(readFileSync(`${b.w.config}/operator-token`, "utf8").trim());
  await $('[data-testid="attach-hub"]').click();
  await $('[data-testid="attached-hub"]').waitForDisplayed({ timeout: 10_000 });
  assert.match(await $('[data-testid="attached-hub"]').getText(), new RegExp(`127\\.0\\.0\\.1:${b.port}`));

  await $('[data-testid="nav-approvals"]').click();
  const onA = agent(a.info, a.w, [{ op: "call", name: "shell", arguments: { command: "printf on-hub-a" } }]);
  const onB = agent(b.info, b.w, [{ op: "call", name: "shell", arguments: { command: "printf on-hub-b" } }]);
  await browser.waitUntil(async () => (await browser.$$('[data-testid="approval-card"]')).length === 2, {
    timeout: 20_000,
    timeoutMsg: "a card from each hub",
  });
  const cards = await browser.$$('[data-testid="approval-card"]');
  const byHub = {};
  for (const card of cards) {
    const hub = await card.$('[data-testid="approval-hub"]').getText();
    const command = await card.$('[data-testid="command"]').getText();
    byHub[command.includes("on-hub-a") ? "a" : "b"] = { card, hub };
  }
  assert.match(byHub.a.hub, new RegExp(`127\\.0\\.0\\.1:${a.port}`));
  assert.match(byHub.b.hub, new RegExp(`127\\.0\\.0\\.1:${b.port}`));
  // The title counts the calls waiting on every hub.
  await browser.waitUntil(() => windowTitled("Portcullis — 2 waiting"), { timeout: 10_000, interval: 50 });
  await screenshot(browser, "two-hubs-inbox.png");

  await byHub.b.card.$('[data-testid="answer-once"]').click();
  const fromB = await onB;
  assert.equal(fromB.code, 0, JSON.stringify(fromB.report));
  assert.ok(!fromB.report.results[0].result.isError, JSON.stringify(fromB.report));
  await browser.waitUntil(async () => (await browser.$$('[data-testid="approval-card"]')).length === 1, { timeout: 10_000 });
  await $('[data-testid="approval-card"] [data-testid="answer-deny"]').click();
  const fromA = await onA;
  assert.equal(fromA.report.results[0].result.isError, true, JSON.stringify(fromA.report));

  const rowB = await ledgerRow(b.w, (c) => c.decided_by === "operator");
  assert.equal(rowB.decided_operator, "e2e-operator (app): approved_once", JSON.stringify(rowB));
  const rowA = await ledgerRow(a.w, (c) => c.decided_by === "operator");
  assert.equal(rowA.decided_operator, "e2e-operator (app): denied", JSON.stringify(rowA));
});
