// Conformance upstream on the v2 TypeScript SDK (`@modelcontextprotocol/server` 2.x): one server definition
// offering everything the official conformance suite's *server* scenarios ask for, served at BOTH protocol
// revisions on one Streamable HTTP endpoint, so the suite can run against it directly and through Portcullis
// at `--requirements 2025-11-25` and `--requirements 2026-07-28`:
//   - 2026-07-28 (per-request `_meta` envelope, stateless): the SDK's `createMcpHandler` (strict, `legacy: 'reject'`);
//   - 2025 (initialize handshake, sessions, server->client requests, SSE resumability): a sessionful
//     `WebStandardStreamableHTTPServerTransport` per session, chosen by the SDK's own `isLegacyRequest`.
// The 2026 Multi Round-Trip Request tools (SEP-2322) return `inputRequired(...)`; on a 2025 session the SDK's
// legacy shim turns the same return into real elicitation/sampling/roots requests, so one handler serves both.
//
// Usage:  node upstream-v2.mjs [--port N] [--host 127.0.0.1] [--no-host-check]   (Streamable HTTP at /mcp;
//         prints one line `listening http://HOST:PORT/mcp` on stdout when ready; port 0 = pick a free one)
// Env:    CONFORMANCE_UPSTREAM_LOG=<path>: append one JSON line per JSON-RPC message posted to /mcp.
// --no-host-check turns off our own Host/Origin (DNS-rebinding) check, so a gateway in front is what gets tested.
import { createServer as createHttpServer } from 'node:http';
import { appendFileSync } from 'node:fs';
import { createHmac, randomUUID } from 'node:crypto';
import {
  McpServer, ResourceTemplate, WebStandardStreamableHTTPServerTransport, completable, createMcpHandler, fromJsonSchema,
  hostHeaderValidationResponse, inputRequired, isLegacyRequest, localhostAllowedHostnames, localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const LOG_PATH = process.env.CONFORMANCE_UPSTREAM_LOG;

// 1x1 red PNG and a tiny silent 8 kHz mono 16-bit WAV, both base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
const WAV = (() => {
  const data = Buffer.alloc(16);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22); h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]).toString('base64');
})();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: 'text', text: t });
const NO_ARGS = { type: 'object', properties: {} };
const CLIENT_CAPS = 'io.modelcontextprotocol/clientCapabilities';

// requestState is integrity-protected (SEP-2322: the server MUST reject tampered state): `<payload>.<hmac>`,
// checked by the SDK's requestState.verify hook before any handler sees it.
const SECRET = randomUUID();
const hmac = (s) => createHmac('sha256', SECRET).update(s).digest('base64url');
const seal = (payload) => {
  const body = Buffer.from(JSON.stringify({ ...payload, nonce: randomUUID() })).toString('base64url');
  return `${body}.${hmac(body)}`;
};
const unseal = (state) => {
  const [body, mac] = String(state).split('.');
  if (!body || mac !== hmac(body)) throw new Error('requestState failed its integrity check');
  return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
};
const stateOf = (ctx) => {
  const raw = ctx.mcpReq.requestState();
  return raw === undefined ? undefined : unseal(raw);
};
// An input response the handler can use: a bare result object (the SDK drops anything else).
const answer = (ctx, key) => {
  const r = ctx.mcpReq.inputResponses?.[key];
  return r && typeof r === 'object' ? r : undefined;
};
const field = (r, name) => (typeof r?.content?.[name] === 'string' ? r.content[name] : 'unknown');
const elicitName = (message = 'What is your name?') =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } });
const sample = (prompt, maxTokens = 100) =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: text(prompt) }], maxTokens });
const samplingText = (r) => (r?.content?.type === 'text' ? r.content.text : JSON.stringify(r?.content ?? null));

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

// The JSON Schema 2020-12 tool's input schema (SEP-1613, SEP-2106: every keyword must survive tools/list).
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: {
    name: { type: 'string' }, address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] }, phone: { type: 'string' }, email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] }, else: { required: ['email'] },
  additionalProperties: false,
};

