// One color language for what decided: a word and a sign, never color alone.
const SIGNS: Record<string, string> = {
  allow: "✓",
  approved: "✓",
  // Allowed without asking, inside walls built for what could not be read: a box, not a tick.
  contain: "▣",
  contained: "▣",
  prompt: "?",
  forbidden: "✕",
  deny: "✕",
  denied: "✕",
  timeout: "⏱",
  error: "!",
};

export function DecisionBadge({ decision }: { decision: string }) {
  const tone =
    decision === "deny" || decision === "denied"
      ? "forbidden"
      : decision === "approved"
        ? "allow"
        : decision === "contained"
          ? "contain"
          : decision;
  return (
    <span className={`badge badge-${tone}`}>
      <span aria-hidden="true">{SIGNS[decision] ?? "•"}</span> {decision}
    </span>
  );
}
