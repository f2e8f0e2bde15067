// The browser console end to end: a real `portcullis serve` with no terminal approver, Debian's Chromium
// (headless, through chromedriver), and the official MCP SDK client as the agent. The one-time link the
// hub printed logs the operator in (and works only once); a prompted call is a card the browser answers
// (allow once, then deny), and the agent gets each answer; Live and the ledger browser show the calls;
// a rule changed and saved in the workbench is in force for the next call; a second operator answers a
// card first and the browser says who did; a page on another port gets the login's cookie and it opens
// nothing; the page says who is logged in, and logging out ends it. Each view is captured (into
// docs/screenshots/ with PORTCULLIS_SCREENSHOTS=docs/screenshots).
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { agent, ledgerCalls, ledgerRow, screenshot } from "./harness.mjs";
import { operatorLink, serveHub, startBrowser } from "./browser.mjs";

const POLICY = `{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "read-only", "pattern": [["ls", "cat", "echo", "pwd"]], "decision": "allow", "match": ["ls -la"] },
      { "id": "git-read", "pattern": ["git", ["status", "log", "diff"]], "decision": "allow", "match": ["git status"] },
      { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "justification": "deleting is for people" },
      { "id": "ask-curl", "pattern": ["curl"], "decision": "prompt", "justification": "the network" }
    ]
  }
}
`;

let hub, chrome;
const shell = (command) => ({ op: "call", name: "shell", arguments: { command } });
const $ = (sel) => chrome.browser.$(sel);
const card = () => $('[data-testid="approval-card"]');

before(async () => {
  hub = await serveHub(POLICY);
  chrome = await startBrowser();
});

after(async () => {
  await chrome?.stop();
  await hub?.stop();
});

