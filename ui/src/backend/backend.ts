// The one seam between the window and Rust. Views and stores receive a Backend (useBackend()) and never
// import Tauri: the Tauri implementation (tauri.ts) runs in the app, the fake one (fake.ts) in tests, and
// a web implementation over the HTTP operator API can follow. Every type comes from the generated
// bindings (bindings.ts); none is written here by hand.
import type {
  CallChanges,
  HeldAnswer,
  HeldAnswered,
  UndoDone,
  CandidateRule,
  ConsoleSession,
  AttachedHub,
  ApprovalSummary,
  CallDetail,
  CallFilter,
  CallOrder,
  CallPage,
  CommandCount,
  CommandOutcome,
  Cursor,
  ExportFormat,
  ExportUpdate,
  Facets,
  LedgerLibrary,
  LedgerSummary,
  VerifyReport,
  OpenedLedger,
  SavedView,
  SessionRow,
  SessionTimeline,
  Stats,
  AgentSession,
  AlwaysPreview,
  Answer,
  ApiError,
  Approval,
  CallTraces,
  ErrorCode,
  CatalogTool,
  DraftCheck,
  DraftDiff,
  DraftReplayUpdate,
  DraftTrial,
  EffectMarkOutcome,
  EffectRow,
  FeedItem,
  PolicyLayers,
  PathProbe,
  PolicyLint,
  RuleActivity,
  TestOutcome,
  ToolGrant,
  TrialInput,
  HookupSnippet,
  HubState,
  HubStatus,
  RuleScope,
  SessionGrant,
  SinkLag,
  ToolChange,
  UpstreamServer,
} from "./bindings";

// The characters agent text shows escaped: a value the hub's table generates (see lib/visible.ts).
export { DECIDER_KINDS, ESCAPED_RANGES, PROTECTED_KIND_WORDS } from "./bindings";

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

/** Stops a subscription; synchronous, safe to call twice. */
export type Unsubscribe = () => void;

export interface Backend {
  hubState(): Promise<HubState>;
  hubStatus(): Promise<HubStatus>;
  pendingApprovals(): Promise<Approval[]>;
  answerApproval(id: number, answer: Answer): Promise<void>;
  /** What "always" with `scope` would write for approval `id`, and its effect over the ledger. */
  alwaysPreview(id: number, scope: RuleScope[] | null): Promise<AlwaysPreview>;
  sessionGrants(): Promise<SessionGrant[]>;
  revokeSessionGrant(id: string): Promise<void>;
  sessions(): Promise<AgentSession[]>;
  servers(): Promise<UpstreamServer[]>;
  restartServer(id: string): Promise<void>;
  /** Upstream tools held back because their server changed their definition, with the diffs. */
  toolChanges(): Promise<ToolChange[]>;
  /** Where the hub ships its ledger (a team ledger, copies) and how far behind each sink is. */
  shipping(): Promise<SinkLag[]>;
  /** Accepts the offered definition of a held tool; `digest` is the offered one the operator saw. */
  acceptToolChange(server: string, tool: string, digest: string): Promise<void>;
  /** The effects agents' idempotency keys claimed: unknown outcomes first, then the others. */
  effects(limit: number): Promise<EffectRow[]>;
  /** What happened to an unknown outcome: done, failed, or run it again; the call it was. */
  markEffect(agent: string, key: string, outcome: EffectMarkOutcome, note: string | null): Promise<string>;
  tools(): Promise<CatalogTool[]>;
  /** What to paste to hook Claude Code and Codex up to this hub. */
  hookupSnippets(): Promise<HookupSnippet[]>;
  /** The hub's event feed from now on, in batches; `onBatch` is attached before the stream starts. */
  followEvents(onBatch: (items: FeedItem[]) => void): Unsubscribe;
  /** The operator closed the window while `pending` calls wait for an answer. */
  onCloseAsked(handler: (pending: number) => void): Unsubscribe;
  quit(): Promise<void>;

