// The gateway's latency for the two MCP revisions side by side, in one run (outside CI): the official
// v2 client pinned to 2026-07-28 (stateless: every request carries its `_meta`, no session) and the
// same client in its default `legacy` mode (a 2025-11-25 session), against one `portcullis serve`.
// Each times N sequential calls of the built-in `read` tool (a small file) and of an upstream tool
// (`tests/interop/v2-server.mjs`'s `echo`, over stdio), one by one after a warm-up of N/10; then the
// two revisions' `tools/list`. Prints one JSON object per line (µs).
//   node bench-revisions.mjs URL TOKEN N
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, token, n = '1000'] = process.argv.slice(2);
const calls = Number(n);

async function connect(mode) {
  const client = new Client({ name: `bench-${typeof mode === 'string' ? mode : 'pinned'}`, version: '1.0.0' }, {
    versionNegotiation: { mode },
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

function summary(times) {
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(times.length * q))];
  return { p50_us: Math.round(at(0.5)), p90_us: Math.round(at(0.9)), p99_us: Math.round(at(0.99)) };
}

async function timed(what, once) {
  for (let i = 0; i < Math.max(1, Math.floor(calls / 10)); i++) await once();
  const times = [];
  for (let i = 0; i < calls; i++) {
    const started = process.hrtime.bigint();
    await once();
    times.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  return { what, calls, ...summary(times) };
}

const revisions = [
  ['2026-07-28 (stateless)', { pin: '2026-07-28' }],
  ['2025-11-25 (session)', 'legacy'],
];
for (const [revision, mode] of revisions) {
  const client = await connect(mode);
  const check = (result, needle) => {
    const text = JSON.stringify(result);
    if (result.isError || !text.includes(needle)) throw new Error(`${revision}: unexpected answer ${text}`);
  };
  const rows = [
    await timed('read (built-in)', async () =>
      check(await client.callTool({ name: 'read', arguments: { path: 'bench.txt' } }), 'bench')),
    await timed('echo (upstream, stdio)', async () =>
      check(await client.callTool({ name: 'v2__echo', arguments: { text: 'bench' } }), 'v2 echo: bench')),
    await timed('tools/list', async () => {
      const listed = await client.listTools();
      if (!listed.tools.length) throw new Error('no tools');
    }),
  ];
  for (const row of rows) console.log(JSON.stringify({ bench: 'revisions', revision, ...row }));
  await client.close();
}
