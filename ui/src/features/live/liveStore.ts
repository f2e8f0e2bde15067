// The live view's calls: a bounded ring of the feed's call events (the newest first), paused or not,
// with how many events the hub dropped for this window and how many the ring let go.
import type { FeedItem } from "../../backend/backend";
import type { Feed } from "../../data/feed";

export const RING = 500;

export interface LiveState {
  items: FeedItem[];
  paused: boolean;
  /** Events the hub dropped for this window (the feed's `missed` items). */
  missed: number;
  /** Events received while paused (not shown). */
  skipped: number;
}

export interface LiveStore {
  subscribe(listener: () => void): () => void;
  snapshot(): LiveState;
  setPaused(paused: boolean): void;
  stop(): void;
}

export function liveStore(feed: Feed): LiveStore {
  let state: LiveState = { items: [], paused: false, missed: 0, skipped: 0 };
  const listeners = new Set<() => void>();
  const set = (next: Partial<LiveState>) => {
    state = { ...state, ...next };
    listeners.forEach((l) => l());
  };
  const stop = feed.listen((batch) => {
    let missed = state.missed;
    const calls: FeedItem[] = [];
    for (const item of batch) {
      if (item.event.kind === "missed") missed += item.event.count;
      else if (item.event.kind === "call" || item.event.kind.startsWith("approval_")) calls.push(item);
    }
    if (state.paused) set({ missed, skipped: state.skipped + calls.length });
    else set({ missed, items: [...calls.reverse(), ...state.items].slice(0, RING) });
  });
  return {
    subscribe: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    snapshot: () => state,
    setPaused: (paused) => set({ paused, skipped: paused ? state.skipped : 0 }),
    stop,
  };
}
