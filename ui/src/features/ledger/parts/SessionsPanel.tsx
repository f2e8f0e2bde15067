// Agent sessions: the list (who, where, when, how it ended) and, for the chosen one, its timeline —
// every call as a bar from when it ran to when it ended, one lane per call running at once (so
// concurrency shows), blocked and prompted calls marked — with the calls listed under it.
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { CallFilter, SessionTimeline, TimelineCall } from "../../../backend/backend";
import { absolute, millis } from "../../../lib/time";
import { visible } from "../../../lib/visible";
import { duration } from "../columns";
import { StatusBadge } from "./StatusBadge";
import { count, dateTime, timeOfDay } from "../../../lib/numbers";

const LANE_PX = 18;

export function SessionsPanel({
  ledgerId,
  filter,
  session,
  onSession,
  onCall,
}: {
  ledgerId: number;
  filter: CallFilter;
  session: string | null;
  onSession: (id: string | null) => void;
  onCall: (session: string, callId: string) => void;
}) {
  const backend = useBackend();
  const sessions = useQuery({
    queryKey: ["ledger_sessions", ledgerId, filter.since, filter.until],
    queryFn: () => backend.ledgerSessions(ledgerId, filter.since ?? null, filter.until ?? null, 500),
  });
  const timeline = useQuery({
    queryKey: ["ledger_session_timeline", ledgerId, session],
    queryFn: () => backend.ledgerSessionTimeline(ledgerId, session ?? ""),
    enabled: session != null,
  });
  return (
    <div className="sessions-panel">
      <ul className="session-list" data-testid="session-list" aria-label="Sessions">
        {sessions.isPending && <li className="muted">Reading sessions…</li>}
        {sessions.isError && <li className="error">{String((sessions.error as Error).message)}</li>}
        {sessions.data?.length === 0 && <li className="muted">No session started in this time range.</li>}
        {sessions.data?.map((s) => (
          <li key={s.id}>
            <button
              type="button"
              className={`session-item${s.id === session ? " selected" : ""}`}
              data-testid="session-item"
              data-session={s.id}
              onClick={() => onSession(s.id === session ? null : s.id)}
            >
              <strong>{visible(s.client_name ?? "unknown client")}</strong> {s.client_version ? visible(s.client_version) : ""}
              <span className="muted mono"> {visible(s.id)}</span>
              <br />
              <span className="muted" title={absolute(s.started_at)}>
                {dateTime(millis(s.started_at))}
                {s.ended_at != null ? ` → ${timeOfDay(millis(s.ended_at))}` : " · open"}
                {s.end_reason === "cut" ? " · cut (its hub stopped)" : ""}
              </span>
              {s.cwd && (
                <>
                  <br />
                  <span className="mono muted">{visible(s.cwd)}</span>
                </>
              )}
            </button>
          </li>
        ))}
      </ul>
      <div className="session-timeline">
        {session == null && <p className="muted">Choose a session to see its calls over time.</p>}
        {timeline.isError && <p className="error">{String((timeline.error as Error).message)}</p>}
        {timeline.data && <Timeline timeline={timeline.data} onCall={onCall} />}
      </div>
    </div>
  );
}

function Timeline({ timeline, onCall }: { timeline: SessionTimeline; onCall: (s: string, c: string) => void }) {
  const calls = timeline.calls;
  const first = calls[0];
  if (!first) return <p className="muted">This session made no call.</p>;
  const t0 = Math.min(...calls.map((c) => c.from));
  const t1 = Math.max(...calls.map((c) => c.to));
  const span = Math.max(1, t1 - t0);
  const pct = (t: number) => ((t - t0) / span) * 100;
  const blocked = calls.filter((c) => c.call.status === "blocked").length;
  const prompted = calls.filter((c) => c.call.policy_decision === "prompt").length;
  return (
    <div data-testid="session-timeline">
      <p className="timeline-sum">
        {count(timeline.total)} {timeline.total === 1 ? "call" : "calls"} over {duration(span)} · {blocked} blocked ·{" "}
        {prompted} prompted · at most {timeline.lanes} at once
        {timeline.total > calls.length ? ` · first ${count(calls.length)} shown` : ""}
      </p>
      <div className="timeline-lanes" style={{ height: timeline.lanes * LANE_PX + 4 }} role="img" aria-label="Calls over time">
        {calls.map((c) => (
          <button
            key={`${c.call.call_id}/${c.call.record_id}`}
            type="button"
            className={`timeline-bar bar-${barTone(c)}${c.call.policy_decision === "prompt" ? " bar-prompted" : ""}`}
            title={visible(`${c.call.tool} · ${c.call.status} · ${timeOfDay(millis(c.from))}${c.call.summary ? ` · ${c.call.summary}` : ""}`)}
            style={{
              left: `${pct(c.from)}%`,
              width: `max(3px, ${pct(c.to) - pct(c.from)}%)`,
              top: c.lane * LANE_PX,
            }}
            onClick={() => onCall(c.call.session_id, c.call.call_id)}
          />
        ))}
      </div>
      <div className="timeline-axis muted">
        <span>{timeOfDay(millis(t0))}</span>
        <span>{timeOfDay(millis(t1))}</span>
      </div>
      <ol className="timeline-calls" data-testid="timeline-calls">
        {calls.slice(0, 1000).map((c) => (
          <li key={`${c.call.call_id}/${c.call.record_id}`}>
            <button type="button" className="link-row" data-testid="timeline-call" data-call={c.call.call_id} onClick={() => onCall(c.call.session_id, c.call.call_id)}>
              <span className="mono muted">{timeOfDay(millis(c.from))}</span> <StatusBadge row={c.call} />{" "}
              <span className="mono">{visible(c.call.tool)}</span> <span className="mono muted">{visible(c.call.summary ?? "")}</span>
            </button>
          </li>
        ))}
      </ol>
    </div>
  );
}

function barTone(c: TimelineCall): string {
  if (c.call.status === "blocked") return c.call.decided_by === "approval_timeout" ? "timeout" : "blocked";
  return c.call.status;
}
