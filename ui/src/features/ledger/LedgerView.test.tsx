// The ledger browser against the fake backend: the hub's ledger opened by default with its rows, a
// facet chosen as a chip (and kept in the URL), a search's snippet marked, the detail drawer with a
// redaction drawn as one, and a file that is not a ledger refused with what it means.
import { beforeEach, describe, expect, it } from "vitest";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendContext } from "../../app/context";
import { BackendError, type CallDetail, type CallFilter, type CallRow, type Facets } from "../../backend/backend";
import { fakeBackend, type FakeBackend } from "../../backend/fake";
import { LedgerView } from "./LedgerView";

const NOW = Date.now() * 1000;

function row(n: number, over: Partial<CallRow> = {}): CallRow {
  return {
    record_id: 100 - n,
    session_id: "claude-code-00001",
    run_id: "r",
    call_id: `call-${n}`,
    owner: "claude-code",
    tool: "shell",
    status: "finished",
    at: NOW - n * 1_000_000,
    decided_by: "rule",
    decided_rule: "git-read",
    redacted: false,
    summary: `git status #${n}`,
    ...over,
  } as CallRow;
}

const ROWS = [row(1), row(2, { status: "blocked", decided_rule: "no-rm", summary: "rm -rf /" }), row(3, { redacted: true, summary: "export GITHUB_TOKEN=[REDACTED] && gh pr list" })];

const FACETS: Facets = {
  total: 3,
  tools: [{ key: "shell", count: 3 }],
  statuses: [
    { key: "finished", count: 2 },
    { key: "blocked", count: 1 },
  ],
  reasons: [{ key: "execution_denied", count: 1 }],
  decided_by: [{ key: "rule", count: 3 }],
  rules: [],
  owners: [{ key: "claude-code", count: 3 }],
  policy_decisions: [],
  hosts: [],
  users: [],
  hubs: [],
  approximate: false,
};

function detail(r: CallRow): CallDetail {
  return {
    call: r,
    arguments: { command: r.summary },
    output: [{ type: "text", text: "ok" }],
    output_is_error: false,
    connections: [],
    error: null,
    decider: { kind: "rule", words: `rule ${r.decided_rule ?? ""}`, rule: r.decided_rule ?? null, source: ".portcullis/policy.json", operator: null },
    policy_decider: null,
    matched_rules: [],
    files: [],
    cwd: "/home/dev/shop",
    timings: { first_at: r.at, started_at: r.at, ended_at: r.at + 1000, approval_wait_us: null, run_us: 1000, total_us: 1000 },
    records: [],
    approvals: [],
  } as CallDetail;
}

let backend: FakeBackend;

function mount() {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(
    <BackendContext.Provider value={backend}>
      <QueryClientProvider client={client}>
        <LedgerView />
      </QueryClientProvider>
    </BackendContext.Provider>,
  );
}

/** A `ledgerCalls` over `rows` that keeps the rows whose `value` is among the filter's `wanted` (all when it
 * names none), and notes each filter asked; the live tail's oldest-first asks get nothing new. */
function callsNarrowedBy(
  rows: CallRow[],
  asked: CallFilter[],
  wanted: (f: CallFilter) => readonly string[] | null | undefined,
  value: (r: CallRow) => string,
): NonNullable<Parameters<typeof fakeBackend>[0]>["ledgerCalls"] {
  return async (_id, filter: CallFilter, order) => {
    if (order === "oldest_first") return { calls: [], next: null };
    asked.push(filter);
    const keep = wanted(filter) ?? [];
    return { calls: rows.filter((r) => keep.length === 0 || keep.includes(value(r))), next: null };
  };
}

function handlers(): Parameters<typeof fakeBackend>[0] {
  return {
    openLedger: async (path) => {
      if (path === "/tmp/notes.db") {
        throw new BackendError({ code: "not_a_ledger", message: "/tmp/notes.db: not a Portcullis ledger (file is not a database)", details: null });
      }
      return { id: 1, hub: path == null, summary: { path: path ?? "/data/ledger.db", bytes: 4096, schema_version: 7, calls: 3, first_at: NOW - 3e6, last_at: NOW } };
    },
    closeLedger: async () => {},
    ledgerSummary: async () => ({ path: "/data/ledger.db", bytes: 4096, schema_version: 7, calls: 3, first_at: NOW - 3e6, last_at: NOW }),
    ledgerCalls: async (_id, filter: CallFilter, order) => {
      if (order === "oldest_first") return { calls: [], next: null };
      const statuses = filter.statuses ?? [];
      let calls = ROWS.filter((r) => statuses.length === 0 || statuses.includes(r.status));
      if (filter.search) {
        calls = calls
          .filter((r) => r.summary?.includes(filter.search ?? ""))
          .map((r) => ({ ...r, snippet: { parts: [{ text: filter.search ?? "", hit: true }, { text: " -rf /", hit: false }], cut_before: false, cut_after: false } }));
      }
      return { calls, next: null };
    },
    ledgerFacets: async () => FACETS,
    ledgerCall: async (_id, callId) => detail(ROWS.find((r) => r.call_id === callId) ?? row(1)),
    ledgerLibrary: async () => ({ recent: [], views: [] }),
  };
}

