// The one seam between the window and Rust. Views and stores receive a Backend (useBackend()) and never
// import Tauri: the Tauri implementation (tauri.ts) runs in the app, the fake one (fake.ts) in tests, and
// a web implementation over the HTTP operator API can follow. Every type comes from the generated
// bindings (bindings.ts); none is written here by hand.
import type {
  ConsoleSession,
  AttachedHub,
  CallFilter,
  ExportFormat,
  ExportUpdate,
  ApiError,
  ErrorCode,
  DraftReplayUpdate,
  FeedItem,
} from "./bindings";

// The characters agent text shows escaped: a value the hub's table generates (see lib/visible.ts).
export { CALL_ERROR_CODES, DECIDER_KINDS, DECIDER_KIND_WORDS, ESCAPED_RANGES, PROTECTED_KIND_WORDS } from "./bindings";
import { CALL_ERROR_CODES, COMMAND_TABLE } from "./bindings";
import type { commands } from "./bindings";

export type {
  CallChanges,
  Containment,
  HeldAnswer,
  HeldAnswered,
  HeldPath,
  PathKind,
  UndoDone,
  UndoPlan,
  UndoStep,
  EffectMarkOutcome,
  EffectRow,
  EffectState,
  ApprovalSummary,
  Bucket,
  Connection,
  CallDetail,
  CallFilter,
  CallOrder,
  CallPage,
  CallRow,
  CallStatus,
  CallTimings,
  CommandCount,
  CommandOutcome,
  ConsoleSession,
  AttachedHub,
  Count,
  Cursor,
  ExportFormat,
  ExportUpdate,
  Facets,
  LedgerLibrary,
  LedgerSummary,
  VerifyReport,
  BreakKind,
  OpenedLedger,
  OutputPart,
  RecentLedger,
  RecordStep,
  SavedView,
  SessionRow,
  SessionTimeline,
  Snippet,
  Stats,
  StoredPolicyDecision,
  TimelineCall,
  ToolDurations,
  CallTraces,
  CallVerdict,
  ChangeEntry,
  ChangeGroup,
  ChangeKind,
  ChangeOutcome,
  ChangeRecord,
  DraftCheck,
  DraftDiff,
  DraftProblem,
  DraftReplayOutcome,
  DraftReplayUpdate,
  DraftTrial,
  ExampleOutcome,
  LayerFile,
  LayerKind,
  LintFinding,
  PolicyLayers,
  PolicyLint,
  ReplayChange,
  ReplaySummary,
  PathProbe,
  ToolGrant,
  RuleActivity,
  CandidateRule,
  RuleHitCount,
  TestOutcome,
  TrialInput,
  SandboxProfile,
  AgentSession,
  AlwaysOffer,
  AlwaysPreview,
  DiffLine,
  FileChange,
  Part,
  RuleScope,
  Answer,
  ApiError,
  Approval,
  CallDecision,
  CallStep,
  CatalogTool,
  Choice,
  Decider,
  Decision,
  BlockedReason,
  DeciderKind,
  CallErrorCode,
  ErrorCode,
  DecidingPlace,
  Evaluation,
  ExecutionAction,
  FeedEvent,
  FeedItem,
  HookupSnippet,
  HubState,
  HubStatus,
  MatchedRule,
  PipelineStage,
  SessionGrant,
  StepOutcome,
  SinkLag,
  ToolChange,
  UpstreamServer,
} from "./bindings";

/** A command of the table (snake_case, as the hub names it). */
export type CommandName = keyof typeof COMMAND_TABLE;

/** `ledger_calls` → `ledgerCalls`: how the bindings name a command. */
type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;

/** The table's calls (not its streams), as the bindings name them. */
export type CallName = {
  [K in CommandName]: (typeof COMMAND_TABLE)[K]["stream"] extends false ? Camel<K> : never;
}[CommandName];

/** What a generated command answers when it succeeds. */
type Answered<R> = R extends Promise<infer Out> ? (Out extends { status: "ok"; data: infer T } ? T : never) : never;

/** Every call of the hub's table, made from the generated bindings: its arguments and its answer as the
 * Rust table declares them. Tauri, HTTP and the fake backend each implement it by name (TABLE_CALLS), so
 * the table is listed once, in Rust. */
export type TableCalls = {
  [K in CallName]: (
    ...args: Parameters<(typeof commands)[K]>
  ) => Promise<Answered<ReturnType<(typeof commands)[K]>>>;
};

