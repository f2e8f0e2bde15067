// The app never starts a second hub beside a running one: with `portcullis serve` holding the port for the
// same user, the app attaches to that hub (its command table over HTTP with the operator's token) and is
// its inbox. A real agent's prompted call on the served hub is a card in the app; the app's answer reaches
// that hub, the agent gets it, and the ledger names the app's operator. Closing the app stops nothing.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { agent, cliBin, freePort, hubInfo, ledgerRow, startApp, world } from "./harness.mjs";

let w, serve, app, port, info;

before(async () => {
  w = world(`{ "commands": { "default": "prompt", "rules": [ { "id": "printing", "pattern": ["echo"], "decision": "allow" } ] } }`);
  port = await freePort();
  serve = spawn(cliBin, ["serve", "--port", String(port), "--approver", "none", "--project", w.proj, "--db", w.ledger], {
    env: w.env,
    stdio: "ignore",
  });
  info = await hubInfo(w);
});

after(async () => {
  await app?.stop();
  serve?.kill("SIGTERM");
});

test("the app attaches to the hub that runs, answers its prompts, and the agent gets the answer", async () => {
  app = await startApp(w, port);
  const { browser } = app;
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });
  const call = agent(info, w, [{ op: "call", name: "shell", arguments: { command: "printf attached" } }]);
  const card = browser.$('[data-testid="approval-card"]');
  await card.waitForDisplayed({ timeout: 20_000 });
  assert.match(await card.$('[data-testid="command"]').getText(), /printf attached/);
  await card.$('[data-testid="answer-once"]').click();
  const { code, report } = await call;
  assert.equal(code, 0, JSON.stringify(report));
  assert.ok(!report.results[0].result.isError, JSON.stringify(report));
  const row = await ledgerRow(w, (c) => c.decided_by === "operator");
  assert.equal(row.decided_operator, "e2e-operator (app): approved_once", JSON.stringify(row));
  // The app's Live view follows the served hub's calls too.
  await browser.$('[data-testid="nav-live"]').click();
  // The view follows from when it opens: the first call's last events may still arrive (a busy machine),
  // so the new call is looked for among the rows rather than in an empty list.
  await browser.$('section[aria-label="Live calls"]').waitForDisplayed({ timeout: 10_000 });
  const echo = await agent(info, w, [{ op: "call", name: "shell", arguments: { command: "echo live-from-serve" } }]);
  assert.equal(echo.code, 0, JSON.stringify(echo.report));
  await browser.waitUntil(
    async () => {
      for (const row of await browser.$$('[data-testid="live-call"]')) {
        if (/live-from-serve/.test(await row.getText())) return true;
      }
      return false;
    },
    { timeout: 10_000, timeoutMsg: "the served hub's call never showed in Live" },
  );
  assert.equal(serve.exitCode, null, "the served hub still runs");
});
