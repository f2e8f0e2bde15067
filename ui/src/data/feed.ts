// The hub's event feed, followed once for the whole window and fanned out to the stores that need it
// (approvals, live calls, connections). It keeps the last seq seen and how many events were missed,
// from the feed's own `missed` items.
import type { Backend, FeedItem, Unsubscribe } from "../backend/backend";

export interface Feed {
  /** `listener` gets every batch from now on. */
  listen(listener: (items: FeedItem[]) => void): Unsubscribe;
  /** Events the hub dropped for this window so far. */
  missed(): number;
  stop(): void;
}

export function followFeed(backend: Backend): Feed {
  const listeners = new Set<(items: FeedItem[]) => void>();
  let missed = 0;
  const stop = backend.followEvents((items) => {
    for (const item of items) if (item.event.kind === "missed") missed += item.event.count;
    listeners.forEach((l) => l(items));
  });
  return {
    listen: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    missed: () => missed,
    stop,
  };
}