// Tools whose whole behaviour is a fixed answer: name -> [description, result].
const FIXED = {
  test_simple_text: ['Returns a fixed text block', { content: [text('This is a simple text response for testing.')] }],
  test_image_content: ['Returns a 1x1 PNG image', { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }],
  test_audio_content: ['Returns a tiny WAV clip', { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }],
  test_embedded_resource: ['Returns an embedded text resource', { content: [{ type: 'resource', resource: {
    uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }],
  test_multiple_content_types: ['Returns text, image and resource content', { content: [
    text('Multiple content types test:'), { type: 'image', data: PNG, mimeType: 'image/png' },
    { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json',
      text: JSON.stringify({ test: 'data', value: 123 }) } }] }],
  test_error_handling: ['Always fails with isError: true',
    { isError: true, content: [text('This tool intentionally returns an error for testing')] }],
};

const RESOURCES = {
  'test://static-text': { name: 'static-text', description: 'A static text resource', mimeType: 'text/plain',
    text: 'This is the content of the static text resource.' },
  'test://static-binary': { name: 'static-binary', description: 'A static binary (PNG) resource', mimeType: 'image/png', blob: PNG },
  'test://watched-resource': { name: 'watched-resource', description: 'A resource clients can subscribe to',
    mimeType: 'text/plain', text: 'Watched resource content.' },
};
const WORDS = ['paris', 'park', 'party', 'test', 'testValue1', 'testValue2', '123'];
const complete = (value) => WORDS.filter((w) => w.startsWith(value ?? ''));
const CACHE = { ttlMs: 300000, cacheScope: 'public' };

let modern; // the 2026 handler, for its list-changed notifier (test_trigger_*)
// How many times test_trigger_* changed the lists: each change really adds a tool or a prompt, as a live
// server's would, so a proxy that forwards only real changes is tested by them too.
const mutations = { tools: 0, prompts: 0 };

// One server definition for both eras: `era` is 'modern' (one 2026 request) or 'legacy' (one 2025 session).
function buildServer({ era }) {
  const server = new McpServer({ name: 'portcullis-conformance-v2', version: '1.0.0' }, {
    capabilities: {
      tools: { listChanged: true }, prompts: { listChanged: true }, completions: {},
      resources: era === 'legacy' ? { subscribe: true } : { listChanged: true }, logging: {},
    },
    cacheHints: Object.fromEntries(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read']
      .map((m) => [m, CACHE])),
    requestState: { verify: (state) => { unseal(state); } },
  });
  const tool = (name, description, schema, handler) =>
    server.registerTool(name, { description, inputSchema: fromJsonSchema(schema) }, handler);

  for (const [name, [description, result]] of Object.entries(FIXED)) tool(name, description, NO_ARGS, async () => result);
  tool('test_tool_with_logging', 'Sends three info log notifications while running', NO_ARGS, async (_a, ctx) => {
    for (const [i, msg] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i) await sleep(50);
      await ctx.mcpReq.log('info', msg, 'conformance-upstream');
    }
    return { content: [text('Tool with logging executed successfully')] };
  });
  tool('test_tool_with_progress', 'Reports progress 0, 50, 100 of 100', NO_ARGS, async (_a, ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progressToken !== undefined) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
      }
      if (progress < 100) await sleep(50);
    }
    return { content: [text('Tool with progress executed successfully')] };
  });
  tool('test_sampling', 'Asks the client for an LLM completion (sampling/createMessage)',
    { type: 'object', properties: { prompt: { type: 'string', description: 'Prompt for the LLM' } }, required: ['prompt'] },
    async ({ prompt }, ctx) => {
      const r = answer(ctx, 'completion');
      if (!r) return inputRequired({ inputRequests: { completion: sample(String(prompt ?? '')) } });
      return { content: [text(`LLM response: ${samplingText(r)}`)] };
    });
  for (const [name, description, schema] of [
    ['test_elicitation', 'Asks the client for user input (elicitation/create)',
      { type: 'object', properties: { message: { type: 'string', description: 'Message shown to the user' } }, required: ['message'] }],
    ['test_elicitation_sep1034_defaults', 'Elicitation whose schema has defaults for every primitive type', NO_ARGS],
    ['test_elicitation_sep1330_enums', 'Elicitation with all five enum schema variants', NO_ARGS],
  ]) {
    tool(name, description, schema, async (args, ctx) => {
      const r = answer(ctx, 'input');
      if (!r) return inputRequired({ inputRequests: { input: inputRequired.elicit(elicitParams(name, args)) } });
      const prefix = name === 'test_elicitation' ? 'User response' : 'Elicitation completed';
      return { content: [text(`${prefix}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
    });
  }
  tool('json_schema_2020_12_tool', 'Tool with JSON Schema 2020-12 features', SCHEMA_2020_12,
    async (args) => ({ content: [text(`Received: ${JSON.stringify(args)}`)] }));
  tool('test_reconnection', 'Closes its SSE stream mid-call; the result comes after the client reconnects', NO_ARGS, async (_a, ctx) => {
    ctx.http?.closeSSE?.();
    await sleep(100);
    return { content: [text('Reconnection test completed successfully.')] };
  });
  // SEP-2243: a parameter mirrored into an `Mcp-Param-Region` header (the SDK validates header against body).
  tool('test_custom_header', 'Echoes a region that the client also sends as the Mcp-Param-Region header',
    { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] },
    async ({ region }) => ({ content: [text(`region=${region}`)] }));

  // SEP-2322 Multi Round-Trip Requests.
  tool('test_input_required_result_elicitation', 'MRTR: asks for a name (elicitation)', NO_ARGS, async (_a, ctx) => {
    const r = answer(ctx, 'user_name');
    if (!r) return inputRequired({ inputRequests: { user_name: elicitName() } });
    return { content: [text(`Hello, ${field(r, 'name')}!`)] };
  });
  tool('test_input_required_result_sampling', 'MRTR: asks for a completion (sampling)', NO_ARGS, async (_a, ctx) => {
    const r = answer(ctx, 'capital_question');
    if (!r) return inputRequired({ inputRequests: { capital_question: sample('What is the capital of France?') } });
    return { content: [text(`The model said: ${samplingText(r)}`)] };
  });
  tool('test_input_required_result_list_roots', 'MRTR: asks for the client roots (roots/list)', NO_ARGS, async (_a, ctx) => {
    const r = answer(ctx, 'client_roots');
    if (!Array.isArray(r?.roots)) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return { content: [text(`Roots: ${r.roots.map((x) => x.uri).join(', ')}`)] };
  });
  tool('test_input_required_result_request_state', 'MRTR: round-trips a sealed requestState', NO_ARGS, async (_a, ctx) => {
    const state = stateOf(ctx);
    if (state?.kind === 'request-state' && answer(ctx, 'confirm')) return { content: [text('state-ok: requestState validated')] };
    return inputRequired({
      inputRequests: { confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: {
        type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }) },
      requestState: seal({ kind: 'request-state' }),
    });
  });
  tool('test_input_required_result_multiple_inputs', 'MRTR: three questions at once', NO_ARGS, async (_a, ctx) => {
    const [name, greeting, roots] = ['user_name', 'greeting', 'client_roots'].map((k) => answer(ctx, k));
    if (stateOf(ctx)?.kind === 'multiple' && name && greeting && roots) {
      return { content: [text(`Hello ${field(name, 'name')}: ${samplingText(greeting)} (${roots.roots?.length ?? 0} roots)`)] };
    }
    return inputRequired({
      inputRequests: { user_name: elicitName(), greeting: sample('Generate a greeting', 50), client_roots: inputRequired.listRoots() },
      requestState: seal({ kind: 'multiple' }),
    });
  });
  tool('test_input_required_result_multi_round', 'MRTR: two rounds of questions', NO_ARGS, async (_a, ctx) => {
    const state = stateOf(ctx);
    if (state?.round === 2 && answer(ctx, 'step2')) {
      return { content: [text(`${state.name}'s favourite colour is ${field(answer(ctx, 'step2'), 'color')}`)] };
    }
    if (state?.round === 1 && answer(ctx, 'step1')) {
      return inputRequired({
        inputRequests: { step2: inputRequired.elicit({ message: 'Step 2: What is your favorite color?', requestedSchema: {
          type: 'object', properties: { color: { type: 'string' } }, required: ['color'] } }) },
        requestState: seal({ round: 2, name: field(answer(ctx, 'step1'), 'name') }),
      });
    }
    return inputRequired({ inputRequests: { step1: elicitName('Step 1: What is your name?') }, requestState: seal({ round: 1 }) });
  });
  tool('test_input_required_result_tampered_state', 'MRTR: its requestState is sealed; a tampered one is refused', NO_ARGS,
    async (_a, ctx) => {
      if (stateOf(ctx)?.kind === 'tamper-test' && answer(ctx, 'confirm')) return { content: [text('integrity-ok: state verified')] };
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: 'Confirm?', requestedSchema: {
          type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }) },
        requestState: seal({ kind: 'tamper-test' }),
      });
    });
  tool('test_input_required_result_capabilities', 'MRTR: asks only what the client declared it can answer', NO_ARGS,
    async (_a, ctx) => {
      const given = Object.keys(ctx.mcpReq.inputResponses ?? {});
      if (given.length) return { content: [text(`capabilities-ok: received ${given.join(',')}`)] };
      const caps = ctx.mcpReq.envelope?.[CLIENT_CAPS] ?? {};
      const inputRequests = {};
      if (caps.elicitation) {
        inputRequests.elicit_input = inputRequired.elicit({ message: 'Elicitation input', requestedSchema: {
          type: 'object', properties: { value: { type: 'string' } }, required: ['value'] } });
      }
      if (caps.sampling) inputRequests.sample_input = sample('Sample request', 50);
      if (!Object.keys(inputRequests).length) return { content: [text('No supported capabilities declared')] };
      return inputRequired({ inputRequests, requestState: seal({ kind: 'capabilities' }) });
    });

  // SEP-2575 (server-stateless) diagnostics.
  // It needs a sampling answer: asking for one of a client that did not declare sampling is refused by the SDK
  // with MissingRequiredClientCapabilityError (-32021, HTTP 400), which is what the scenario checks.
  tool('test_missing_capability', 'Needs a sampling answer; refused with -32021 when sampling is not declared', NO_ARGS,
    async (_a, ctx) => {
      if (!answer(ctx, 'draft')) return inputRequired({ inputRequests: { draft: sample('Draft a one-line answer', 20) } });
      return { content: [text('Success')] };
    });
  tool('test_streaming_elicitation', 'Streams a progress notification, then asks for a name', NO_ARGS, async (_a, ctx) => {
    const r = answer(ctx, 'user_name');
    if (r) return { content: [text(`Streaming complete: ${field(r, 'name')}`)] };
    const progressToken = ctx.mcpReq._meta?.progressToken;
    if (progressToken !== undefined) {
      await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: 50, total: 100 } });
    }
    return inputRequired({ inputRequests: { user_name: elicitName() } });
  });
  tool('test_logging_tool', 'Logs at info (only sent when the request asked for a log level)', NO_ARGS, async (_a, ctx) => {
    await ctx.mcpReq.log('info', 'Diagnostic trace logging activated', 'conformance-upstream');
    return { content: [text('Logging evaluated')] };
  });
  tool('test_trigger_tool_change', 'Adds a tool and announces the change on open subscriptions', NO_ARGS, async () => {
    mutations.tools += 1;
    modern?.notify.toolsChanged();
    return { content: [text('Mutation triggered')] };
  });
  tool('test_trigger_prompt_change', 'Adds a prompt and announces the change on open subscriptions', NO_ARGS, async () => {
    mutations.prompts += 1;
    modern?.notify.promptsChanged();
    return { content: [text('Mutation triggered')] };
  });

  for (const [uri, r] of Object.entries(RESOURCES)) {
    server.registerResource(r.name, uri, { description: r.description, mimeType: r.mimeType }, async () => ({
      contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } : { uri, mimeType: r.mimeType, text: r.text }],
    }));
  }
  server.registerResource('template-data', new ResourceTemplate('test://template/{id}/data', {
    list: undefined, complete: { id: (value) => complete(value) },
  }), { description: 'Data for an id', mimeType: 'application/json' }, async (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
  }));
  if (era === 'legacy') {
    const subscriptions = new Set();
    server.server.setRequestHandler('resources/subscribe', async (req) => { subscriptions.add(req.params.uri); return {}; });
    server.server.setRequestHandler('resources/unsubscribe', async (req) => { subscriptions.delete(req.params.uri); return {}; });
  }

  const user = (content) => ({ role: 'user', content });
  for (let n = 1; n <= mutations.tools; n++) {
    tool(`test_added_tool_${n}`, 'A tool test_trigger_tool_change added', NO_ARGS, async () => ({ content: [text('added')] }));
  }
  for (let n = 1; n <= mutations.prompts; n++) {
    server.registerPrompt(`test_added_prompt_${n}`, { description: 'A prompt test_trigger_prompt_change added' },
      async () => ({ messages: [user(text('added'))] }));
  }
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' },
    async () => ({ messages: [user(text('This is a simple prompt for testing.'))] }));
  server.registerPrompt('test_prompt_with_arguments', { description: 'A prompt with two required arguments', argsSchema: {
    arg1: completable(z.string().describe('First test argument'), (value) => complete(value)),
    arg2: z.string().describe('Second test argument'),
  } }, async ({ arg1, arg2 }) => ({ messages: [user(text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`))] }));
  server.registerPrompt('test_prompt_with_embedded_resource', { description: 'A prompt embedding a resource', argsSchema: {
    resourceUri: z.string().describe('URI of the resource to embed'),
  } }, async ({ resourceUri }) => ({ messages: [
    user({ type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } }),
    user(text('Please process the embedded resource above.'))] }));
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with image content' }, async () => ({ messages: [
    user({ type: 'image', data: PNG, mimeType: 'image/png' }), user(text('Please analyze the image above.'))] }));
  server.registerPrompt('test_input_required_result_prompt', { description: 'MRTR on prompts/get: asks for context' },
    async (ctx) => {
      const r = answer(ctx, 'user_context');
      if (!r) {
        return inputRequired({ inputRequests: { user_context: inputRequired.elicit({ message: 'What context should the prompt use?',
          requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] } }) } });
      }
      return { messages: [user(text(`Use this context: ${field(r, 'context')}`))] };
    });
  return server;
}

// In-memory event store: SSE priming events and replay after Last-Event-ID (2025 resumability).
function memoryEventStore() {
  const events = [];
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

const jsonError = (status, code, message) => new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
  { status, headers: { 'content-type': 'application/json' } });

// 2025 sessions: session id -> transport.
const sessions = new Map();
async function serveLegacy(request, body) {
  const sid = request.headers.get('mcp-session-id');
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid) return jsonError(404, -32001, 'Session not found');
    const first = Array.isArray(body) ? body[0] : body;
    if (request.method !== 'POST' || first?.method !== 'initialize') return jsonError(400, -32000, 'Bad Request: no valid session ID');
    transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(), eventStore: memoryEventStore(), retryInterval: 1000,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
    await buildServer({ era: 'legacy' }).connect(transport);
  }
  return transport.handleRequest(request, body === undefined ? undefined : { parsedBody: body });
}

function logMessages(body) {
  if (!LOG_PATH || body === undefined) return;
  for (const m of Array.isArray(body) ? body : [body]) {
    const p = m?.params ?? {};
    const line = JSON.stringify({ ts: new Date().toISOString(), id: m?.id ?? null, method: m?.method ?? null,
      name: p.name ?? null, uri: p.uri ?? null });
    try { appendFileSync(LOG_PATH, line + '\n'); } catch { /* the log's folder is gone: the test is over */ }
  }
}

async function readBody(req) {
  const chunks = []; let size = 0;
  for await (const c of req) { size += c.length; if (size > 4 << 20) throw new Error('body too large'); chunks.push(c); }
  return Buffer.concat(chunks);
}

// node:http <-> fetch Request/Response, streaming the response body (SSE) chunk by chunk.
async function handle(req, res, checkHost) {
  const url = `http://${req.headers.host ?? '127.0.0.1'}${req.url}`;
  if (new URL(url).pathname !== '/mcp') { res.writeHead(404).end(); return; }
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const raw = req.method === 'POST' ? await readBody(req) : undefined;
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const request = new Request(url, { method: req.method, headers, body: raw, signal: abort.signal });
  let response = checkHost
    ? hostHeaderValidationResponse(request, localhostAllowedHostnames()) ?? originValidationResponse(request, localhostAllowedOrigins())
    : undefined;
  if (!response) {
    let body;
    if (raw !== undefined) { try { body = JSON.parse(raw.toString('utf8')); } catch { body = undefined; } }
    logMessages(body);
    response = (await isLegacyRequest(request)) ? await serveLegacy(request, body) : await modern.fetch(request);
  }
  const out = {};
  response.headers.forEach((v, k) => { out[k] = v; });
  res.writeHead(response.status, out);
  if (!response.body) { res.end(); return; }
  const reader = response.body.getReader();
  abort.signal.addEventListener('abort', () => reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

modern = createMcpHandler((ctx) => buildServer(ctx), { legacy: 'reject', onerror: () => {} });
const host = opt('--host', '127.0.0.1');
const port = Number(opt('--port', process.env.CONFORMANCE_UPSTREAM_PORT ?? 0));
const checkHost = !flag('--no-host-check');
const http = createHttpServer((req, res) => {
  handle(req, res, checkHost).catch((err) => {
    if (!abortish(err)) process.stderr.write(`request error: ${err?.stack ?? err}\n`);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end();
  });
});
const abortish = (err) => err?.name === 'AbortError' || err?.code === 'ABORT_ERR';
http.listen(port, host, () => {
  const { port: actual } = http.address();
  process.stdout.write(`listening http://${host.includes(':') ? `[${host}]` : host}:${actual}/mcp\n`);
});
const stop = () => { for (const t of sessions.values()) t.close().catch(() => {}); modern.close().catch(() => {}); http.close(); process.exit(0); };
process.on('SIGTERM', stop); process.on('SIGINT', stop);
