// Conformance upstream: an MCP server on the official TypeScript SDK offering everything the official
// conformance suite's *server* scenarios ask for, so the suite can run against it directly and through Portcullis.
//
// Usage:  node upstream-server.mjs [--port N] [--host 127.0.0.1] [--no-host-check]   (Streamable HTTP at /mcp;
//         prints one line `listening http://HOST:PORT/mcp` on stdout when ready; port 0 = pick a free one)
//         node upstream-server.mjs --stdio                                           (MCP over stdin/stdout)
// Env:    CONFORMANCE_UPSTREAM_PORT (default 0), CONFORMANCE_UPSTREAM_LOG=<path>: append one JSON line per
//         JSON-RPC message that reaches the MCP layer (so a test can prove a request never got here).
// --no-host-check turns off our own Host/Origin (DNS-rebinding) check, so a gateway in front is what gets tested.
import { createServer as createHttpServer } from 'node:http';
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema,
  GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema, ListToolsRequestSchema, LoggingLevelSchema, ReadResourceRequestSchema,
  SetLevelRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema, isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const LOG_PATH = process.env.CONFORMANCE_UPSTREAM_LOG;

// 1x1 red PNG (RGB, 8 bit) and a tiny silent 8 kHz mono 16-bit WAV, both base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
const WAV = (() => {
  const data = Buffer.alloc(16); // 8 silent samples
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22); h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]).toString('base64');
})();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: 'text', text: t });
const noArgs = { type: 'object', properties: {} };

// One JSON line per JSON-RPC message received (request, notification, or response to our own request).
function logMessage(transportName, sessionId, msg) {
  if (!LOG_PATH) return;
  for (const m of Array.isArray(msg) ? msg : [msg]) {
    const kind = m.method ? (m.id !== undefined ? 'request' : 'notification') : 'response';
    const p = m.params ?? {};
    const line = {
      ts: new Date().toISOString(), transport: transportName, session: sessionId ?? null, kind, id: m.id ?? null,
      method: m.method ?? null, name: p.name ?? null, uri: p.uri ?? null,
      params: m.params === undefined ? null : JSON.stringify(m.params).slice(0, 500),
    };
    appendFileSync(LOG_PATH, JSON.stringify(line) + '\n');
  }
}

const TOOLS = [
  ['test_simple_text', 'Returns a fixed text block', noArgs],
  ['test_image_content', 'Returns a 1x1 PNG image', noArgs],
  ['test_audio_content', 'Returns a tiny WAV clip', noArgs],
  ['test_embedded_resource', 'Returns an embedded text resource', noArgs],
  ['test_multiple_content_types', 'Returns text, image and resource content', noArgs],
  ['test_tool_with_logging', 'Sends three info log notifications while running', noArgs],
  ['test_error_handling', 'Always fails with isError: true', noArgs],
  ['test_tool_with_progress', 'Reports progress 0, 50, 100 of 100', noArgs],
  ['test_sampling', 'Asks the client for an LLM completion (sampling/createMessage)',
    { type: 'object', properties: { prompt: { type: 'string', description: 'Prompt for the LLM' } }, required: ['prompt'] }],
  ['test_elicitation', 'Asks the client for user input (elicitation/create)',
    { type: 'object', properties: { message: { type: 'string', description: 'Message shown to the user' } }, required: ['message'] }],
  ['test_elicitation_sep1034_defaults', 'Elicitation whose schema has defaults for every primitive type', noArgs],
  ['test_elicitation_sep1330_enums', 'Elicitation with all five enum schema variants', noArgs],
  ['json_schema_2020_12_tool', 'Tool with JSON Schema 2020-12 features', {
    $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object',
    $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
    properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } }, additionalProperties: false,
  }],
  ['test_reconnection', 'Closes its SSE stream mid-call; the result comes after the client reconnects', noArgs],
].map(([name, description, inputSchema]) => ({ name, description, inputSchema }));

const RESOURCES = {
  'test://static-text': { name: 'static-text', description: 'A static text resource', mimeType: 'text/plain',
    text: 'This is the content of the static text resource.' },
  'test://static-binary': { name: 'static-binary', description: 'A static binary (PNG) resource', mimeType: 'image/png', blob: PNG },
  'test://watched-resource': { name: 'watched-resource', description: 'A resource clients can subscribe to',
    mimeType: 'text/plain', text: 'Watched resource content.' },
};
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A prompt without arguments' },
  { name: 'test_prompt_with_arguments', description: 'A prompt with two required arguments', arguments: [
    { name: 'arg1', description: 'First test argument', required: true },
    { name: 'arg2', description: 'Second test argument', required: true }] },
  { name: 'test_prompt_with_embedded_resource', description: 'A prompt embedding a resource', arguments: [
    { name: 'resourceUri', description: 'URI of the resource to embed', required: true }] },
  { name: 'test_prompt_with_image', description: 'A prompt with image content' },
];

