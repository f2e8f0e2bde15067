// The stats' "Decided by" counts read in the hub's words for each kind of decider; a click still
// narrows the filter to the kind itself.
import { describe, expect, it } from "vitest";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendContext } from "../../../app/context";
import { fakeBackend } from "../../../backend/fake";
import { parseQuery, type LedgerQuery } from "../query";
import type { SetQuery } from "../useLedgerQuery";
import { StatsPanel } from "./StatsPanel";

describe("the stats' Decided by", () => {
  it("counts each kind under its words and picks the kind", async () => {
    const backend = fakeBackend({
      ledgerStats: async () => ({
        total: 3,
        by_tool: [],
        by_status: [],
        by_reason: [],
        by_decided_by: [
          { key: "protected_place", count: 2 },
          { key: "approval_timeout", count: 1 },
        ],
        bucket_us: 3_600_000_000,
        buckets: [],
        durations: [],
      }),
    });
    const changes: Array<Partial<LedgerQuery>> = [];
    const setQuery: SetQuery = (change) => {
      changes.push(typeof change === "function" ? change(parseQuery("")) : change);
    };
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <BackendContext.Provider value={backend}>
        <QueryClientProvider client={client}>
          <StatsPanel ledgerId={1} filter={{}} setQuery={setQuery} />
        </QueryClientProvider>
      </BackendContext.Provider>,
    );
    const bars = await screen.findByTestId("stats-decided-by");
    expect(bars).toHaveTextContent("protected place");
    expect(bars).toHaveTextContent("approval timed out");
    expect(bars.textContent).not.toContain("_");
    await userEvent.click(within(bars).getByText("protected place"));
    expect(changes.at(-1)).toEqual({ deciders: ["protected_place"] });
  });
});
