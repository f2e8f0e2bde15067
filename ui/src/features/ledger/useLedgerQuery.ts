// The ledger view's state, read from and written to the URL's hash (see query.ts).
import { useCallback, useMemo } from "react";
import { navigate, useRoute } from "../../app/route";
import { formatQuery, parseQuery, type LedgerQuery } from "./query";

export type SetQuery = (change: Partial<LedgerQuery> | ((q: LedgerQuery) => Partial<LedgerQuery>), replace?: boolean) => void;

export function useLedgerQuery(): [LedgerQuery, SetQuery] {
  const route = useRoute();
  const query = useMemo(() => parseQuery(route.params), [route.params]);
  const setQuery = useCallback<SetQuery>((change, replace = false) => {
    // Read the URL now, not the render's copy: two changes in one event both land.
    const current = parseQuery(new URLSearchParams(window.location.hash.split("?")[1] ?? "").toString());
    const patch = typeof change === "function" ? change(current) : change;
    navigate({ view: "ledger", params: formatQuery({ ...current, ...patch }) }, replace);
  }, []);
  return [query, setQuery];
}
