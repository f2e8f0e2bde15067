// Live calls: every call event as it passes (newest first, the last 500), pausable; says how many events
// it missed instead of dropping them silently. Expanding a call into its stages comes with the next issue.
import { useEffect, useMemo, useSyncExternalStore } from "react";
import type { FeedItem } from "../../backend/backend";
import { useFeed } from "../../app/context";
import { absolute, millis } from "../../lib/time";
import { visible } from "../../lib/visible";
import { RING, liveStore } from "./liveStore";

function describe(item: FeedItem): [string, string, string] {
  const e = item.event;
  switch (e.kind) {
    case "call":
      return [e.stage.replace("tool_execution_", ""), visible(e.tool), e.session_id.slice(0, 8)];
    case "approval_asked":
      return ["approval asked", visible(e.approval.tool), e.approval.session_id.slice(0, 8)];
    case "approval_settled":
      return [`approval ${e.outcome}`, e.operator ? `by ${visible(e.operator)}` : "", `#${e.id}`];
    default:
      return [e.kind, "", ""];
  }
}

export function LiveView() {
  const feed = useFeed();
  const store = useMemo(() => liveStore(feed), [feed]);
  useEffect(() => () => store.stop(), [store]);
  const state = useSyncExternalStore(store.subscribe, store.snapshot);
  return (
    <section className="view live" aria-label="Live calls">
      <div className="view-head">
        <h1>Live calls</h1>
        <button type="button" onClick={() => store.setPaused(!state.paused)} data-testid="live-pause">
          {state.paused ? `Resume (${state.skipped} held back)` : "Pause"}
        </button>
        <span className={state.missed ? "failure" : "muted"} data-testid="live-missed">
          {state.missed ? `${state.missed} events missed (the window fell behind)` : "no events missed"}
        </span>
        <span className="muted">the last {RING} shown</span>
      </div>
      <table className="grid live-table">
        <thead>
          <tr>
            <th className="num">seq</th>
            <th>time</th>
            <th>what</th>
            <th>tool</th>
            <th>session</th>
          </tr>
        </thead>
        <tbody>
          {state.items.map((item) => {
            const [what, tool, session] = describe(item);
            return (
              <tr key={item.seq}>
                <td className="num">{item.seq}</td>
                <td title={absolute(item.at)}>{new Date(millis(item.at)).toLocaleTimeString()}</td>
                <td>{what}</td>
                <td className="mono">{tool}</td>
                <td className="mono">{session}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