beforeEach(() => {
  window.location.hash = "#ledger";
  backend = fakeBackend(handlers());
});

describe("a team ledger", () => {
  it("says where each call ran, and host, user and hub chips narrow the rows", async () => {
    const origin = (host: string, user: string) => ({ ledger_id: `id-${host}`, host, user });
    const rows = [row(1, { origin: origin("ci-7", "runner") }), row(2, { origin: origin("laptop\u202e", "dev") })];
    const asked: CallFilter[] = [];
    backend = fakeBackend({
      ...handlers(),
      ledgerCalls: callsNarrowedBy(rows, asked, (f) => f.hosts, (r) => r.origin?.host ?? ""),
      ledgerFacets: async () => ({
        ...FACETS,
        hosts: [{ key: "ci-7", count: 1 }, { key: "laptop\u202e", count: 1 }],
        users: [{ key: "runner", count: 1 }, { key: "dev", count: 1 }],
        hubs: [{ key: "id-ci-7", count: 1 }, { key: "id-laptop", count: 1 }],
      }),
    });
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(2));
    expect(screen.getAllByTestId("call-row")[0]).toHaveTextContent("runner@ci-7");
    expect(screen.getAllByTestId("call-row")[1]?.textContent).not.toContain("\u202e");
    expect(screen.getByTestId("facet-users")).toBeInTheDocument();
    expect(screen.getByTestId("facet-hubs")).toBeInTheDocument();
    await userEvent.click(screen.getByTestId("facet-hosts"));
    await userEvent.click(within(screen.getByTestId("facet-menu-hosts")).getByText("ci-7"));
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(1));
    expect(asked.at(-1)?.hosts).toEqual(["ci-7"]);
    expect(window.location.hash).toBe("#ledger?host=ci-7");
  });

  it("shows no host, user or hub chips for a hub's own ledger", async () => {
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(3));
    expect(screen.queryByTestId("facet-hosts")).toBeNull();
    expect(screen.queryByTestId("facet-hubs")).toBeNull();
  });
});

