// Verifying a ledger in the real app (tauri-driver + WebKitWebDriver under Xvfb): the hub's own ledger,
// written by real MCP calls and signed with the key the hub made in its config folder, is sealed up to
// now and verifies; a copy
// changed with the `sqlite3` program, opened by path, is broken at the record that was changed — and the
// window names it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { agent, cliBin, ledgerRow, openApp, screenshot } from "./harness.mjs";

const POLICY = `{ "commands": { "default": "allow" } }
`;

let w, app, info;
const $ = (sel) => app.browser.$(sel);
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
  const { code, report } = await agent(info, w, [shell("echo one"), shell("echo two"), shell("echo three")]);
  assert.equal(code, 0, JSON.stringify(report));
  await ledgerRow(w, (c) => (c.summary ?? "").includes("three"));
  await $('[data-testid="nav-ledger"]').click();
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 });
});

after(async () => {
  await app?.stop();
});

/** Opens the verify dialog and waits for its verdict; returns the verdict element. */
async function verify() {
  await $('[data-testid="ledger-verify"]').click();
  const verdict = $('[data-testid="verify-verdict"]');
  await verdict.waitForDisplayed({ timeout: 20_000 });
  return verdict;
}

test("the hub's own ledger verifies against the key in its config folder", async () => {
  const key = `${w.config}/ledger-key`;
  assert.ok(existsSync(key), "the hub made its ledger key");
  assert.equal(statSync(key).mode & 0o777, 0o600, "owner-only");
  const verdict = await verify();
  // The hub seals its newest records first: every one of them is signed.
  assert.equal(await verdict.getAttribute("data-verdict"), "intact");
  assert.match(await verdict.getText(), /Intact: every chained record links and is signed/);
  const counts = await $('[data-testid="verify-counts"]').getText();
  assert.match(counts, /Chained records\s*6/);
  assert.match(counts, /Sealed with the key\s*6/);
  await screenshot(app.browser, "ledger-verify-intact.png");
  await $('[data-testid="verify-dialog"]').$("button=Close").click();
});

test("a copy changed with sqlite3 is broken at the changed record, named in the window", async () => {
  const copy = `${w.base}/changed.db`;
  // A consistent copy of the live file, then one field of record 3 changed.
  execFileSync("sqlite3", [w.ledger, `.backup ${copy}`]);
  execFileSync("sqlite3", [copy, "UPDATE records SET at = at + 1 WHERE id = 3;"]);
  await $('[data-testid="ledger-path"]').setValue(copy);
  await $('[data-testid="ledger-open"]').click();
  await app.browser.waitUntil(async () => (await $('[data-testid="ledger-name"]').getText()).includes("changed.db"), {
    timeout: 10_000,
    timeoutMsg: "the copy opened",
  });
  const verdict = await verify();
  assert.equal(await verdict.getAttribute("data-verdict"), "broken");
  assert.match(await verdict.getText(), /Broken at record 3 \(changed\): the ledger was changed after it was written\. 1 break below\./);
  assert.match(await $('[data-testid="verify-breaks"]').getText(), /changed record 3/);
  await screenshot(app.browser, "ledger-verify-broken.png");
  // The CLI says the same of the same file.
  let out = "";
  try {
    execFileSync(cliBin, ["ledger", "verify", "--db", copy], { env: w.env });
  } catch (e) {
    out = e.stdout.toString();
    assert.equal(e.status, 1);
  }
  assert.match(out, /BROKEN at record 3/);
});