test("the one-time link the hub printed logs in, leaves no code in the address bar, and works once", async () => {
  const { browser } = chrome;
  assert.match(hub.link, /^http:\/\/127\.0\.0\.1:\d+\/login#code=[0-9a-f]+$/);
  const started = Date.now();
  await browser.url(hub.link);
  await $('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });
  console.log(`login link to an interactive inbox: ${Date.now() - started} ms`);
  assert.doesNotMatch(await browser.getUrl(), /code=/);
  const history = await browser.execute(() => globalThis.history.length);
  assert.ok(history <= 3, `history holds ${history} entries`);

  // The same link again (a second browser profile would do the same): refused, and it says why.
  const again = await fetch(`http://127.0.0.1:${hub.port}/console/v1/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-portcullis-console": "1", origin: `http://127.0.0.1:${hub.port}` },
    body: JSON.stringify({ code: hub.link.split("#code=")[1] }),
  });
  assert.equal(again.status, 401);
  assert.equal((await again.json()).error.code, "login_refused");
});

test("a prompted call is a card; allow once runs it, deny refuses the next, and the ledger names the browser", async () => {
  const { browser } = chrome;
  const asked = Date.now();
  const first = agent(hub.info, hub.w, [shell("curl -s http://127.0.0.1:9/first")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  console.log(`call asked to card visible in the browser: ${Date.now() - asked} ms (includes the client's start)`);
  assert.match(await card().$('[data-testid="command"]').getText(), /curl -s http:\/\/127\.0\.0\.1:9\/first/);
  await screenshot(browser, "browser-inbox.png");
  await card().$('[data-testid="answer-once"]').click();
  const once = await first;
  assert.equal(once.code, 0, JSON.stringify(once.report));
  const row = await ledgerRow(hub.w, (c) => c.decided_by === "operator" && c.status !== "blocked");
  assert.equal(row.decided_operator, "e2e-operator (browser): approved_once", JSON.stringify(row));

  const second = agent(hub.info, hub.w, [shell("curl -s http://127.0.0.1:9/second")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  assert.match(await card().$('[data-testid="command"]').getText(), /second/);
  await card().$('[data-testid="answer-deny"]').click();
  const denied = await second;
  assert.equal(denied.code, 0, JSON.stringify(denied.report));
  assert.equal(denied.report.results[0].result.isError, true, JSON.stringify(denied.report));
  const refused = await ledgerRow(hub.w, (c) => c.status === "blocked" && c.decided_by === "operator");
  assert.equal(refused.decided_operator, "e2e-operator (browser): denied", JSON.stringify(refused));
});

test("Live and the ledger browser show the calls", async () => {
  const { browser } = chrome;
  await $('[data-testid="nav-live"]').click();
  const live = agent(hub.info, hub.w, [shell("ls"), shell("git status"), shell("rm -rf build")]);
  await browser.waitUntil(async () => (await browser.$$('[data-testid="live-call"]')).length >= 3, {
    timeout: 20_000,
    timeoutMsg: "three live calls",
  });
  assert.equal((await live).code, 0);
  await screenshot(browser, "browser-live.png");
  await $('[data-testid="nav-ledger"]').click();
  await $('[data-testid="call-row"]').waitForDisplayed({ timeout: 20_000 });
  await browser.waitUntil(async () => (await browser.$$('[data-testid="call-row"]')).length >= 5, {
    timeout: 10_000,
    timeoutMsg: "the five calls in the ledger browser",
  });
  const rows = await browser.$$('[data-testid="call-row"]').map((r) => r.getText());
  assert.ok(rows.some((r) => /rm -rf build/.test(r)), rows.join("\n"));
  assert.ok(rows.some((r) => /first/.test(r)), rows.join("\n"));
  await screenshot(browser, "browser-ledger.png");
  await $('[data-testid="nav-connections"]').click();
  await $('[data-testid="hookup-snippet"]').waitForDisplayed({ timeout: 10_000 });
  await screenshot(browser, "browser-connections.png");
});

test("a rule saved in the workbench is in force for the next call", async () => {
  const { browser } = chrome;
  await $('[data-testid="nav-policy"]').click();
  await $('[data-testid="rules-panel"]').waitForDisplayed({ timeout: 20_000 });
  await $('[data-testid="draft-state"][data-loads="true"]').waitForDisplayed({ timeout: 10_000 });
  await $('[data-testid="rule-3"] [data-testid="rule-decision-allow"]').click();
  await $('[data-testid="draft-save"]').click();
  await $('[data-testid="save-diff"]').waitForDisplayed({ timeout: 10_000 });
  await screenshot(browser, "browser-policy.png");
  await $('[data-testid="save-confirm"]').click();
  await browser.waitUntil(async () => (await $('[data-testid="draft-reloaded"]').getText()).includes("In force since"), {
    timeout: 10_000,
  });
  const { code, report } = await agent(hub.info, hub.w, [shell("curl -s http://127.0.0.1:9/after")]);
  assert.equal(code, 0, JSON.stringify(report));
  const [row] = ledgerCalls(hub.w);
  assert.match(row.summary ?? JSON.stringify(row), /after/, JSON.stringify(row));
  assert.equal(row.policy_rule, "ask-curl", JSON.stringify(row));
  assert.equal(row.policy_decision, "allow", JSON.stringify(row));
});

test("a second operator answers first; the browser's card goes and says who answered", async () => {
  const { browser } = chrome;
  const origin = `http://127.0.0.1:${hub.port}`;
  const headers = { "content-type": "application/json", "x-portcullis-console": "1", origin };
  const login = await fetch(`${origin}/console/v1/login`, {
    method: "POST",
    headers,
    body: JSON.stringify({ code: operatorLink(hub.w, "bob").split("#code=")[1] }),
  });
  assert.equal(login.status, 200);
  const loggedIn = await login.json();
  assert.equal(loggedIn.session.operator, "bob");
  // A login is its cookie and its page token (in the body, never a cookie): the cookie alone is refused.
  const cookie = login.headers.getSetCookie()[0].split(";")[0];
  const session = { cookie, "x-portcullis-console-session": loggedIn.token };
  await $('[data-testid="nav-approvals"]').click();
  const call = agent(hub.info, hub.w, [shell("printf bob-answers")]);
  await card().waitForDisplayed({ timeout: 20_000 });
  const asBob = (name, args, sent) =>
    fetch(`${origin}/console/v1/commands/${name}`, { method: "POST", headers: { ...headers, ...sent }, body: JSON.stringify(args) });
  const cookieAlone = await asBob("pending_approvals", {}, { cookie });
  assert.equal(cookieAlone.status, 401, await cookieAlone.text());
  const bobs = (name, args) => asBob(name, args, session);
  const [pending] = await (await bobs("pending_approvals", {})).json();
  const answered = await bobs("answer_approval", {
    id: pending.id,
    answer: { answer: "once", arguments_sha256: pending.arguments_sha256 },
  });
  assert.equal(answered.status, 200, await answered.text());
  const told = $('[data-testid="settled-elsewhere"]');
  await told.waitForDisplayed({ timeout: 10_000 });
  assert.match(await told.getText(), /was allowed once by bob \(browser\)/);
  await screenshot(browser, "browser-settled-elsewhere.png");
  const { code, report } = await call;
  assert.equal(code, 0, JSON.stringify(report));
  assert.ok(!report.results[0].result.isError, JSON.stringify(report));
  const row = await ledgerRow(hub.w, (c) => c.decided_operator?.startsWith("bob"));
  assert.equal(row.decided_operator, "bob (browser): approved_once", JSON.stringify(row));
});

test("logging in again and again in one browser never runs out of connections to the hub", async () => {
  // Each page holds the event stream open; a page left behind must let go of it, or after six pages
  // the browser has no connection left for the hub and the console hangs (found by the bench).
  const { browser } = chrome;
  for (let i = 0; i < 8; i++) {
    await browser.url("about:blank");
    await browser.url(operatorLink(hub.w, "e2e-operator"));
    await $('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 }).catch((e) => {
      throw new Error(`login ${i + 1}: ${e.message}`);
    });
  }
});

test("a page on another port of this host gets the login's cookie, and the cookie alone is refused", async () => {
  // Cookies are not bound to ports (RFC 6265 §8.5): the browser sends the hub's cookie to any page on
  // 127.0.0.1. That page never sees the login's page token, so what it got opens nothing, even replayed
  // with this hub's Origin and the console's header; the operator's own page keeps working.
  const { browser } = chrome;
  const origin = `http://127.0.0.1:${hub.port}`;
  const received = [];
  const other = createServer((request, response) => {
    received.push(request.headers.cookie ?? "");
    response.setHeader("content-type", "text/html");
    response.end("<!doctype html><title>another port</title><p>nothing here</p>");
  });
  await new Promise((resolve) => other.listen(0, "127.0.0.1", resolve));
  try {
    await browser.url(`http://127.0.0.1:${other.address().port}/`);
    await browser.waitUntil(async () => received.length > 0, { timeout: 10_000 });
  } finally {
    other.close();
  }
  const cookie = received.join("; ").split(/;\s*/).find((c) => c.startsWith(`portcullis_console_${hub.port}=`));
  assert.ok(cookie, `the other port got the hub's cookie: ${received.join(" | ")}`);
  const headers = { "content-type": "application/json", "x-portcullis-console": "1", origin, cookie };
  for (const name of ["hub_status", "console_link"]) {
    const replayed = await fetch(`${origin}/console/v1/commands/${name}`, {
      method: "POST",
      headers,
      body: JSON.stringify(name === "console_link" ? { operator: "mallory" } : {}),
    });
    assert.equal(replayed.status, 401, `${name}: ${await replayed.text()}`);
  }
  await browser.url(`${origin}/`);
  const who = $('[data-testid="console-session"]');
  await who.waitForDisplayed({ timeout: 10_000 });
  assert.match(await who.getText(), /e2e-operator \(browser\)/);
});

test("the page says who is logged in; Log out ends the login and the page says so", async () => {
  const { browser } = chrome;
  const who = $('[data-testid="console-session"]');
  await who.waitForDisplayed({ timeout: 10_000 });
  assert.match(await who.getText(), /e2e-operator \(browser\)/);
  await $('[data-testid="logout"]').click();
  const status = $('[data-testid="login-status"]');
  await status.waitForDisplayed({ timeout: 10_000 });
  await browser.waitUntil(async () => /You logged out/.test(await status.getText()), { timeout: 5_000 });
  assert.doesNotMatch(await browser.getUrl(), /#/);
  await screenshot(browser, "browser-logged-out.png");
  // The old cookie is no session any more: the console's page sends it back to the login.
  await browser.url(`http://127.0.0.1:${hub.port}/`);
  await browser.waitUntil(async () => /\/login$/.test(await browser.getUrl()), { timeout: 10_000 });
});
