// The Backend in a browser: the hub's command table over HTTP, as the console's session — the HttpOnly
// cookie the login page got (this code never sees it) and the login's page token (SESSION_HEADER), which
// the hub answered in the login's body and refuses every request without: cookies are not bound to ports,
// so a page on another port of the same host gets the cookie, never the token. Calls are
// `POST /console/v1/commands/{name}` with the arguments the generated table names (COMMAND_TABLE),
// streams `POST /console/v1/streams/{name}` read as Server-Sent Events from the response body (EventSource
// can neither POST nor send a header). Every request carries the console's header, which the hub requires
// of every change. What only a desktop has degrades: a
// notification is the browser's, a file dialog is a path typed on the hub's machine, a dropped file
// (whose path a browser never tells) is ignored.
import { COMMAND_TABLE, type ApiError, type ConsoleSession, type FeedItem } from "./bindings";
import {
  BackendError,
  TABLE_CALLS,
  asBackendError,
  type Backend,
  type CommandName,
  type TableCalls,
  type Unsubscribe,
} from "./backend";
import { visible } from "../lib/visible";

export type { CommandName } from "./backend";

/** The header the hub requires of every change the console's page makes. */
export const PAGE_HEADER = "x-portcullis-console";

/** The header carrying the login's page token, on every request of the session. */
export const SESSION_HEADER = "x-portcullis-console-session";

/** Where the login page leaves the page token: this tab's sessionStorage. It is per origin (scheme, host
 * and port: a page on another port of this host has its own and cannot read this one) and per tab, and it
 * survives a reload; it is not a cookie, so no request carries it unless this code sends it. A tab opened
 * by hand has none and is sent to the login. */
export const SESSION_TOKEN_KEY = "portcullis_console_session";

/** Where the page token is kept. */
export interface TokenStore {
  get(): string | null;
  clear(): void;
}

/** This tab's sessionStorage (none when the browser keeps none for the page). */
export function sessionTokenStore(): TokenStore {
  const storage = (): Storage | null => {
    try {
      return typeof sessionStorage === "undefined" ? null : sessionStorage;
    } catch {
      return null;
    }
  };
  return {
    get: () => storage()?.getItem(SESSION_TOKEN_KEY) ?? null,
    clear: () => storage()?.removeItem(SESSION_TOKEN_KEY),
  };
}

/** Where the command table is, and what to do when the session has ended. */
export interface HttpOptions {
  /** The API's root: `/console/v1` on the hub that served the page. */
  root?: string;
  fetch?: typeof fetch;
  /** Called when the session is gone: it `ended` (expired, another hub's) or the operator `logged_out`
   * (default: open the login page, which says what happened and how to log in again). */
  onLoggedOut?: (why: "ended" | "logged_out") => void;
  /** The browser's notifications (none: no notifications). */
  notify?: (title: string, body: string) => void;
  /** Asks for a path on the hub's machine (default: window.prompt). */
  askPath?: (question: string, suggested: string) => string | null;
  /** How long after a broken event feed it is followed again (default 1 s). */
  resumeAfterMs?: number;
  /** Where the login's page token is (default: this tab's sessionStorage, see SESSION_TOKEN_KEY). */
  tokens?: TokenStore;
}

function failure(code: ApiError["code"], message: string): BackendError {
  return new BackendError({ code, message, details: null });
}

/** Arguments in the order the table lists them, as the object the hub reads. */
function argumentsOf(name: CommandName, values: unknown[]): Record<string, unknown> {
  const names: readonly string[] = COMMAND_TABLE[name].args;
  if (names.length !== values.length) {
    throw failure("bad_request", `${name} takes ${names.length} arguments, given ${values.length}`);
  }
  return Object.fromEntries(names.map((arg, i) => [arg, values[i] ?? null]));
}

