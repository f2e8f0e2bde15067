// An agent on the official v2 TypeScript SDK (`@modelcontextprotocol/client` 2.x), for the gateway's
// tests of both MCP revisions at the agents' door. Usage: node v2-client.mjs '<scenario JSON>'
//   scenario: { "url": string, "token"?: string, "clientName"?: string,
//               "mode": "legacy" | "auto" | "2026-07-28" (pinned: no fallback),
//               "answers"?: {"elicitation": {..}} (declares elicitation and accepts with that content;
//                what was asked is in the report's `asked`),
//               "steps": [ {"op": "list"} | {"op": "call", "name": .., "arguments": {..}} ] }
// Prints one JSON document: the revision it spoke (`protocolVersion`), and every step's result (a call's
// error is recorded as {error, code}, not thrown).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const scenario = JSON.parse(process.argv[2]);
const answers = scenario.answers;
const mode = scenario.mode === 'legacy' || scenario.mode === 'auto' ? scenario.mode : { pin: scenario.mode };
const client = new Client(
  { name: scenario.clientName ?? 'interop-v2-client', version: '2.4.0' },
  { capabilities: answers ? { elicitation: {} } : {}, versionNegotiation: { mode } },
);
const asked = [];
if (answers) {
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push({ method: request.method, params: request.params });
    return { action: 'accept', content: answers.elicitation ?? {} };
  });
}
const headers = scenario.token ? { Authorization: `Bearer ${scenario.token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(scenario.url), { requestInit: { headers } });

const out = { results: [] };
let exitCode = 0;
try {
  await client.connect(transport);
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
  for (const step of scenario.steps) {
    if (step.op === 'list') {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      out.results.push({ op: 'list', tools: tools.map((t) => t.name) });
    } else if (step.op === 'call') {
      try {
        const result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} });
        out.results.push({ op: 'call', name: step.name, result });
      } catch (e) {
        out.results.push({ op: 'call', name: step.name, error: String(e?.message ?? e), code: e?.code });
      }
    }
  }
  out.asked = asked;
  await client.close();
} catch (e) {
  out.error = String(e?.message ?? e);
  out.code = e?.code;
  exitCode = 3;
}
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(exitCode));
