// A call's outcome in the one color language: finished, error, blocked (and why), interrupted,
// running; a call the policy prompted for carries the prompt sign too. A word and a sign, never color alone.
import type { CallRow } from "../../../backend/backend";

const SIGN: Record<string, string> = { finished: "✓", error: "!", blocked: "✕", interrupted: "⏸", running: "…" };

export function StatusBadge({ row }: { row: Pick<CallRow, "status" | "decided_by" | "policy_decision"> }) {
  const timeout = row.status === "blocked" && row.decided_by === "approval_timeout";
  const tone = timeout ? "timeout" : row.status;
  return (
    <span className={`status status-${tone}`}>
      <span aria-hidden="true">{timeout ? "⏱" : (SIGN[row.status] ?? "•")}</span> {timeout ? "timed out" : row.status}
      {row.policy_decision === "prompt" && (
        <span className="status-asked" title="the policy asked the operator">
          ?
        </span>
      )}
    </span>
  );
}