describe("the ledger browser", () => {
  it("shows the hub's ledger; a status chip narrows the rows and lands in the URL", async () => {
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(3));
    expect(screen.getByTestId("ledger-name")).toHaveTextContent("The hub's ledger");
    await userEvent.click(screen.getByTestId("facet-statuses"));
    const menu = screen.getByTestId("facet-menu-statuses");
    expect(within(menu).getByText("blocked").parentElement).toHaveTextContent("1");
    await userEvent.click(within(menu).getByText("blocked"));
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(1));
    expect(window.location.hash).toBe("#ledger?status=blocked");
    expect(screen.getByTestId("chips")).toHaveTextContent("Status: blocked");
  });

  it("marks contained calls and held changes, and the Changes filter asks for calls with held or discarded changes", async () => {
    const rows = [row(1, { contained: true, changes: "held" }), row(2, { changes: "discarded" }), row(3, { changes: "kept" })];
    const asked: CallFilter[] = [];
    backend = fakeBackend({
      ...handlers(),
      ledgerCalls: async (_id, filter: CallFilter, order) => {
        if (order === "oldest_first") return { calls: [], next: null };
        asked.push(filter);
        const wanted = filter.changes ?? [];
        return { calls: rows.filter((r) => wanted.length === 0 || (r.changes != null && wanted.includes(r.changes))), next: null };
      },
    });
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(3));
    const first = screen.getAllByTestId("call-row")[0];
    expect(within(first as HTMLElement).getByTestId("contained-mark")).toHaveTextContent("contained");
    expect(within(first as HTMLElement).getByTestId("changes-mark")).toHaveTextContent("held");
    await userEvent.click(screen.getByTestId("facet-changes"));
    const menu = screen.getByTestId("facet-menu-changes");
    await userEvent.click(within(menu).getByText("held"));
    await userEvent.click(within(menu).getByText("discarded"));
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(2));
    expect(asked.at(-1)?.changes).toEqual(["held", "discarded"]);
    expect(window.location.hash).toBe("#ledger?changes=held&changes=discarded");
    expect(screen.getByTestId("chips")).toHaveTextContent("Changes: held");
  });

  it("marks a search's words in the row's snippet", async () => {
    window.location.hash = "#ledger?q=rm";
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(1));
    expect(screen.getByTestId("call-row").querySelector("mark")).toHaveTextContent("rm");
  });

  it("names who decided in words: the column, the Decided by filter (its value the kind) and its chip, the drawer", async () => {
    const rows = [row(1, { decided_by: "protected_place", decided_rule: "the hub's secrets" }), row(2, { decided_by: "approval_timeout", decided_rule: null })];
    const asked: CallFilter[] = [];
    backend = fakeBackend({
      ...handlers(),
      ledgerCalls: callsNarrowedBy(rows, asked, (f) => f.decided_by, (r) => r.decided_by),
      ledgerFacets: async () => ({ ...FACETS, decided_by: [{ key: "protected_place", count: 1 }, { key: "approval_timeout", count: 1 }] }),
      ledgerCall: async (_id, callId) => {
        const r = rows.find((c) => c.call_id === callId) ?? rows[0]!;
        return { ...detail(r), decider: { kind: "protected_place", words: "protected place (the hub's secrets)", rule: "the hub's secrets", source: "/data/keys", operator: null } };
      },
    });
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(2));
    expect(screen.getAllByTestId("call-row")[0]).toHaveTextContent("protected place · the hub's secrets");
    expect(screen.getAllByTestId("call-row")[1]).toHaveTextContent("approval timed out");
    expect(screen.getAllByTestId("call-row")[1]?.textContent).not.toContain("approval_timeout");
    await userEvent.click(screen.getByTestId("facet-deciders"));
    const menu = screen.getByTestId("facet-menu-deciders");
    expect(within(menu).queryByText("protected_place")).toBeNull();
    await userEvent.click(within(menu).getByText("protected place"));
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(1));
    expect(asked.at(-1)?.decided_by).toEqual(["protected_place"]);
    expect(window.location.hash).toBe("#ledger?decided=protected_place");
    expect(screen.getByTestId("chips")).toHaveTextContent("Decided by: protected place");
    // The menu stays open while values are picked in it, and closes on a press outside it (left open,
    // it covered the drawer's close button).
    expect(screen.getByTestId("facet-menu-deciders")).toBeInTheDocument();
    await userEvent.click(screen.getAllByTestId("call-row")[0]!);
    expect(screen.queryByTestId("facet-menu-deciders")).toBeNull();
    expect(await screen.findByTestId("drawer-decider")).toHaveTextContent(/^protected place$/);
    // With the drawer open, Escape closes the menu first, then the drawer.
    await userEvent.click(screen.getByTestId("facet-deciders"));
    expect(screen.getByTestId("facet-menu-deciders")).toBeInTheDocument();
    await userEvent.keyboard("{Escape}");
    expect(screen.queryByTestId("facet-menu-deciders")).toBeNull();
    expect(screen.getByTestId("call-drawer")).toBeInTheDocument();
    await userEvent.keyboard("{Escape}");
    expect(screen.queryByTestId("call-drawer")).toBeNull();
  });

  it("draws a redaction in the detail as a redaction", async () => {
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(3));
    await userEvent.click(screen.getAllByTestId("call-row")[2]!);
    const args = await screen.findByTestId("drawer-arguments");
    expect(within(args).getByTestId("redacted-span")).toHaveTextContent("[REDACTED]");
    expect(window.location.hash).toContain("call=claude-code-00001%2Fcall-3");
  });

  it("shows an approval's receipt in the drawer: who, through which channel, the arguments and policy", async () => {
    const answered = (r: CallRow): CallDetail => ({
      ...detail(r),
      approvals: [
        {
          session_id: r.session_id,
          call_id: r.call_id,
          tool: "shell",
          requested_at: NOW - 5e6,
          resolved_at: NOW - 4e6,
          outcome: "approved_once",
          operator: "alice (app)",
          note: null,
          rule_written: null,
          receipt: {
            id: "7e3f".padEnd(64, "1"),
            approval_id: "4",
            session_id: r.session_id,
            call_id: r.call_id,
            tool: "shell",
            arguments_sha256: "db4a7ecb114b".padEnd(64, "2"),
            policy_version: "3f2a9c1e7b6d5a40",
            operator: "alice (app)",
            channel: "app",
            outcome: "approved_once",
            at: NOW - 4e6,
          },
        },
      ],
    });
    backend = fakeBackend({ ...handlers(), ledgerCall: async (_id, callId) => answered(ROWS.find((r) => r.call_id === callId) ?? row(1)) });
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(3));
    await userEvent.click(screen.getAllByTestId("call-row")[0]!);
    const receipt = await screen.findByTestId("receipt");
    expect(receipt).toHaveTextContent("receipt 7e3f11111111…");
    expect(receipt).toHaveTextContent("alice (app) via app");
    expect(receipt).toHaveTextContent("arguments db4a7ecb114b…");
    expect(receipt).toHaveTextContent("policy 3f2a9c1e7b6d");
  });

  it("refuses a file that is not a ledger and says what that means", async () => {
    window.location.hash = "#ledger?file=%2Ftmp%2Fnotes.db";
    mount();
    const error = await screen.findByTestId("ledger-error");
    expect(error).toHaveTextContent("This file is not a Portcullis ledger.");
    expect(error).toHaveTextContent("was not changed");
  });

  it("saves the view's filter by name and chooses columns into the URL", async () => {
    window.location.hash = "#ledger?status=blocked";
    const saved: unknown[] = [];
    backend = fakeBackend({
      ...handlers(),
      saveLedgerView: async (view) => {
        saved.push(view);
        return { recent: [], views: [view] };
      },
    });
    mount();
    await waitFor(() => expect(screen.getAllByTestId("call-row")).toHaveLength(1));
    await userEvent.click(screen.getByTestId("ledger-views"));
    await userEvent.type(screen.getByTestId("view-name"), "blocked calls");
    await userEvent.click(screen.getByTestId("view-save"));
    await waitFor(() => expect(saved).toEqual([{ name: "blocked calls", ledger: null, query: "status=blocked" }]));
    expect(within(screen.getByTestId("views-menu")).getByText("blocked calls")).toBeInTheDocument();
    await userEvent.click(screen.getByTestId("columns-button"));
    await userEvent.click(within(screen.getByTestId("columns-menu")).getByLabelText("Session"));
    await waitFor(() => expect(window.location.hash).toContain("cols=at%2Cstatus%2Ctool%2Cwhat%2Cdecided%2Cchanges%2Cagent%2Csession%2Cduration"));
    expect(screen.getByRole("columnheader", { name: /Session/ })).toBeInTheDocument();
  });
});

