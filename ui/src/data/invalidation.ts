// The one table of what the feed makes stale: an event kind -> the query keys to refetch (or to set
// from the event itself). The shell applies it once for the whole window.
import type { QueryClient } from "@tanstack/react-query";
import type { FeedItem } from "../backend/backend";
import type { Feed } from "./feed";

const STALE: Partial<Record<FeedItem["event"]["kind"], string[][]>> = {
  session_opened: [["sessions"]],
  session_closed: [["sessions"], ["session_grants"]],
  servers_changed: [["tools"], ["tool_changes"]],
  policy_reloaded: [["tools"]],
  approval_settled: [["session_grants"]],
  // Events were missed (the window fell behind, or its feed broke and was followed again): anything
  // the feed keeps current may be stale.
  missed: [["sessions"], ["session_grants"], ["servers"], ["tools"], ["tool_changes"]],
};

export function keepQueriesCurrent(feed: Feed, client: QueryClient): () => void {
  return feed.listen((items) => {
    const keys = new Map<string, string[]>();
    for (const { event } of items) {
      if (event.kind === "servers_changed") client.setQueryData(["servers"], event.servers);
      for (const key of STALE[event.kind] ?? []) keys.set(key.join("/"), key);
    }
    keys.forEach((queryKey) => void client.invalidateQueries({ queryKey }));
  });
}
