// What-if replay: the draft judged against the policy in force over every call a ledger holds (the hub's,
// any file, or a team ledger by its postgres:// URL: every hub's calls), in the background with progress and a stop button. Shows the before x after matrix, the
// loosened calls (anything that becomes allow) apart, the changed calls grouped by what decides them under
// the draft, and for one call the two traces side by side.
import { useEffect, useRef, useState } from "react";
import type { CallTraces, DraftReplayOutcome, LayerFile, ReplayChange, Unsubscribe } from "../../../backend/backend";
import { asBackendError } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { ReplayMatrix } from "./ReplayMatrix";
import { TraceView } from "./TraceView";

type Run =
  | { state: "idle" }
  | { state: "running"; records: number; perSecond: number | null; lastId: number; totalId: number; changes: ReplayChange[] }
  | { state: "done"; outcome: DraftReplayOutcome; changes: ReplayChange[] }
  | { state: "failed"; message: string; changes: ReplayChange[] };

/** Changed calls listed per group before "show all". */
const PER_GROUP = 25;

export function ReplayPanel({ draft, loads, layers }: { draft: DraftContext; loads: boolean; layers: LayerFile[] }) {
  const backend = useBackend();
  const [ledger, setLedger] = useState<"hub" | "file">("hub");
  const [path, setPath] = useState("");
  const [run, setRun] = useState<Run>({ state: "idle" });
  const [replayedText, setReplayedText] = useState<string | null>(null);
  const [picked, setPicked] = useState<ReplayChange | null>(null);
  const stop = useRef<Unsubscribe | null>(null);
  useEffect(() => () => stop.current?.(), []);

  const start = () => {
    stop.current?.();
    setPicked(null);
    setReplayedText(draft.text);
    const started = performance.now();
    let changes: ReplayChange[] = [];
    setRun({ state: "running", records: 0, perSecond: null, lastId: 0, totalId: 0, changes });
    stop.current = backend.replayPolicyDraft(draft.file, draft.text, ledger === "hub" ? null : path, (update) => {
      switch (update.kind) {
        case "changes":
          changes = [...changes, ...update.changes];
          setRun((r) => (r.state === "running" ? { ...r, changes } : r));
          break;
        case "progress":
          {
            const seconds = (performance.now() - started) / 1000;
            const perSecond = seconds > 0.5 ? update.records / seconds : null;
            setRun((r) => (r.state === "running" ? { ...r, records: update.records, perSecond, lastId: update.last_id, totalId: update.total_id } : r));
          }
          break;
        case "done":
          stop.current = null;
          setRun({ state: "done", outcome: update.outcome, changes });
          break;
        case "failed":
          stop.current = null;
          setRun({ state: "failed", message: asBackendError(update.error).message, changes });
          break;
      }
    });
  };
  const changes = run.state === "idle" ? [] : run.changes;
  const stale = replayedText != null && replayedText !== draft.text;
  return (
    <div className="replay-panel" data-testid="replay-panel">
      <div className="row">
        <label>
          <input type="radio" checked={ledger === "hub"} onChange={() => setLedger("hub")} /> the hub's ledger
        </label>
        <label>
          <input type="radio" checked={ledger === "file"} onChange={() => setLedger("file")} /> another ledger (a file, or a team ledger's URL):
        </label>
        <input
          className="mono replay-ledger"
          value={path}
          placeholder="/path/to/ledger.db or postgres://user@host/db"
          aria-label="Ledger file or team ledger URL"
          data-testid="replay-ledger"
          onChange={(e) => {
            setLedger("file");
            setPath(e.target.value);
          }}
        />
      </div>
      <div className="row">
        <button type="button" className="primary" disabled={!loads || run.state === "running"} onClick={start} data-testid="replay-start">
          Replay the draft
        </button>
        <button type="button" disabled={run.state !== "running"} onClick={() => stop.current?.()} data-testid="replay-stop">
          Stop
        </button>
        {!loads && <span className="bad small">the draft must load first</span>}
        {stale && run.state !== "running" && <span className="notice small">the draft changed since this replay: replay it again</span>}
      </div>
      {run.state === "running" && <Progress run={run} />}
      {run.state === "failed" && <p className="bad" role="alert">{visible(run.message)}</p>}
      {run.state === "done" && <Outcome outcome={run.outcome} />}
      {changes.length > 0 && <Changes changes={changes} onPick={setPicked} picked={picked} />}
      {run.state === "done" && changes.length === 0 && (
        <p data-testid="replay-nothing">No call of this ledger would be decided otherwise.</p>
      )}
      {picked && <Traces key={`${picked.session_id}/${picked.call_id}`} draft={draft} layers={layers} ledger={ledger === "hub" ? null : path} change={picked} />}
    </div>
  );
}

function Progress({ run }: { run: Extract<Run, { state: "running" }> }) {
  const share = run.totalId > 0 ? Math.min(1, run.lastId / run.totalId) : 0;
  return (
    <div className="progress" data-testid="replay-progress">
      <progress value={share} max={1} /> {Math.round(share * 100)}% · {run.records.toLocaleString()} records
      {run.perSecond != null ? ` · ${Math.round(run.perSecond).toLocaleString()} records/s` : ""} · {run.changes.length} changed so far
    </div>
  );
}

function Outcome({ outcome }: { outcome: DraftReplayOutcome }) {
  const s = outcome.summary;
  return (
    <div className="replay-outcome" data-testid="replay-outcome" data-changed={s.changed} data-loosened={outcome.loosened}>
      <p>
        {outcome.stopped ? "Stopped: " : ""}
        {s.calls.toLocaleString()} calls of <code className="mono" data-testid="replay-ledger-read">{visible(outcome.ledger)}</code> read, {s.replayed.toLocaleString()} judged by a policy in {(outcome.millis / 1000).toFixed(1)} s:{" "}
        <strong>{s.changed.toLocaleString()} would be decided otherwise</strong>
        {outcome.loosened > 0 && (
          <strong className="loosened" data-testid="replay-loosened">
            {" "}· {outcome.loosened.toLocaleString()} loosened (would now be allowed)
          </strong>
        )}
        {outcome.unlisted > 0 && <span className="muted"> · {outcome.unlisted.toLocaleString()} not listed below</span>}
      </p>
      <ReplayMatrix summary={s} />
    </div>
  );
}

function Changes({ changes, onPick, picked }: { changes: ReplayChange[]; onPick(c: ReplayChange): void; picked: ReplayChange | null }) {
  const [all, setAll] = useState<Set<string>>(new Set());
  const loosened = changes.filter((c) => c.after === "allow");
  const others = changes.filter((c) => c.after !== "allow");
  const groups = (list: ReplayChange[]) => {
    const by = new Map<string, ReplayChange[]>();
    for (const c of list) by.set(c.decided_by, [...(by.get(c.decided_by) ?? []), c]);
    return [...by.entries()].sort((a, b) => b[1].length - a[1].length);
  };
  const section = (title: string, list: ReplayChange[], testId: string, tone: string) =>
    list.length > 0 && (
      <section className={`changes ${tone}`} data-testid={testId}>
        <h3>
          {title} ({list.length})
        </h3>
        {groups(list).map(([by, calls]) => (
          <div key={by} className="change-group">
            <h4 className="small">
              now decided by <span className="mono">{visible(by)}</span> · {calls.length}
            </h4>
            <ul>
              {(all.has(testId + by) ? calls : calls.slice(0, PER_GROUP)).map((c) => (
                <li key={`${c.session_id}/${c.call_id}`} className={picked === c ? "picked" : undefined}>
                  <button type="button" className="change" data-testid="replay-change" data-call={c.call_id} onClick={() => onPick(c)}>
                    <DecisionBadge decision={c.before} /> → <DecisionBadge decision={c.after} /> <code className="mono">{visible(c.subject)}</code>{" "}
                    <span className="muted small">{visible(c.tool)} · {new Date(c.at / 1000).toLocaleString()}{c.ran ? "" : " · was refused"}</span>
                  </button>
                </li>
              ))}
            </ul>
            {calls.length > PER_GROUP && !all.has(testId + by) && (
              <button type="button" className="link small" onClick={() => setAll(new Set([...all, testId + by]))}>
                show all {calls.length}
              </button>
            )}
          </div>
        ))}
      </section>
    );
  return (
    <>
      {section("Loosened: would now be allowed", loosened, "replay-loosened-calls", "loosened")}
      {section("Other changes", others, "replay-other-calls", "")}
    </>
  );
}

function Traces({ draft, layers, ledger, change }: { draft: DraftContext; layers: LayerFile[]; ledger: string | null; change: ReplayChange }) {
  const backend = useBackend();
  const [traces, setTraces] = useState<CallTraces | string | null>(null);
  useEffect(() => {
    let alive = true;
    backend.draftCallTraces(draft.file, draft.text, ledger, change.session_id, change.call_id).then(
      (t) => alive && setTraces(t),
      (e) => alive && setTraces(asBackendError(e).message),
    );
    return () => {
      alive = false;
    };
    // The traces are of the draft as it was when the call was picked.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [backend, change, ledger]);
  if (traces == null) return <p className="muted">Judging the call…</p>;
  if (typeof traces === "string") return <p className="bad">{visible(traces)}</p>;
  return (
    <div className="traces" data-testid="replay-traces">
      <h3>
        <code className="mono">{visible(change.subject)}</code>
      </h3>
      <div className="side-by-side">
        <div>
          <h4>Policy in force</h4>
          {traces.before ? <TraceView verdict={traces.before} layers={layers} /> : <p className="muted">not judged by a policy</p>}
        </div>
        <div>
          <h4>Draft</h4>
          {traces.after ? <TraceView verdict={traces.after} layers={layers} /> : <p className="muted">not judged by a policy</p>}
        </div>
      </div>
    </div>
  );
}
