// One app per user: a second launch hands over to the running window (Tauri's single-instance plugin,
// over the session D-Bus) and exits, starting no second hub; the first window and its hub keep serving.
// The spec runs its own session bus when the environment has none (Xvfb runs give none).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { appBin, freePort, hubInfo, startApp, world } from "./harness.mjs";

let w, app, bus;

before(async () => {
  w = world(`{ "commands": { "default": "prompt" } }`);
  if (!w.env.DBUS_SESSION_BUS_ADDRESS) {
    // --fork prints the address and the daemon's pid, one per line.
    const out = execFileSync("dbus-daemon", ["--session", "--fork", "--print-address=1", "--print-pid=1"], {
      env: w.env,
    }).toString();
    const [address, pid] = out.trim().split("\n");
    w.env.DBUS_SESSION_BUS_ADDRESS = address;
    bus = Number(pid);
  }
  app = await startApp(w, await freePort());
  await app.browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });
});

after(async () => {
  await app?.stop();
  if (bus) process.kill(bus, "SIGTERM");
});

test("a second launch exits and leaves the first window and its hub serving", async () => {
  const info = await hubInfo(w);
  const second = spawn(appBin, ["--project", w.proj, "--port", String(await freePort())], {
    env: w.env,
    stdio: "ignore",
  });
  const code = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the second launch did not exit within 15 s")), 15_000);
    second.once("exit", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  }).catch((e) => {
    second.kill("SIGKILL");
    throw e;
  });
  assert.equal(code, 0);
  // The first hub still answers, on the port it had; the window still shows the inbox.
  const operatorToken = readFileSync(`${w.config}/operator-token`, "utf8").trim();
  const health = await fetch(new URL("/v1/health", info.mcp_url), {
    headers: { authorization: `Bearer ${operatorToken}` },
  });
  assert.equal(health.status, 200);
  assert.equal((await hubInfo(w)).pid, info.pid);
  assert.ok(await app.browser.$('[data-testid="inbox-empty"]').isDisplayed());
});
