// Where the window is, in its URL: `#<view>?<view's own state>` (`#ledger?tool=shell&status=blocked`).
// The hash is the one place a view keeps what should survive a reload or be bookmarked; views read it
// through useRoute and change it through navigate, never through window.location directly.
import { useSyncExternalStore } from "react";

export interface Route {
  view: string;
  /** The view's own query string, without `?`. */
  params: string;
}

export function parseRoute(hash: string): Route {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  const cut = text.indexOf("?");
  const view = (cut < 0 ? text : text.slice(0, cut)).replace(/^\//, "");
  return { view, params: cut < 0 ? "" : text.slice(cut + 1) };
}

export function formatRoute(route: Route): string {
  return `#${route.view}${route.params ? `?${route.params}` : ""}`;
}

const subscribe = (notify: () => void) => {
  window.addEventListener("hashchange", notify);
  return () => window.removeEventListener("hashchange", notify);
};

/** The route now; re-renders when it changes. */
export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash);
  return parseRoute(hash);
}

/** Goes to `route`: a new history entry, or (`replace`) the current one changed in place. */
export function navigate(route: Route, replace = false): void {
  const hash = formatRoute(route);
  if (hash === window.location.hash) return;
  if (replace) {
    window.history.replaceState(null, "", hash);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else {
    window.location.hash = hash;
  }
}
