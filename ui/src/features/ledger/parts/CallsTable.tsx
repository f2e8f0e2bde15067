// The calls table: virtualized rows of fixed height over pages loaded by key as the operator scrolls
// (useCallPages), columns chosen and resized (kept in the URL), and the view held still while rows
// arrive above it: the first visible row stays where it is and a pill says how many came in.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { useVirtualizer } from "@tanstack/react-virtual";
import type { CallFilter, CallRow } from "../../../backend/backend";
import { useNow } from "../../../lib/useNow";
import { DEFAULT_COLUMNS, columnById } from "../columns";
import type { LedgerQuery } from "../query";
import { rowKey, useCallPages } from "../useCallPages";
import type { SetQuery } from "../useLedgerQuery";

export const ROW_HEIGHT = 28;
/** Rows from either end of what is loaded at which the next page is asked for. */
const PREFETCH_ROWS = 300;

export function CallsTable({
  ledgerId,
  filter,
  query,
  setQuery,
  live,
}: {
  ledgerId: number;
  filter: CallFilter;
  query: LedgerQuery;
  setQuery: SetQuery;
  live: boolean;
}) {
  const { pages, rows, atStart } = useCallPages(ledgerId, filter, query.order, live);
  const scroller = useRef<HTMLDivElement>(null);
  const now = useNow(5000);
  // A team ledger's calls say where they ran unless the columns were chosen.
  const team = rows.some((r) => r.origin != null);
  const columns = useMemo(
    () =>
      (query.columns ?? (team ? ["hub", ...DEFAULT_COLUMNS] : DEFAULT_COLUMNS)).map(columnById).filter((c) => c !== undefined),
    [query.columns, team],
  );
  const [dragWidths, setDragWidths] = useState<Record<string, number>>({});
  const widthOf = (id: string, fallback: number) => dragWidths[id] ?? query.widths[id] ?? fallback;
  const template = columns.map((c) => `${widthOf(c.id, c.width)}px`).join(" ");
  const totalWidth = columns.reduce((sum, c) => sum + widthOf(c.id, c.width), 0);

  const more = pages.hasNextPage ? 1 : 0;
  // The React compiler skips this component (the virtualizer hands out functions it cannot memoize).
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: rows.length + more,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 30,
  });
  const items = virtualizer.getVirtualItems();
  const firstIndex = items[0]?.index ?? 0;
  const lastIndex = items[items.length - 1]?.index ?? 0;

  useEffect(() => {
    if (lastIndex >= rows.length - PREFETCH_ROWS && pages.hasNextPage && !pages.isFetchingNextPage) {
      void pages.fetchNextPage();
    }
    if (firstIndex <= PREFETCH_ROWS && pages.hasPreviousPage && !pages.isFetchingPreviousPage) {
      void pages.fetchPreviousPage();
    }
  }, [firstIndex, lastIndex, rows.length, pages]);

  // Keep the first visible row in place when rows are added or dropped above it — except at the very
  // top of the live end, where new calls flow in as they come (as a tail does).
  const anchor = useRef<{ key: string; offset: number } | null>(null);
  const wasAtStart = useRef(atStart);
  const [arrived, setArrived] = useState(0);
  useLayoutEffect(() => {
    const el = scroller.current;
    const was = anchor.current;
    const tail = wasAtStart.current && atStart;
    wasAtStart.current = atStart;
    const first = rows[0];
    if (!el || !was) {
      anchor.current = first ? { key: rowKey(first), offset: 0 } : null;
      return;
    }
    if (tail && el.scrollTop === 0 && was.offset === 0) {
      anchor.current = first ? { key: rowKey(first), offset: 0 } : null;
      return;
    }
    const index = rows.findIndex((r) => rowKey(r) === was.key);
    if (index < 0) return;
    const top = index * ROW_HEIGHT + was.offset;
    if (Math.abs(el.scrollTop - top) >= 1) {
      const shifted = Math.round((top - el.scrollTop) / ROW_HEIGHT);
      if (tail && shifted > 0) setArrived((n) => n + shifted);
      el.scrollTop = top;
    }
  }, [rows, atStart]);
  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    const index = Math.floor(el.scrollTop / ROW_HEIGHT);
    const row = rows[index];
    anchor.current = row ? { key: rowKey(row), offset: el.scrollTop - index * ROW_HEIGHT } : null;
    if (el.scrollTop < ROW_HEIGHT) setArrived(0);
  };

  const startResize = (id: string, start: number, e: React.PointerEvent) => {
    e.preventDefault();
    const x0 = e.clientX;
    let width = start;
    const move = (m: PointerEvent) => {
      width = Math.max(48, Math.min(1600, start + m.clientX - x0));
      setDragWidths((w) => ({ ...w, [id]: width }));
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      setDragWidths({});
      setQuery((q) => ({ widths: { ...q.widths, [id]: Math.round(width) } }), true);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  };

  const open = (row: CallRow) => setQuery({ call: { session: row.session_id, id: row.call_id } });
  const selected = query.call;

  if (pages.isError) {
    return (
      <p className="error" role="alert" data-testid="calls-error">
        The calls did not load: {String((pages.error as Error).message)}
      </p>
    );
  }
  return (
    <div className="calls-table" data-testid="calls-table" role="table" aria-rowcount={rows.length}>
      {arrived > 0 && (
        <button
          type="button"
          className="arrived-pill"
          data-testid="calls-arrived"
          onClick={() => {
            if (scroller.current) scroller.current.scrollTop = 0;
            setArrived(0);
          }}
        >
          ↑ {arrived} new {arrived === 1 ? "call" : "calls"}
        </button>
      )}
      <div className="calls-scroll" ref={scroller} onScroll={onScroll} data-testid="calls-scroll">
        <div className="calls-head" role="row" style={{ gridTemplateColumns: template, width: totalWidth }}>
          {columns.map((c) => (
            <div key={c.id} role="columnheader" className="calls-th">
              {c.id === "at" ? (
                <button
                  type="button"
                  className="link"
                  title="Sort by time"
                  data-testid="sort-time"
                  onClick={() => setQuery({ order: query.order === "newest" ? "oldest" : "newest" })}
                >
                  {c.label} {query.order === "newest" ? "↓" : "↑"}
                </button>
              ) : (
                c.label
              )}
              <span
                className="col-resize"
                role="separator"
                aria-orientation="vertical"
                aria-label={`Resize ${c.label}`}
                onPointerDown={(e) => startResize(c.id, widthOf(c.id, c.width), e)}
              />
            </div>
          ))}
        </div>
        <div style={{ height: virtualizer.getTotalSize(), width: totalWidth, position: "relative" }}>
          {items.map((item) => {
            const row = rows[item.index];
            const top = item.start;
            if (!row) {
              return (
                <div key="more" className="calls-row calls-more" style={{ transform: `translateY(${top}px)` }}>
                  Loading older calls…
                </div>
              );
            }
            const isSelected = selected?.session === row.session_id && selected.id === row.call_id;
            return (
              <div
                key={rowKey(row)}
                role="row"
                tabIndex={0}
                data-testid="call-row"
                data-call={row.call_id}
                className={`calls-row${isSelected ? " selected" : ""}`}
                style={{ transform: `translateY(${top}px)`, gridTemplateColumns: template }}
                onClick={() => open(row)}
                onKeyDown={(e) => {
                  if (e.key === "Enter") open(row);
                }}
              >
                {columns.map((c) => (
                  <div key={c.id} role="cell" className={`calls-td col-${c.id}`}>
                    {c.cell(row, now)}
                  </div>
                ))}
              </div>
            );
          })}
        </div>
        {!pages.isPending && rows.length === 0 && (
          <p className="muted calls-empty" data-testid="calls-empty">
            No call matches this filter.
          </p>
        )}
      </div>
    </div>
  );
}