/** Reads Server-Sent Events from `body`: each event's name (default `message`) and data. */
export async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: string, data: string) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  // A CR that ends a chunk may be the first half of a CRLF: held until the next chunk says.
  let carry = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    let text = carry + decoder.decode(value, { stream: true });
    carry = text.endsWith("\r") ? "\r" : "";
    if (carry) text = text.slice(0, -1);
    buffer += text.replace(/\r\n?/g, "\n");
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = text;
        else if (field === "data") data.push(text);
      }
      if (data.length) onEvent(event, data.join("\n"));
    }
  }
}

/** The streams this page holds open. A browser does not always end a page's streaming requests when it
 * leaves the page (headless Chromium kept them, and six of them fill its connections to the hub, after
 * which every request of the next page waits): they are aborted when the page goes. */
const openStreams = new Set<AbortController>();
if (typeof window !== "undefined") {
  window.addEventListener("pagehide", () => {
    for (const stream of openStreams) stream.abort();
    openStreams.clear();
  });
  // A page the browser kept and shows again has no streams left: it starts afresh.
  window.addEventListener("pageshow", (e) => {
    if (e.persisted) window.location.reload();
  });
}

export function httpBackend(options: HttpOptions = {}): Backend {
  const root = options.root ?? "/console/v1";
  const fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  const onLoggedOut = options.onLoggedOut ?? ((why) => window.location.assign(`/login#${why}`));
  const askPath = options.askPath ?? ((question, suggested) => window.prompt(question, suggested));
  const resumeAfterMs = options.resumeAfterMs ?? 1000;
  const tokens = options.tokens ?? sessionTokenStore();
  // Read once: the page holds it in memory; the store only carries it across the login and reloads.
  const token = tokens.get();
  /** The headers of every request: the login's page token (when there is one: without it the hub
   * answers not_logged_in, and the page goes to the login). */
  const sessionHeaders = (): Record<string, string> => (token ? { [SESSION_HEADER]: token } : {});
  const loggedOut = (why: "ended" | "logged_out") => {
    tokens.clear();
    onLoggedOut(why);
  };

  async function post(path: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    let response: Response;
    try {
      response = await fetchFn(`${root}/${path}`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json", [PAGE_HEADER]: "1", ...sessionHeaders() },
        body: JSON.stringify(args),
        signal,
      });
    } catch (e) {
      throw failure("backend_failed", `the hub could not be reached: ${String(e)}`);
    }
    if (response.ok) return response;
    const body: unknown = await response.json().catch(() => null);
    const error = body && typeof body === "object" && "error" in body ? body.error : null;
    const e = error ? asBackendError(error) : failure("backend_failed", `the hub answered ${response.status}`);
    if (e.code === "not_logged_in") loggedOut("ended");
    throw e;
  }

  async function call<T>(name: CommandName, ...values: unknown[]): Promise<T> {
    const response = await post(`commands/${name}`, argumentsOf(name, values));
    return (await response.json()) as T;
  }

  /** Starts stream `name`; its updates go to `onUpdate` until it ends or the returned function stops it. */
  function stream<U>(
    name: CommandName,
    values: unknown[],
    onUpdate: (update: U) => void,
    onFailed: (e: BackendError) => void,
    onEnded?: () => void,
  ): Unsubscribe {
    const abort = new AbortController();
    openStreams.add(abort);
    let stopped = false;
    let id: number | null = null;
    const run = async () => {
      const response = await post(`streams/${name}`, argumentsOf(name, values), abort.signal);
      if (!response.body) throw failure("backend_failed", "the hub's stream has no body");
      await readEvents(response.body, (event, data) => {
        if (event === "stream") {
          id = (JSON.parse(data) as { id: number }).id;
          return;
        }
        if (!stopped) onUpdate(JSON.parse(data) as U);
      });
    };
    run()
      .then(
        () => {
          if (!stopped && !abort.signal.aborted) onEnded?.();
        },
        (e: unknown) => {
          if (!stopped && !abort.signal.aborted) onFailed(asBackendError(e));
        },
      )
      .finally(() => openStreams.delete(abort));
    return () => {
      if (stopped) return;
      stopped = true;
      if (id != null) void call("stop_stream", id).catch(() => undefined);
      abort.abort();
    };
  }

  // Every call of the table, by the name the hub gives it.
  const table = Object.fromEntries(
    TABLE_CALLS.map(([command, name]) => [name, (...args: unknown[]) => call(command, ...args)]),
  ) as TableCalls;

  return {
    ...table,
    // A browser tab is not the hub: closing it stops nothing, and nothing asks.
    quit: async () => undefined,
    onCloseAsked: () => () => undefined,
    replayPolicyDraft: (file, text, ledger, onUpdate) =>
      stream("replay_policy_draft", [file, text, ledger], onUpdate, ({ code, message }) =>
        onUpdate({ kind: "failed", error: { code, message, details: null } }),
      ),
    pickLedgerFile: async () => askPath("Path of a ledger file on the hub's machine:", "")?.trim() || null,
    pickExportFile: async (suggested) =>
      askPath("Export to which file on the hub's machine?", suggested)?.trim() || null,
    exportLedger: (id, filter, format, file, onUpdate) =>
      stream("export_ledger", [id, filter, format, file], onUpdate, ({ code, message }) =>
        onUpdate({ kind: "failed", error: { code, message, details: null } }),
      ),
    // A console page follows the hub that served it; the app attaches others.
    attachedHubs: async () => null,
    attachHub: async () => {
      throw failure("bad_argument", "a browser console follows the hub that served it: attach hubs in the desktop app");
    },
    consoleSession: async () => {
      const response = await fetchFn(`${root}/me`, { credentials: "same-origin", headers: sessionHeaders() }).catch(
        () => null,
      );
      if (!response?.ok) return null;
      const body = (await response.json()) as { session: ConsoleSession };
      return body.session;
    },
    logout: async () => {
      await post("logout", {}).catch(() => undefined);
      loggedOut("logged_out");
    },
    // A browser gives a dropped file's contents, never its path on the hub's machine.
    onFileDrop: () => () => undefined,
    followEvents: (onBatch) => {
      // A feed over a network breaks (an SSH tunnel drops, the hub restarts, the page fell behind): it
      // is followed again, and the views are told they missed events so they fetch what they show.
      let stopped = false;
      let current: Unsubscribe = () => undefined;
      let retry: ReturnType<typeof setTimeout> | null = null;
      // Each failure in a row doubles the wait, up to 15 s; a batch that arrives resets it.
      let failures = 0;
      const follow = (resumed: boolean) => {
        let told = !resumed;
        const again = (why: string) => {
          if (stopped) return;
          const wait = Math.min(resumeAfterMs * 2 ** failures, 15_000);
          failures += 1;
          console.warn(`the event feed broke (${why}); following it again in ${wait} ms`);
          retry = setTimeout(() => follow(true), wait);
        };
        current = stream<FeedItem[]>(
          "follow_events",
          [],
          (items) => {
            failures = 0;
            if (!told) {
              told = true;
              onBatch([{ seq: 0, at: Date.now() * 1000, event: { kind: "missed", source: "connection", count: 0 } }]);
            }
            onBatch(items);
            for (const item of items) {
              if (item.event.kind !== "approval_asked" || !options.notify) continue;
              const { action } = item.event.approval;
              const what = action.command ?? `${action.operation} ${(action.paths ?? []).join(" ")}`;
              options.notify("An agent asks for approval", visible(what).slice(0, 160));
            }
          },
          (e) => again(e.message),
          () => again("the hub ended it"),
        );
      };
      follow(false);
      return () => {
        stopped = true;
        if (retry != null) clearTimeout(retry);
        current();
      };
    },
  };
}

/** The browser's notifications while the page is hidden, once the operator allowed them. */
export function browserNotifications(): ((title: string, body: string) => void) | undefined {
  if (typeof Notification === "undefined") return undefined;
  if (Notification.permission === "default") {
    const ask = () => void Notification.requestPermission().catch(() => undefined);
    document.addEventListener("click", ask, { once: true });
  }
  return (title, body) => {
    if (Notification.permission === "granted" && document.hidden) new Notification(title, { body });
  };
}
