// The policy workbench end to end in the real app (tauri-driver + WebKitWebDriver under Xvfb), with the
// official MCP SDK client as the agent writing the ledger: a rule added in the structured editor shows in
// the source; an example that does not match gets its failure mark and why; the playground's trace of
// `git status && rm -rf ~` names the deciding rule; a replay of a draft that loosens a rule lists exactly
// the calls that change; a draft that does not load is refused at save and a syntax error shows at its
// line while the hub keeps its policy; a save puts the rule in force for the next MCP call; and a change
// on disk while editing is detected and merged, never overwritten.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { agent, ledgerCalls, openApp, screenshot, settled } from "./harness.mjs";

const POLICY = `{
  "approvals": { "timeout_seconds": 2 },
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "read-only", "pattern": [["ls", "cat", "echo", "pwd"]], "decision": "allow", "match": ["ls -la"] },
      { "id": "git-read", "pattern": ["git", ["status", "log", "diff"]], "decision": "allow", "match": ["git status"], "not_match": ["git push"] },
      { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "justification": "deleting is for people", "match": ["rm -rf build"] },
      { "id": "ask-curl", "pattern": ["curl"], "decision": "prompt", "justification": "the network" }
    ]
  }
}
`;

let w, app, info, file;
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const $ = (sel) => app.browser.$(sel);
/** The source editor's text, lines as lines (the document is short: every line is drawn). */
const source = () => app.browser.execute(() => globalThis.document.querySelector(".cm-content")?.innerText ?? "");

/** Replaces an input's value by typing, a key at a time at a fast typist's pace (each key is an edit of
 * the policy text). Keys sent back to back by WebDriver (about 1 ms apart) lose every space after the
 * first in WebKitGTK while each key edits the text; noted in docs, not hidden here. */
async function typeInto(element, text) {
  await element.click();
  await app.browser.keys(["Control", "a"]);
  await app.browser.keys(["Backspace"]);
  for (const key of text) {
    await app.browser.keys([key]);
    await new Promise((r) => setTimeout(r, 15));
  }
}

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
  file = `${w.proj}/.portcullis/policy.json`;
  // Real calls for the ledger: two curl calls the operator never answers (prompt, timed out), the rest decided by rules.
  const { code, report } = await agent(info, w, [
    shell("ls"),
    shell("git status"),
    shell("curl -s http://127.0.0.1:9/a"),
    shell("rm -rf build"),
    shell("curl -sI http://127.0.0.1:9/b"),
    shell("echo done"),
  ]);
  assert.equal(code, 0, JSON.stringify(report));
  await $('[data-testid="nav-policy"]').click();
  await $('[data-testid="rules-panel"]').waitForDisplayed({ timeout: 20_000 }).catch(async (e) => {
    await screenshot(app.browser, "policy-failed-to-open.png");
    throw e;
  });
  await $('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 10_000 });
});

after(async () => {
  await app?.stop();
});

