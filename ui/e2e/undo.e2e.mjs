// Undo in the real app (tauri-driver + WebKitWebDriver under Xvfb), the official MCP SDK client as the
// agent (issue 53): a confined shell command overwrites a file of the project; the operator opens the
// call in the ledger browser, reads what its review kept, presses Undo, reads the plan, confirms, and the
// file is back byte for byte. Then a second command rewrites the file, the operator's editor saves it
// meanwhile, and Undo is refused in the window, naming the file and why; the operator's edit stays.
// Last, a script writes executed config (.cargo/config.toml): the review holds it for the operator, the
// window says so and why, and Discard drops it.
// Each step is captured (into docs/screenshots/ with PORTCULLIS_SCREENSHOTS=docs/screenshots).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { agent, ledgerRow, openApp, screenshot } from "./harness.mjs";

const POLICY = `{
  "commands": { "default": "prompt", "rules": [
    { "id": "edits", "pattern": ["printf"], "decision": "allow" },
    { "id": "scripts", "pattern": ["sh"], "decision": "allow", "match": ["sh gen.sh"] } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}`;
// Not text a tool would normalise: no final newline, a byte sequence that is not ASCII, a tab.
const ORIGINAL = Buffer.from("# Release notes\n\n- faster builds\t(2×)\n- kept by the operator", "utf8");

let w, app, info;
const $ = (sel) => app.browser.$(sel);
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });

/** Runs `command` as the agent; its text, once the hub answered that it ran. */
async function run(command) {
  const { code, report } = await agent(info, w, [shell(command)]);
  assert.equal(code, 0, JSON.stringify(report));
  const result = report.results[0].result;
  assert.ok(!result.isError, JSON.stringify(result));
  return result.content.map((c) => c.text ?? "").join("\n");
}

/** Opens the ledger browser on the call whose command says `marker`, by clicking its row. */
async function openCall(marker) {
  const row = await ledgerRow(w, (c) => (c.summary ?? "").includes(marker));
  await $('[data-testid="nav-approvals"]').click();
  await $('[data-testid="nav-ledger"]').click();
  await app.browser.waitUntil(
    async () => {
      for (const r of await app.browser.$$('[data-testid="call-row"]')) {
        if ((await r.getText()).includes(marker)) return true;
      }
      return false;
    },
    { timeout: 20_000, timeoutMsg: `the row of ${marker}` },
  );
  for (const r of await app.browser.$$('[data-testid="call-row"]')) {
    if ((await r.getText()).includes(marker)) {
      await r.click();
      break;
    }
  }
  await $('[data-testid="drawer-changes"]').waitForDisplayed({ timeout: 20_000 });
  return row;
}

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
  writeFileSync(`${w.proj}/NOTES.md`, ORIGINAL);
});

after(async () => {
  await app?.stop();
});

test("the operator undoes a command's overwrite from the ledger detail: the file is back byte for byte", async () => {
  const said = await run("printf 'overwritten by the agent\\n' > NOTES.md");
  assert.match(said, /\[changes kept: 1 \(NOTES\.md\)\]/, "the command ran confined, its change committed");
  assert.equal(readFileSync(`${w.proj}/NOTES.md`, "utf8"), "overwritten by the agent\n");

  await openCall("overwritten by the agent");
  const counts = await $('[data-testid="changes-counts"]').getText();
  assert.equal(counts, "1 kept · 0 held for you · 0 discarded");
  assert.match(await $('[data-testid="changes-kept"]').getText(), /NOTES\.md/);
  await $('[data-testid="undo"]').click();
  const plan = $('[data-testid="undo-plan"]');
  await plan.waitForDisplayed({ timeout: 10_000 });
  assert.match(await plan.getText(), /NOTES\.md — its old content put back/);
  assert.equal(readFileSync(`${w.proj}/NOTES.md`, "utf8"), "overwritten by the agent\n", "nothing before the confirmation");
  await screenshot(app.browser, "undo-confirm.png");

  await $('[data-testid="undo-confirm-yes"]').click();
  const done = $('[data-testid="undo-done"]');
  await done.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await done.getText(), "Undone. NOTES.md is back as it was before the command.");
  assert.deepEqual(readFileSync(`${w.proj}/NOTES.md`), ORIGINAL, "back byte for byte");
  await screenshot(app.browser, "undo-done.png");
});

test("an undo over a file the operator changed since is refused in the window, with the reason", async () => {
  await run("printf 'the agent again\\n' > NOTES.md");
  const edit = "# Release notes\n\n- the operator's own edit, saved after the command\n";
  writeFileSync(`${w.proj}/NOTES.md`, edit);

  await openCall("the agent again");
  await $('[data-testid="undo"]').click();
  const refused = $('[data-testid="undo-refused"]');
  await refused.waitForDisplayed({ timeout: 10_000 });
  const why = await refused.getText();
  assert.match(why, /Undo is not possible: this file was changed after the command\./);
  assert.equal(await $('[data-testid="undo-refused"] li').getText(), "NOTES.md", "the file it names");
  assert.match(why, /nothing was touched/);
  assert.equal(await $('[data-testid="undo-confirm-yes"]').isExisting(), false, "nothing to confirm");
  assert.equal(readFileSync(`${w.proj}/NOTES.md`, "utf8"), edit, "the operator's edit stays");
  await screenshot(app.browser, "undo-refused.png");
});

test("executed config a script wrote is held for the operator, and Discard in the window drops it", async () => {
  writeFileSync(`${w.proj}/gen.sh`, "mkdir -p .cargo\nprintf '[build]\\nrustc = \"./evil\"\\n' > .cargo/config.toml\nprintf 'built\\n' > built.txt\n");
  const said = await run("sh gen.sh");
  assert.match(said, /\[change held for the operator: \.cargo\/config\.toml — /, said);
  assert.equal(readFileSync(`${w.proj}/built.txt`, "utf8"), "built\n", "the rest was committed");
  assert.ok(!existsSync(`${w.proj}/.cargo/config.toml`), "held, not in the project");

  await openCall("sh gen.sh");
  const held = $('[data-testid="changes-held"]');
  await held.waitForDisplayed({ timeout: 10_000 });
  const text = await held.getText();
  assert.match(text, /\.cargo\/config\.toml/);
  // The held file is shown as the write tool's diff: what keeping it would put there.
  assert.match(await held.$('[data-testid="file-diff"]').getText(), /rustc = "\.\/evil"/);
  assert.match(await $('[data-testid="changes-counts"]').getText(), /1 held for you/);
  await screenshot(app.browser, "undo-held.png");
  await $('[data-testid="held-discard"]').click();
  const answered = $('[data-testid="held-answered"]');
  await answered.waitForDisplayed({ timeout: 10_000 });
  assert.match(await answered.getText(), /Discarded 1 held change/);
  assert.ok(!existsSync(`${w.proj}/.cargo/config.toml`), "discarded");
});
