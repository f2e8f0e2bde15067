#!/usr/bin/env node
// A scripted stand-in for the model APIs that Claude Code (Anthropic Messages API) and Codex CLI
// (OpenAI Responses API) call, so the real agent binaries can run end to end with no network.
//
// Usage:
//   node model-stand-in.mjs --script FILE [--log FILE] [--port N] [--url-file FILE]
//
// Prints `{"url":"http://127.0.0.1:PORT"}` as its first stdout line (and writes the same JSON to
// --url-file when given). Claude Code takes the url as ANTHROPIC_BASE_URL; Codex takes `${url}/v1`
// as its model provider's base_url.
//
// The SCRIPT is a JSON array of turns for the main conversation (or an object `{"turns": [...]}`):
//   {"tool": "<name | suffix | /regex/ | ^regex$>", "input": {...}}  call a tool
//   {"text": "..."}                                                   answer and end the turn
// A request is part of the main conversation when it carries tools. Its turn is chosen by counting
// the tool results the conversation already holds (turn N follows N results), so retries, side
// requests (titles, quota checks, token counts, other models) never advance the script. Requests
// without tools, and main requests past the end of the script, get a short harmless text.
//
// Tool matching, over the tools the request offers, in their order: a pattern written as /re/ or
// containing one of ^ $ * + ? ( ) [ ] { } | \ is a regular expression; any other pattern matches a
// tool whose name equals it, else the first tool whose name ends with it (exact names win). When
// nothing matches, the stand-in answers with a text listing the tool names it saw, so a test's
// failure says why.
//
// --log FILE: one JSON line per request: {seq, time, api, method, path, main, turn, body}.
// api is "anthropic", "openai" or "other"; main says whether the request counted as the main
// conversation; turn is the script index answered (or null).

import http from 'node:http';
import fs from 'node:fs';