test("a rule added in the structured editor shows in the source; a failing example says which word", async () => {
  assert.doesNotMatch(await source(), /rule-5/);
  await $('[data-testid="rule-add"]').click();
  const card = $('[data-testid="rule-4"]');
  await card.waitForDisplayed({ timeout: 5_000 });
  await app.browser.waitUntil(async () => (await source()).includes('"id": "rule-5"'), { timeout: 5_000 });
  await typeInto(card.$('[data-testid="pattern-word-0"]'), "make");
  await app.browser.waitUntil(async () => /"pattern": \[\s*"make"\s*\]/.test(await source()), { timeout: 5_000, timeoutMsg: "the source did not follow" });
  const add = card.$('[data-testid="example-add-match"]');
  await add.click();
  await app.browser.keys([..."make test", "Enter"]);
  await card.$('[data-testid="example"][data-mark="pass"]').waitForDisplayed({ timeout: 5_000 });
  await add.click();
  await app.browser.keys([..."npm test", "Enter"]);
  const failing = card.$('[data-testid="example"][data-mark="fail"]');
  await failing.waitForDisplayed({ timeout: 5_000 });
  assert.match(await failing.$('[data-testid="example-why"]').getText(), /word 1 of `npm test` is `npm`; the pattern wants `make`/);
  await $('[data-testid="draft-state"][data-loads="false"]').waitForDisplayed({ timeout: 5_000 });
  // The failing example is marked in the source too, on its line.
  const marked = await $(".cm-line.cm-external-error-line").getText();
  assert.match(marked, /npm test/);
  await screenshot(app.browser, "policy-rules.png");
  // A draft that does not load is refused at save; the file on disk stays.
  await $('[data-testid="draft-save"]').click();
  await $('[data-testid="save-confirm"]').waitForClickable({ timeout: 10_000 });
  await $('[data-testid="save-confirm"]').click();
  const error = $('[data-testid="save-error"]');
  await error.waitForDisplayed({ timeout: 5_000 });
  assert.equal(await error.getAttribute("data-code"), "policy_rule");
  assert.equal(readFileSync(file, "utf8"), POLICY);
  await app.browser.keys(["Escape"]);
  // Undo takes the failing example back out, in one step.
  await $('[data-testid="draft-undo"]').click();
  await $('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 5_000 });
  assert.doesNotMatch(await source(), /npm test/);
});

test("the playground's trace of `git status && rm -rf ~` names the deciding rule", async () => {
  await $('[data-testid="panel-playground"]').click();
  const box = $('[data-testid="playground-command"]');
  await box.waitForDisplayed({ timeout: 5_000 });
  assert.equal(await box.getValue(), "git status && rm -rf ~");
  await $('[data-testid="playground-try"]').click();
  const trace = $('[data-testid="playground-trace"]');
  await trace.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await trace.getAttribute("data-decision"), "forbidden");
  assert.match(await trace.$('[data-testid="trace-deciding"]').getText(), /decided by rule no-rm \(forbidden\) · layer 1, project/);
  const parts = await trace.$$('[data-testid="trace-part"]').map((p) => p.getText());
  assert.equal(parts.length, 2, parts.join("\n"));
  assert.match(parts[0], /git status[\s\S]*allow[\s\S]*git-read/);
  assert.match(parts[1], /rm -rf ~[\s\S]*forbidden[\s\S]*no-rm/);
  await screenshot(app.browser, "policy-playground.png");
});

test("a replay of a draft that loosens a rule lists exactly the calls that change", async () => {
  await $('[data-testid="panel-rules"]').click();
  await $('[data-testid="rule-3"] [data-testid="rule-decision-allow"]').click();
  await app.browser
    .waitUntil(async () => /"id": "ask-curl", "pattern": \["curl"\], "decision": "allow"/.test(await source()), { timeout: 5_000 })
    .catch(async (e) => assert.fail(`${e.message}\n${await source()}`));
  await $('[data-testid="panel-replay"]').click();
  await $('[data-testid="replay-start"]').waitForClickable({ timeout: 5_000 });
  await $('[data-testid="replay-start"]').click();
  const outcome = $('[data-testid="replay-outcome"]');
  await outcome.waitForDisplayed({ timeout: 30_000 });
  const changed = await $$('[data-testid="replay-change"]').map((c) => c.getAttribute("data-call"));
  const expected = ledgerCalls(w).filter((c) => c.policy_rule === "ask-curl").map((c) => c.call_id);
  assert.equal(expected.length, 2, JSON.stringify(ledgerCalls(w)));
  assert.deepEqual([...changed].sort(), [...expected].sort());
  assert.equal(await outcome.getAttribute("data-loosened"), "2");
  assert.equal(await $('[data-testid="matrix-prompt-allow"]').getText(), "2 ▲");
  assert.equal(await $('[data-testid="matrix-allow-allow"]').getText(), "3");
  assert.equal(await $('[data-testid="matrix-forbidden-forbidden"]').getText(), "1");
  await $('[data-testid="replay-change"]').click();
  const traces = $('[data-testid="replay-traces"]');
  await traces.waitForDisplayed({ timeout: 10_000 });
  assert.match(await traces.getText(), /Policy in force[\s\S]*prompt[\s\S]*Draft[\s\S]*allow/);
  await screenshot(app.browser, "policy-replay.png");
});

