// One call in full, beside the table: what decided it (rule and file, operator and answer, session
// grant, timeout), when each stage happened and how long it took, the approvals and their wait, the
// arguments and output (images drawn, redactions marked), progress snapshots, and what to do next:
// try it in the policy playground, make a rule from it, copy it as JSON; for a confined command, what
// its copy-on-write review kept, held and discarded, with Undo and Keep / Discard (ChangesSection).
import { useEffect } from "react";
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { navigate } from "../../../app/route";
import type { CallDetail, OutputPart } from "../../../backend/backend";
import { absolute, millis } from "../../../lib/time";
import { ConnectionList } from "../../../lib/ui/Connections";
import { visible } from "../../../lib/visible";
import { duration } from "../columns";
import { deciderWords } from "../query";
import { containmentOf, reviewedChanges } from "../changes";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { ChangesSection } from "./ChangesSection";
import { ChangeRecordList } from "./ChangeRecordList";
import { JsonView, TextBlock } from "./JsonView";
import { StatusBadge } from "./StatusBadge";
import { dateTime, timeOfDay } from "../../../lib/numbers";

export function CallDrawer({
  ledgerId,
  hub,
  session,
  callId,
  onClose,
  onSession,
}: {
  ledgerId: number;
  /** The ledger is the running hub's own (its calls' changes can be undone here). */
  hub: boolean;
  session: string;
  callId: string;
  onClose: () => void;
  onSession: (session: string) => void;
}) {
  const backend = useBackend();
  const detail = useQuery({
    queryKey: ["ledger_call", ledgerId, session, callId],
    queryFn: () => backend.ledgerCall(ledgerId, callId, session),
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onClose();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <aside className="call-drawer" aria-label="Call detail" data-testid="call-drawer">
      <header className="drawer-head">
        <h2 className="mono">{visible(callId)}</h2>
        <button type="button" onClick={onClose} aria-label="Close the call">
          ✕ <kbd>Esc</kbd>
        </button>
      </header>
      {detail.isPending && <p className="muted">Reading the call…</p>}
      {detail.isError && (
        <p className="error" role="alert">
          {String((detail.error as Error).message)}
        </p>
      )}
      {detail.data && <Detail detail={detail.data} hub={hub} onSession={onSession} />}
    </aside>
  );
}

function copyText(text: string) {
  if (navigator.clipboard?.writeText) {
    navigator.clipboard.writeText(text).catch(() => copyByTextarea(text));
  } else copyByTextarea(text);
}

function copyByTextarea(text: string) {
  const area = document.createElement("textarea");
  area.value = text;
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

function Detail({ detail, hub, onSession }: { detail: CallDetail; hub: boolean; onSession: (s: string) => void }) {
  const { call, decider, timings } = detail;
  const review = reviewedChanges(detail);
  const contained = containmentOf(detail);
  const command = typeof (detail.arguments as { command?: unknown } | null)?.command === "string"
    ? String((detail.arguments as { command: string }).command)
    : null;
  return (
    <div className="drawer-body">
      <p className="drawer-summary">
        <StatusBadge row={call} /> <span className="mono">{visible(call.tool)}</span> by{" "}
        <span className="mono">{visible(call.owner)}</span> in session{" "}
        <button type="button" className="link mono" data-testid="drawer-session" onClick={() => onSession(call.session_id)}>
          {visible(call.session_id)}
        </button>
      </p>
      <div className="drawer-actions">
        <button
          type="button"
          data-testid="try-in-playground"
          onClick={() =>
            navigate({
              view: "policy",
              params: new URLSearchParams({ try: JSON.stringify({ tool: call.tool, arguments: detail.arguments ?? {} }) }).toString(),
            })
          }
        >
          Test in the policy playground
        </button>
        {command && (
          <button
            type="button"
            data-testid="make-rule"
            onClick={() => navigate({ view: "policy", params: new URLSearchParams({ rule: command }).toString() })}
          >
            Make a rule from this call
          </button>
        )}
        <button type="button" data-testid="copy-json" onClick={() => copyText(JSON.stringify(detail, null, 2))}>
          Copy as JSON
        </button>
      </div>

      {review && (
        <ChangesSection session={call.session_id} callId={call.call_id} cwd={detail.cwd} review={review} hub={hub} />
      )}
      {detail.changes && <ChangeRecordList record={detail.changes} cwd={detail.cwd} />}

      <section>
        <h3>Decision</h3>
        <dl className="facts">
          <dt>Decided by</dt>
          <dd data-testid="drawer-decider">{deciderWords(decider.kind)}</dd>
          {decider.rule && (
            <>
              <dt>{decider.kind === "rule" || decider.kind === "operator" ? "Rule" : decider.kind === "protected_place" ? "Place" : "Which"}</dt>
              <dd className="mono">{visible(decider.rule)}</dd>
            </>
          )}
          {decider.source && (
            <>
              <dt>{decider.kind === "protected_place" ? "Path" : "File"}</dt>
              <dd className="mono">{visible(decider.source)}</dd>
            </>
          )}
          {decider.operator && (
            <>
              <dt>Operator</dt>
              <dd>{visible(decider.operator)}</dd>
            </>
          )}
          {call.policy_decision && (
            <>
              <dt>Policy said</dt>
              <dd>
                {contained ? <DecisionBadge decision="contained" /> : call.policy_decision}
                {call.policy_rule ? <span className="mono"> ({visible(call.policy_rule)})</span> : null}
                {!call.policy_rule && detail.policy_decider ? (
                  <span data-testid="drawer-policy-decider"> — {visible(detail.policy_decider.words)}</span>
                ) : null}
              </dd>
            </>
          )}
          {contained && (
            <>
              <dt>Ran contained</dt>
              <dd data-testid="drawer-contained">
                without asking, because part of it could not be read
                {contained.unread[0] ? <span className="mono small"> ({visible(contained.unread[0])})</span> : null}
                {(contained.masked ?? []).length > 0 ? (
                  <div>programs masked: {(contained.masked ?? []).map((m) => visible(m.program)).join(", ")}</div>
                ) : null}
                {(contained.hidden_by_globs ?? []).length > 0 ? (
                  <div>{(contained.hidden_by_globs ?? []).length} files the deny globs name hidden</div>
                ) : null}
                {contained.deletions_held_by ? <div>deletions held for you ({visible(contained.deletions_held_by)})</div> : null}
              </dd>
            </>
          )}
          {call.reason && (
            <>
              <dt>Blocked because</dt>
              <dd>{call.reason.replaceAll("_", " ")}</dd>
            </>
          )}
        </dl>
      </section>

      <section>
        <h3>Timings</h3>
        <dl className="facts" data-testid="drawer-timings">
          <dt>First seen</dt>
          <dd title={absolute(timings.first_at)}>{dateTime(millis(timings.first_at))}</dd>
          {timings.approval_wait_us != null && (
            <>
              <dt>Waited for the operator</dt>
              <dd>{duration(timings.approval_wait_us)}</dd>
            </>
          )}
          {timings.run_us != null && (
            <>
              <dt>Ran</dt>
              <dd>{duration(timings.run_us)}</dd>
            </>
          )}
          <dt>In all</dt>
          <dd>{duration(timings.total_us)}</dd>
        </dl>
      </section>

      {detail.approvals.length > 0 && (
        <section>
          <h3>Approvals</h3>
          <ul className="plain">
            {detail.approvals.map((a, i) => (
              <li key={i}>
                asked {timeOfDay(millis(a.requested_at))} →{" "}
                <strong>{a.outcome?.replaceAll("_", " ") ?? "no answer"}</strong>
                {a.operator ? ` by ${visible(a.operator)}` : ""}
                {a.resolved_at != null ? ` after ${duration(a.resolved_at - a.requested_at)}` : ""}
                {a.rule_written ? <span className="mono"> · wrote {visible(a.rule_written)}</span> : null}
                {a.receipt != null && (
                  <div
                    className="muted small"
                    data-testid="receipt"
                    title={`receipt ${a.receipt.id}: arguments sha256 ${a.receipt.arguments_sha256}, policy ${a.receipt.policy_version ?? "none"}`}
                  >
                    receipt <span className="mono">{visible(a.receipt.id.slice(0, 12))}…</span>:{" "}
                    {visible(a.receipt.operator)} via {visible(a.receipt.channel)} at{" "}
                    {timeOfDay(millis(a.receipt.at))}, arguments{" "}
                    <span className="mono">{visible(a.receipt.arguments_sha256.slice(0, 12))}…</span>, policy{" "}
                    <span className="mono">
                      {a.receipt.policy_version != null ? visible(a.receipt.policy_version.slice(0, 12)) : "none"}
                    </span>
                  </div>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}

      <section>
        <h3>Arguments{call.redacted ? <span className="redacted-tag">redacted</span> : null}</h3>
        {detail.arguments == null ? <p className="muted">None recorded.</p> : <JsonView value={detail.arguments} testId="drawer-arguments" />}
        {detail.cwd && (
          <p className="muted">
            in <span className="mono">{visible(detail.cwd)}</span>
          </p>
        )}
      </section>

      {(detail.output.length > 0 || detail.error) && (
        <section>
          <h3>{detail.output_is_error ? "Output (the tool reported a failure)" : "Output"}</h3>
          {detail.output.map((part, i) => (
            <Part key={i} part={part} />
          ))}
          {detail.error != null && <JsonView value={detail.error} testId="drawer-error" />}
        </section>
      )}

      {detail.connections.length > 0 && (
        <section>
          <h3>Network (through the egress proxy)</h3>
          <ConnectionList connections={detail.connections} testId="drawer-connections" />
        </section>
      )}

      {detail.files.length > 0 && (
        <section>
          <h3>Files</h3>
          <JsonView value={detail.files} />
        </section>
      )}

      <section>
        <h3>Records</h3>
        <ol className="records" data-testid="drawer-records">
          {detail.records.map((r) => (
            <li key={r.id}>
              <span className="mono">{timeOfDay(millis(r.at))}</span> {r.kind}
              {r.kind !== "progress" ? <span className="muted"> · {deciderWords(r.decider.kind)}</span> : null}
              {r.summary && r.progress == null && (
                <div className="mono small muted record-summary" data-testid="drawer-record-summary">
                  {visible(r.summary)}
                </div>
              )}
              {r.progress != null && <JsonView value={r.progress} />}
            </li>
          ))}
        </ol>
      </section>
    </div>
  );
}

function Part({ part }: { part: OutputPart }) {
  switch (part.type) {
    case "text":
      return <TextBlock text={part.text} testId="drawer-output" />;
    case "image":
      return <img className="output-image" alt="image the tool returned" src={`data:${part.mime_type};base64,${part.data}`} />;
    case "other":
      return <JsonView value={part.value} testId="drawer-output" />;
  }
}
