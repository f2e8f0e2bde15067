// The HTTP backend against the generated command table: every Backend method that reaches the hub posts
// to a command the table has, with exactly its arguments, in the table's order, with the console's
// header and the login's page token; streams read their id and updates from Server-Sent Events and stop
// through stop_stream; a failure is the hub's {code, message}; an ended session forgets its token and
// sends the page to the login.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { COMMAND_TABLE } from "./bindings";
import { BackendError, TABLE_CALLS, type Backend } from "./backend";
import {
  PAGE_HEADER,
  SESSION_HEADER,
  SESSION_TOKEN_KEY,
  httpBackend,
  readEvents,
  type CommandName,
  type TokenStore,
} from "./http";

/** A page token store holding `token`, which remembers whether it was cleared. */
function held(token: string | null): TokenStore & { cleared: boolean } {
  const store = {
    cleared: false,
    get: () => (store.cleared ? null : token),
    clear: () => {
      store.cleared = true;
    },
  };
  return store;
}

interface Sent {
  url: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

function recording(answer: (url: string) => Response = () => new Response("null")) {
  const sent: Sent[] = [];
  const fetch = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
    sent.push({
      url: String(url),
      body: JSON.parse(String(init?.body ?? "{}")) as Record<string, unknown>,
      headers: init?.headers as Record<string, string>,
    });
    return answer(String(url));
  });
  return { sent, fetch: fetch as unknown as typeof globalThis.fetch };
}

/** A value that serializes as `arg<i>` and can also be called (a stream's callback). */
const marker = (i: number) => Object.assign(() => undefined, { toJSON: () => `arg${i}` });

const sse = (...blocks: string[]) => new Response(blocks.join(""), { headers: { "content-type": "text/event-stream" } });

