// A call's outcome in the one color language: finished, error, blocked (and why), interrupted,
// running; a call the policy prompted for carries the prompt sign too. A word and a sign, never color alone.
import { isKnownCallErrorCode } from "../../../backend/backend";
import type { CallRow, CallStatus, KnownCallErrorCode } from "../../../backend/backend";

const SIGN: Record<CallStatus, string> = { finished: "✓", error: "!", blocked: "✕", interrupted: "⏸", running: "…" };

/** Refusals that are not denials, by their error code: their own sign and word. A retry answered from
 * the first call with its idempotency key got that call's answer (it is not an error the agent saw); a
 * retry of a call whose outcome is unknown waits for the operator. Other refusals of the same reasons
 * (a key's conflict, an operator's "it failed", a wait cancelled) stay "blocked". */
const REFUSED_AS: Partial<Record<KnownCallErrorCode, { sign: string; word: string; tone: string; title: string }>> = {
  duplicate_effect: {
    sign: "↺",
    word: "duplicate",
    tone: "duplicate",
    title: "a retry with the same idempotency key: answered with the first call's result, not run again",
  },
  outcome_unknown: {
    sign: "?",
    word: "unknown",
    tone: "unknown",
    title: "a retry of a call whose outcome is unknown: refused until an operator says what happened",
  },
};

export function StatusBadge({
  row,
}: {
  row: Pick<CallRow, "status" | "decided_by" | "policy_decision" | "error_code">;
}) {
  const timeout = row.status === "blocked" && row.decided_by === "approval_timeout";
  const code = row.error_code;
  const refused = row.status === "blocked" && code && isKnownCallErrorCode(code) ? REFUSED_AS[code] : undefined;
  const tone = timeout ? "timeout" : (refused?.tone ?? row.status);
  const sign = timeout ? "⏱" : (refused?.sign ?? SIGN[row.status]);
  const word = timeout ? "timed out" : (refused?.word ?? row.status);
  return (
    <span className={`status status-${tone}`} title={refused?.title}>
      <span aria-hidden="true">{sign}</span> {word}
      {row.policy_decision === "prompt" && (
        <span className="status-asked" title="the policy asked the operator">
          ?
        </span>
      )}
    </span>
  );
}
