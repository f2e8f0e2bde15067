// The calls table's columns as data: id, header, default width, and how a row's cell reads. Every
// agent-written value goes through visible() and renders as text.
import type { ReactNode } from "react";
import type { CallRow, Snippet } from "../../backend/backend";
import { absolute, ago, millis } from "../../lib/time";
import { visible } from "../../lib/visible";
import { deciderWords } from "./query";
import { StatusBadge } from "./parts/StatusBadge";

export interface Column {
  id: string;
  label: string;
  width: number;
  cell: (row: CallRow, now: number) => ReactNode;
}

export function duration(us: number | null | undefined): string {
  if (us == null) return "";
  if (us < 1000) return `${us} µs`;
  if (us < 1_000_000) return `${(us / 1000).toFixed(us < 10_000 ? 1 : 0)} ms`;
  return `${(us / 1_000_000).toFixed(us < 10_000_000 ? 2 : 1)} s`;
}

export function SnippetText({ snippet }: { snippet: Snippet }) {
  return (
    <>
      {snippet.cut_before && "…"}
      {snippet.parts.map((p, i) => (p.hit ? <mark key={i}>{visible(p.text)}</mark> : <span key={i}>{visible(p.text)}</span>))}
      {snippet.cut_after && "…"}
    </>
  );
}

/** Who decided, in plain words (the kind's words from the hub's table), then the rule or operator
 * (agent text, escaped). */
export function decidedWords(row: Pick<CallRow, "decided_by" | "decided_operator" | "decided_rule">): string {
  const who = row.decided_operator ?? row.decided_rule;
  const kind = deciderWords(row.decided_by);
  return who ? `${kind} · ${visible(who)}` : kind;
}

/** The mark of a call that ran contained: allowed without asking, inside walls, its changes reviewed (the
 * ledger stores its decision as `allow`). */
export function ContainedMark({ row }: { row: Pick<CallRow, "contained"> }) {
  if (!row.contained) return null;
  return (
    <span className="contained-tag" data-testid="contained-mark" title="ran contained: allowed without asking, inside walls, its changes reviewed">
      contained
    </span>
  );
}

/** What a call's changes came to, when they were held for the operator or discarded (kept: nothing to see). */
export function ChangesMark({ row }: { row: Pick<CallRow, "changes"> }) {
  if (row.changes === "held")
    return (
      <span className="changes-tag changes-held" data-testid="changes-mark" title="changes held for you: keep or discard them">
        held
      </span>
    );
  if (row.changes === "discarded")
    return (
      <span className="changes-tag changes-discarded" data-testid="changes-mark" title="changes discarded by the review">
        discarded
      </span>
    );
  return row.changes === "kept" ? <span className="muted">kept</span> : null;
}

export const COLUMNS: Column[] = [
  {
    id: "at",
    label: "Time",
    width: 150,
    cell: (r, now) => (
      <time dateTime={new Date(millis(r.at)).toISOString()} title={absolute(r.at)}>
        {now - millis(r.at) < 86_400_000 ? ago(r.at, now) : absolute(r.at)}
      </time>
    ),
  },
  { id: "status", label: "Status", width: 120, cell: (r) => <StatusBadge row={r} /> },
  { id: "tool", label: "Tool", width: 150, cell: (r) => <span className="mono">{visible(r.tool)}</span> },
  {
    id: "what",
    label: "What",
    width: 420,
    cell: (r) => (
      <span className="mono">
        {r.snippet ? <SnippetText snippet={r.snippet} /> : visible(r.summary ?? "")}
        {r.redacted && <span className="redacted-tag" title="secrets in this call were replaced before it was recorded">redacted</span>}
      </span>
    ),
  },
  {
    id: "decided",
    label: "Decided by",
    width: 200,
    cell: (r) => (
      <>
        {decidedWords(r)}
        <ContainedMark row={r} />
      </>
    ),
  },
  {
    id: "policy",
    label: "Policy said",
    width: 140,
    cell: (r) => (
      <>
        {r.policy_decision ?? ""}
        <ContainedMark row={r} />
      </>
    ),
  },
  { id: "changes", label: "Changes", width: 100, cell: (r) => <ChangesMark row={r} /> },
  { id: "agent", label: "Agent", width: 140, cell: (r) => visible(r.owner) },
  {
    id: "hub",
    label: "Ran on",
    width: 180,
    cell: (r) =>
      r.origin ? (
        <span title={`hub ${r.origin.ledger_id}`}>
          {visible(r.origin.user)}@{visible(r.origin.host)}
        </span>
      ) : (
        ""
      ),
  },
  { id: "session", label: "Session", width: 120, cell: (r) => <span className="mono">{visible(r.session_id)}</span> },
  { id: "duration", label: "Took", width: 90, cell: (r) => duration(r.duration_us) },
  { id: "call", label: "Call id", width: 140, cell: (r) => <span className="mono">{visible(r.call_id)}</span> },
];

export const DEFAULT_COLUMNS = ["at", "status", "tool", "what", "decided", "changes", "agent", "duration"];

export const columnById = (id: string): Column | undefined => COLUMNS.find((c) => c.id === id);
