// What the browser console's specs share: a real `portcullis serve` (headless, no terminal approver) on a
// fresh world, Debian's Chromium driven through chromedriver by webdriverio, and the login link the hub
// printed or `portcullis operator link` made. Teardown ends every process the spec started.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { remote } from "webdriverio";
import { cliBin, freePort, waitFor, world } from "./harness.mjs";

const chromium = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const chromedriver = process.env.CHROMEDRIVER_BIN ?? "/usr/bin/chromedriver";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `portcullis serve` for a fresh world with `policy` (headless: answers come from the console); its
 * runtime file, the login link it printed, and how to stop it. */
export async function serveHub(policy, extraArgs = []) {
  const w = world(policy);
  const port = await freePort();
  const child = spawn(
    cliBin,
    ["serve", "--port", String(port), "--approver", "none", "--db", w.ledger, "--project", w.proj, ...extraArgs],
    { env: w.env, cwd: w.proj, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const link = await waitFor("the hub's login link", () => /operator console: (\S+)/.exec(stderr)?.[1], 30_000).catch((e) => {
    throw new Error(`${e.message}; the hub said:\n${stderr}`);
  });
  const info = JSON.parse(readFileSync(`${w.config}/hub.json`, "utf8"));
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await Promise.race([new Promise((r) => child.once("exit", r)), sleep(10_000)]);
    if (child.exitCode === null) child.kill("SIGKILL");
  };
  return { w, port, info, link, stop, stderr: () => stderr };
}

/** Another one-time login link, for `name`. */
export function operatorLink(w, name) {
  const out = execFileSync(cliBin, ["operator", "link", "--json", "--name", name], { env: w.env });
  return JSON.parse(out.toString()).url;
}

/** Headless Chromium under chromedriver; returns the browser and its teardown. */
export async function startBrowser() {
  if (!existsSync(chromium) || !existsSync(chromedriver)) {
    throw new Error(`Chromium and chromedriver are needed (apt-get install chromium chromium-driver): ${chromium}, ${chromedriver}`);
  }
  const port = await freePort();
  const driver = spawn(chromedriver, [`--port=${port}`], { stdio: "ignore" });
  await waitFor("chromedriver", async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/status`)).ok;
    } catch {
      return false;
    }
  });
  const profile = mkdtempSync(path.join(os.tmpdir(), "portcullis-chromium-"));
  const browser = await remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "error",
    capabilities: {
      browserName: "chrome",
      "goog:chromeOptions": {
        binary: chromium,
        // Root in CI: Chromium's own sandbox needs an unprivileged user.
        args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900", `--user-data-dir=${profile}`, "--lang=en-US"],
      },
    },
  });
  const stop = async () => {
    await browser.deleteSession().catch(() => undefined);
    driver.kill("SIGTERM");
    rmSync(profile, { recursive: true, force: true });
  };
  return { browser, stop };
}