/** `ledger_calls` → `ledgerCalls`. */
export function camelCase(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The table's calls in table order: [the hub's name, the bindings' name]. */
export const TABLE_CALLS: ReadonlyArray<readonly [CommandName, CallName]> = (
  Object.keys(COMMAND_TABLE) as CommandName[]
)
  .filter((name) => !COMMAND_TABLE[name].stream)
  .map((name) => [name, camelCase(name) as CallName] as const);

/** Stops a subscription; synchronous, safe to call twice. */
export type Unsubscribe = () => void;

/** The table's calls and streams the window reaches, besides what only a window has (below): the generated
 * table's calls, each with the generated arguments and answer (see TableCalls). */
export interface Backend extends Omit<TableCalls, "stopStream"> {
  /** The hub's event feed from now on, in batches; `onBatch` is attached before the stream starts. */
  followEvents(onBatch: (items: FeedItem[]) => void): Unsubscribe;
  /** The operator closed the window while `pending` calls wait for an answer. */
  onCloseAsked(handler: (pending: number) => void): Unsubscribe;
  quit(): Promise<void>;

  // The policy workbench: drafts of the hub's own policy files (never any other file).
  /** Replays the draft over `ledger` (null: the hub's) against the policy in force; updates stream to
   * `onUpdate` (the last is `done` or `failed`). The returned function stops it. */
  replayPolicyDraft(
    file: string,
    text: string,
    ledger: string | null,
    onUpdate: (update: DraftReplayUpdate) => void,
  ): Unsubscribe;

  // The ledger browser: ledgers held open read-only by id (null path: the hub's own).
  /** Exports the filtered calls' records to `file`; updates stream to `onUpdate` (the last `done` or
   * `failed`). The returned function stops it (the export then fails with `cancelled`, no file left). */
  exportLedger(
    id: number,
    filter: CallFilter,
    format: ExportFormat,
    file: string,
    onUpdate: (update: ExportUpdate) => void,
  ): Unsubscribe;
  /** The system's open dialog for a ledger file (null: cancelled). */
  pickLedgerFile(): Promise<string | null>;
  /** The system's save dialog for an export (null: cancelled). */
  pickExportFile(suggested: string): Promise<string | null>;
  /** Files dropped on the window, by path. */
  onFileDrop(handler: (paths: string[]) => void): Unsubscribe;
  /** Who is logged in to a browser console, until when; null where there is no login (the app). */
  consoleSession(): Promise<ConsoleSession | null>;
  /** Ends the console's login and leaves the page (nothing where there is no login). */
  logout(): Promise<void>;
  /** The hubs attached beside the first (the app's inbox spans them); null where one page follows one
   * hub (the browser console). */
  attachedHubs(): Promise<AttachedHub[] | null>;
  /** Attaches the hub at `url` with its operator `token`; the hubs attached now. */
  attachHub(url: string, token: string): Promise<AttachedHub[]>;
}

/** A failed backend call: the API's `{code, message, details}`. Views branch on `code`. */
export class BackendError extends Error {
  /** One of the API's closed set of codes (generated): a misspelt branch does not typecheck. */
  readonly code: ErrorCode;
  readonly details: unknown;
  constructor(error: ApiError) {
    super(error.message);
    this.name = "BackendError";
    this.code = error.code;
    this.details = error.details;
  }
}

/** Any rejection as a BackendError (a framework failure, a string, becomes code `backend_failed`). */
export function asBackendError(e: unknown): BackendError {
  if (e instanceof BackendError) return e;
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const { code, message, details } = e as { code: unknown; message: unknown; details?: ApiError["details"] };
    // The rejection came from the API, whose codes are the generated `ErrorCode`.
    return new BackendError({ code: String(code) as ErrorCode, message: String(message), details: details ?? null });
  }
  return new BackendError({ code: "backend_failed", message: String(e), details: null });
}

/** An error code this build knows (the generated `CALL_ERROR_CODES`); a ledger may hold others. */
export type KnownCallErrorCode = (typeof CALL_ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(CALL_ERROR_CODES);

/** Whether `code` is one this build knows, so a table keyed by the closed set can be looked up. */
export function isKnownCallErrorCode(code: string): code is KnownCallErrorCode {
  return KNOWN_CODES.has(code);
}
