// An agent for Portcullis's interop tests, on the official TypeScript SDK: connects to the gateway over
// Streamable HTTP (or spawns a stdio server), runs the steps of a scenario, and prints one JSON document
// with every result. Usage: node client.mjs '<scenario JSON>'
//   scenario: { "url"?: string, "token"?: string, "headers"?: {..}, "command"?: string, "args"?: [..],
//               "env"?: {..}, "steps": [ {"op": "list"} | {"op": "wait", "ms": n} |
//               {"op": "call", "name": .., "arguments": {..}, "progress"?: true (collect progress notifications),
//                "timeoutMs"?: n, "resetTimeoutOnProgress"?: true, "meta"?: {..} (sent as params._meta),
//                "idempotencyKey"?: string (SEP-3182, sent as params.idempotencyKey)} |
//               {"op": "parallel", "calls": [<call steps>], "staggerMs"?: n} (started staggerMs apart, awaited
//                together; results in order; a call's error is recorded as {error, code}) |
//               {"op": "request", "method": "resources/list"|"resources/templates/list"|"resources/read"|
//                "prompts/list"|"prompts/get"|"completion/complete", "params"?: {..}} (an error is recorded,
//                not thrown) ],
//             "answers"?: {"sampling": text, "elicitation": {..}, "roots"?: [{uri, name}]} (declares sampling,
//                elicitation (and roots) and answers them; what the server asked is in the report's `asked`) }
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const scenario = JSON.parse(process.argv[2]);
const answers = scenario.answers;
const capabilities = answers ? { sampling: {}, elicitation: {}, ...(answers.roots ? { roots: {} } : {}) } : {};
const client = new Client({ name: scenario.clientName ?? "interop-sdk-client", version: "1.32.2" }, { capabilities });
let listChanged = 0;
const asked = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
if (answers) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push({ method: request.method, params: request.params });
    return { role: "assistant", content: { type: "text", text: answers.sampling ?? "" }, model: "interop-model" };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push({ method: request.method, params: request.params });
    return { action: "accept", content: answers.elicitation ?? {} };
  });
  if (answers.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async (request) => {
      asked.push({ method: request.method });
      return { roots: answers.roots };
    });
  }
}
const requests = {
  "resources/list": (p) => client.listResources(p),
  "resources/templates/list": (p) => client.listResourceTemplates(p),
  "resources/read": (p) => client.readResource(p),
  "prompts/list": (p) => client.listPrompts(p),
  "prompts/get": (p) => client.getPrompt(p),
  "completion/complete": (p) => client.complete(p),
};

let transport;
if (scenario.url) {
  const headers = { ...(scenario.headers ?? {}) };
  if (scenario.token) headers["Authorization"] = `Bearer ${scenario.token}`;
  transport = new StreamableHTTPClientTransport(new URL(scenario.url), { requestInit: { headers } });
} else {
  transport = new StdioClientTransport({ command: scenario.command, args: scenario.args ?? [], env: { ...process.env, ...(scenario.env ?? {}) }, stderr: "inherit" });
}

async function call(step) {
  const progress = [];
  const options = { timeout: step.timeoutMs ?? 60000, resetTimeoutOnProgress: step.resetTimeoutOnProgress ?? false };
  if (step.progress) options.onprogress = (p) => progress.push(p);
  const params = { name: step.name, arguments: step.arguments ?? {} };
  if (step.meta) params._meta = step.meta;
  if (step.idempotencyKey !== undefined) params.idempotencyKey = step.idempotencyKey;
  const result = await client.callTool(params, undefined, options);
  return { op: "call", name: step.name, result, progress };
}

const out = { results: [] };
let exitCode = 0;
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  for (const step of scenario.steps) {
    if (step.op === "list") {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      out.results.push({ op: "list", tools });
    } else if (step.op === "call") {
      out.results.push(await call(step));
    } else if (step.op === "parallel") {
      const running = [];
      for (const [i, c] of step.calls.entries()) {
        if (i > 0 && step.staggerMs) await new Promise((r) => setTimeout(r, step.staggerMs));
        running.push(call(c).catch((e) => ({ op: "call", name: c.name, error: String(e?.message ?? e), code: e?.code })));
      }
      out.results.push({ op: "parallel", results: await Promise.all(running) });
    } else if (step.op === "request") {
      try {
        out.results.push({ op: "request", method: step.method, result: await requests[step.method](step.params ?? {}) });
      } catch (e) {
        out.results.push({ op: "request", method: step.method, error: String(e?.message ?? e), code: e?.code, data: e?.data });
      }
    } else if (step.op === "wait") {
      await new Promise((r) => setTimeout(r, step.ms));
    }
  }
  out.listChanged = listChanged;
  out.asked = asked;
  await client.close();
} catch (e) {
  out.error = String(e?.message ?? e);
  out.code = e?.code;
  exitCode = 3;
}
report(out, exitCode);

/** Writes the report and exits once it is written: a pipe takes a large report in parts, and an exit
 *  before the last part is written cuts it (a burst of 600 calls' report was cut at 219,264 bytes). */
function report(value, code) {
  process.stdout.write(JSON.stringify(value) + "\n", () => process.exit(code));
}
