// The answers beyond "once", end to end in the real app (tauri-driver + WebKitWebDriver under Xvfb)
// with the official MCP SDK client as the agent: "this session" by click lets the same call through for
// the rest of the session (listed, then revoked in the window); "always" by key opens the sheet, whose
// narrowed rule is written exactly as previewed and allows the next such call; a call whose deadline
// passes is a timeout in the ledger, not a denial; an approval answered over /v1/approvals leaves the
// window and a second answer is refused; a policy file broken while the app runs shows file:line:column and the working policy stays.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { agent, ledgerRow, openApp, screenshot } from "./harness.mjs";

const POLICY = `{
  "approvals": { "timeout_seconds": 15 },
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "read-only", "pattern": [["ls", "cat", "echo", "pwd", "wc"]], "decision": "allow" },
      { "id": "git-push", "pattern": ["git", "push"], "decision": "prompt", "justification": "pushing publishes commits" }
    ]
  }
}
`;

let w, app, info;

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
});

after(async () => {
  await app?.stop();
});

const card = () => app.browser.$('[data-testid="approval-card"]');
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const output = (report, i) => JSON.stringify(report.results[i].result.content);

test("this session: the same call runs again without asking; the grant is listed and revoked", async () => {
  const { browser } = app;
  const run = agent(info, w, [shell("make lint || true"), shell("make lint || true")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  await card().$('[data-testid="answer-session"]').click();
  const { code, report } = await run;
  assert.equal(code, 0, JSON.stringify(report));
  assert.ok(!report.results[1].result.isError, output(report, 1));
  const second = await ledgerRow(w, (c) => c.decided_by === "session_grant");
  assert.equal(second.tool, "shell");
  const grant = browser.$('[data-testid="session-grant"]');
  await grant.waitForDisplayed({ timeout: 10_000 });
  assert.match(await grant.getText(), /make lint/);
  await grant.$('[data-testid="revoke-grant"]').click();
  await grant.waitForDisplayed({ timeout: 10_000, reverse: true });
});

test("always by key: the sheet previews the rule, file, diff and impact; the rule written is the one shown", async () => {
  const { browser } = app;
  const policyFile = `${w.proj}/.portcullis/policy.json`;
  const before = readFileSync(policyFile, "utf8");
  // Once refused: the sheet's ledger line then counts it.
  const refused = agent(info, w, [shell("git log --oneline -1")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  await card().$('[data-testid="answer-deny"]').click();
  await refused;
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
  const run = agent(info, w, [shell("git log --oneline -1")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  await card().click();
  await browser.keys("3");
  const sheet = browser.$('[data-testid="always-sheet"]');
  await sheet.waitForDisplayed({ timeout: 10_000 });
  await sheet.$('[data-testid="always-impact"]').waitForDisplayed({ timeout: 20_000 });
  assert.match(
    await sheet.$('[data-testid="always-impact"]').getText(),
    /it would have allowed 1 past call the policy did not allow; 1 of them were refused then/,
  );
  assert.match(await sheet.$('[data-testid="always-file"]').getText(), /\.portcullis\/policy\.json$/);
  // Narrow the scope to the prefix `git log`; the preview follows.
  await sheet.$('[data-testid="always-scope"]').selectByAttribute("value", "2:prefix");
  const diff = sheet.$('[data-testid="always-diff"]');
  await browser.waitUntil(async () => (await diff.getText()).includes('["git","log"]'), { timeout: 10_000 });
  const shownAdded = (await browser.execute(() =>
    [...globalThis.document.querySelectorAll('[data-testid="always-diff"] tr.diff-added td:last-child')].map((td) => td.textContent),
  ));
  await screenshot(browser, "always-sheet.png");
  await browser.keys("Enter");
  const { code, report } = await run;
  assert.equal(code, 0, JSON.stringify(report));
  assert.ok(!report.results[0].result.isError, output(report, 0));
  // Exactly the previewed lines were added, nothing else changed — but for the receipt that created the
  // rule, named in its justification (it exists only once the answer is given, so no preview shows it).
  const now = readFileSync(policyFile, "utf8");
  const added = now.split("\n").filter((l) => !before.split("\n").includes(l));
  const receipt = /; receipt [0-9a-f]{64}/;
  assert.ok(added.some((l) => receipt.test(l)), `the rule names its receipt: ${added.join("\n")}`);
  assert.deepEqual(
    added.map((l) => l.replace(receipt, "")),
    shownAdded,
  );
  assert.match(added.join("\n"), /"pattern":\["git","log"\]/);
  const row = await ledgerRow(w, (c) => c.decided_operator === "e2e-operator (app): approved_always");
  assert.equal(row.tool, "shell");
  // The next `git log`, with other words, is allowed by the rule: no card.
  const next = await agent(info, w, [shell("git log --stat -1")]);
  assert.equal(next.code, 0, JSON.stringify(next.report));
  assert.ok(!next.report.results[0].result.isError, output(next.report, 0));
  const allowed = await ledgerRow(w, (c) => c.decided_by === "rule" && /^always-/.test(c.decided_rule ?? ""));
  assert.equal(allowed.policy_decision, "allow", JSON.stringify(allowed));
});

test("an approval answered over /v1/approvals leaves the window and settles once", async () => {
  const { browser } = app;
  const run = agent(info, w, [shell("make deploy")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  const id = await card().getAttribute("data-approval-id");
  // An answer names the digest of the arguments the card shows.
  const digest = await card().getAttribute("data-arguments-sha256");
  const operatorToken = readFileSync(`${w.config}/operator-token`, "utf8").trim();
  const url = new URL(`/v1/approvals/${id}`, info.mcp_url);
  const answered = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: JSON.stringify({ answer: "deny", arguments_sha256: digest, note: "not today" }),
  });
  assert.equal(answered.status, 200, await answered.text());
  await browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
  const { report } = await run;
  assert.match(output(report, 0), /not today/);
  const again = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: JSON.stringify({ answer: "once", arguments_sha256: digest }),
  });
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, "approval_answered");
  const row = await ledgerRow(w, (c) => c.decided_operator === "api: denied");
  assert.equal(row.status, "blocked");
});

test("a call whose deadline passes is recorded as a timeout, not a denial", async () => {
  const run = agent(info, w, [shell("make release")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  assert.match(await card().getText(), /then denied \(timeout\)/);
  const { report } = await run;
  assert.equal(report.results[0].result.isError, true);
  assert.match(output(report, 0), /no answer within 15 s/);
  await app.browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
  const row = await ledgerRow(w, (c) => c.decided_by === "approval_timeout");
  assert.equal(row.status, "blocked", JSON.stringify(row));
  assert.equal(row.policy_decision, "prompt", JSON.stringify(row));
  assert.equal(row.decided_operator ?? null, null, "nobody denied it");
});

test("a policy broken while the app runs shows file:line:column, and the working policy stays", async () => {
  const { browser } = app;
  const policyFile = `${w.proj}/.portcullis/policy.json`;
  const good = readFileSync(policyFile, "utf8");
  writeFileSync(policyFile, good.replace('"decision": "allow"', '"decision": "allow",,'));
  const banner = browser.$('[data-testid="policy-rejected"]');
  await banner.waitForDisplayed({ timeout: 15_000 });
  assert.match(await banner.getText(), /policy\.json:\d+:\d+/);
  await screenshot(browser, "broken-policy.png");
  // The working policy still allows `echo` without asking.
  const { report } = await agent(info, w, [shell("echo still-allowed")]);
  assert.ok(!report.results[0].result.isError, output(report, 0));
  assert.match(output(report, 0), /still-allowed/);
  writeFileSync(policyFile, good);
  await banner.waitForDisplayed({ timeout: 15_000, reverse: true });
});
