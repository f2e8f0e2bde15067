// One call of the live view: a fixed-height row (when, agent, tool, what it does, decision, state, how
// long), and, expanded, its pipeline steps with each one's time from the call's start and who decided.
// Memoized on the row object: the store copies only the rows a frame changed.
import { memo } from "react";
import { ConnectionList, ConnectionsBadge } from "../../../lib/ui/Connections";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { absolute } from "../../../lib/time";
import { visible } from "../../../lib/visible";
import { agentOf, toolOf, tookOf, type CallState, type LiveCall, type StepView } from "../liveStore";
import { clockTime, offset, span } from "./format";

const STATE_WORDS: Record<CallState, string> = {
  waiting: "waiting for operator",
  running: "running",
  finished: "finished",
  error: "error",
  blocked: "blocked",
  interrupted: "interrupted",
};

const OUTCOME_WORDS: Record<StepView["outcome"], string> = {
  passed: "passed",
  blocked: "blocked",
  started: "started",
  progress: "progress",
  finished: "finished",
  error: "failed",
  asked: "operator asked",
};

export const COLUMNS = 7;
/** A call's row and an expanded step line, in pixels (the stylesheet holds them to these). */
export const ROW_HEIGHT = 28;
export const STEP_HEIGHT = 24;

export const CallRowView = memo(function CallRowView({
  row,
  expanded,
  onToggle,
}: {
  row: LiveCall;
  expanded: boolean;
  onToggle: (key: string) => void;
}) {
  const duration = tookOf(row);
  const took = duration != null ? span(duration) : "";
  const [tool, agent] = [toolOf(row), agentOf(row)];
  // A blocked call never started, so no action: what blocked it says what it was.
  const why = row.steps.find((s) => s.outcome === "blocked")?.error;
  const what = row.action ?? why;
  return (
    <>
      <tr
        className={`call-row row-${row.state}${expanded ? " expanded" : ""}`}
        data-testid="live-call"
        data-tool={tool}
        data-state={row.state}
        onClick={() => onToggle(row.key)}
      >
        <td className="time" title={absolute(row.startedAt)}>
          <button
            type="button"
            className="chevron"
            aria-expanded={expanded}
            aria-label={expanded ? "hide the steps" : "show the steps"}
            data-testid="live-call-toggle"
            onClick={(e) => {
              e.stopPropagation();
              onToggle(row.key);
            }}
          >
            {expanded ? "▾" : "▸"}
          </button>
          {clockTime(row.startedAt)}
        </td>
        <td className="clip" title={visible(agent)}>
          {visible(agent)}
        </td>
        <td className="mono clip" title={visible(tool)}>
          {visible(tool)}
        </td>
        <td className="mono clip" title={what != null ? visible(what) : undefined}>
          {row.sandbox != null && <Walls line={row.sandbox} />}
          {row.connections != null && <ConnectionsBadge connections={row.connections} />}
          {row.action != null ? visible(row.action) : why != null ? <span className="why">{visible(why)}</span> : ""}
        </td>
        <td>{row.decision ? <DecisionBadge decision={row.decision} /> : null}</td>
        <td className={`state state-${row.state}`}>{STATE_WORDS[row.state]}</td>
        <td className="num took">{took}</td>
      </tr>
      {expanded && (
        <tr className="steps-row">
          <td colSpan={COLUMNS}>
            {row.sandbox != null && (
              <p className="walls-line mono" data-testid="live-sandbox">
                walls: {visible(row.sandbox)}
              </p>
            )}
            {row.connections != null && <ConnectionList connections={row.connections} testId="live-connections" />}
            <table className="steps" data-testid="live-steps">
              <tbody>
                {row.steps.map((step, i) => (
                  <StepLine key={i} step={step} startedAt={row.startedAt} />
                ))}
              </tbody>
            </table>
          </td>
        </tr>
      )}
    </>
  );
});

/** A command's walls at a glance: `confined`, or `unconfined` in the warning colour. */
function Walls({ line }: { line: string }) {
  const open = line.startsWith("UNCONFINED");
  return (
    <span className={`walls${open ? " walls-open" : ""}`} data-testid="live-walls" title={visible(line)}>
      {open ? "unconfined" : "confined"}
    </span>
  );
}

function StepLine({ step, startedAt }: { step: StepView; startedAt: number }) {
  const who = step.decided_by ? visible(step.decided_by.words) : "";
  const said = step.error ?? step.note;
  return (
    <tr data-testid="live-step" data-stage={step.stage} data-outcome={step.outcome}>
      <td className="num at">{offset(step.at - startedAt)}</td>
      <td className="stage">{step.stage}</td>
      <td className="num took">{step.duration_us != null ? span(step.duration_us) : ""}</td>
      <td className={`outcome outcome-${step.outcome}`}>{OUTCOME_WORDS[step.outcome]}</td>
      <td>{step.decision ? <DecisionBadge decision={step.decision} /> : null}</td>
      <td className="clip who" title={who}>
        {who && <span className="muted">by </span>}
        {who}
      </td>
      <td className="clip mono said" title={said != null ? visible(said) : undefined}>
        {step.stage === "ledger" ? <span className="muted">started row written</span> : null}
        {said != null ? visible(said) : ""}
      </td>
    </tr>
  );
}
