// What the end-to-end specs share: a fresh project, home and config folder; tauri-driver (with
// WebKitWebDriver) driving the real app binary; the official MCP TypeScript SDK client from
// tests/interop as the agent; the ledger read through `portcullis ledger query`; and teardown that ends
// every process the run started, by pid.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { remote } from "webdriverio";

export const repo = path.resolve(import.meta.dirname, "../..");
const target = process.env.CARGO_TARGET_DIR ?? path.join(repo, "target");
export const appBin = process.env.PORTCULLIS_APP_BIN ?? path.join(target, "debug/portcullis-app");
export const cliBin = process.env.PORTCULLIS_BIN ?? path.join(target, "debug/portcullis");
const tauriDriver = process.env.TAURI_DRIVER ?? path.join(os.homedir(), ".cargo/bin/tauri-driver");
const interop = path.join(repo, "tests/interop");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Polls `check` every 50 ms until it gives a truthy value (returned), or throws after `timeoutMs`. */
export async function waitFor(what, check, timeoutMs = 30_000) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The worlds this spec made. They are removed when it exits without a failure (a 1M-call ledger fixture
 * is a gigabyte, and CI's disk is shared); a failed spec, or PORTCULLIS_E2E_KEEP=1, keeps them to look at. */
const worlds = [];
process.on("exit", (code) => {
  if (code !== 0 || process.exitCode || process.env.PORTCULLIS_E2E_KEEP) {
    for (const base of worlds) console.log(`kept for inspection: ${base}`);
    return;
  }
  for (const base of worlds) rmSync(base, { recursive: true, force: true });
});

/** A fresh world: home, config and data folders, and a project with `policy` and a git repository
 * whose `origin` is a local bare repository (so `git push` really runs). */
export function world(policy) {
  const base = mkdtempSync(path.join(os.tmpdir(), "portcullis-e2e-"));
  worlds.push(base);
  const dirs = { base, home: `${base}/home`, config: `${base}/config`, data: `${base}/data`, proj: `${base}/shop` };
  for (const d of [dirs.home, dirs.config, dirs.data, `${dirs.proj}/.portcullis`]) mkdirSync(d, { recursive: true });
  // `null`: no policy anywhere, as on a new operator's first day (the built-in default is in force).
  if (policy !== null) writeFileSync(`${dirs.proj}/.portcullis/policy.json`, policy);
  const git = (...args) => execFileSync("git", args, { cwd: dirs.proj, stdio: "ignore", env: { ...process.env, HOME: dirs.home } });
  execFileSync("git", ["init", "-q", "--bare", `${base}/origin.git`], { stdio: "ignore" });
  git("init", "-q", "-b", "main");
  writeFileSync(`${dirs.proj}/README.md`, "# shop\n");
  git("add", "README.md");
  git("-c", "user.name=dev", "-c", "user.email=dev@example.invalid", "commit", "-q", "-m", "first");
  git("remote", "add", "origin", `${base}/origin.git`);
  dirs.env = {
    ...process.env,
    HOME: dirs.home,
    PORTCULLIS_CONFIG_DIR: dirs.config,
    PORTCULLIS_DATA_DIR: dirs.data,
    XDG_CONFIG_HOME: "",
    XDG_DATA_HOME: "",
    RUST_LOG: "warn",
    USER: "e2e-operator",
  };
  delete dirs.env.XDG_CONFIG_HOME;
  delete dirs.env.XDG_DATA_HOME;
  dirs.ledger = `${dirs.data}/ledger.db`;
  return dirs;
}

/** The processes under `pid` now (children first found, then theirs). */
export function descendants(pid) {
  const parents = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const found = [];
  const walk = (p) => {
    for (const [child, parent] of parents) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

/** The app, started by tauri-driver for `w`, with its hub on `port`; returns the browser, teardown, when
 * the session was asked for and tauri-driver's pid (the app and its WebKit processes run under it). */
export async function startApp(w, port) {
  // One more try when the driver drops the session request (seen once in CI: UND_ERR_SOCKET while
  // creating the session; the same spec passed on its own right after).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startAppOnce(w, port);
    } catch (e) {
      if (attempt >= 2) throw e;
      console.log(`the app's session could not be made (${e.message}); trying once more`);
    }
  }
}

async function startAppOnce(w, port) {
  const driverPort = await freePort();
  const nativePort = await freePort();
  const log = openSync(`${w.base}/driver.log`, "a");
  const driver = spawn(tauriDriver, ["--port", String(driverPort), "--native-port", String(nativePort)], {
    env: w.env,
    cwd: w.proj,
    stdio: ["ignore", log, log],
  });
  await waitFor("tauri-driver", () =>
    new Promise((resolve) => {
      const socket = net.connect(driverPort, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    }),
  );
  const started = Date.now();
  let browser;
  try {
    browser = await remote({
      hostname: "127.0.0.1",
      port: driverPort,
      logLevel: "error",
      connectionRetryCount: 0,
      capabilities: {
        "tauri:options": { application: appBin, args: ["--project", w.proj, "--port", String(port)] },
      },
    });
  } catch (e) {
    // Without a session nobody stops the driver: ended here, or the spec's process never exits (and a
    // CI run waits for its time limit instead of failing).
    const tagged = descendants(driver.pid);
    driver.kill("SIGKILL");
    for (const pid of tagged) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already ended
      }
    }
    throw e;
  }
  const stop = async () => {
    const tagged = descendants(driver.pid);
    try {
      await browser.deleteSession();
    } catch {
      // the window may be gone already
    }
    driver.kill("SIGTERM");
    await new Promise((r) => (driver.exitCode != null ? r() : driver.once("exit", r)));
    await sleep(300);
    for (const pid of tagged) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already ended
      }
    }
  };
  return { browser, stop, started, driverPid: driver.pid };
}