function parseArgs(argv) {
  const out = { port: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--script') out.script = next();
    else if (a === '--log') out.log = next();
    else if (a === '--port') out.port = Number(next());
    else if (a === '--url-file') out.urlFile = next();
    else if (a === '-h' || a === '--help') {
      process.stdout.write('node model-stand-in.mjs --script FILE [--log FILE] [--port N] [--url-file FILE]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!out.script) throw new Error('--script FILE is required');
  return out;
}

export function loadScript(file) {
  const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  const turns = Array.isArray(raw) ? raw : raw.turns;
  if (!Array.isArray(turns)) throw new Error('script: expected an array of turns or {"turns": [...]}');
  turns.forEach((t, i) => {
    if (typeof t !== 'object' || t === null || (typeof t.tool !== 'string' && typeof t.text !== 'string')) {
      throw new Error(`script turn ${i}: expected {"tool": ..., "input": ...} or {"text": ...}`);
    }
  });
  return turns;
}

// ---- tool matching ------------------------------------------------------------------------------

const REGEX_CHARS = /[\^$*+?()[\]{}|\\]/;

export function matchTool(pattern, names) {
  if (pattern.length > 2 && pattern.startsWith('/') && pattern.endsWith('/')) {
    const re = new RegExp(pattern.slice(1, -1));
    return names.find((n) => re.test(n)) ?? null;
  }
  if (REGEX_CHARS.test(pattern)) {
    const re = new RegExp(pattern);
    return names.find((n) => re.test(n)) ?? null;
  }
  return names.find((n) => n === pattern) ?? names.find((n) => n.endsWith(pattern)) ?? null;
}

// ---- Anthropic Messages API ---------------------------------------------------------------------

function anthropicToolNames(body) {
  return (body.tools ?? []).map((t) => t.name).filter((n) => typeof n === 'string');
}

// Tool uses the stand-in makes on its own (loading a deferred tool through ToolSearch) carry this id
// prefix; their results do not count as script turns.
export const SEARCH_ID_PREFIX = 'toolu_standin_search_';

export function anthropicToolResults(body) {
  const results = [];
  for (const m of body.messages ?? []) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const block of m.content) {
      if (block && block.type === 'tool_result' && !String(block.tool_use_id ?? '').startsWith(SEARCH_ID_PREFIX)) results.push(block);
    }
  }
  return results;
}

// Claude Code defers some tools (MCP tools among them): the request carries only `ToolSearch`, and
// the deferred names are listed one per line in a system text. Their names, to match a turn against.
function anthropicDeferredNames(body) {
  const texts = [];
  const collect = (c) => {
    if (typeof c === 'string') texts.push(c);
    else if (Array.isArray(c)) for (const b of c) if (b && typeof b.text === 'string') texts.push(b.text);
  };
  collect(body.system);
  for (const m of body.messages ?? []) collect(m.content);
  const names = new Set();
  for (const t of texts) {
    const i = t.indexOf('available via ToolSearch');
    if (i < 0) continue;
    for (const line of t.slice(i).split('\n').slice(1)) {
      if (/^[A-Za-z0-9_.-]+$/.test(line.trim())) names.add(line.trim());
      else if (line.trim() === '') break;
    }
  }
  return [...names];
}

// ---- OpenAI Responses API -----------------------------------------------------------------------

// Codex 0.171 groups MCP tools per server: {type:"namespace", name:"mcp__portcullis", tools:[{name:"shell"}]};
// scripts match them by the joined name `mcp__portcullis__shell` (the name Codex itself uses).
const joinNamespace = (ns, name) => (ns.endsWith('__') ? `${ns}${name}` : `${ns}__${name}`);

// Codex may offer tools flat ({type:"function", name}) or grouped in namespaces
// ({type:"namespace", name, tools:[...]}); a namespaced tool is matched by the joined name and
// called with {namespace, name}.
function openaiTools(body) {
  const out = [];
  for (const t of body.tools ?? []) {
    if (!t || typeof t !== 'object') continue;
    if (Array.isArray(t.tools)) {
      for (const c of t.tools) {
        if (c && typeof c.name === 'string') out.push({ full: joinNamespace(t.name, c.name), name: c.name, namespace: t.name, type: c.type ?? 'function' });
      }
    } else if (typeof t.name === 'string') {
      out.push({ full: t.name, name: t.name, namespace: null, type: t.type ?? 'function' });
    } else if (typeof t.type === 'string') {
      out.push({ full: t.type, name: t.type, namespace: null, type: t.type, builtin: true });
    }
  }
  return out;
}

export function openaiToolResults(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  return input.filter((it) => it && typeof it.type === 'string' && it.type.endsWith('_output'));
}

// ---- the server ---------------------------------------------------------------------------------

export function startStandIn({ script, log, port = 0, host = '127.0.0.1' }) {
  const turns = Array.isArray(script) ? script : loadScript(script);
  const logFd = log ? fs.openSync(log, 'a') : null;
  let seq = 0;
  let ids = 0;
  const newId = (prefix) => `${prefix}_standin_${Date.now().toString(36)}_${++ids}`;

  const writeLog = (entry) => {
    if (logFd !== null) fs.writeSync(logFd, JSON.stringify(entry) + '\n');
  };

  // Decide what the model says: {kind:"tool", name, input} or {kind:"text", text}, plus log info.
  function decide(toolNames, resultCount, api) {
    if (toolNames.length === 0) return { reply: { kind: 'text', text: 'OK.' }, main: false, turn: null };
    if (resultCount >= turns.length) {
      return { reply: { kind: 'text', text: `[stand-in] script finished after ${turns.length} turns.` }, main: true, turn: null };
    }
    const t = turns[resultCount];
    if (typeof t.tool === 'string') {
      const name = matchTool(t.tool, toolNames);
      if (name === null) {
        return {
          reply: { kind: 'text', text: `[stand-in] script turn ${resultCount}: no tool matches ${JSON.stringify(t.tool)} (${api}). Tools seen: ${toolNames.join(', ')}` },
          main: true,
          turn: resultCount,
        };
      }
      return { reply: { kind: 'tool', name, input: t.input ?? {} }, main: true, turn: resultCount };
    }
    return { reply: { kind: 'text', text: t.text }, main: true, turn: resultCount };
  }

  function sse(res, event, data) {
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  function answerAnthropic(req, res, body) {
    const names = anthropicToolNames(body);
    const count = anthropicToolResults(body).length;
    let { reply, main, turn } = decide(names, count, 'anthropic');
    // A scripted tool that Claude Code deferred: load it with ToolSearch first (not a script turn).
    const t = turns[count];
    if (main && t && typeof t.tool === 'string' && matchTool(t.tool, names) === null && names.includes('ToolSearch')) {
      const deferred = matchTool(t.tool, anthropicDeferredNames(body));
      if (deferred !== null) reply = { kind: 'tool', name: 'ToolSearch', input: { query: `select:${deferred}` }, search: true };
    }
    const model = body.model ?? 'stand-in';
    const msgId = newId('msg');
    let block;
    let stop;
    if (reply.kind === 'tool') {
      block = { type: 'tool_use', id: reply.search ? `${SEARCH_ID_PREFIX}${++ids}_${Date.now().toString(36)}` : newId('toolu'), name: reply.name, input: reply.input };
      stop = 'tool_use';
    } else {
      block = { type: 'text', text: reply.text };
      stop = 'end_turn';
    }
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': msgId });
      res.end(JSON.stringify({ id: msgId, type: 'message', role: 'assistant', model, content: [block], stop_reason: stop, stop_sequence: null, usage }));
      return { main, turn };
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'request-id': msgId });
    sse(res, 'message_start', {
      type: 'message_start',
      message: { id: msgId, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    if (block.type === 'tool_use') {
      sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      const json = JSON.stringify(block.input);
      // Stream the arguments in two pieces, as a real model would in many.
      const cut = Math.floor(json.length / 2);
      for (const part of [json.slice(0, cut), json.slice(cut)]) {
        sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: part } });
      }
    } else {
      sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: block.text } });
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index: 0 });
    sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
    sse(res, 'message_stop', { type: 'message_stop' });
    res.end();
    return { main, turn };
  }

  function answerOpenAI(req, res, body) {
    const tools = openaiTools(body);
    const { reply, main, turn } = decide(tools.map((t) => t.full), openaiToolResults(body).length, 'openai');
    const respId = newId('resp');
    const model = body.model ?? 'stand-in';
    let item;
    if (reply.kind === 'tool') {
      const tool = tools.find((t) => t.full === reply.name);
      item = { type: 'function_call', id: newId('fc'), call_id: newId('call'), name: tool.name, arguments: JSON.stringify(reply.input), status: 'completed' };
      if (tool.namespace) item.namespace = tool.namespace;
    } else {
      item = { type: 'message', id: newId('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] };
    }
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
    const response = (status, output) => ({ id: respId, object: 'response', created_at: Math.floor(Date.now() / 1000), status, model, output, usage: status === 'completed' ? usage : null });
    if (body.stream === false) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(response('completed', [item])));
      return { main, turn };
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let n = 0;
    const ev = (type, data) => sse(res, type, { type, sequence_number: n++, ...data });
    ev('response.created', { response: response('in_progress', []) });
    ev('response.in_progress', { response: response('in_progress', []) });
    if (item.type === 'function_call') {
      ev('response.output_item.added', { output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } });
      ev('response.function_call_arguments.delta', { output_index: 0, item_id: item.id, delta: item.arguments });
      ev('response.function_call_arguments.done', { output_index: 0, item_id: item.id, arguments: item.arguments });
      ev('response.output_item.done', { output_index: 0, item });
    } else {
      const text = item.content[0].text;
      ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
      ev('response.content_part.added', { output_index: 0, item_id: item.id, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      ev('response.output_text.delta', { output_index: 0, item_id: item.id, content_index: 0, delta: text });
      ev('response.output_text.done', { output_index: 0, item_id: item.id, content_index: 0, text });
      ev('response.content_part.done', { output_index: 0, item_id: item.id, content_index: 0, part: item.content[0] });
      ev('response.output_item.done', { output_index: 0, item });
    }
    ev('response.completed', { response: response('completed', [item]) });
    res.end();
    return { main, turn };
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = raw;
      }
      const path = (req.url ?? '/').split('?')[0];
      const entry = { seq: ++seq, time: new Date().toISOString(), api: 'other', method: req.method, path: req.url, main: false, turn: null, body };
      try {
        if (req.method === 'POST' && /\/messages\/count_tokens$/.test(path)) {
          entry.api = 'anthropic';
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ input_tokens: 100 }));
        } else if (req.method === 'POST' && /\/messages$/.test(path) && body && typeof body === 'object') {
          entry.api = 'anthropic';
          Object.assign(entry, answerAnthropic(req, res, body));
        } else if (req.method === 'POST' && /\/responses$/.test(path) && body && typeof body === 'object') {
          entry.api = 'openai';
          Object.assign(entry, answerOpenAI(req, res, body));
        } else if (req.method === 'GET' && /\/models$/.test(path)) {
          // Codex asks its provider for a model list; an empty one makes it keep its defaults.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
        } else {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { type: 'not_found', message: `stand-in: nothing at ${req.method} ${path}` } }));
        }
      } catch (err) {
        entry.error = String(err && err.stack ? err.stack : err);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: `stand-in: ${err}` } }));
      }
      writeLog(entry);
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: p } = server.address();
      resolve({
        url: `http://${host}:${p}`,
        server,
        close: () =>
          new Promise((r) => {
            server.close(() => r());
            server.closeAllConnections?.();
            if (logFd !== null) {
              try {
                fs.closeSync(logFd);
              } catch {}
            }
          }),
      });
    });
  });
}

const isMain = process.argv[1] && import.meta.url === new URL(`file://${fs.realpathSync(process.argv[1])}`).href;
if (isMain) {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`model-stand-in: ${e.message}\n`);
    process.exit(2);
  }
  const s = await startStandIn({ script: args.script, log: args.log, port: args.port });
  const line = JSON.stringify({ url: s.url });
  if (args.urlFile) fs.writeFileSync(args.urlFile, line + '\n');
  process.stdout.write(line + '\n');
  const stop = () => s.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
