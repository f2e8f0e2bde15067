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
import {
  BackendError,
  TABLE_CALLS,
  asBackendError,
  type Backend,
  type CallName,
  type TableCalls,
  type Unsubscribe,
} from "./backend";

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

/** Every call of the table: the generated wrapper of the same name, its error a BackendError. */
function tableCalls(): TableCalls {
  const generated = commands as unknown as Record<CallName, (...args: unknown[]) => Promise<Result<unknown>>>;
  const entries = TABLE_CALLS.map(([, name]) => [name, (...args: unknown[]) => unwrap(generated[name](...args))]);
  return Object.fromEntries(entries) as TableCalls;
}

export function tauriBackend(): Backend {
  const table = tableCalls();
  return {
    ...table,
    quit: () => commands.quit(),
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
    pickLedgerFile: () => commands.pickLedgerFile(),
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
