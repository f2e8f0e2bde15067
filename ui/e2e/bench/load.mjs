// A load of real agent calls for the app's benchmark: `clients` sessions of the official MCP TypeScript
// SDK client (from tests/interop) on the gateway, calling one allowed, cheap tool at `rate` calls a second
// for `seconds`, paced every 10 ms, each session with at most `inFlight` calls outstanding (a tick that
// finds every session full counts as "behind"). Prints one JSON line: calls asked, answered, failed, the
// rate achieved. Usage: node load.mjs '{"url", "token", "rate", "seconds", "clients", "tool", "arguments"}'
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdk = path.resolve(import.meta.dirname, "../../../tests/interop/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(pathToFileURL(`${sdk}/client/index.js`).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(`${sdk}/client/streamableHttp.js`).href);

const o = { clients: 16, inFlight: 8, rate: 1000, seconds: 30, ...JSON.parse(process.argv[2]) };
const sessions = [];
for (let i = 0; i < o.clients; i++) {
  const client = new Client({ name: `bench-load-${i}`, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(o.url), {
    requestInit: { headers: { Authorization: `Bearer ${o.token}` } },
  });
  await client.connect(transport);
  sessions.push({ client, outstanding: 0 });
}

const tally = { asked: 0, answered: 0, failed: 0, behind: 0, firstError: null };
const call = (s) => {
  s.outstanding += 1;
  tally.asked += 1;
  s.client
    .callTool({ name: o.tool, arguments: o.arguments })
    .then((r) => {
      if (r.isError) {
        tally.failed += 1;
        tally.firstError ??= JSON.stringify(r.content).slice(0, 300);
      } else tally.answered += 1;
    })
    .catch((e) => {
      tally.failed += 1;
      tally.firstError ??= String(e?.message ?? e);
    })
    .finally(() => (s.outstanding -= 1));
};

const started = performance.now();
let next = 0;
let due = 0;
await new Promise((resolve) => {
  const tick = setInterval(() => {
    const elapsed = (performance.now() - started) / 1000;
    if (elapsed >= o.seconds) {
      clearInterval(tick);
      resolve();
      return;
    }
    due = Math.floor(elapsed * o.rate) - tally.asked - tally.behind;
    for (; due > 0; due--) {
      let s = null;
      for (let k = 0; k < sessions.length && !s; k++) {
        const candidate = sessions[(next + k) % sessions.length];
        if (candidate.outstanding < o.inFlight) s = candidate;
      }
      if (!s) {
        tally.behind += due;
        break;
      }
      next = (sessions.indexOf(s) + 1) % sessions.length;
      call(s);
    }
  }, 10);
});
const asked = performance.now();
const inWindow = tally.answered;
while (sessions.some((s) => s.outstanding > 0) && performance.now() - asked < 10_000) {
  await new Promise((r) => setTimeout(r, 20));
}
const seconds = (performance.now() - started) / 1000;
await Promise.allSettled(sessions.map((s) => s.client.close()));
process.stdout.write(
  JSON.stringify({
    ...tally,
    seconds: Number(seconds.toFixed(2)),
    // answered within the window, per second of it
    rate: Math.round(inWindow / o.seconds),
  }) + "\n",
);
process.exit(0);
