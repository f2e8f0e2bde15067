// A Backend for tests: answers only the commands a test gives handlers for (any other rejects with
// `backend_failed`), records every call, and pushes feed batches when the test says.
import {
  BackendError,
  type Backend,
  type FeedItem,
  type Unsubscribe,
} from "./backend";

type Handlers = { [K in keyof Backend]?: Backend[K] };

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
  const call = (name: keyof Backend, args: unknown[]): Promise<never> => {
    calls.push([name, args]);
    const handler = handlers[name] as ((...a: unknown[]) => unknown) | undefined;
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
  return {
    calls,
    push: (items) => feeds.forEach((f) => f(items)),
    askClose: (pending) => closers.forEach((c) => c(pending)),
    hubState: (...a) => call("hubState", a),
    hubStatus: (...a) => call("hubStatus", a),
    pendingApprovals: (...a) => call("pendingApprovals", a),
    answerApproval: (...a) => call("answerApproval", a),
    alwaysPreview: (...a) => call("alwaysPreview", a),
    sessionGrants: (...a) => call("sessionGrants", a),
    revokeSessionGrant: (...a) => call("revokeSessionGrant", a),
    sessions: (...a) => call("sessions", a),
    servers: (...a) => call("servers", a),
    restartServer: (...a) => call("restartServer", a),
    toolChanges: (...a) => call("toolChanges", a),
    shipping: (...a) => call("shipping", a),
    acceptToolChange: (...a) => call("acceptToolChange", a),
    effects: (...a) => call("effects", a),
    markEffect: (...a) => call("markEffect", a),
    tools: (...a) => call("tools", a),
    hookupSnippets: (...a) => call("hookupSnippets", a),
    quit: (...a) => call("quit", a),
    consoleSession: (...a) => call("consoleSession", a),
    attachedHubs: (...a) => call("attachedHubs", a),
    attachHub: (...a) => call("attachHub", a),
    logout: (...a) => call("logout", a),
    policyLayers: (...a) => call("policyLayers", a),
    checkPolicyDraft: (...a) => call("checkPolicyDraft", a),
    lintPolicyDraft: (...a) => call("lintPolicyDraft", a),
    tryPolicyDraft: (...a) => call("tryPolicyDraft", a),
    grantsWithDraft: (...a) => call("grantsWithDraft", a),
    probePathDraft: (...a) => call("probePathDraft", a),
    ruleActivity: (...a) => call("ruleActivity", a),
    testPolicyDraft: (...a) => call("testPolicyDraft", a),
    diffPolicyDraft: (...a) => call("diffPolicyDraft", a),
    savePolicyFile: (...a) => call("savePolicyFile", a),
    draftCallTraces: (...a) => call("draftCallTraces", a),
    replayPolicyDraft: (file, text, ledger, onUpdate) => {
      calls.push(["replayPolicyDraft", [file, text, ledger]]);
      const handler = handlers.replayPolicyDraft;
      if (!handler) {
        onUpdate({ kind: "failed", error: { code: "backend_failed", message: "the fake backend has no handler for replayPolicyDraft", details: null } });
        return () => {};
      }
      return handler(file, text, ledger, onUpdate);
    },
    openLedger: (...a) => call("openLedger", a),
    closeLedger: (...a) => call("closeLedger", a),
    ledgerSummary: (...a) => call("ledgerSummary", a),
    verifyLedger: (...a) => call("verifyLedger", a),
    ledgerCalls: (...a) => call("ledgerCalls", a),
    ledgerCount: (...a) => call("ledgerCount", a),
    ledgerCall: (...a) => call("ledgerCall", a),
    callChanges: (...a) => call("callChanges", a),
    undoCall: (...a) => call("undoCall", a),
    answerHeld: (...a) => call("answerHeld", a),
    ledgerFacets: (...a) => call("ledgerFacets", a),
    ledgerStats: (...a) => call("ledgerStats", a),
    ledgerApprovals: (...a) => call("ledgerApprovals", a),
    ledgerTopCommands: (...a) => call("ledgerTopCommands", a),
    ledgerSessions: (...a) => call("ledgerSessions", a),
    ledgerSessionTimeline: (...a) => call("ledgerSessionTimeline", a),
    ledgerLibrary: (...a) => call("ledgerLibrary", a),
    saveLedgerView: (...a) => call("saveLedgerView", a),
    deleteLedgerView: (...a) => call("deleteLedgerView", a),
    pickLedgerFile: (...a) => call("pickLedgerFile", a),
    candidateRule: (...a) => call("candidateRule", a),
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