describe("the HTTP backend", () => {
  it("calls every command by the table's name with the table's arguments in order", async () => {
    const { sent, fetch } = recording((url) => (url.includes("/streams/") ? sse('event: stream\ndata: {"id":7}\n\n') : new Response("null")));
    const backend = httpBackend({ fetch, askPath: () => null, onLoggedOut: () => undefined, tokens: held("t0k3n") });
    const reached = new Set<string>();
    for (const [method, fn] of Object.entries(backend) as [keyof Backend, (...a: unknown[]) => unknown][]) {
      const before = sent.length;
      // A table call takes the table's arguments (its generic wrapper declares none of its own).
      const command = TABLE_CALLS.find(([, name]) => name === method)?.[0];
      const count = command ? COMMAND_TABLE[command].args.length : fn.length;
      const args = Array.from({ length: count }, (_, i) => marker(i));
      const result = fn(...args);
      if (result instanceof Promise) await result.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 0));
      for (const request of sent.slice(before)) {
        // Every request of the session, the login's own routes and streams included, carries its token.
        expect(request.headers[SESSION_HEADER], `${method}: ${request.url}`).toBe("t0k3n");
        // The login's own routes, not the table's.
        if (/\/console\/v1\/(me|logout)$/.test(request.url)) continue;
        const [, kind, name] = /\/console\/v1\/(commands|streams)\/(\w+)$/.exec(request.url) ?? [];
        expect(name, `${method}: ${request.url}`).toBeDefined();
        const entry = COMMAND_TABLE[name as CommandName];
        expect(entry, `${method} calls ${name}, which the table lacks`).toBeDefined();
        expect(kind === "streams", `${method}: ${name} streams?`).toBe(entry.stream);
        expect(request.headers[PAGE_HEADER]).toBe("1");
        if (name === "stop_stream") continue;
        expect(Object.keys(request.body), method).toEqual([...entry.args]);
        expect(Object.values(request.body), method).toEqual(entry.args.map((_, i) => `arg${i}`));
        reached.add(name as CommandName);
      }
    }
    // Every command of the table reaches the hub (stop_stream through the streams it stops).
    for (const name of Object.keys(COMMAND_TABLE).filter((n) => n !== "stop_stream")) {
      expect(reached.has(name), name).toBe(true);
    }
  });

  it("reads a stream's id and updates, and stops it through stop_stream", async () => {
    const { sent, fetch } = recording((url) =>
      url.endsWith("/streams/follow_events")
        ? sse('event: stream\ndata: {"id":3}\n\n', 'data: [{"seq":1,"at":1,"event":{"kind":"session_closed","session_id":"s"}}]\n\n')
        : new Response("true"),
    );
    const batches: unknown[] = [];
    const stop = httpBackend({ fetch }).followEvents((items) => batches.push(items));
    await vi.waitFor(() => expect(batches).toHaveLength(1));
    stop();
    stop();
    await vi.waitFor(() => expect(sent.some((s) => s.url.endsWith("/commands/stop_stream"))).toBe(true));
    expect(sent.filter((s) => s.url.endsWith("/commands/stop_stream")).map((s) => s.body)).toEqual([{ id: 3 }]);
  });

  it("follows a broken feed again, telling the views they missed events", async () => {
    let streams = 0;
    const { sent, fetch } = recording((url) => {
      if (!url.endsWith("/streams/follow_events")) return new Response("true");
      streams += 1;
      const batch = `[{"seq":1,"at":1,"event":{"kind":"session_closed","session_id":"s${streams}"}}]`;
      return sse(`event: stream\ndata: {"id":${streams}}\n\n`, `data: ${batch}\n\n`);
    });
    const batches: { event: { kind: string } }[][] = [];
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const stop = httpBackend({ fetch, resumeAfterMs: 5 }).followEvents((items) => batches.push(items));
    await vi.waitFor(() => expect(batches.length).toBeGreaterThanOrEqual(3));
    stop();
    warn.mockRestore();
    expect(batches[0]!.map((i) => i.event.kind)).toEqual(["session_closed"]);
    expect(batches[1]!.map((i) => i.event.kind)).toEqual(["missed"]);
    expect(batches[2]!.map((i) => i.event.kind)).toEqual(["session_closed"]);
    expect(sent.filter((s) => s.url.endsWith("/streams/follow_events")).length).toBeGreaterThanOrEqual(2);
    const after = sent.length;
    await new Promise((r) => setTimeout(r, 50));
    expect(sent.slice(after).filter((s) => s.url.endsWith("/streams/follow_events"))).toEqual([]);
  });

  it("turns the hub's error into a BackendError and sends an ended session to the login", async () => {
    const { fetch } = recording(
      () => new Response(JSON.stringify({ error: { code: "not_logged_in", message: "log in", details: {} } }), { status: 401 }),
    );
    const onLoggedOut = vi.fn();
    const tokens = held("t0k3n");
    const failed = await httpBackend({ fetch, onLoggedOut, tokens }).hubStatus().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(BackendError);
    expect((failed as BackendError).code).toBe("not_logged_in");
    expect(onLoggedOut).toHaveBeenCalledExactlyOnceWith("ended");
    expect(tokens.cleared, "an ended login's token is forgotten").toBe(true);
  });

  it("sends no page token it does not have, and forgets the one it has at logout", async () => {
    const { sent, fetch } = recording(() => new Response('{"session": null}'));
    await httpBackend({ fetch, tokens: held(null) }).hubStatus();
    expect(Object.keys(sent[0]!.headers)).not.toContain(SESSION_HEADER);
    const tokens = held("t0k3n");
    const onLoggedOut = vi.fn();
    const backend = httpBackend({ fetch, tokens, onLoggedOut });
    await backend.consoleSession();
    await backend.logout();
    expect(sent.slice(1).map((s) => [s.url, s.headers[SESSION_HEADER]])).toEqual([
      ["/console/v1/me", "t0k3n"],
      ["/console/v1/logout", "t0k3n"],
    ]);
    expect(tokens.cleared).toBe(true);
    expect(onLoggedOut).toHaveBeenCalledExactlyOnceWith("logged_out");
  });

  it("reads the page token where the login page leaves it", () => {
    const login = readFileSync(join(__dirname, "../../../crates/api/src/console/login.js"), "utf8");
    expect(login).toContain(`sessionStorage.setItem("${SESSION_TOKEN_KEY}", body.token)`);
  });

  it("asks for a path where the desktop has a file dialog", async () => {
    const askPath = vi.fn(() => " /tmp/x.db ");
    const backend = httpBackend({ fetch: recording().fetch, askPath });
    expect(await backend.pickLedgerFile()).toBe("/tmp/x.db");
    expect(await backend.pickExportFile("calls.jsonl")).toBe("/tmp/x.db");
    expect(askPath).toHaveBeenLastCalledWith(expect.any(String), "calls.jsonl");
  });
});

describe("readEvents", () => {
  it("joins events split across chunks, names them, skips comments", async () => {
    const text = 'event: stream\r\ndata: {"id":1}\r\n\r\n: keep-alive\n\ndata: a\ndata: b\n\n';
    const cut = text.indexOf("\r\n\r\n") + 1; // between a CR and its LF
    const chunks = [text.slice(0, 9), text.slice(9, cut), text.slice(cut)];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
        controller.close();
      },
    });
    const seen: [string, string][] = [];
    await readEvents(body, (event, data) => seen.push([event, data]));
    expect(seen).toEqual([
      ["stream", '{"id":1}'],
      ["message", "a\nb"],
    ]);
  });
});
