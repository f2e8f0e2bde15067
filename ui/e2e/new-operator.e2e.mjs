// What a new operator found (issue 31), end to end in the real app (tauri-driver + WebKitWebDriver under
// Xvfb) with the official MCP SDK client as the agent, on a first day: no policy file anywhere, the
// built-in default in force. A write of .claude/settings.json asks, and the card, the live view and the
// ledger all name the protected place that decided (not "the policy's default"). A command holding an
// ESC shows it escaped the same way on the command line, in the parts table and in the rule reasons.
// "Always" is offered: its sheet says it creates the user's policy file, and Enter writes exactly that
// file; the next identical call runs without asking.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { agent, ledgerRow, openApp, screenshot } from "./harness.mjs";

let w, app, info;

before(async () => {
  ({ w, app, info } = await openApp(null));
});

after(async () => {
  await app?.stop();
});

const card = () => app.browser.$('[data-testid="approval-card"]');
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const PLACE = "protected place (executed content): Claude Code settings (hooks and commands run code)";

test("a protected place's prompt names the place as the decider: card, live view, ledger", async () => {
  const { browser } = app;
  const run = agent(info, w, [{ op: "call", name: "write", arguments: { path: ".claude/settings.json", content: "{}" } }]);
  await card().waitForDisplayed({ timeout: 20_000 });
  const decided = await card().$('[data-testid="decided-by"]').getText();
  assert.ok(decided.includes(`decided by: ${PLACE} at ${w.proj}/.claude/settings.json`), decided);
  const rules = await card().$('[data-testid="rules"]').getText();
  assert.doesNotMatch(rules, /the policy's default decided/);
  await screenshot(browser, "protected-place-card.png");
  // Live (which shows the calls that pass while it is open): the answer, given over the operator API
  // while the live view is open, ends the call; its policy step says what made it ask.
  const id = await card().getAttribute("data-approval-id");
  const digest = await card().getAttribute("data-arguments-sha256");
  await browser.$('[data-testid="nav-live"]').click();
  await browser.$('[data-testid="live-empty"]').waitForDisplayed({ timeout: 10_000 });
  const operatorToken = readFileSync(`${w.config}/operator-token`, "utf8").trim();
  const answered = await fetch(new URL(`/v1/approvals/${id}`, info.mcp_url), {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: JSON.stringify({ answer: "deny", arguments_sha256: digest }),
  });
  assert.equal(answered.status, 200, await answered.text());
  const { report } = await run;
  assert.ok(report.results[0].result.isError, JSON.stringify(report));
  assert.ok(!existsSync(`${w.proj}/.claude/settings.json`));
  const row = browser.$('[data-testid="live-call"]');
  await row.waitForDisplayed({ timeout: 10_000 });
  await row.$('[data-testid="live-call-toggle"]').click();
  const policyStep = browser.$('[data-testid="live-step"][data-stage="policy"]');
  await policyStep.waitForDisplayed({ timeout: 10_000 });
  const said = await policyStep.getProperty("textContent");
  assert.ok(said.includes(PLACE), said);
  assert.match(said, /prompt/, said);
  // Ledger: the call's detail names it beside what the policy said.
  const recorded = await ledgerRow(w, (c) => c.tool === "write");
  assert.equal(recorded.policy_decision, "prompt");
  await browser.$('[data-testid="nav-ledger"]').click();
  const call = browser.$(`[data-testid="call-row"][data-call="${recorded.call_id}"]`);
  await call.waitForDisplayed({ timeout: 20_000 });
  await call.click();
  const policyDecider = browser.$('[data-testid="drawer-policy-decider"]');
  await policyDecider.waitForDisplayed({ timeout: 10_000 });
  assert.ok((await policyDecider.getText()).includes(PLACE), await policyDecider.getText());
  await browser.keys("Escape");
  await browser.$('[data-testid="nav-approvals"]').click();
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
});

test("agent text looks the same on the command line, in the parts table and in the reasons", async () => {
  const { browser } = app;
  const run = agent(info, w, [shell("touch \u001b[2Jpart-file")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  const command = await card().$('[data-testid="command"]').getText();
  assert.ok(command.includes("touch \\x1b[2Jpart-file"), command);
  const part = await card().$('[data-testid="part"]').getText();
  assert.ok(part.includes("touch \\x1b[2Jpart-file"), part);
  assert.ok(!part.includes("\u001b") && !part.includes("touch  [2J"), part);
  await card().$('[data-testid="answer-deny"]').click();
  await run;
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
});

test("always on a first day creates the user's policy file, shown in the sheet before it is written", async () => {
  const { browser } = app;
  const userPolicy = `${w.config}/policy.json`;
  assert.ok(!existsSync(userPolicy));
  const run = agent(info, w, [shell("touch first-day-file")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  const offer = await card().$('[data-testid="always-offer"]').getText();
  assert.ok(offer.includes(`Always creates your policy ${userPolicy}`), offer);
  await card().click();
  await browser.keys("3");
  const sheet = browser.$('[data-testid="always-sheet"]');
  await sheet.waitForDisplayed({ timeout: 10_000 });
  const creates = sheet.$('[data-testid="always-creates"]');
  await creates.waitForDisplayed({ timeout: 20_000 });
  assert.ok((await creates.getText()).includes(userPolicy), await creates.getText());
  // The diff is against the built-in default the file starts from: the added lines are the rule alone.
  const added = await browser.execute(() =>
    [...globalThis.document.querySelectorAll('[data-testid="always-diff"] tr.diff-added td:last-child')].map((td) => td.textContent),
  );
  assert.ok(added.length > 0 && added.length <= 3, JSON.stringify(added));
  assert.match(added.join("\n"), /"pattern":\["touch","first-day-file"\]/);
  await screenshot(browser, "always-first-day.png");
  await browser.keys("Enter");
  const { code, report } = await run;
  assert.equal(code, 0, JSON.stringify(report));
  assert.ok(!report.results[0].result.isError, JSON.stringify(report));
  assert.ok(existsSync(`${w.proj}/first-day-file`));
  const written = JSON.parse(readFileSync(userPolicy, "utf8"));
  const ids = written.commands.rules.map((r) => r.id);
  assert.ok(ids.includes("read-only-basics") && /^always-/.test(ids.at(-1)), ids.join());
  // The hub now finds the user's policy: the same command runs without a card.
  const next = await agent(info, w, [shell("touch first-day-file")]);
  assert.ok(!next.report.results[0].result.isError, JSON.stringify(next.report));
  const allowed = await ledgerRow(w, (c) => c.decided_by === "rule" && /^always-/.test(c.decided_rule ?? ""));
  assert.equal(allowed.policy_decision, "allow");
});