describe("verify", () => {
  const report = {
    ledger_id: "4f0c",
    key: "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c",
    unchained: 0,
    chained: 8,
    sealed: 2,
    checkpoints: 1,
    checkpoints_valid: 0,
    journaled: 0,
    writer_running: false,
    side_chained: 4,
    side_sealed: 4,
    side_legacy: 0,
  };

  it("names the record where the chain breaks, escaping what the ledger holds", async () => {
    backend = fakeBackend({
      ...handlers(),
      verifyLedger: async () => ({
        ...report,
        verdict: "broken",
        break_count: 3,
        breaks: [
          { kind: "changed", record_id: 3, position: 3, message: "record 3 does not match its link in the chain: it was edited, inserted, or moved from another place" },
          { kind: "seal_mismatch", record_id: 8, position: 8, message: "checkpoint 1 (close, writer 1) sealed the chain up to record 8\u202e" },
        ],
      }),
    });
    mount();
    await userEvent.click(await screen.findByTestId("ledger-verify"));
    const verdict = await screen.findByTestId("verify-verdict");
    expect(verdict).toHaveAttribute("data-verdict", "broken");
    expect(verdict).toHaveTextContent("Broken at record 3 (changed): the ledger was changed after it was written. 3 breaks below.");
    const breaks = screen.getByTestId("verify-breaks");
    expect(breaks).toHaveTextContent("changed record 3");
    expect(breaks).toHaveTextContent("checkpoint mismatch record 8");
    expect(breaks.textContent).not.toContain("\u202e");
    expect(breaks).toHaveTextContent("… and 1 more");
    expect(backend.calls.filter(([name]) => name === "verifyLedger")).toHaveLength(1);
  });

  it("says an intact ledger is intact, and how much the hub has yet to seal while it writes", async () => {
    let verdict: "intact" | "intact_unsealed_tail" = "intact_unsealed_tail";
    backend = fakeBackend({
      ...handlers(),
      verifyLedger: async () => ({ ...report, sealed: verdict === "intact" ? 8 : 6, verdict, break_count: 0, breaks: [] }),
    });
    mount();
    await userEvent.click(await screen.findByTestId("ledger-verify"));
    expect(await screen.findByTestId("verify-verdict")).toHaveTextContent("Intact up to record 6 of the chain; the 2 newest wait for their checkpoint");
    verdict = "intact";
    await userEvent.click(screen.getByTestId("verify-again"));
    await waitFor(() => expect(screen.getByTestId("verify-verdict")).toHaveAttribute("data-verdict", "intact"));
    expect(screen.queryByTestId("verify-breaks")).toBeNull();
  });
});