// A fresh Server per session (HTTP) or per process (stdio).
function buildServer() {
  const server = new Server({ name: 'portcullis-conformance-upstream', version: '1.0.0' }, {
    capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} },
  });
  const subscriptions = new Set();
  const levels = LoggingLevelSchema.options; // debug .. emergency, by severity
  let minLevel = null;
  server.setRequestHandler(SetLevelRequestSchema, async (req) => { minLevel = req.params.level; return {}; });
  // Log notifications go on the calling request's stream (extra.sendNotification), filtered by logging/setLevel.
  const log = (extra, level, data) =>
    (minLevel && levels.indexOf(level) < levels.indexOf(minLevel))
      ? Promise.resolve()
      : extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'conformance-upstream', data } });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    const caps = server.getClientCapabilities() ?? {};
    switch (req.params.name) {
      case 'test_simple_text': return { content: [text('This is a simple text response for testing.')] };
      case 'test_image_content': return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] };
      case 'test_audio_content': return { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] };
      case 'test_embedded_resource': return { content: [{ type: 'resource', resource: {
        uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] };
      case 'test_multiple_content_types': return { content: [
        text('Multiple content types test:'),
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }) } }] };
      case 'test_tool_with_logging':
        await log(extra, 'info', 'Tool execution started'); await sleep(50);
        await log(extra, 'info', 'Tool processing data'); await sleep(50);
        await log(extra, 'info', 'Tool execution completed');
        return { content: [text('Tool with logging executed successfully')] };
      case 'test_error_handling':
        return { isError: true, content: [text('This tool intentionally returns an error for testing')] };
      case 'test_tool_with_progress': {
        const token = req.params._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
          }
          if (progress < 100) await sleep(50);
        }
        return { content: [text('Tool with progress executed successfully')] };
      }
      case 'test_sampling': {
        if (!caps.sampling) return { isError: true, content: [text('Client does not support sampling')] };
        const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
          messages: [{ role: 'user', content: text(String(args.prompt ?? '')) }], maxTokens: 100 } }, CreateMessageResultSchema);
        return { content: [text(`LLM response: ${r.content?.type === 'text' ? r.content.text : JSON.stringify(r.content)}`)] };
      }
      case 'test_elicitation':
      case 'test_elicitation_sep1034_defaults':
      case 'test_elicitation_sep1330_enums': {
        if (!caps.elicitation) return { isError: true, content: [text('Client does not support elicitation')] };
        const r = await extra.sendRequest({ method: 'elicitation/create', params: elicitParams(req.params.name, args) }, ElicitResultSchema);
        const prefix = req.params.name === 'test_elicitation' ? 'User response' : 'Elicitation completed';
        return { content: [text(`${prefix}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
      }
      case 'json_schema_2020_12_tool': return { content: [text(`Received: ${JSON.stringify(args)}`)] };
      case 'test_reconnection':
        // Only offered by the SDK when an event store is set and the client speaks >= 2025-11-25.
        extra.closeSSEStream?.();
        await sleep(100);
        return { content: [text('Reconnection test completed successfully.')] };
      default:
        return { isError: true, content: [text(`Unknown tool: ${req.params.name}`)] };
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: Object.entries(RESOURCES).map(([uri, { name, description, mimeType }]) => ({ uri, name, description, mimeType })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [{
    uriTemplate: 'test://template/{id}/data', name: 'template-data', description: 'Data for an id', mimeType: 'application/json' }] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const { uri } = req.params;
    const r = RESOURCES[uri];
    if (r) return { contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } : { uri, mimeType: r.mimeType, text: r.text }] };
    const m = TEMPLATE.exec(uri);
    if (m) return { contents: [{ uri, mimeType: 'application/json',
      text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
    throw Object.assign(new Error(`Resource not found: ${uri}`), { code: -32002 });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req) => { subscriptions.add(req.params.uri); return {}; });
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => { subscriptions.delete(req.params.uri); return {}; });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const a = req.params.arguments ?? {};
    const user = (content) => ({ role: 'user', content });
    switch (req.params.name) {
      case 'test_simple_prompt': return { messages: [user(text('This is a simple prompt for testing.'))] };
      case 'test_prompt_with_arguments':
        return { messages: [user(text(`Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'`))] };
      case 'test_prompt_with_embedded_resource': return { messages: [
        user({ type: 'resource', resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } }),
        user(text('Please process the embedded resource above.'))] };
      case 'test_prompt_with_image': return { messages: [
        user({ type: 'image', data: PNG, mimeType: 'image/png' }), user(text('Please analyze the image above.'))] };
      default: throw Object.assign(new Error(`Unknown prompt: ${req.params.name}`), { code: -32602 });
    }
  });

  // Completion: prefix-match a small word list for prompt arguments and template variables.
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const words = ['paris', 'park', 'party', 'test', 'testValue1', 'testValue2', '123'];
    const values = words.filter((w) => w.startsWith(req.params.argument.value ?? ''));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

