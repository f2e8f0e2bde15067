// The calls table's rows: pages fetched by key in both directions around where the operator scrolls,
// at most MAX_PAGES held (older ones dropped and fetched again when scrolled back to), and — when
// the loaded rows reach the live end of the order — new calls polled for and added there (the tail).
import { useEffect } from "react";
import { useInfiniteQuery, useQueryClient, type InfiniteData } from "@tanstack/react-query";
import { useBackend } from "../../app/context";
import type { CallFilter, CallOrder, CallRow, Cursor } from "../../backend/backend";

export const PAGE = 500;
/** The first page is small: it is what the operator waits for (search snippets are cut per row). */
export const FIRST_PAGE = 100;
export const MAX_PAGES = 40;
/** How often the tail asks for new calls. */
export const TAIL_MS = 1000;

export interface Page {
  rows: CallRow[];
  /** Where to continue toward the start of the order; null: this page starts it. */
  up: Cursor | null;
  /** Where to continue toward the end; null: this page ends it. */
  down: Cursor | null;
}

type Param = { dir: "down" | "up"; cursor: Cursor | null };

export const cursorOf = (r: CallRow): Cursor => ({ at: r.at, id: r.record_id });
export const rowKey = (r: CallRow): string => `${r.session_id}/${r.call_id}/${r.record_id}`;

export function useCallPages(ledgerId: number, filter: CallFilter, order: "newest" | "oldest", live: boolean) {
  const backend = useBackend();
  const queryClient = useQueryClient();
  const forward: CallOrder = order === "newest" ? "newest_first" : "oldest_first";
  const backward: CallOrder = order === "newest" ? "oldest_first" : "newest_first";
  const queryKey = ["ledger_calls", ledgerId, JSON.stringify(filter), order];
  const pages = useInfiniteQuery({
    queryKey,
    initialPageParam: { dir: "down", cursor: null } as Param,
    queryFn: async ({ pageParam }): Promise<Page> => {
      if (pageParam.dir === "down") {
        const limit = pageParam.cursor === null ? FIRST_PAGE : PAGE;
        const page = await backend.ledgerCalls(ledgerId, filter, forward, pageParam.cursor, limit);
        const rows = page.calls;
        const first = rows[0];
        const last = rows[rows.length - 1];
        return {
          rows,
          up: pageParam.cursor === null ? null : first ? cursorOf(first) : pageParam.cursor,
          down: rows.length < limit || !last ? null : cursorOf(last),
        };
      }
      const page = await backend.ledgerCalls(ledgerId, filter, backward, pageParam.cursor, PAGE);
      const rows = [...page.calls].reverse();
      const first = rows[0];
      const last = rows[rows.length - 1];
      return {
        rows,
        up: rows.length < PAGE || !first ? null : cursorOf(first),
        down: last ? cursorOf(last) : pageParam.cursor,
      };
    },
    getNextPageParam: (last: Page) => (last.down ? { dir: "down" as const, cursor: last.down } : undefined),
    getPreviousPageParam: (first: Page) => (first.up ? { dir: "up" as const, cursor: first.up } : undefined),
    maxPages: MAX_PAGES,
    staleTime: Infinity,
  });

  const data = pages.data;
  const atStart = data ? data.pages[0]?.up === null : false;
  useEffect(() => {
    // The live end is the start of the newest-first order: poll only while it is loaded.
    if (!live || !atStart || order !== "newest") return;
    let busy = false;
    const tick = async () => {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const current = queryClient.getQueryData<InfiniteData<Page, Param>>(queryKey);
        const top = current?.pages[0];
        if (!current || !top || top.up !== null) return;
        const newest = top.rows[0];
        const page = await backend.ledgerCalls(ledgerId, filter, "oldest_first", newest ? cursorOf(newest) : null, PAGE);
        if (page.calls.length === 0) return;
        const fresh = [...page.calls].reverse();
        queryClient.setQueryData<InfiniteData<Page, Param>>(queryKey, (old) => {
          if (!old || !old.pages[0] || old.pages[0].rows[0] !== newest) return old;
          const [head, ...rest] = old.pages;
          return { ...old, pages: [{ ...head, rows: [...fresh, ...head.rows] }, ...rest] };
        });
      } catch {
        // The next tick tries again; a ledger that went away shows its error on the next page load.
      } finally {
        busy = false;
      }
    };
    const timer = window.setInterval(() => void tick(), TAIL_MS);
    return () => window.clearInterval(timer);
    // queryKey is derived from the values listed.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [live, atStart, order, ledgerId, JSON.stringify(filter), backend, queryClient]);

  const rows: CallRow[] = data ? data.pages.flatMap((p) => p.rows) : [];
  return { pages, rows, atStart };
}