  // The policy workbench: drafts of the hub's own policy files (never any other file).
  /** The hub's policy layer by layer, each file with its text and version. */
  policyLayers(): Promise<PolicyLayers>;
  /** A draft checked as it is typed: where it does not load, every rule example (failing ones say why). */
  checkPolicyDraft(file: string, text: string): Promise<DraftCheck>;
  /** Lint findings of the hub's policy with the draft in its file's place. */
  lintPolicyDraft(file: string, text: string): Promise<PolicyLint>;
  /** The whole trace of a command or call under the hub's policy with the draft in place. */
  tryPolicyDraft(file: string, text: string, input: TrialInput): Promise<DraftTrial>;
  /** Every test case of the hub's policy with the draft in place, judged as live calls are. */
  testPolicyDraft(file: string, text: string): Promise<TestOutcome[]>;
  /** The draft against the file on disk. */
  diffPolicyDraft(file: string, text: string): Promise<DraftDiff>;
  /** Saves the draft if the file on disk is still `expectedVersion` (null: a file to create); the new version. */
  savePolicyFile(file: string, text: string, expectedVersion: string | null): Promise<string>;
  /** Replays the draft over `ledger` (null: the hub's) against the policy in force; updates stream to
   * `onUpdate` (the last is `done` or `failed`). The returned function stops it. */
  replayPolicyDraft(
    file: string,
    text: string,
    ledger: string | null,
    onUpdate: (update: DraftReplayUpdate) => void,
  ): Unsubscribe;
  /** Calls each rule decided in the hub's ledger lately, and the most prompted commands (candidate rules). */
  ruleActivity(): Promise<RuleActivity>;
  /** Every registered tool, visible to agents now and with the draft in place. */
  grantsWithDraft(file: string, text: string): Promise<ToolGrant[]>;
  /** Whether a path would be readable and writable by the read and write tools under the draft. */
  probePathDraft(file: string, text: string, path: string): Promise<PathProbe>;
  /** How the policy in force and the draft judge one recorded call. */
  draftCallTraces(file: string, text: string, ledger: string | null, session: string, callId: string): Promise<CallTraces>;

  // The ledger browser: ledgers held open read-only by id (null path: the hub's own).
  /** Opens a ledger file read-only; a file that is not a ledger is refused and left untouched. */
  openLedger(path: string | null): Promise<OpenedLedger>;
  closeLedger(id: number): Promise<void>;
  ledgerSummary(id: number): Promise<LedgerSummary>;
  /** Checks the ledger's hash chain and signed checkpoints against the hub's key; names the first break. */
  verifyLedger(id: number): Promise<VerifyReport>;
  /** One page of calls by key: newest first after `cursor` (older), or oldest first after it (newer). */
  ledgerCalls(id: number, filter: CallFilter, order: CallOrder, cursor: Cursor | null, limit: number): Promise<CallPage>;
  ledgerCount(id: number, filter: CallFilter): Promise<number>;
  ledgerCall(id: number, callId: string, session: string): Promise<CallDetail>;
  /** What the operator can still do about a call's changes (the hub's ledger): the undo's plan or why
   * there is none, and the changes held for the operator now. */
  callChanges(callId: string, session: string): Promise<CallChanges>;
  /** Puts back what the call's commit replaced; refused (`changed_since_commit`…) with nothing touched. */
  undoCall(callId: string, session: string): Promise<UndoDone>;
  /** Keeps (commits) or discards the call's changes held for the operator. */
  answerHeld(callId: string, session: string, answer: HeldAnswer): Promise<HeldAnswered>;
  /** Counts beside the filter chips; `exact: false` is fast and may be approximate. */
  ledgerFacets(id: number, filter: CallFilter, exact: boolean): Promise<Facets>;
  ledgerStats(id: number, filter: CallFilter, bucketUs: number | null): Promise<Stats>;
  ledgerApprovals(id: number, filter: CallFilter): Promise<ApprovalSummary>;
  ledgerTopCommands(id: number, filter: CallFilter, outcome: CommandOutcome, limit: number): Promise<CommandCount[]>;
  ledgerSessions(id: number, since: number | null, until: number | null, limit: number): Promise<SessionRow[]>;
  ledgerSessionTimeline(id: number, session: string): Promise<SessionTimeline>;
  /** Exports the filtered calls' records to `file`; updates stream to `onUpdate` (the last `done` or
   * `failed`). The returned function stops it (the export then fails with `cancelled`, no file left). */
  exportLedger(
    id: number,
    filter: CallFilter,
    format: ExportFormat,
    file: string,
    onUpdate: (update: ExportUpdate) => void,
  ): Unsubscribe;
  ledgerLibrary(): Promise<LedgerLibrary>;
  saveLedgerView(view: SavedView): Promise<LedgerLibrary>;
  deleteLedgerView(name: string): Promise<LedgerLibrary>;
  /** The system's open dialog for a ledger file (null: cancelled). */
  pickLedgerFile(): Promise<string | null>;
  /** The system's save dialog for an export (null: cancelled). */
  pickExportFile(suggested: string): Promise<string | null>;
  /** A rule offered for a recorded shell command (its words when it is one simple command). */
  candidateRule(command: string): Promise<CandidateRule>;
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
