// Payloads as the backend sends them (shapes from the generated bindings), for the unit tests.
import type { AgentSession, Approval, CallRow, CallStep, FeedItem } from "../backend/backend";

const now = () => Date.now() * 1000;

export function shellApproval(id = 7): Approval {
  return {
    id,
    session_id: "5f0c2a9e-4d1b-4c55-9a5e-0c1d2e3f4a5b",
    call_id: `call-${id}`,
    tool: "shell",
    arguments: { command: "git push origin main && rm -rf build" },
    arguments_sha256: `${id}`.padStart(64, "a"),
    policy_version: "3f2a9c1e7b6d5a40",
    action: {
      kind: "execute",
      operation: "exec",
      command: "git push origin main && rm -rf build",
      cwd: "/home/dev/shop",
      paths: ["/home/dev/shop/build"],
      risk: "high",
      sandbox: {
        enforcement: { state: "confined" },
        system: ["/usr", "/bin", "/lib", "/etc"],
        read: ["/home/dev/.cargo"],
        write: ["/home/dev/shop"],
        hidden: ["/home/dev/shop/.portcullis", "/home/dev/.ssh"],
        read_only: ["/home/dev/shop/.git/hooks"],
        network: false,
        network_reason: "no rule that matched allows network use",
        limits: { memory_mb: 4096, cpu_seconds: 600, processes: 512, file_size_mb: 1024, open_files: 4096 },
      },
    },
    reason: "rule git-push says prompt: pushing publishes commits",
    matched_rules: [{ id: "git-push", source: "/home/dev/shop/.portcullis/policy.json", decision: "prompt" }],
    requested_at: now(),
    deadline: now() + 120_000_000,
    always: {
      offered: "yes",
      file: "/home/dev/.config/portcullis/policy.json",
      creates: false,
      rules: [{ id: "always-git-push", example: "git push origin main", words: ["git", "push", "origin", "main"] }],
      read_roots: [],
      amendment: {},
    },
    evaluation: {
      decision: "prompt",
      matched_rules: [
        { id: "git-push", source: "/home/dev/shop/.portcullis/policy.json", line: 14, decision: "prompt" },
        { id: "rm-build", source: "/home/dev/shop/.portcullis/policy.json", line: 22, decision: "allow" },
      ],
      commands: [
        ["git", "push", "origin", "main"],
        ["rm", "-rf", "build"],
      ],
      paths: ["/home/dev/shop/build"],
      reasons: ["rule git-push says prompt"],
      deciding_rule: { id: "git-push", source: "/home/dev/shop/.portcullis/policy.json", line: 14, decision: "prompt" },
      deciding_reason: "rule git-push says prompt",
      parts: [
        {
          kind: "command",
          text: "git push origin main",
          decision: "prompt",
          rule: { id: "git-push", source: "/home/dev/shop/.portcullis/policy.json", line: 14, decision: "prompt" },
          reason: "`git push origin main`: rule git-push says prompt: pushing publishes commits",
          reasons: ["`git push origin main`: rule git-push says prompt: pushing publishes commits"],
          paths: [],
          unseen: false,
        },
        {
          kind: "command",
          text: "rm -rf build",
          decision: "allow",
          rule: { id: "rm-build", source: "/home/dev/shop/.portcullis/policy.json", line: 22, decision: "allow" },
          reason: "`rm -rf build`: rule rm-build says allow",
          reasons: ["`rm -rf build`: rule rm-build says allow"],
          paths: ["/home/dev/shop/build"],
          unseen: false,
        },
      ],
    },
  };
}

export const session: AgentSession = {
  id: "5f0c2a9e-4d1b-4c55-9a5e-0c1d2e3f4a5b",
  client: "claude-code",
  version: "2.1.0",
  transport: "http",
  opened_at: now(),
  calls: 0,
};

/** A call's lifecycle event as the hub's feed carries it. */
export function callEvent(
  seq: number,
  callId: string,
  stage: string,
  steps: CallStep[],
  opts: { at?: number; tool?: string; agent?: string; action?: string; session?: string; sandbox?: string } = {},
): FeedItem {
  return {
    seq,
    at: now(),
    event: {
      kind: "call",
      row: listed(opts.session ?? session.id, callId, stage, steps, opts),
      at: opts.at ?? now(),
      stage,
      steps,
      action: opts.action ?? null,
      sandbox: opts.sandbox ?? null,
    },
  };
}

/** The listing the hub folds for a call after an event of `stage` (as `api::live_rows` does). */
function listed(
  sessionId: string,
  callId: string,
  stage: string,
  steps: CallStep[],
  opts: { at?: number; tool?: string; agent?: string; action?: string },
): CallRow {
  const status: CallRow["status"] =
    stage === "tool_execution_finished" ? "finished" : stage === "tool_execution_error" ? "error" : stage === "tool_execution_blocked" ? "blocked" : "running";
  const took = steps.find((s) => s.outcome === "finished" || s.outcome === "error")?.duration_us ?? null;
  return {
    record_id: 0,
    session_id: sessionId,
    run_id: `${sessionId}-1`,
    call_id: callId,
    owner: opts.agent ?? "claude-code 2.1.0 (http)",
    tool: opts.tool ?? "shell",
    status,
    at: opts.at ?? now(),
    duration_us: took,
    decided_by: "rule",
    redacted: false,
    summary: opts.action ?? null,
  };
}

/** The events of a call a rule allows at `at`: started (policy, ledger, execution), finished `tookUs` later. */
export function allowedCall(seq: number, callId: string, at: number, tookUs: number, opts: { tool?: string; agent?: string; action?: string; sandbox?: string } = {}): FeedItem[] {
  return [
    callEvent(
      seq,
      callId,
      "tool_execution_started",
      [
        { stage: "policy", outcome: "passed", decision: "allow", decided_by: { kind: "rule", words: "rule read-only (/home/dev/shop/.portcullis/policy.json)" }, duration_us: null, error: null },
        { stage: "ledger", outcome: "passed", decision: null, decided_by: null, duration_us: null, error: null },
        { stage: "execution", outcome: "started", decision: null, decided_by: null, duration_us: null, error: null },
      ],
      // Announced once the ledger holds its started row, a quarter of the call's time after it was allowed.
      { at: at + Math.floor(tookUs / 4), action: opts.action ?? "echo hi", ...opts },
    ),
    callEvent(
      seq + 1,
      callId,
      "tool_execution_finished",
      [{ stage: "execution", outcome: "finished", decision: null, decided_by: null, duration_us: tookUs, error: null }],
      { at: at + tookUs, ...opts },
    ),
  ];
}

export function asked(seq: number, approval: Approval): FeedItem {
  return { seq, at: now(), event: { kind: "approval_asked", approval } };
}
