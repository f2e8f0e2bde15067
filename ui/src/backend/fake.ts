// A Backend for tests: answers only the commands a test gives handlers for (any other rejects with
// `backend_failed`), records every call, and pushes feed batches when the test says.
import {
  BackendError,
  TABLE_CALLS,
  type Backend,
  type TableCalls,
  type FeedItem,
  type Unsubscribe,
} from "./backend";

/** What a test answers for each method it gives a handler for (its answer's shape is the test's to
 * choose: a command whose answer the window ignores may answer nothing). */
type Loose<F> = F extends (...args: infer A) => Promise<unknown> ? (...args: A) => unknown : F;
type Handlers = { [K in keyof Backend]?: Loose<Backend[K]> };

export interface FakeBackend extends Backend {
  /** Every call made, in order: [method, arguments]. */
  readonly calls: Array<[string, unknown[]]>;
  /** Delivers a batch to every feed subscriber. */
  push(items: FeedItem[]): void;
  /** Says the window is being closed with `pending` calls waiting. */
  askClose(pending: number): void;
  /** Drops files on the window. */
  dropFiles(paths: string[]): void;
}

export function fakeBackend(handlers: Handlers = {}): FakeBackend {
  const calls: Array<[string, unknown[]]> = [];
  const feeds = new Set<(items: FeedItem[]) => void>();
  const closers = new Set<(pending: number) => void>();
  const drops = new Set<(paths: string[]) => void>();
  const call = (name: string, args: unknown[]): Promise<never> => {
    calls.push([name, args]);
    const handler = handlers[name as keyof Backend] as ((...a: unknown[]) => unknown) | undefined;
    if (!handler) {
      return Promise.reject(
        new BackendError({ code: "backend_failed", message: `the fake backend has no handler for ${name}`, details: null }),
      );
    }
    return Promise.resolve(handler(...args)) as Promise<never>;
  };
  const subscribe = <T>(set: Set<T>, item: T): Unsubscribe => {
    set.add(item);
    return () => set.delete(item);
  };
  // Every call of the table: answered by the test's handler of that name, or refused.
  const table = Object.fromEntries(
    TABLE_CALLS.map(([, name]) => [name, (...a: unknown[]) => call(name, a)]),
  ) as unknown as TableCalls;
  return {
    ...table,
    calls,
    push: (items) => feeds.forEach((f) => f(items)),
    askClose: (pending) => closers.forEach((c) => c(pending)),
    quit: (...a) => call("quit", a),
    consoleSession: (...a) => call("consoleSession", a),
    attachedHubs: (...a) => call("attachedHubs", a),
    attachHub: (...a) => call("attachHub", a),
    logout: (...a) => call("logout", a),
    replayPolicyDraft: (file, text, ledger, onUpdate) => {
      calls.push(["replayPolicyDraft", [file, text, ledger]]);
      const handler = handlers.replayPolicyDraft;
      if (!handler) {
        onUpdate({ kind: "failed", error: { code: "backend_failed", message: "the fake backend has no handler for replayPolicyDraft", details: null } });
        return () => {};
      }
      return handler(file, text, ledger, onUpdate);
    },
    pickLedgerFile: (...a) => call("pickLedgerFile", a),
    pickExportFile: (...a) => call("pickExportFile", a),
    exportLedger: (id, filter, format, file, onUpdate) => {
      calls.push(["exportLedger", [id, filter, format, file]]);
      const handler = handlers.exportLedger;
      if (!handler) {
        onUpdate({ kind: "failed", error: { code: "backend_failed", message: "the fake backend has no handler for exportLedger", details: null } });
        return () => {};
      }
      return handler(id, filter, format, file, onUpdate);
    },
    onFileDrop: (handler) => subscribe(drops, handler),
    dropFiles: (paths) => drops.forEach((d) => d(paths)),
    followEvents: (onBatch) => {
      calls.push(["followEvents", []]);
      return subscribe(feeds, onBatch);
    },
    onCloseAsked: (handler) => subscribe(closers, handler),
  };
}
