#!/usr/bin/env node
// Drive a real coding agent (Claude Code or Codex CLI, from ./node_modules) against the scripted
// model stand-in, once, unattended, with no network.
//
//   node run-agent.mjs --agent claude|codex --home DIR --cwd DIR --script FILE --prompt TEXT
//                      [--log FILE] [--timeout S] [--env K=V ...] [--agent-arg ARG ...]
//
// Prints ONE JSON object on stdout:
//   {agent, exit_code, signal, timed_out, seconds, invocation: {argv, env}, agent_stdout,
//    agent_stderr (its last 8 KB), requests: [main-conversation request bodies, in order],
//    tool_results: [what the model received back from each tool call, in order], log}
// exit_code is null when the agent was killed (timeout). The driver itself exits 0 when it
// could run the agent at all, 2 on bad arguments.
//
// What each agent needs to run unattended (found on 2.1.332 / 0.171.0, see README.md):
//
// Claude Code (`claude -p PROMPT --output-format json`):
//   - ANTHROPIC_BASE_URL=<stand-in url> and any ANTHROPIC_API_KEY. With -p no onboarding screen
//     and no folder-trust dialog are shown; we still merge `hasCompletedOnboarding: true` and
//     `projects[cwd].hasTrustDialogAccepted: true` into ~/.claude.json (keeping every other key,
//     e.g. the `mcpServers.portcullis` entry that `portcullis setup claude` wrote) in case a run
//     goes without -p. (Not verified: whether a project's .mcp.json servers then need approval too;
//     `setup claude --user` puts the server in ~/.claude.json, which needs none.)
//   - Claude Code defers MCP tools behind `ToolSearch`; the stand-in loads them itself (see
//     model-stand-in.mjs). `--env ENABLE_TOOL_SEARCH=false` sends them directly instead.
//   - CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (no telemetry, update checks, error reports),
//     DISABLE_AUTOUPDATER=1.
//   - Tool permissions are left to settings (`portcullis setup` allows `mcp__portcullis` and
//     installs the PreToolUse hook). A tool that is neither allowed nor approved by a hook is
//     refused in -p mode; pass e.g. `--agent-arg --permission-mode --agent-arg bypassPermissions`
//     to change that (as root Claude Code refuses bypassPermissions unless IS_SANDBOX=1).
//
// Codex (`codex exec --skip-git-repo-check --color never -C CWD PROMPT`):
//   - the stand-in is a model provider merged into $CODEX_HOME/config.toml (CODEX_HOME=$HOME/.codex):
//     root keys `model_provider = "standin"`, `model = "stand-in-model"`, a table
//     `[model_providers.standin]` (base_url = <url>/v1, wire_api = "responses", env_key) and
//     `[projects."<cwd>"] trust_level = "trusted"`; every other table is kept as written
//     (e.g. `[mcp_servers.portcullis]` from `portcullis setup codex`).
//   - `codex exec --help` says an untrusted project runs MCP commands inside Codex's sandbox
//     (`--trust`); measured on 0.171.0, the `portcullis mcp` relay reached the served hub even
//     untrusted with `-s read-only`, but we mark the project trusted anyway.
//   - `--skip-git-repo-check` (cwd need not be a git repository), `-s danger-full-access` and
//     `-c approval_policy="never"`: Codex adds no sandbox of its own and asks nobody; the
//     Portcullis gateway is what guards the calls. Override with --agent-arg.
//
// Both: HOME=--home; XDG_* dirs, CLAUDE_CONFIG_DIR and real API keys are removed from the
// environment so nothing of the invoking user's leaks in. --env K=V sets more (e.g. PATH).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStandIn, SEARCH_ID_PREFIX } from './model-stand-in.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function usage(msg) {
  process.stderr.write(
    `${msg ? `run-agent: ${msg}\n` : ''}usage: node run-agent.mjs --agent claude|codex --home DIR --cwd DIR --script FILE --prompt TEXT [--log FILE] [--timeout S] [--env K=V ...] [--agent-arg ARG ...]\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = { env: {}, agentArgs: [], timeout: 120 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    switch (a) {
      case '--agent': o.agent = next(); break;
      case '--home': o.home = next(); break;
      case '--cwd': o.cwd = next(); break;
      case '--script': o.script = next(); break;
      case '--prompt': o.prompt = next(); break;
      case '--log': o.log = next(); break;
      case '--timeout': o.timeout = Number(next()); break;
      case '--env': {
        const kv = next();
        const eq = kv.indexOf('=');
        if (eq <= 0) usage(`--env wants K=V, got ${kv}`);
        o.env[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--agent-arg': o.agentArgs.push(next()); break;
      case '-h': case '--help': usage(); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  for (const k of ['agent', 'home', 'cwd', 'script', 'prompt']) if (o[k] === undefined) usage(`--${k} is required`);
  if (!['claude', 'codex'].includes(o.agent)) usage('--agent is claude or codex');
  if (!(o.timeout > 0)) usage('--timeout wants seconds > 0');
  o.home = path.resolve(o.home);
  o.cwd = path.resolve(o.cwd);
  return o;
}

// ---- agent binaries (the npm packages' native executables) --------------------------------------

function claudeBinary() {
  // The package's bin/claude.exe is the native binary itself (its postinstall only links it);
  // fall back to the platform package when an install left the placeholder.
  const candidates = [
    path.join(here, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe'),
    path.join(here, `node_modules/@anthropic-ai/claude-code-${process.platform}-${process.arch}/claude`),
  ];
  for (const c of candidates) {
    try {
      const fd = fs.openSync(c, 'r');
      const b = Buffer.alloc(4);
      fs.readSync(fd, b, 0, 4, 0);
      fs.closeSync(fd);
      if (b[0] === 0x7f && b.toString('latin1', 1, 4) === 'ELF') return c;
      if (b.toString('latin1', 0, 2) === 'MZ' || b.readUInt32BE(0) === 0xcffaedfe || b.readUInt32LE(0) === 0xfeedfacf) return c;
    } catch {}
  }
  throw new Error('Claude Code binary not found: run `npm ci` in tests/agents');
}

function codexCommand() {
  // codex.js picks the platform binary and execs it; go through it so the layout stays its business.
  const js = path.join(here, 'node_modules/@openai/codex/bin/codex.js');
  if (!fs.existsSync(js)) throw new Error('Codex not found: run `npm ci` in tests/agents');
  return [process.execPath, js];
}

// ---- config files -------------------------------------------------------------------------------

function mergeClaudeJson(home, cwd) {
  const file = path.join(home, '.claude.json');
  let cfg = {};
  let mode = 0o600;
  if (fs.existsSync(file)) {
    cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
    mode = fs.statSync(file).mode & 0o777;
  }
  cfg.hasCompletedOnboarding = true;
  cfg.projects ??= {};
  cfg.projects[cwd] = { ...(cfg.projects[cwd] ?? {}), hasTrustDialogAccepted: true };
  fs.writeFileSync(file, JSON.stringify(cfg, null, 2) + '\n', { mode });
  fs.chmodSync(file, mode);
}

const tomlString = (s) => JSON.stringify(s); // a TOML basic string is JSON-compatible for our values

// A small line-based merge, so no TOML library is needed: drop the root keys and the tables we own,
// keep everything else byte for byte, then put ours back. Tables are found by their header lines
// (a header inside a multi-line string would confuse it; config files written by tools have none).
export function mergeCodexToml(text, { providerId, baseUrl, envKey, model, cwd }) {
  const lines = text.split('\n');
  const headerRe = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;
  const ownTables = new Set([`model_providers.${providerId}`, `projects.${tomlString(cwd)}`, `projects.'${cwd}'`]);
  const ownRootKeys = /^\s*(model_provider|model)\s*=/;
  const root = [];
  const rest = [];
  let section = null; // null = root
  let skipping = false;
  for (const line of lines) {
    const h = line.match(headerRe);
    if (h) {
      section = h[1].replace(/\s*\.\s*/g, '.');
      skipping = ownTables.has(section);
    }
    if (section === null) {
      if (!ownRootKeys.test(line)) root.push(line);
    } else if (!skipping) rest.push(line);
  }
  while (root.length && root[root.length - 1].trim() === '') root.pop();
  while (rest.length && rest[rest.length - 1].trim() === '') rest.pop();
  const ours = [`model_provider = ${tomlString(providerId)}`, `model = ${tomlString(model)}`];
  const tables = [
    `[model_providers.${providerId}]`,
    `name = "Portcullis test stand-in"`,
    `base_url = ${tomlString(baseUrl)}`,
    `wire_api = "responses"`,
    `env_key = ${tomlString(envKey)}`,
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    '',
    `[projects.${tomlString(cwd)}]`,
    `trust_level = "trusted"`,
  ];
  const out = [...ours, ...root, ...(root.length ? [''] : []), ...rest, ...(rest.length ? [''] : []), ...tables];
  return out.join('\n') + '\n';
}

function mergeCodexConfig(codexHome, opts) {
  fs.mkdirSync(codexHome, { recursive: true });
  const file = path.join(codexHome, 'config.toml');
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  fs.writeFileSync(file, mergeCodexToml(text, opts));
}

// ---- results ------------------------------------------------------------------------------------

// A tool result's content as plain data: a string when it is text only, else the blocks/items.
function plainContent(c) {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    if (c.every((b) => b && typeof b === 'object' && typeof b.text === 'string' && ['text', 'input_text', 'output_text'].includes(b.type))) {
      return c.map((b) => b.text).join('\n');
    }
    return c;
  }
  return c;
}

function toolResultsOf(req) {
  const body = req.body;
  if (req.api === 'anthropic') {
    const out = [];
    for (const m of body.messages ?? []) {
      if (m.role !== 'user' || !Array.isArray(m.content)) continue;
      for (const b of m.content) {
        if (b && b.type === 'tool_result' && !String(b.tool_use_id ?? '').startsWith(SEARCH_ID_PREFIX)) out.push(plainContent(b.content ?? ''));
      }
    }
    return out;
  }
  return (Array.isArray(body.input) ? body.input : [])
    .filter((it) => it && typeof it.type === 'string' && it.type.endsWith('_output'))
    .map((it) => plainContent(it.output ?? it.content ?? it));
}

// ---- main ---------------------------------------------------------------------------------------

async function main() {
  const o = parseArgs(process.argv.slice(2));
  fs.mkdirSync(o.home, { recursive: true });
  fs.mkdirSync(o.cwd, { recursive: true });
  const logFile = o.log ? path.resolve(o.log) : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'standin-')), 'requests.jsonl');
  fs.writeFileSync(logFile, '');
  const standIn = await startStandIn({ script: path.resolve(o.script), log: logFile });

  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (/^(XDG_|ANTHROPIC_|OPENAI_|CLAUDE_|CODEX_)/.test(k) || k === 'CLAUDECODE') delete env[k];
  }
  env.HOME = o.home;
  env.NO_COLOR = '1';
  let argv;
  const shownEnv = {};
  const set = (k, v) => {
    env[k] = v;
    shownEnv[k] = v;
  };
  set('HOME', o.home);
  if (o.agent === 'claude') {
    mergeClaudeJson(o.home, o.cwd);
    set('ANTHROPIC_BASE_URL', standIn.url);
    set('ANTHROPIC_API_KEY', 'sk-ant-stand-in-0000000000000000');
    set('CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', '1');
    set('DISABLE_AUTOUPDATER', '1');
    argv = [claudeBinary(), '-p', o.prompt, '--output-format', 'json', ...o.agentArgs];
  } else {
    const codexHome = path.join(o.home, '.codex');
    set('CODEX_HOME', codexHome);
    set('STANDIN_API_KEY', 'sk-stand-in');
    mergeCodexConfig(codexHome, { providerId: 'standin', baseUrl: `${standIn.url}/v1`, envKey: 'STANDIN_API_KEY', model: 'stand-in-model', cwd: o.cwd });
    argv = [
      ...codexCommand(),
      'exec',
      '--skip-git-repo-check',
      '--color', 'never',
      '-s', 'danger-full-access',
      '-c', 'approval_policy="never"',
      '-C', o.cwd,
      ...o.agentArgs,
      o.prompt,
    ];
  }
  for (const [k, v] of Object.entries(o.env)) set(k, v);

  const started = Date.now();
  const child = spawn(argv[0], argv.slice(1), { cwd: o.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => {
    stderr += d;
    if (stderr.length > 1 << 20) stderr = stderr.slice(-(1 << 19));
  });
  let timedOut = false;
  const killGroup = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {}
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 3000).unref();
  }, o.timeout * 1000);
  const [code, signal] = await new Promise((r) => child.on('close', (c, s) => r([c, s])));
  clearTimeout(timer);
  // Anything the agent left behind in its process group (MCP relays, shells) goes too.
  killGroup('SIGTERM');
  await standIn.close();

  const requests = fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const main = requests.filter((r) => r.main);
  let toolResults = [];
  for (const r of main) {
    const t = toolResultsOf(r);
    if (t.length >= toolResults.length) toolResults = t;
  }
  const result = {
    agent: o.agent,
    exit_code: code,
    signal,
    timed_out: timedOut,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    invocation: { argv: argv.slice(o.agent === 'codex' ? 1 : 0), env: shownEnv },
    agent_stdout: stdout,
    agent_stderr: stderr.slice(-8192),
    requests: main.map((r) => ({ api: r.api, path: r.path, turn: r.turn, body: r.body })),
    other_requests: requests.filter((r) => !r.main).map((r) => `${r.method} ${r.path}`),
    tool_results: toolResults,
    log: logFile,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((e) => {
  process.stderr.write(`run-agent: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