/** The hub's runtime file once the app's hub listens. */
export function hubInfo(w) {
  return waitFor("the app's hub", () => {
    const file = `${w.config}/hub.json`;
    return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
  });
}

/** Runs the SDK client (tests/interop/client.mjs) as the agent `claude-code`; resolves to its report. */
export function agent(info, w, steps, clientName = "claude-code") {
  const token = readFileSync(`${w.config}/token`, "utf8").trim();
  const scenario = { url: info.mcp_url, token, clientName, steps };
  const child = spawn("node", [path.join(interop, "client.mjs"), JSON.stringify(scenario)], {
    cwd: interop,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  // "close", not "exit": a large report may still be in the pipe when the process has exited.
  return new Promise((resolve) =>
    child.on("close", (code) => resolve({ code, report: out.trim() ? JSON.parse(out) : null })),
  );
}

/** The ledger's calls, newest first, as `portcullis ledger query --json` lists them. */
export function ledgerCalls(w) {
  const out = execFileSync(cliBin, ["ledger", "query", "--json", "--limit", "100", "--db", w.ledger], { env: w.env });
  return JSON.parse(out.toString()).calls;
}

/** Waits until the ledger holds a row that `match` accepts. */
export function ledgerRow(w, match) {
  return waitFor("the ledger row", () => ledgerCalls(w).find(match), 15_000);
}

/** Two animation frames: what a screenshot then captures is what the last change painted. */
export function settled(browser) {
  return browser.executeAsync((done) =>
    globalThis.requestAnimationFrame(() => globalThis.requestAnimationFrame(() => done(true))),
  );
}

/** A fresh world with `policy` and the app on it, once its inbox is interactive. */
export async function openApp(policy) {
  const w = world(policy);
  const app = await startApp(w, await freePort());
  const info = await hubInfo(w);
  await app.browser.$('[data-testid="inbox-empty"]').waitForDisplayed({ timeout: 20_000 });
  return { w, app, info };
}

/** Saves the window as `name` into docs/screenshots/ when asked (PORTCULLIS_SCREENSHOTS=docs/screenshots),
 * else beside the specs (ui/e2e/out/, ignored), so an ordinary run leaves the committed pictures alone. */
export async function screenshot(browser, name) {
  const dir = path.resolve(repo, process.env.PORTCULLIS_SCREENSHOTS ?? "ui/e2e/out");
  mkdirSync(dir, { recursive: true });
  await settled(browser);
  await browser.saveScreenshot(path.join(dir, name));
}
