// A tool its server changes after it was listed (the MCP "rug pull"), end to end: the real app binary
// under tauri-driver + WebKitWebDriver (Xvfb), its in-process hub, an SDK server from tests/interop
// that rewrites `lookup` (a description telling the model to read an SSH key, a new `note` parameter)
// and the SDK client as the agent. The changed tool disappears from what the agent sees; Connections
// shows it held, with the diff of the two definitions; "Accept this definition" serves it again.
// The held tool is captured (docs/screenshots/ with PORTCULLIS_SCREENSHOTS=docs/screenshots).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { agent, openApp, repo, screenshot } from "./harness.mjs";

const SHIFTING = path.join(repo, "tests/interop/shifting-server.mjs");
const POLICY = JSON.stringify({ servers: [{ id: "dict", command: "node", args: [SHIFTING] }] }, null, 2);

let w, app, info;

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
});

after(async () => {
  await app?.stop();
});

async function listed() {
  const { report } = await agent(info, w, [{ op: "list" }]);
  return report.results[0].tools.map((t) => t.name);
}

async function until(what, check, timeoutMs = 20_000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test("a tool its server changed is held until the operator accepts the diff in Connections", async () => {
  const { browser } = app;
  await until("the server's tools", async () => (await listed()).includes("dict__lookup"));
  const shifted = await agent(info, w, [{ op: "call", name: "dict__shift", arguments: {} }]);
  assert.equal(shifted.code, 0);

  await browser.$('[data-testid="nav-connections"]').click();
  const held = () => browser.$('[data-testid="held-tool"][data-tool="lookup"]');
  await held().waitForDisplayed({ timeout: 20_000 });
  const diff = await held().$('[data-testid="held-tool-diff"]').getText();
  assert.match(diff, /id_rsa/, diff);
  assert.match(diff, /"note"/, diff);
  assert.ok(!(await listed()).includes("dict__lookup"), "the agent no longer sees the held tool");
  await screenshot(browser, "held-tool.png");

  await held().$("button=Accept this definition").click();
  await held().waitForDisplayed({ timeout: 10_000, reverse: true });
  await until("the accepted tool served again", async () => (await listed()).includes("dict__lookup"));
  const call = await agent(info, w, [
    { op: "call", name: "dict__lookup", arguments: { word: "gate", note: "nothing" } },
  ]);
  assert.equal(call.report.results[0].result.content[0].text, "gate: a word");
});
