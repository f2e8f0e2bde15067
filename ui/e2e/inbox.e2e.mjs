// The approvals inbox, end to end: the real app binary under tauri-driver + WebKitWebDriver (Xvfb),
// its in-process hub, and the official MCP TypeScript SDK client as the agent. A prompted `git push`
// appears as a card with its parsed sub-commands and the deciding rule (file:line), and the window's
// title (read from the X server) says one call waits; clicking "Allow once" lets it run and the agent
// gets its output; the deny key refuses a second one and the agent is
// told; the ledger says who decided. The inbox with its card is captured (for docs/screenshots/ with
// PORTCULLIS_SCREENSHOTS=docs/screenshots bash scripts/e2e.sh).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { agent, ledgerRow, openApp, screenshot } from "./harness.mjs";

// The push writes the bare remote beside the project: the policy names it as a write root, or the
// sandbox the approved command runs in refuses the write (as it should).
const POLICY = `{
  "paths": { "roots": [ { "path": ".", "access": "write" }, { "path": "../origin.git", "access": "write" } ] },
  "commands": {
    "default": "prompt",
    "rules": [
      {
        "id": "read-only",
        "pattern": [["ls", "cat", "echo", "pwd", "grep", "wc"]],
        "decision": "allow"
      },
      {
        "id": "git-push",
        "pattern": ["git", "push"],
        "decision": "prompt",
        "justification": "pushing publishes commits"
      }
    ]
  }
}
`;
const GIT_PUSH_LINE = POLICY.split("\n").findIndex((l) => l.includes('"git-push"')) + 1;

let w, app, info;

before(async () => {
  ({ w, app, info } = await openApp(POLICY));
  console.log(`app start to an interactive inbox: ${Date.now() - app.started} ms`);
});

after(async () => {
  await app?.stop();
});

const card = () => app.browser.$('[data-testid="approval-card"]');

/** Whether an X window is titled exactly `title` (the native title the app sets, not document.title). */
function windowTitled(title) {
  try {
    const ids = execFileSync("xdotool", ["search", "--name", `^${title}$`], { stdio: ["ignore", "pipe", "ignore"] });
    return ids.toString().trim() !== "";
  } catch {
    return false; // xdotool exits 1 when no window matches
  }
}

test("a prompted shell command is a card; Allow once runs it and the agent gets its output", async () => {
  const { browser } = app;
  const asked = Date.now();
  const call = agent(info, w, [
    { op: "call", name: "shell", arguments: { command: "git push origin main && echo pushed-ok | wc -l" } },
  ]);
  await card().waitForDisplayed({ timeout: 20_000 });
  console.log(`call asked to card visible: ${Date.now() - asked} ms (includes the client's start)`);
  const commands = await card().$('[data-testid="sub-commands"]').getText();
  assert.match(commands, /git push origin main/);
  assert.match(commands, /echo pushed-ok/);
  assert.match(commands, /wc -l/);
  const deciding = await card().$('[data-testid="rules"] tr[data-deciding]').getText();
  assert.match(deciding, /git-push/);
  assert.ok(deciding.includes(`.portcullis/policy.json:${GIT_PUSH_LINE}`), deciding);
  assert.match(await card().getText(), /claude-code/);
  // The walls it will run inside, before the operator answers: the kernel confines it, no network.
  const walls = await card().$('[data-testid="sandbox"]').getText();
  assert.match(walls, /^confined/, walls);
  assert.match(walls, /network closed/, walls);
  await browser.waitUntil(() => windowTitled("Portcullis — 1 waiting"), { timeout: 5000, interval: 50 });

  await screenshot(browser, "approvals-inbox.png");

  await card().$('[data-testid="answer-once"]').click();
  const { code, report } = await call;
  assert.equal(code, 0, JSON.stringify(report));
  const result = report.results[0].result;
  assert.ok(!result.isError, JSON.stringify(result));
  assert.match(JSON.stringify(result.content), /\b1\b/, "the agent gets the command's output");
  await app.browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 10_000 });
  await browser.waitUntil(() => windowTitled("Portcullis") && !windowTitled("Portcullis — 1 waiting"), {
    timeout: 5000,
    interval: 50,
  });

  const row = await ledgerRow(w, (c) => c.status === "finished" && c.tool === "shell");
  assert.equal(row.decided_by, "operator", JSON.stringify(row));
  assert.equal(row.decided_operator, "e2e-operator (app): approved_once", JSON.stringify(row));
});

test("the deny key refuses the selected card and the agent is told", async () => {
  const { browser } = app;
  const call = agent(info, w, [{ op: "call", name: "shell", arguments: { command: "git push --force origin main" } }]);
  await card().waitForDisplayed({ timeout: 20_000 });
  assert.match(await card().$('[data-testid="command"]').getText(), /git push --force origin main/);
  await browser.keys("4");
  const { code, report } = await call;
  assert.equal(code, 0, JSON.stringify(report));
  const result = report.results[0].result;
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.match(JSON.stringify(result.content), /deni/i);
  const row = await ledgerRow(w, (c) => c.status === "blocked" && c.decided_by === "operator");
  assert.equal(row.decided_operator, "e2e-operator (app): denied", JSON.stringify(row));
});
