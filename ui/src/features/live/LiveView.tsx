// Live calls: one row per call (the newest first, the last RING), expandable into its pipeline steps
// with their times from the call's start and who decided; filters by agent, tool and decision; pause
// (P). Rows keep their places while the pointer is on the list. Says how many events it missed.
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore, type ChangeEvent } from "react";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useFeed } from "../../app/context";
import { Kbd } from "../../lib/ui/Kbd";
import { visible } from "../../lib/visible";
import { RING, agentOf, liveStore, toolOf, type LiveCall } from "./liveStore";
import { COLUMNS, CallRowView, ROW_HEIGHT, STEP_HEIGHT } from "./parts/CallRowView";

const DECISIONS = ["allow", "contained", "approved", "prompt", "denied", "forbidden", "timeout", "error"] as const;

interface Filters {
  agent: string;
  tool: string;
  decision: string;
}

const matches = (row: LiveCall, f: Filters) =>
  (!f.agent || agentOf(row) === f.agent) &&
  (!f.tool || toolOf(row) === f.tool) &&
  (!f.decision || (f.decision === "error" ? row.state === "error" : row.decision === f.decision));

export function LiveView() {
  const feed = useFeed();
  const store = useMemo(() => liveStore(feed), [feed]);
  useEffect(() => () => store.stop(), [store]);
  const state = useSyncExternalStore(store.subscribe, store.snapshot);
  const [filters, setFilters] = useState<Filters>({ agent: "", tool: "", decision: "" });
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const toggle = useCallback(
    (key: string) =>
      setExpanded((open) => {
        const next = new Set(open);
        if (!next.delete(key)) next.add(key);
        return next;
      }),
    [],
  );
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const typing = e.target instanceof HTMLElement && e.target.closest("input, select, textarea");
      if (!typing && !e.altKey && !e.ctrlKey && !e.metaKey && e.key.toLowerCase() === "p") {
        e.preventDefault();
        store.setPaused(!store.snapshot().paused);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [store]);
  const agents = useMemo(() => distinct(state.calls.map(agentOf)), [state.calls]);
  const tools = useMemo(() => distinct(state.calls.map(toolOf)), [state.calls]);
  const shown = useMemo(() => state.calls.filter((c) => matches(c, filters)), [state.calls, filters]);
  // Only the rows in view (and a few beyond) are in the page: at 1,000 calls a second the window lays
  // out a screenful, not 500 rows, each frame. Heights are fixed (a row, and a step line when expanded).
  const scroller = useRef<HTMLDivElement>(null);
  // The React compiler skips this component (the virtualizer hands out functions it cannot memoize);
  // the rows are memoized by hand (CallRowView), which is what matters here.
  // eslint-disable-next-line react-hooks/incompatible-library
  const rows = useVirtualizer({
    count: shown.length,
    getScrollElement: () => scroller.current,
    estimateSize: (i) => {
      const row = shown[i];
      return row && expanded.has(row.key) ? ROW_HEIGHT + 8 + row.steps.length * STEP_HEIGHT : ROW_HEIGHT;
    },
    getItemKey: (i) => shown[i]?.key ?? i,
    overscan: 8,
    initialRect: { width: 1200, height: 720 },
  });
  useEffect(() => rows.measure(), [expanded, rows]);
  const items = rows.getVirtualItems();
  const above = items[0]?.start ?? 0;
  const below = rows.getTotalSize() - (items[items.length - 1]?.end ?? 0);
  const set = (field: keyof Filters) => (e: ChangeEvent<HTMLSelectElement>) =>
    setFilters((f) => ({ ...f, [field]: e.target.value }));
  return (
    <section className="view live" aria-label="Live calls">
      <div className="view-head">
        <h1>Live calls</h1>
        <button type="button" onClick={() => store.setPaused(!state.paused)} data-testid="live-pause">
          {state.paused ? "Resume" : "Pause"} <Kbd>P</Kbd>
        </button>
        <span className={`tabular ${state.held ? "held" : "muted"}`} data-testid="live-held">
          {state.held
            ? `${state.held} new call${state.held === 1 ? "" : "s"} held ${state.paused ? "while paused" : "while the pointer is on the list"}`
            : state.paused
              ? "paused"
              : "streaming"}
        </span>
        <span className={`tabular ${state.missed ? "failure" : "muted"}`} data-testid="live-missed">
          {state.missed ? `${state.missed} events missed (the window fell behind)` : "no events missed"}
        </span>
      </div>
      <div className="filters">
        <label>
          agent{" "}
          <select value={filters.agent} onChange={set("agent")} data-testid="filter-agent">
            <option value="">all</option>
            {agents.map((a) => (
              <option key={a} value={a}>
                {visible(a)}
              </option>
            ))}
          </select>
        </label>
        <label>
          tool{" "}
          <select value={filters.tool} onChange={set("tool")} data-testid="filter-tool">
            <option value="">all</option>
            {tools.map((t) => (
              <option key={t} value={t}>
                {visible(t)}
              </option>
            ))}
          </select>
        </label>
        <label>
          decision{" "}
          <select value={filters.decision} onChange={set("decision")} data-testid="filter-decision">
            <option value="">all</option>
            {DECISIONS.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <span className="muted tabular" data-testid="live-count">
          {shown.length} of {state.calls.length} calls (the last {RING} kept) · click a call for its steps
        </span>
      </div>
      <div className="live-scroll" ref={scroller} data-testid="live-scroll">
      <table className="grid live-table">
        <colgroup>
          <col className="c-time" />
          <col className="c-agent" />
          <col className="c-tool" />
          <col />
          <col className="c-decision" />
          <col className="c-state" />
          <col className="c-took" />
        </colgroup>
        <thead>
          <tr>
            <th>started</th>
            <th>agent</th>
            <th>tool</th>
            <th>what it does</th>
            <th>decision</th>
            <th>state</th>
            <th className="num">took</th>
          </tr>
        </thead>
        <tbody onMouseEnter={() => store.setHovering(true)} onMouseLeave={() => store.setHovering(false)}>
          {above > 0 && (
            <tr aria-hidden="true" style={{ height: above }}>
              <td colSpan={COLUMNS} />
            </tr>
          )}
          {items.map((item) => {
            const row = shown[item.index];
            return row ? (
              <CallRowView key={row.key} row={row} expanded={expanded.has(row.key)} onToggle={toggle} />
            ) : null;
          })}
          {below > 0 && (
            <tr aria-hidden="true" style={{ height: below }}>
              <td colSpan={COLUMNS} />
            </tr>
          )}
        </tbody>
      </table>
      </div>
      {state.calls.length === 0 && (
        <p className="empty" data-testid="live-empty">
          No calls yet: they appear here as agents make them.
        </p>
      )}
    </section>
  );
}

function distinct(values: string[]): string[] {
  return [...new Set(values.filter(Boolean))].sort();
}