test("a syntax error shows at its line and the hub keeps its policy; a save puts the rule in force for the next MCP call", async () => {
  // Break the draft at its end: the error is marked on the last line.
  await $(".cm-content").click();
  await app.browser.keys(["Control", "End"]);
  await app.browser.keys(["x"]);
  const line = $(".cm-line.cm-external-error-line");
  await line.waitForDisplayed({ timeout: 5_000 });
  assert.equal(await line.getText(), "x", "the last line, where the text goes on after the policy");
  const lines = await app.browser.execute(() => globalThis.document.querySelectorAll(".cm-line").length);
  assert.equal(await line.getAttribute("data-line"), String(lines));
  assert.match(await $('[data-testid="draft-state"]').getProperty("textContent"), /does not load: .*:\d+:\d+: trailing characters/);
  await $('[data-testid="draft-save"]').click();
  await $('[data-testid="save-confirm"]').waitForClickable({ timeout: 10_000 });
  await $('[data-testid="save-confirm"]').click();
  await $('[data-testid="save-error"]').waitForDisplayed({ timeout: 5_000 });
  assert.equal(await $('[data-testid="save-error"]').getAttribute("data-code"), "policy_syntax");
  await screenshot(app.browser, "policy-syntax-error.png");
  await app.browser.keys(["Escape"]);
  assert.equal(readFileSync(file, "utf8"), POLICY, "a broken draft is never written");
  await app.browser.keys(["Backspace"]);
  await $('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 5_000 });

  // Saved: the diff first, then the hub reloads it and the next curl call is allowed by the rule.
  await $('[data-testid="draft-save"]').click();
  const diff = $('[data-testid="save-diff"]');
  await diff.waitForDisplayed({ timeout: 10_000 });
  assert.match(await diff.getText(), /−\s+\{ "id": "ask-curl".*"decision": "prompt"[\s\S]*\+\s+\{ "id": "ask-curl".*"decision": "allow"/);
  await screenshot(app.browser, "policy-save.png");
  await $('[data-testid="save-confirm"]').click();
  await app.browser.waitUntil(async () => (await $('[data-testid="draft-reloaded"]').getText()).includes("In force since"), { timeout: 10_000 });
  assert.match(readFileSync(file, "utf8"), /"id": "ask-curl", "pattern": \["curl"\], "decision": "allow"/);
  const { code, report } = await agent(info, w, [shell("curl -s http://127.0.0.1:9/c")]);
  assert.equal(code, 0, JSON.stringify(report));
  const [row] = ledgerCalls(w);
  assert.equal(row.policy_rule, "ask-curl", JSON.stringify(row));
  assert.equal(row.policy_decision, "allow", JSON.stringify(row));
  assert.equal(row.decided_by, "rule", JSON.stringify(row));
});

test("a change on disk while editing is detected and merged, never overwritten", async () => {
  await $('[data-testid="panel-rules"]').click();
  const justification = $('[data-testid="rule-2"] input[aria-label="Justification"]');
  await typeInto(justification, "deleting is for people, always");
  await $('[data-testid="draft-dirty"]').waitUntil(async function () {
    return (await this.getText()).includes("unsaved");
  });
  // What an "always" answer does: a rule appended to the file on disk.
  const onDisk = JSON.parse(readFileSync(file, "utf8"));
  onDisk.commands.rules.push({ id: "always-pwd", pattern: ["pwd"], decision: "allow", exact: true, match: ["pwd"] });
  const theirs = JSON.stringify(onDisk, null, 2) + "\n";
  // Written as the hub writes an amendment: whole, by rename (a plain write can be read half-done).
  writeFileSync(`${file}.next`, theirs);
  renameSync(`${file}.next`, file);
  const banner = $('[data-testid="draft-conflict"]');
  await banner.waitForDisplayed({ timeout: 10_000 });
  await app.browser.waitUntil(async () => /changed on disk while you edited it[\s\S]*always-pwd/.test(await banner.getText()), {
    timeout: 10_000,
    timeoutMsg: "the banner never named the rule added on disk (always-pwd)",
  });
  await screenshot(app.browser, "policy-conflict.png");
  await $('[data-testid="conflict-merge"]').click();
  await banner.waitForDisplayed({ timeout: 5_000, reverse: true });
  const merged = await source();
  assert.match(merged, /always-pwd/);
  assert.match(merged, /deleting is for people, always/);
  assert.equal(readFileSync(file, "utf8"), theirs, "nothing was written yet");
  await $('[data-testid="draft-save"]').click();
  await $('[data-testid="save-confirm"]').waitForClickable({ timeout: 10_000 });
  await $('[data-testid="save-confirm"]').click();
  await $('[data-testid="save-dialog"]').waitForDisplayed({ timeout: 10_000, reverse: true });
  const saved = readFileSync(file, "utf8");
  assert.match(saved, /always-pwd/);
  assert.match(saved, /deleting is for people, always/);
  await settled(app.browser);
});

test("the grant matrix shows which tools agents would see; the path probe asks the real tools", async () => {
  await $('[data-testid="panel-grants"]').click();
  await $('[data-testid="grants-panel"]').waitForDisplayed({ timeout: 5_000 });
  await $('input[aria-label="New scope name"]').setValue("agents");
  await $('[data-testid="scope-add"]').click();
  const shellRow = $('[data-testid="grant-row"][data-tool="shell"]');
  await shellRow.waitForDisplayed({ timeout: 10_000 });
  const cell = shellRow.$('[data-testid="grant-cell-0"]');
  await cell.waitForDisplayed({ timeout: 5_000 });
  await cell.click(); // allow
  await cell.click(); // deny
  await app.browser.waitUntil(async () => (await shellRow.$('[data-testid="grant-visible"]').getAttribute("data-visible")) === "false", { timeout: 5_000 });
  assert.match(await shellRow.$('[data-testid="grant-visible"]').getText(), /no — agents/);
  assert.match(await source(), /"name": "agents", "deny": \["shell"\]/);
  await screenshot(app.browser, "policy-grants.png");
  await cell.click(); // neither: shell visible again
  await app.browser.waitUntil(async () => (await shellRow.$('[data-testid="grant-visible"]').getAttribute("data-visible")) === "true", { timeout: 5_000 });

  await $('[data-testid="panel-paths"]').click();
  const probe = $('[data-testid="probe-path"]');
  await probe.waitForDisplayed({ timeout: 5_000 });
  await probe.setValue("README.md");
  await $('[data-testid="probe-run"]').click();
  await $('[data-testid="probe-result"]').waitForDisplayed({ timeout: 10_000 });
  assert.equal(await $('[data-testid="probe-read"]').getAttribute("data-decision"), "allow");
  assert.equal(await $('[data-testid="probe-write"]').getAttribute("data-decision"), "allow");
  assert.match(await $('[data-testid="probe-result"]').getText(), new RegExp(`${w.proj}/README.md`));
  await probe.setValue(`${w.home}/.ssh/id_ed25519`);
  await $('[data-testid="probe-run"]').click();
  await app.browser.waitUntil(async () => (await $('[data-testid="probe-result"]').getText()).includes(".ssh/id_ed25519"), { timeout: 10_000 });
  const said = await $('[data-testid="probe-result"]').getText();
  assert.equal(await $('[data-testid="probe-read"]').getAttribute("data-decision"), "forbidden", said);
  assert.equal(await $('[data-testid="probe-write"]').getAttribute("data-decision"), "forbidden", said);
  await screenshot(app.browser, "policy-paths.png");
});

test("the layers and the tests panels", async () => {
  await $('[data-testid="panel-tests"]').click();
  await $('[data-testid="tests-panel"]').waitForDisplayed({ timeout: 5_000 });
  await screenshot(app.browser, "policy-tests.png");
  await $('[data-testid="panel-layers"]').click();
  const layers = $('[data-testid="layers-panel"]');
  await layers.waitForDisplayed({ timeout: 5_000 });
  assert.match(await layers.getText(), /strictest decision wins[\s\S]*1\. project[\s\S]*ask-curl/);
  await screenshot(app.browser, "policy-layers.png");
});

const $$ = (sel) => app.browser.$$(sel);
