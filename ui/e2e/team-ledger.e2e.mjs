// The team ledger end to end: a private PostgreSQL server (Debian's), two real `portcullis serve` hubs
// shipping to it (`--ship`), the official MCP SDK client as each hub's agent, and Debian's Chromium
// (headless) on the first hub's browser console. The ledger browser opens the team ledger by its URL
// (its password from the hub's own setting), shows every hub's calls with where each ran, and the hub
// chip narrows them to one hub. The workbench replays a draft over the team ledger: the calls of both
// hubs it would decide otherwise. Captured into docs/screenshots/ with PORTCULLIS_SCREENSHOTS=docs/screenshots.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { agent, screenshot, waitFor } from "./harness.mjs";
import { serveHub, startBrowser } from "./browser.mjs";
import { startPostgres } from "./postgres.mjs";

const POLICY = `{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "read-only", "pattern": [["ls", "echo"]], "decision": "allow", "match": ["ls -la"] },
      { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "justification": "deleting is for people" },
      { "id": "no-sleep", "pattern": ["sleep"], "decision": "forbidden", "justification": "agents do not wait" }
    ]
  }
}
`;

let pg, a, b, chrome;
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const $ = (sel) => chrome.browser.$(sel);

before(async () => {
  pg = await startPostgres();
  pg.psql("postgres", "CREATE DATABASE team");
  const url = pg.url("team");
  const ship = (w) => {
    const file = `${w.base}/team-password`;
    writeFileSync(file, `${pg.password}\n`);
    chmodSync(file, 0o600);
    return file;
  };
  a = await serveHub(POLICY, []);
  // Each hub ships with its own password file; the first is restarted shipping (its world is kept).
  await a.stop();
  a = await serveHub(POLICY, ["--ship", url, "--ship-password-file", ship(a.w)]);
  b = await serveHub(POLICY, []);
  await b.stop();
  b = await serveHub(POLICY, ["--ship", url, "--ship-password-file", ship(b.w)]);
  chrome = await startBrowser();
});

after(async () => {
  await chrome?.stop();
  await a?.stop();
  await b?.stop();
  pg?.stop();
});

test("the ledger browser opens the team ledger: every hub's calls, where each ran, narrowed by hub", async () => {
  const { browser } = chrome;
  const [ranA, ranB] = await Promise.all([
    agent(a.info, a.w, [shell("echo from-hub-a"), shell("ls -la"), shell("sleep 1")]),
    agent(b.info, b.w, [shell("echo from-hub-b"), shell("ls -la"), shell("sleep 2")]),
  ]);
  assert.equal(ranA.code, 0);
  assert.equal(ranB.code, 0);
  await waitFor(
    "both hubs' calls in the team ledger",
    () => {
      try {
        return Number(pg.psql("team", "SELECT count(*) FROM portcullis.records WHERE status IS NOT NULL")) >= 6;
      } catch {
        return false; // no shipment made the schema yet
      }
    },
    20_000,
  );

  await browser.url(a.link);
  await $('[data-testid="nav-ledger"]').waitForDisplayed({ timeout: 20_000 });
  await $('[data-testid="nav-ledger"]').click();
  const input = await $('[data-testid="ledger-path"]');
  // The view opens the hub's own ledger first: on a loaded machine that has taken over 10 s.
  await input.waitForDisplayed({ timeout: 30_000 });
  await input.setValue(pg.url("team"));
  await $('[data-testid="ledger-open"]').click();
  await browser.waitUntil(async () => (await browser.$$('[data-testid="call-row"]')).length >= 6, {
    timeout: 20_000,
    timeoutMsg: "the six calls of both hubs in the ledger browser",
  });
  assert.match(await $('[data-testid="ledger-name"]').getText(), /postgres:\/\/portcullis@127\.0\.0\.1:\d+\/team/);
  const rows = await browser.$$('[data-testid="call-row"]').map((r) => r.getText());
  assert.ok(rows.some((r) => /from-hub-a/.test(r)) && rows.some((r) => /from-hub-b/.test(r)), rows.join("\n"));
  // Where each ran: the OS user at the host (both hubs run here, as this user).
  assert.ok(rows.every((r) => /\S+@\S+/.test(r)), rows.join("\n"));
  await screenshot(browser, "browser-team-ledger.png");

  // The hub chip: two hubs, each counted; choosing one leaves its calls only.
  await $('[data-testid="facet-hubs"]').click();
  const menu = await $('[data-testid="facet-menu-hubs"]');
  await menu.waitForDisplayed({ timeout: 10_000 });
  const hubs = await menu.$$("label.facet-item");
  assert.equal(hubs.length, 2, await menu.getText());
  const ledgerA = pg.psql("team", "SELECT ledger_id FROM portcullis.records WHERE record::text LIKE '%from-hub-a%' LIMIT 1");
  await menu.$(`label*=${ledgerA}`).click();
  await browser.waitUntil(
    async () => {
      const shown = await browser.$$('[data-testid="call-row"]').map((r) => r.getText());
      return shown.length === 3 && shown.every((r) => !/from-hub-b/.test(r));
    },
    { timeout: 10_000, timeoutMsg: "hub a's three calls only" },
  );
  await $('[data-testid="facet-hosts"]').waitForDisplayed();
  await $('[data-testid="facet-users"]').waitForDisplayed();
});

test("the workbench replays a draft over the team ledger: both hubs' calls it would decide otherwise", async () => {
  const { browser } = chrome;
  await $('[data-testid="nav-policy"]').click();
  await $('[data-testid="rules-panel"]').waitForDisplayed({ timeout: 20_000 });
  // The draft lets agents wait: `no-sleep` (the third rule) from forbidden to allow. (A command with
  // paths would be judged against this hub's project, where another hub's paths are outside it.)
  await $('[data-testid="rule-2"] [data-testid="rule-decision-allow"]').click();
  await $('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 5_000 });
  await $('[data-testid="panel-replay"]').click();
  const ledger = $('[data-testid="replay-ledger"]');
  await ledger.waitForDisplayed({ timeout: 5_000 });
  await ledger.setValue(pg.url("team"));
  await $('[data-testid="replay-start"]').waitForClickable({ timeout: 5_000 });
  await $('[data-testid="replay-start"]').click();
  const outcome = $('[data-testid="replay-outcome"]');
  await outcome.waitForDisplayed({ timeout: 30_000 }).catch(async (e) => {
    const failed = await $('[data-testid="replay-panel"]').getText();
    assert.fail(`${e.message}\n${failed}`);
  });
  // Hub a's `sleep 1` and hub b's `sleep 2`: forbidden then, allowed by the draft.
  assert.equal(await outcome.getAttribute("data-changed"), "2", await outcome.getText());
  assert.equal(await outcome.getAttribute("data-loosened"), "2");
  // Each hub's `echo` and `ls -la` judged in its own project: allowed by `read-only` under both.
  assert.equal(await $('[data-testid="matrix-allow-allow"]').getText(), "4");
  assert.match(await $('[data-testid="replay-ledger-read"]').getText(), /^postgres:\/\/portcullis@127\.0\.0\.1:\d+\/team/);
  const changed = await browser.$$('[data-testid="replay-change"]').map((c) => c.getText());
  assert.equal(changed.length, 2, changed.join("\n"));
  assert.ok(changed.some((c) => /sleep 1/.test(c)) && changed.some((c) => /sleep 2/.test(c)), changed.join("\n"));
  await screenshot(browser, "browser-team-replay.png");
});
