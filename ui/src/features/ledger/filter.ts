// The view state's call filter as the backend takes it: chips to lists, the range preset resolved
// against a given "now" (so one view keeps one filter while it is shown), custom bounds to timestamps.
import type {
  BlockedReason,
  CallFilter,
  CallStatus,
  ChangeOutcome,
  DeciderKind,
  StoredPolicyDecision,
} from "../../backend/backend";
import { RANGES, type LedgerQuery } from "./query";

/** Microseconds since the epoch of an ISO time. */
const micros = (iso: string): number => Date.parse(iso) * 1000;

export function callFilter(q: LedgerQuery, nowMs: number): CallFilter {
  const since = q.range ? (nowMs - RANGES[q.range] * 1000) * 1000 : q.since ? micros(q.since) : null;
  const until = q.range ? null : q.until ? micros(q.until) : null;
  return {
    session: q.session,
    run: null,
    tools: q.tools,
    statuses: q.statuses as CallStatus[],
    reasons: q.reasons as BlockedReason[],
    decided_by: q.deciders as DeciderKind[],
    rule: q.rule,
    policy_decisions: q.decisions as StoredPolicyDecision[],
    changes: q.changes as ChangeOutcome[],
    owners: q.owners,
    hosts: q.hosts,
    users: q.users,
    hubs: q.hubs,
    since,
    until,
    search: q.search.trim() ? q.search.trim() : null,
  };
}
