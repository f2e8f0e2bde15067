// A second hub is never started beside a running one: with `portcullis serve` holding the port for the
// same user, the app's window says plainly that another hub runs, and names it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cliBin, freePort, hubInfo, startApp, world } from "./harness.mjs";

let w, serve, app, port;

before(async () => {
  w = world(`{ "commands": { "default": "prompt" } }`);
  port = await freePort();
  serve = spawn(cliBin, ["serve", "--port", String(port), "--approver", "none", "--project", w.proj], {
    env: w.env,
    stdio: "ignore",
  });
  await hubInfo(w);
});

after(async () => {
  await app?.stop();
  serve?.kill("SIGTERM");
});

test("the app says another hub already runs and starts none", async () => {
  app = await startApp(w, port);
  const notice = await app.browser.$('[data-testid="hub-not-running"]');
  await notice.waitForDisplayed({ timeout: 20_000 });
  const text = await notice.getText();
  assert.match(text, /Another Portcullis hub is already running/);
  assert.ok(text.includes(`pid ${serve.pid}`), text);
});
