// The window's shell: the hub's state on top, the nav (Approvals, Live, Connections, Policy, Ledger),
// the view named by the URL's hash (so a view, with its own state, can be bookmarked), and the "quit
// while calls wait?" question.
import { PolicyBanner } from "./PolicyBanner";
import { Suspense, lazy, useEffect, useMemo, useState, type ReactNode } from "react";
import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from "@tanstack/react-query";
import type { Backend, HubState } from "../backend/backend";
import { followFeed } from "../data/feed";
import { keepQueriesCurrent } from "../data/invalidation";
import { ApprovalsView } from "../features/approvals/ApprovalsView";
import { ConnectionsView } from "../features/connections/ConnectionsView";
import { LiveView } from "../features/live/LiveView";
import { Kbd } from "../lib/ui/Kbd";
import { visible } from "../lib/visible";
import { BackendContext, FeedContext, useBackend } from "./context";
import { SessionLine } from "./SessionLine";
import { ViewBoundary } from "./ViewBoundary";
import { navigate, parseRoute, useRoute } from "./route";

// The policy workbench carries CodeMirror and the schema tooling: loaded when first opened.
const PolicyView = lazy(() => import("../features/policy/PolicyView").then((m) => ({ default: m.PolicyView })));
// The ledger browser carries the charting library: loaded when first opened.
const LedgerView = lazy(() => import("../features/ledger/LedgerView").then((m) => ({ default: m.LedgerView })));

const VIEWS = [
  { id: "approvals", label: "Approvals", key: "1", render: () => <ApprovalsView /> },
  { id: "live", label: "Live", key: "2", render: () => <LiveView /> },
  { id: "connections", label: "Connections", key: "3", render: () => <ConnectionsView /> },
  {
    id: "policy",
    label: "Policy",
    key: "4",
    render: () => (
      <Suspense fallback={<p className="muted">Opening the policy workbench…</p>}>
        <PolicyView />
      </Suspense>
    ),
  },
  {
    id: "ledger",
    label: "Ledger",
    key: "5",
    render: () => (
      <Suspense fallback={<p className="muted">Opening the ledger browser…</p>}>
        <LedgerView />
      </Suspense>
    ),
  },
] as const;

type ViewId = (typeof VIEWS)[number]["id"];

export function App({ backend }: { backend: Backend }) {
  const queryClient = useMemo(
    () => new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } } }),
    [],
  );
  return (
    <BackendContext.Provider value={backend}>
      <QueryClientProvider client={queryClient}>
        <HubGate />
      </QueryClientProvider>
    </BackendContext.Provider>
  );
}

/** The views when the hub runs; otherwise, plainly, why not. */
function HubGate() {
  const backend = useBackend();
  const hub = useQuery({ queryKey: ["hub_state"], queryFn: () => backend.hubState() });
  if (hub.isPending) return <p className="starting">Starting the hub…</p>;
  if (hub.isError) return <NotRunning code="backend_failed" message={String(hub.error)} />;
  if (hub.data.state === "not_running") return <NotRunning code={hub.data.code} message={hub.data.message} />;
  return <Shell hub={hub.data} />;
}

function NotRunning({ code, message }: { code: string; message: string }) {
  const other = code === "hub_already_running";
  return (
    <main className="not-running" data-testid="hub-not-running">
      <h1>{other ? "Another Portcullis hub is already running" : "The hub did not start"}</h1>
      <p className="mono">{visible(message)}</p>
      <p>
        {other
          ? "This window does not start a second hub on the same ledger. Stop the other one (portcullis serve, or another Portcullis window), then start this app again — or keep using the other one."
          : "Nothing is guarded from this window. Fix what the message names, then start the app again."}
      </p>
    </main>
  );
}

function Shell({ hub }: { hub: Extract<HubState, { state: "running" }> }) {
  const backend = useBackend();
  const feed = useMemo(() => followFeed(backend), [backend]);
  useEffect(() => () => feed.stop(), [feed]);
  const queryClient = useQueryClient();
  useEffect(() => keepQueriesCurrent(feed, queryClient), [feed, queryClient]);
  const route = useRoute();
  const view: ViewId = VIEWS.some((v) => v.id === route.view) ? (route.view as ViewId) : "approvals";
  const setView = (id: ViewId) => navigate({ view: id, params: id === route.view ? route.params : "" });
  const [closing, setClosing] = useState<number | null>(null);
  useEffect(() => backend.onCloseAsked(setClosing), [backend]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const v = e.altKey ? VIEWS.find((x) => x.key === e.key) : undefined;
      if (v) {
        e.preventDefault();
        if (parseRoute(window.location.hash).view !== v.id) navigate({ view: v.id, params: "" });
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  return (
    <FeedContext.Provider value={feed}>
      <div className="shell">
        <nav className="nav" aria-label="Views">
          <span className="brand">Portcullis</span>
          {VIEWS.map((v) => (
            <button
              key={v.id}
              type="button"
              className={view === v.id ? "active" : undefined}
              aria-current={view === v.id ? "page" : undefined}
              data-testid={`nav-${v.id}`}
              onClick={() => setView(v.id)}
            >
              {v.label} <Kbd>{`Alt+${v.key}`}</Kbd>
            </button>
          ))}
          <span className="hub-line muted" title={`project ${hub.project} · ledger ${hub.ledger}`}>
            agents connect to <span className="mono">{hub.mcp_url}</span>
          </span>
          <SessionLine />
        </nav>
        <main className="main">
          <PolicyBanner />
          <ViewBoundary key={view} view={view}>
            {VIEWS.find((v) => v.id === view)?.render()}
          </ViewBoundary>
        </main>
        {closing != null && (
          <Confirm>
            <p>
              {closing} {closing === 1 ? "call waits" : "calls wait"} for your answer. Quitting stops the hub: the
              waiting calls are refused.
            </p>
            <button type="button" onClick={() => setClosing(null)} autoFocus>
              Stay
            </button>
            <button type="button" className="answer-deny" onClick={() => void backend.quit()}>
              Quit anyway
            </button>
          </Confirm>
        )}
      </div>
    </FeedContext.Provider>
  );
}

function Confirm({ children }: { children: ReactNode }) {
  return (
    <div className="confirm" role="alertdialog" aria-modal="true">
      <div className="confirm-box">{children}</div>
    </div>
  );
}
