// The ledger browser's whole view state as one value, kept in the window's URL (the hash) so that a
// view can be bookmarked, saved by name and restored: which ledger, which tab, the filter chips, the
// search, the time range, the order, the open call and the table's columns. Parsing never throws: an
// unknown or malformed part is dropped, so any URL opens some view.

import type { BlockedReason, ChangeOutcome, DeciderKind } from "../../backend/backend";
import { DECIDER_KINDS, DECIDER_KIND_WORDS } from "../../backend/backend";
import { visible } from "../../lib/visible";

export const TABS = ["calls", "sessions", "stats"] as const;
export type Tab = (typeof TABS)[number];

/** Time range presets, newest end open: the last 15 minutes, hour, day, week, 30 days. */
export const RANGES = { "15m": 15 * 60, "1h": 3600, "24h": 86_400, "7d": 7 * 86_400, "30d": 30 * 86_400 } as const;
export type Range = keyof typeof RANGES;

export const STATUSES = ["finished", "error", "blocked", "interrupted", "running"] as const;
export const DECISIONS = ["allow", "prompt", "forbidden"] as const;
/** What a confined command's changes came to (the most serious of them), checked against the generated
 * `ChangeOutcome`: held for the operator, discarded, kept. */
export const CHANGES = ["held", "discarded", "kept"] as const satisfies readonly ChangeOutcome[];
/** Why a call was refused, as the backend names it (checked against the generated `BlockedReason`):
 * the idempotency key's outcomes (a retry answered from its first call, a key reused with other
 * arguments, an outcome unknown) beside the pipeline's refusals. */
export const REASONS = [
  "duplicate_effect",
  "effect_conflict",
  "outcome_unknown",
  "execution_denied",
  "tool_denied",
  "unknown_tool",
  "invalid_arguments",
  "validation_failed",
  "permission_denied",
  "guardrail_blocked",
] as const satisfies readonly BlockedReason[];
type MissingReason = Exclude<BlockedReason, (typeof REASONS)[number]>;
const everyReason: MissingReason extends never ? true : false = true;
void everyReason;
/** Every kind of decider the backend names: the generated `DeciderKind::ALL`, in its order. */
export const DECIDERS: readonly DeciderKind[] = DECIDER_KINDS;

/** A kind of decider as a person reads it ("protected place", "approval timed out"): the hub's one
 * table (`DeciderKind::words`, generated). A kind this build does not know (a newer ledger's) shows as
 * written, escaped. */
export function deciderWords(kind: string): string {
  return Object.hasOwn(DECIDER_KIND_WORDS, kind) ? DECIDER_KIND_WORDS[kind as DeciderKind] : visible(kind);
}

export interface LedgerQuery {
  /** The ledger file; null: the hub's own. */
  file: string | null;
  tab: Tab;
  tools: string[];
  statuses: string[];
  /** Why refused: duplicate_effect, outcome_unknown, execution_denied… */
  reasons: string[];
  /** Who decided: rule, operator, session_grant… */
  deciders: string[];
  /** What the policy said: allow, prompt, forbidden. */
  decisions: string[];
  /** What the calls' changes came to: held, discarded, kept. */
  changes: string[];
  rule: string | null;
  /** Agents (a call's owner). */
  owners: string[];
  /** A team ledger's hosts, OS users and hubs (ledger ids). */
  hosts: string[];
  users: string[];
  hubs: string[];
  session: string | null;
  range: Range | null;
  /** Custom bounds, ISO 8601 (used when `range` is null). */
  since: string | null;
  until: string | null;
  search: string;
  order: "newest" | "oldest";
  /** The call open in the detail drawer. */
  call: { session: string; id: string } | null;
  /** Visible columns, in order; null: the default set. */
  columns: string[] | null;
  /** Column widths in pixels, by column id. */
  widths: Record<string, number>;
}

export const EMPTY_QUERY: LedgerQuery = {
  file: null,
  tab: "calls",
  tools: [],
  statuses: [],
  reasons: [],
  deciders: [],
  decisions: [],
  changes: [],
  rule: null,
  owners: [],
  hosts: [],
  users: [],
  hubs: [],
  session: null,
  range: null,
  since: null,
  until: null,
  search: "",
  order: "newest",
  call: null,
  columns: null,
  widths: {},
};

