// The one seam between the window and Rust. Views and stores receive a Backend (useBackend()) and never
// import Tauri: the Tauri implementation (tauri.ts) runs in the app, the fake one (fake.ts) in tests, and
// a web implementation over the HTTP operator API can follow. Every type comes from the generated
// bindings (bindings.ts); none is written here by hand.
import type {
  AgentSession,
  AlwaysPreview,
  Answer,
  ApiError,
  Approval,
  CatalogTool,
  FeedItem,
  HookupSnippet,
  HubState,
  HubStatus,
  RuleScope,
  SessionGrant,
  UpstreamServer,
} from "./bindings";

export type {
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
  tools(): Promise<CatalogTool[]>;
  /** What to paste to hook Claude Code and Codex up to this hub. */
  hookupSnippets(): Promise<HookupSnippet[]>;
  /** The hub's event feed from now on, in batches; `onBatch` is attached before the stream starts. */
  followEvents(onBatch: (items: FeedItem[]) => void): Unsubscribe;
  /** The operator closed the window while `pending` calls wait for an answer. */
  onCloseAsked(handler: (pending: number) => void): Unsubscribe;
  quit(): Promise<void>;
}

/** A failed backend call: the API's `{code, message, details}`. Views branch on `code`. */
export class BackendError extends Error {
  readonly code: string;
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
    return new BackendError({ code: String(code), message: String(message), details: details ?? null });
  }
  return new BackendError({ code: "backend_failed", message: String(e), details: null });
}