function elicitParams(tool, args) {
  if (tool === 'test_elicitation') return { message: String(args.message ?? ''), requestedSchema: { type: 'object',
    properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
    required: ['username', 'email'] } };
  if (tool === 'test_elicitation_sep1034_defaults') return { message: 'Please confirm (every field has a default)', requestedSchema: {
    type: 'object', properties: {
      name: { type: 'string', description: 'User name', default: 'John Doe' },
      age: { type: 'integer', description: 'User age', default: 30 },
      score: { type: 'number', description: 'User score', default: 95.5 },
      status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
      verified: { type: 'boolean', description: 'Verification status', default: true } } } };
  const titled = (pairs) => pairs.map(([c, t]) => ({ const: c, title: t }));
  return { message: 'Please pick options (five enum variants)', requestedSchema: { type: 'object', properties: {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: { type: 'string', oneOf: titled([['value1', 'First Option'], ['value2', 'Second Option'], ['value3', 'Third Option']]) },
    legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: { type: 'array', items: { anyOf: titled([['value1', 'First Choice'], ['value2', 'Second Choice'], ['value3', 'Third Choice']]) } },
  } } };
}

// Wrap the transport's inbound hook so every message is logged before the SDK handles it.
function tapTransport(transport, name) {
  const inner = transport.onmessage;
  transport.onmessage = (msg, extra) => { logMessage(name, transport.sessionId, msg); inner?.(msg, extra); };
}

// In-memory event store: lets the SDK send SSE priming events and replay after Last-Event-ID (resumability).
function memoryEventStore() {
  const events = []; // { id, streamId, message }
  return {
    async storeEvent(streamId, message) { const id = `${streamId}_${events.length}`; events.push({ id, streamId, message }); return id; },
    async getStreamIdForEventId(id) { return events.find((e) => e.id === id)?.streamId; },
    async replayEventsAfter(lastId, { send }) {
      const i = events.findIndex((e) => e.id === lastId);
      if (i < 0) return '';
      const { streamId } = events[i];
      for (const e of events.slice(i + 1)) if (e.streamId === streamId && e.message.jsonrpc) await send(e.id, e.message);
      return streamId;
    },
  };
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
function hostAllowed(req) {
  const hostname = (v) => { try { return new URL(v).hostname; } catch { return null; } };
  if (!LOCAL_HOSTS.has(hostname(`http://${req.headers.host ?? ''}`))) return false;
  return !req.headers.origin || LOCAL_HOSTS.has(hostname(req.headers.origin));
}

function sendJsonError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readBody(req) {
  const chunks = []; let size = 0;
  for await (const c of req) { size += c.length; if (size > 4 << 20) throw new Error('body too large'); chunks.push(c); }
  return Buffer.concat(chunks).toString('utf8');
}

async function serveHttp() {
  const host = opt('--host', '127.0.0.1');
  const port = Number(opt('--port', process.env.CONFORMANCE_UPSTREAM_PORT ?? 0));
  const checkHost = !flag('--no-host-check');
  const sessions = new Map(); // session id -> transport

  const http = createHttpServer(async (req, res) => {
    try {
      if (new URL(req.url, 'http://x').pathname !== '/mcp') return sendJsonError(res, 404, 'Not found');
      if (checkHost && !hostAllowed(req)) return sendJsonError(res, 403, 'Forbidden: Host/Origin not allowed');
      const sid = req.headers['mcp-session-id'];
      let body;
      if (req.method === 'POST') {
        try { body = JSON.parse(await readBody(req)); } catch { return sendJsonError(res, 400, 'Parse error'); }
      }
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid) return sendJsonError(res, 404, 'Session not found');
        if (req.method !== 'POST' || !isInitializeRequest(Array.isArray(body) ? body[0] : body)) {
          return sendJsonError(res, 400, 'Bad Request: no valid session ID');
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: memoryEventStore(),
          retryInterval: 1000,
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
        await buildServer().connect(transport);
        tapTransport(transport, 'http');
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      process.stderr.write(`request error: ${err?.stack ?? err}\n`);
      if (!res.headersSent) sendJsonError(res, 500, 'Internal server error');
    }
  });
  http.listen(port, host, () => {
    const { port: actual } = http.address();
    process.stdout.write(`listening http://${host.includes(':') ? `[${host}]` : host}:${actual}/mcp\n`);
  });
  const stop = () => { for (const t of sessions.values()) t.close().catch(() => {}); http.close(); process.exit(0); };
  process.on('SIGTERM', stop); process.on('SIGINT', stop);
}

async function serveStdio() {
  const transport = new StdioServerTransport();
  await buildServer().connect(transport);
  tapTransport(transport, 'stdio');
}

await (flag('--stdio') ? serveStdio() : serveHttp());
