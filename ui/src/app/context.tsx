// The window's providers: the Backend (Tauri in the app, a fake in tests) and the one event feed,
// reached with useBackend() / useFeed().
import { createContext, useContext } from "react";
import type { Backend } from "../backend/backend";
import type { Feed } from "../data/feed";

export const BackendContext = createContext<Backend | null>(null);
export const FeedContext = createContext<Feed | null>(null);

export function useBackend(): Backend {
  const backend = useContext(BackendContext);
  if (!backend) throw new Error("useBackend outside <BackendContext>");
  return backend;
}

export function useFeed(): Feed {
  const feed = useContext(FeedContext);
  if (!feed) throw new Error("useFeed outside <FeedContext>");
  return feed;
}
