// The Backend in the app: the generated command wrappers (bindings.ts) over Tauri's IPC, errors turned
// into BackendError, the event feed over a Tauri channel (attached before the stream starts).
import { Channel } from "@tauri-apps/api/core";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import {
  commands,
  events,
  type ApiError,
  type DraftReplayUpdate,
  type ExportUpdate,
  type FeedItem,
} from "./bindings";
import { BackendError, asBackendError, type Backend, type Unsubscribe } from "./backend";

type Result<T> = { status: "ok"; data: T } | { status: "error"; error: ApiError };

async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await call;
  } catch (e) {
    throw asBackendError(e);
  }
  if (result.status === "error") throw new BackendError(result.error);
  return result.data;
}

const done = async (call: Promise<Result<null>>): Promise<void> => {
  await unwrap(call);
};

export function tauriBackend(): Backend {
  return {
    hubState: () => unwrap(commands.hubState()),
    hubStatus: () => unwrap(commands.hubStatus()),
    pendingApprovals: () => unwrap(commands.pendingApprovals()),
    // The answer's receipt stays in the ledger (the inbox only needs to know it was taken).
    answerApproval: async (id, answer) => {
      await unwrap(commands.answerApproval(id, answer));
    },
    alwaysPreview: (id, scope) => unwrap(commands.alwaysPreview(id, scope)),
    sessionGrants: () => unwrap(commands.sessionGrants()),
    revokeSessionGrant: (id) => done(commands.revokeSessionGrant(id)),
    sessions: () => unwrap(commands.sessions()),
    servers: () => unwrap(commands.servers()),
    restartServer: (id) => done(commands.restartServer(id)),
    toolChanges: () => unwrap(commands.toolChanges()),
    shipping: () => unwrap(commands.shipping()),
    acceptToolChange: (server, tool, digest) => done(commands.acceptToolChange(server, tool, digest)),
    effects: (limit) => unwrap(commands.effects(limit)),
    markEffect: (agent, key, outcome, note) => unwrap(commands.markEffect(agent, key, outcome, note)),
    tools: () => unwrap(commands.tools()),
    hookupSnippets: () => unwrap(commands.hookupSnippets()),
    quit: () => commands.quit(),
    policyLayers: () => unwrap(commands.policyLayers()),
    checkPolicyDraft: (file, text) => unwrap(commands.checkPolicyDraft(file, text)),
    lintPolicyDraft: (file, text) => unwrap(commands.lintPolicyDraft(file, text)),
    tryPolicyDraft: (file, text, input) => unwrap(commands.tryPolicyDraft(file, text, input)),
    grantsWithDraft: (file, text) => unwrap(commands.grantsWithDraft(file, text)),
    probePathDraft: (file, text, path) => unwrap(commands.probePathDraft(file, text, path)),
    ruleActivity: () => unwrap(commands.ruleActivity()),
    testPolicyDraft: (file, text) => unwrap(commands.testPolicyDraft(file, text)),
    diffPolicyDraft: (file, text) => unwrap(commands.diffPolicyDraft(file, text)),
    savePolicyFile: (file, text, expected) => unwrap(commands.savePolicyFile(file, text, expected)),
    draftCallTraces: (file, text, ledger, session, callId) =>
      unwrap(commands.draftCallTraces(file, text, ledger, session, callId)),
    replayPolicyDraft: (file, text, ledger, onUpdate): Unsubscribe => {
      const channel = new Channel<DraftReplayUpdate>();
      let stopped = false;
      let id: number | null = null;
      channel.onmessage = (update) => {
        if (!stopped) onUpdate(update);
      };
      unwrap(commands.replayPolicyDraft(file, text, ledger, channel)).then(
        (replayId) => {
          id = replayId;
          if (stopped) void commands.stopStream(replayId);
        },
        (e) => {
          const { code, message } = asBackendError(e);
          if (!stopped) onUpdate({ kind: "failed", error: { code, message, details: null } });
        },
      );
      return () => {
        if (stopped) return;
        stopped = true;
        if (id != null) void commands.stopStream(id);
      };
    },
    openLedger: (path) => unwrap(commands.openLedger(path)),
    closeLedger: async (id) => {
      await unwrap(commands.closeLedger(id));
    },
    ledgerSummary: (id) => unwrap(commands.ledgerSummary(id)),
    verifyLedger: (id) => unwrap(commands.verifyLedger(id)),
    ledgerCalls: (id, filter, order, cursor, limit) => unwrap(commands.ledgerCalls(id, filter, order, cursor, limit)),
    ledgerCount: (id, filter) => unwrap(commands.ledgerCount(id, filter)),
    ledgerCall: (id, callId, session) => unwrap(commands.ledgerCall(id, callId, session)),
    callChanges: (callId, session) => unwrap(commands.callChanges(callId, session)),
    undoCall: (callId, session) => unwrap(commands.undoCall(callId, session)),
    answerHeld: (callId, session, answer) => unwrap(commands.answerHeld(callId, session, answer)),
    ledgerFacets: (id, filter, exact) => unwrap(commands.ledgerFacets(id, filter, exact)),
    ledgerStats: (id, filter, bucketUs) => unwrap(commands.ledgerStats(id, filter, bucketUs)),
    ledgerApprovals: (id, filter) => unwrap(commands.ledgerApprovals(id, filter)),
    ledgerTopCommands: (id, filter, outcome, limit) => unwrap(commands.ledgerTopCommands(id, filter, outcome, limit)),
    ledgerSessions: (id, since, until, limit) => unwrap(commands.ledgerSessions(id, since, until, limit)),
    ledgerSessionTimeline: (id, session) => unwrap(commands.ledgerSessionTimeline(id, session)),
    ledgerLibrary: () => unwrap(commands.ledgerLibrary()),
    saveLedgerView: (view) => unwrap(commands.saveLedgerView(view)),
    deleteLedgerView: (name) => unwrap(commands.deleteLedgerView(name)),
    pickLedgerFile: () => commands.pickLedgerFile(),
    candidateRule: (command) => unwrap(commands.candidateRule(command)),
    pickExportFile: (suggested) => commands.pickExportFile(suggested),
    exportLedger: (id, filter, format, file, onUpdate): Unsubscribe => {
      const channel = new Channel<ExportUpdate>();
      let stopped = false;
      let exportId: number | null = null;
      channel.onmessage = (update) => onUpdate(update);
      unwrap(commands.exportLedger(id, filter, format, file, channel)).then(
        (started) => {
          exportId = started;
          if (stopped) void commands.stopStream(started);
        },
        (e) => {
          const { code, message } = asBackendError(e);
          onUpdate({ kind: "failed", error: { code, message, details: null } });
        },
      );
      return () => {
        if (stopped) return;
        stopped = true;
        if (exportId != null) void commands.stopStream(exportId);
      };
    },
    onFileDrop: (handler): Unsubscribe => {
      let stop: (() => void) | null = null;
      let stopped = false;
      void getCurrentWebview()
        .onDragDropEvent((e) => {
          if (e.payload.type === "drop") handler(e.payload.paths);
        })
        .then((unlisten) => {
          if (stopped) unlisten();
          else stop = unlisten;
        });
      return () => {
        stopped = true;
        stop?.();
      };
    },
    followEvents: (onBatch): Unsubscribe => {
      const channel = new Channel<FeedItem[]>();
      let stopped = false;
      let id: number | null = null;
      channel.onmessage = (items) => {
        if (!stopped) onBatch(items);
      };
      unwrap(commands.followEvents(channel)).then(
        (streamId) => {
          id = streamId;
          if (stopped) void commands.stopStream(streamId);
        },
        (e) => console.error("the event feed did not start", e),
      );
      return () => {
        if (stopped) return;
        stopped = true;
        if (id != null) void commands.stopStream(id);
      };
    },
    // The app's window is its user's own: no login to show or end.
    consoleSession: async () => null,
    logout: async () => undefined,
    attachedHubs: () => commands.attachedHubs(),
    attachHub: (url, token) => unwrap(commands.attachHub(url, token)),
    onCloseAsked: (handler): Unsubscribe => {
      let stop: (() => void) | null = null;
      let stopped = false;
      void events.closeAsked.listen((e) => handler(e.payload.pending)).then((unlisten) => {
        if (stopped) unlisten();
        else stop = unlisten;
      });
      return () => {
        stopped = true;
        stop?.();
      };
    },
  };
}
