// Which ledger is shown and how to show another: the hub's own (live) or a file — named by path,
// picked in the system dialog, dropped on the window, or taken from the recent list — and the views
// saved by name, each a ledger with its filters.
import { useEffect, useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import type { LedgerLibrary, LedgerSummary } from "../../../backend/backend";
import { absolute } from "../../../lib/time";
import { visible } from "../../../lib/visible";
import { filterKey, parseQuery, type LedgerQuery } from "../query";
import type { SetQuery } from "../useLedgerQuery";
import { count, dateOnly } from "../../../lib/numbers";

export function OpenBar({
  query,
  setQuery,
  summary,
  hub,
  onExport,
  onVerify,
}: {
  query: LedgerQuery;
  setQuery: SetQuery;
  summary: LedgerSummary | null;
  hub: boolean;
  onExport: (() => void) | null;
  onVerify: (() => void) | null;
}) {
  const backend = useBackend();
  const queryClient = useQueryClient();
  const library = useQuery({ queryKey: ["ledger_library"], queryFn: () => backend.ledgerLibrary() });
  const [path, setPath] = useState("");
  const [menu, setMenu] = useState<"recent" | "views" | null>(null);
  const [viewName, setViewName] = useState("");
  const open = (file: string | null) => {
    setMenu(null);
    setQuery({ file, call: null, session: null });
    // The recent list changes when a file opens.
    window.setTimeout(() => void queryClient.invalidateQueries({ queryKey: ["ledger_library"] }), 500);
  };
  useEffect(
    () =>
      backend.onFileDrop((paths) => {
        const first = paths[0];
        if (first) open(first);
      }),
    // open only reads stable setters
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [backend],
  );
  const setLibrary = (lib: LedgerLibrary) => queryClient.setQueryData(["ledger_library"], lib);
  return (
    <div className="open-bar" data-testid="open-bar">
      <div className="ledger-name">
        <strong data-testid="ledger-name">{hub ? "The hub's ledger" : visible(summary?.path ?? query.file ?? "")}</strong>
        {hub && <span className="live-dot" title="new calls appear as the hub records them">live</span>}
        {summary && (
          <span className="muted" data-testid="ledger-summary">
            {" "}
            · {count(summary.calls)} calls · {(summary.bytes / 1_048_576).toFixed(1)} MB
            {summary.first_at != null && summary.last_at != null && (
              <span title={`${absolute(summary.first_at)} – ${absolute(summary.last_at)}`}>
                {" "}
                · {dateOnly(summary.first_at / 1000)} – {dateOnly(summary.last_at / 1000)}
              </span>
            )}
          </span>
        )}
      </div>
      <form
        className="open-path"
        onSubmit={(e) => {
          e.preventDefault();
          if (path.trim()) open(path.trim());
        }}
      >
        <input
          className="mono"
          placeholder="/path/to/ledger.db — or drop a file on the window"
          aria-label="Ledger file path"
          data-testid="ledger-path"
          value={path}
          onChange={(e) => setPath(e.target.value)}
        />
        <button type="submit" data-testid="ledger-open">
          Open
        </button>
      </form>
      <button type="button" data-testid="ledger-pick" onClick={() => void backend.pickLedgerFile().then((f) => f && open(f))}>
        Open file…
      </button>
      {query.file && (
        <button type="button" data-testid="ledger-hub" onClick={() => open(null)}>
          Hub's ledger
        </button>
      )}
      <span className="menu-anchor">
        <button type="button" aria-expanded={menu === "recent"} data-testid="ledger-recent" onClick={() => setMenu(menu === "recent" ? null : "recent")}>
          Recent ▾
        </button>
        {menu === "recent" && (
          <div className="facet-menu" role="menu">
            {(library.data?.recent?.length ?? 0) === 0 && <p className="muted">No ledger file opened yet.</p>}
            {library.data?.recent?.map((r) => (
              <button key={r.path} type="button" className="menu-item mono" onClick={() => open(r.path)} title={absolute(r.opened_at)}>
                {visible(r.path)}
              </button>
            ))}
          </div>
        )}
      </span>
      <span className="menu-anchor">
        <button type="button" aria-expanded={menu === "views"} data-testid="ledger-views" onClick={() => setMenu(menu === "views" ? null : "views")}>
          Views ▾
        </button>
        {menu === "views" && (
          <div className="facet-menu" role="menu" data-testid="views-menu">
            {library.data?.views?.map((v) => (
              <span key={v.name} className="menu-row">
                <button
                  type="button"
                  className="menu-item"
                  onClick={() => {
                    setMenu(null);
                    setQuery({ ...parseQuery(v.query), file: v.ledger });
                  }}
                >
                  {visible(v.name)}
                </button>
                <button type="button" aria-label={`Delete view ${v.name}`} onClick={() => void backend.deleteLedgerView(v.name).then(setLibrary)}>
                  ×
                </button>
              </span>
            ))}
            <form
              className="save-view"
              onSubmit={(e) => {
                e.preventDefault();
                if (!viewName.trim()) return;
                void backend
                  .saveLedgerView({ name: viewName, ledger: query.file, query: filterKey({ ...query, file: null }) })
                  .then((lib) => {
                    setLibrary(lib);
                    setViewName("");
                  });
              }}
            >
              <input placeholder="Name this view" aria-label="View name" data-testid="view-name" value={viewName} onChange={(e) => setViewName(e.target.value)} />
              <button type="submit" data-testid="view-save">
                Save
              </button>
            </form>
          </div>
        )}
      </span>
      {onExport && (
        <button type="button" data-testid="ledger-export" onClick={onExport}>
          Export…
        </button>
      )}
      {onVerify && (
        <button type="button" data-testid="ledger-verify" title="Check every record's link and every checkpoint's signature" onClick={onVerify}>
          Verify
        </button>
      )}
    </div>
  );
}
