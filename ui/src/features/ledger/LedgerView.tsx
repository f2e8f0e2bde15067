// The ledger browser: audit past tool calls — the hub's own ledger (live) or any ledger file — in a
// calls table over key pages, a detail drawer, a session timeline and stats, all under one filter
// kept in the URL. Big data stays in Rust: filters, facets, search and stats run in SQLite.
import { useMemo, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../app/context";
import type { OpenedLedger } from "../../backend/backend";
import { visible } from "../../lib/visible";
import { callFilter } from "./filter";
import { TABS, filterKey, type LedgerQuery } from "./query";
import { CallDrawer } from "./parts/CallDrawer";
import { CallsTable } from "./parts/CallsTable";
import { ColumnChooser } from "./parts/ColumnChooser";
import { ExportDialog } from "./parts/ExportDialog";
import { VerifyDialog } from "./parts/VerifyDialog";
import { FilterBar, useFacets } from "./parts/FilterBar";
import { OpenBar } from "./parts/OpenBar";
import { SessionsPanel } from "./parts/SessionsPanel";
import { StatsPanel } from "./parts/StatsPanel";
import { useLedgerQuery, type SetQuery } from "./useLedgerQuery";
import { useOpenLedger } from "./useOpenLedger";
import "./ledger.css";

/** The time now (milliseconds): when a filter is chosen, its range presets count back from it. */
const wallClock = (): number => Date.now();

const TAB_LABEL = { calls: "Calls", sessions: "Sessions", stats: "Stats" } as const;

/** What a refused file means, by the ledger's error code. */
const WHY: Record<string, string> = {
  not_a_ledger: "This file is not a Portcullis ledger.",
  ledger_schema_newer: "This ledger was written by a newer Portcullis: upgrade to open it.",
  ledger_schema_older: "This ledger was written by an older Portcullis: migrate it once with `portcullis ledger migrate --db FILE`.",
  ledger_missing: "There is no file at this path.",
  ledger_sqlite: "This ledger could not be read: it may be damaged.",
  bad_argument: "This cannot be opened as a ledger.",
};

export function LedgerView() {
  const [query, setQuery] = useLedgerQuery();
  const opened = useOpenLedger(query.file);
  const ledger = opened.state === "open" ? opened.ledger : null;
  return (
    <div className="ledger-view" data-testid="ledger-view">
      {ledger ? (
        <OpenedLedgerView key={ledger.id} ledger={ledger} query={query} setQuery={setQuery} />
      ) : (
        <OpenBar query={query} setQuery={setQuery} summary={null} hub={query.file == null} onExport={null} onVerify={null} />
      )}
      {opened.state === "opening" && <p className="muted">Opening the ledger…</p>}
      {opened.state === "failed" && (
        <div className="ledger-refused" role="alert" data-testid="ledger-error">
          <h2>{WHY[opened.error.code] ?? "This ledger could not be opened."}</h2>
          <p className="mono">{visible(opened.error.message)}</p>
          <p className="muted">
            The file was opened read-only and was not changed. <span className="mono">({opened.error.code})</span>
          </p>
        </div>
      )}
    </div>
  );
}

function OpenedLedgerView({ ledger, query, setQuery }: { ledger: OpenedLedger; query: LedgerQuery; setQuery: SetQuery }) {
  const backend = useBackend();
  const ledgerId = ledger.id;
  const key = filterKey(query);
  // The range presets are resolved when the filter is chosen, so one view keeps one filter while shown.
  const [chosen, setChosen] = useState(() => ({ key, at: wallClock() }));
  if (chosen.key !== key) setChosen({ key, at: wallClock() });
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const filter = useMemo(() => callFilter(query, chosen.at), [key, chosen.at]);
  const facets = useFacets(ledgerId, filter);
  const summary = useQuery({
    queryKey: ["ledger_summary", ledgerId],
    queryFn: () => backend.ledgerSummary(ledgerId),
    initialData: ledger.summary,
    refetchInterval: 5000,
  });
  const [exporting, setExporting] = useState(false);
  const [verifying, setVerifying] = useState(false);
  const openCall = (session: string, id: string) => setQuery({ call: { session, id } });
  return (
    <>
      <OpenBar query={query} setQuery={setQuery} summary={summary.data} hub={ledger.hub} onExport={() => setExporting(true)}
        onVerify={() => setVerifying(true)}
      />
      <FilterBar ledgerId={ledgerId} filter={filter} query={query} setQuery={setQuery} />
      <div className="ledger-tabs" role="tablist">
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            aria-selected={query.tab === t}
            className={query.tab === t ? "active" : undefined}
            data-testid={`ledger-tab-${t}`}
            onClick={() => setQuery({ tab: t })}
          >
            {TAB_LABEL[t]}
          </button>
        ))}
        {query.tab === "calls" && <ColumnChooser query={query} setQuery={setQuery} />}
      </div>
      <div className={`ledger-body${query.call ? " with-drawer" : ""}`}>
        <div className="ledger-main">
          {query.tab === "calls" && <CallsTable ledgerId={ledgerId} filter={filter} query={query} setQuery={setQuery} live />}
          {query.tab === "sessions" && (
            <SessionsPanel
              ledgerId={ledgerId}
              filter={filter}
              session={query.session}
              onSession={(session) => setQuery({ session })}
              onCall={openCall}
            />
          )}
          {query.tab === "stats" && <StatsPanel ledgerId={ledgerId} filter={filter} setQuery={setQuery} />}
        </div>
        {query.call && (
          <CallDrawer
            key={`${query.call.session}/${query.call.id}`}
            ledgerId={ledgerId}
            hub={ledger.hub}
            session={query.call.session}
            callId={query.call.id}
            onClose={() => setQuery({ call: null })}
            onSession={(session) => setQuery({ tab: "sessions", session, call: null })}
          />
        )}
      </div>
      {exporting && (
        <ExportDialog
          ledgerId={ledgerId}
          filter={filter}
          matching={facets && !facets.approximate ? facets.total : null}
          suggestedDir={ledger.summary.path.replace(/\/[^/]*$/, "") || "/tmp"}
          onClose={() => setExporting(false)}
        />
      )}
      {verifying && <VerifyDialog ledgerId={ledgerId} onClose={() => setVerifying(false)} />}
    </>
  );
}
