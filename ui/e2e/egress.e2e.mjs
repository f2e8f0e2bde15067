// Egress by name in the browser console (issue 35), end to end: a real `portcullis serve` whose egress
// proxy resolves the test's names from a hosts file (`--egress-hosts`), Debian's Chromium, and the
// official MCP SDK client as the agent. A rule names one host of a loopback HTTP server; the approval
// card of a prompted command shows the hosts its rule names; Live shows what a command reached and what
// was refused, and why; the ledger browser's call drawer keeps the same. Each view is captured (into
// docs/screenshots/ with PORTCULLIS_SCREENSHOTS=docs/screenshots).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { agent, screenshot } from "./harness.mjs";
import { serveHub, startBrowser } from "./browser.mjs";

let hub, chrome, server, port, hostsDir;
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const $ = (sel) => chrome.browser.$(sel);
const seen = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.headers.host} ${req.url}`);
    res.end("hello from the registry\n");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  port = server.address().port;
  const policy = JSON.stringify({
    commands: {
      default: "prompt",
      rules: [
        { id: "fetch", pattern: ["curl"], decision: "allow", network: [`registry.test:${port}`] },
        { id: "npm-install", pattern: ["npm", "install"], decision: "prompt", network: ["registry.npmjs.org"] },
        { id: "py", pattern: ["python3"], decision: "allow", network: [`registry.test:${port}`], other_hosts: "prompt" },
      ],
    },
  }, null, 2);
  hostsDir = mkdtempSync(path.join(os.tmpdir(), "portcullis-egress-hosts-"));
  const hosts = path.join(hostsDir, "hosts");
  writeFileSync(hosts, "127.0.0.1 registry.test paste.test\n");
  hub = await serveHub(policy, ["--egress-hosts", hosts]);
  chrome = await startBrowser();
  await chrome.browser.url(hub.link);
  await $('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });
});

after(async () => {
  await chrome?.stop();
  await hub?.stop();
  server?.close();
  if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
});

test("the approval card shows the hosts a command's rule names, through the egress proxy", async () => {
  const { browser } = chrome;
  const asked = agent(hub.info, hub.w, [shell("npm install left-pad")]);
  const card = $('[data-testid="approval-card"]');
  await card.waitForDisplayed({ timeout: 20_000 });
  assert.equal(await card.$('[data-testid="sandbox-network"]').getText(), "only named hosts");
  assert.match(await card.$('[data-testid="sandbox-hosts"]').getText(), /registry\.npmjs\.org \(through the egress proxy\)/);
  await screenshot(browser, "browser-egress-card.png");
  await card.$('[data-testid="answer-deny"]').click();
  await asked;
});

test("Live and the ledger drawer show what a command reached and what was refused, and why", async () => {
  const { browser } = chrome;
  await $('[data-testid="nav-live"]').click();
  const run = agent(hub.info, hub.w, [
    shell(`curl -sS http://registry.test:${port}/left-pad`),
    shell(`curl -sS http://paste.test:${port}/exfil`),
  ]);
  assert.equal((await run).code, 0);
  await browser.waitUntil(async () => (await browser.$$('[data-testid="connections-badge"]')).length >= 2, {
    timeout: 20_000,
    timeoutMsg: "two calls with connections in Live",
  });
  const badges = await browser.$$('[data-testid="connections-badge"]').map((b) => b.getText());
  assert.deepEqual(badges.toSorted(), ["1 connection", "1 connection · 1 refused"], badges.join(" | "));
  for (const toggle of await browser.$$('[data-testid="live-call-toggle"]')) {
    if ((await toggle.getAttribute("aria-expanded")) === "false") await toggle.click();
  }
  const lists = await browser.$$('[data-testid="live-connections"]').map((l) => l.getText());
  const text = lists.join("\n");
  assert.match(text, new RegExp(`reached registry\\.test:${port} .* out · .* in · rule \`fetch\``), text);
  assert.match(text, new RegExp(`refused paste\\.test:${port} network to paste\\.test:${port} refused: rule \`fetch\` .* allows registry\\.test:${port}`), text);
  assert.deepEqual(seen, [`registry.test:${port} /left-pad`], "only the named host was reached");
  await screenshot(browser, "browser-egress-live.png");

  await $('[data-testid="nav-ledger"]').click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="call-row"]')).length >= 3, {
    timeout: 20_000,
    timeoutMsg: "the calls in the ledger browser",
  });
  const rows = await browser.$$('[data-testid="call-row"]');
  for (const row of rows) {
    if (/paste\.test/.test(await row.getText())) {
      await row.click();
      break;
    }
  }
  const drawer = $('[data-testid="drawer-connections"]');
  await drawer.waitForExist({ timeout: 10_000 });
  await drawer.scrollIntoView({ block: "center" });
  assert.match(await drawer.getText(), new RegExp(`refused paste\\.test:${port} network to paste\\.test:${port} refused`));
  await screenshot(browser, "browser-egress-drawer.png");
});

test("a host the rule does not name is a card; always adds it to the rule, shown as a diff first", async () => {
  const { browser } = chrome;
  await $('[data-testid="nav-approvals"]').click();
  const script = `import urllib.request\nprint(urllib.request.urlopen("http://paste.test:${port}/asked").read().decode())\n`;
  writeFileSync(`${hub.w.proj}/fetch.py`, script);
  // Debian's python (a developer's pyenv shims live in a home the sandbox does not grant).
  const run = agent(hub.info, hub.w, [shell("/usr/bin/python3 fetch.py")]);
  const card = $('[data-testid="approval-card"]');
  await card.waitForDisplayed({ timeout: 20_000 }).catch(async (e) => {
    throw new Error(`${e.message}; the agent got ${JSON.stringify((await run).report)}`);
  });
  assert.match(await card.$('[data-testid="host-ask"]').getText(), new RegExp(`asks to reach paste\\.test:${port}, which its rule does not name`));
  await screenshot(browser, "browser-egress-host-card.png");
  await card.$('[data-testid="answer-always"]').click();
  const sheet = $('[data-testid="always-sheet"]');
  await sheet.waitForDisplayed({ timeout: 10_000 });
  const diff = sheet.$('[data-testid="always-diff"]');
  await browser.waitUntil(async () => (await diff.getText()).includes(`paste.test:${port}`), { timeout: 10_000, timeoutMsg: "the diff names the host" });
  assert.match(await sheet.$("h2").getText(), new RegExp(`Always allow paste\\.test:${port} \\(rule py\\)`));
  await screenshot(browser, "browser-egress-host-always.png");
  await browser.keys("Enter");
  const { code, report } = await run;
  assert.equal(code, 0, JSON.stringify(report));
  const text = report.results[0].result.content[0].text;
  assert.match(text, /hello from the registry/, text);
  const policy = JSON.parse(readFileSync(`${hub.w.proj}/.portcullis/policy.json`, "utf8"));
  const py = policy.commands.rules.find((r) => r.id === "py");
  assert.deepEqual(py.network, [`registry.test:${port}`, `paste.test:${port}`]);
  assert.ok(seen.includes(`paste.test:${port} /asked`), seen.join("\n"));
});