const LISTS = [
  ["tool", "tools"],
  ["status", "statuses"],
  ["reason", "reasons"],
  ["decided", "deciders"],
  ["decision", "decisions"],
  ["changes", "changes"],
  ["agent", "owners"],
  ["host", "hosts"],
  ["user", "users"],
  ["hub", "hubs"],
] as const;

const isoOk = (s: string | null): string | null => (s && !Number.isNaN(Date.parse(s)) ? s : null);

/** The view state a query string (`tool=shell&status=blocked&q=rm`) describes. */
export function parseQuery(text: string): LedgerQuery {
  const p = new URLSearchParams(text.startsWith("?") ? text.slice(1) : text);
  const q: LedgerQuery = { ...EMPTY_QUERY, widths: {} };
  q.file = p.get("file") || null;
  const tab = p.get("tab");
  q.tab = (TABS as readonly string[]).includes(tab ?? "") ? (tab as Tab) : "calls";
  for (const [key, field] of LISTS) q[field] = [...new Set(p.getAll(key).filter(Boolean))];
  q.statuses = q.statuses.filter((s) => (STATUSES as readonly string[]).includes(s));
  q.reasons = q.reasons.filter((s) => (REASONS as readonly string[]).includes(s));
  q.decisions = q.decisions.filter((s) => (DECISIONS as readonly string[]).includes(s));
  q.changes = q.changes.filter((s) => (CHANGES as readonly string[]).includes(s));
  q.deciders = q.deciders.filter((s) => (DECIDERS as readonly string[]).includes(s));
  q.rule = p.get("rule") || null;
  q.session = p.get("session") || null;
  const range = p.get("range");
  q.range = range && range in RANGES ? (range as Range) : null;
  q.since = q.range ? null : isoOk(p.get("since"));
  q.until = q.range ? null : isoOk(p.get("until"));
  q.search = p.get("q") ?? "";
  q.order = p.get("order") === "oldest" ? "oldest" : "newest";
  const call = p.get("call");
  const cut = call ? call.indexOf("/") : -1;
  q.call = call && cut > 0 ? { session: call.slice(0, cut), id: call.slice(cut + 1) } : null;
  const cols = p.get("cols");
  q.columns = cols ? cols.split(",").filter(Boolean) : null;
  for (const w of (p.get("w") ?? "").split(",")) {
    const [id, px] = w.split(":");
    const n = Number(px);
    if (id && Number.isFinite(n) && n >= 40 && n <= 2000) q.widths[id] = Math.round(n);
  }
  return q;
}

/** The query string of a view state (only what differs from the defaults; stable order). */
export function formatQuery(q: LedgerQuery): string {
  const p = new URLSearchParams();
  if (q.file) p.set("file", q.file);
  if (q.tab !== "calls") p.set("tab", q.tab);
  for (const [key, field] of LISTS) for (const v of q[field]) p.append(key, v);
  if (q.rule) p.set("rule", q.rule);
  if (q.session) p.set("session", q.session);
  if (q.range) p.set("range", q.range);
  else {
    if (q.since) p.set("since", q.since);
    if (q.until) p.set("until", q.until);
  }
  if (q.search.trim()) p.set("q", q.search);
  if (q.order !== "newest") p.set("order", q.order);
  if (q.call) p.set("call", `${q.call.session}/${q.call.id}`);
  if (q.columns) p.set("cols", q.columns.join(","));
  const widths = Object.entries(q.widths).map(([id, px]) => `${id}:${px}`);
  if (widths.length) p.set("w", widths.join(","));
  return p.toString();
}

/** The part of the view that selects calls (what a saved view or an export is about). */
export function filterKey(q: LedgerQuery): string {
  return formatQuery({ ...q, tab: "calls", call: null, columns: null, widths: {}, order: "newest" });
}

/** Whether any chip, search or range narrows the calls. */
export function isFiltered(q: LedgerQuery): boolean {
  return filterKey({ ...q, file: null }) !== "";
}
