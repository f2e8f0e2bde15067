// Connections: upstream tools held back because their server changed them (diff, accept), the agent
// sessions open now (client, transport, since, calls), the upstream MCP servers
// (state, transport, restarts, last error and stderr lines, restart button), the tool catalog as agents
// see it (wire name, schema, annotations, whether the grants let them), and how to hook agents up
// (copyable snippets the hub made for itself), and where the hub ships its ledger and how far behind. Lists are refetched when the feed says they
// changed (data/invalidation.ts); the sessions' call counts every few seconds.
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../app/context";
import { asBackendError, type CatalogTool, type UpstreamServer } from "../../backend/backend";
import { ago, absolute } from "../../lib/time";
import { useNow } from "../../lib/useNow";
import { visible, visibleValue } from "../../lib/visible";
import { HeldTools } from "./parts/HeldTools";
import { HookupSnippets } from "./parts/HookupSnippets";
import { OtherHubs } from "./parts/OtherHubs";
import { Shipping } from "./parts/Shipping";

/** A server's state in the words an operator acts on. */
function stateWords(s: UpstreamServer): string {
  switch (s.state) {
    case "ready":
      return "● connected";
    case "connecting":
      return s.restarts > 0 ? "↻ restarting" : "◌ connecting";
    case "failed":
      return s.failures === 0 ? "✕ cannot start" : `↻ down, restarting in ${Math.ceil(s.retry_in_ms / 1000)} s`;
    case "stopped":
      return "■ stopped";
  }
}

export function ConnectionsView() {
  const backend = useBackend();
  const now = useNow(1000);
  const sessions = useQuery({ queryKey: ["sessions"], queryFn: () => backend.sessions(), refetchInterval: 3000 });
  const servers = useQuery({ queryKey: ["servers"], queryFn: () => backend.servers() });
  const tools = useQuery({ queryKey: ["tools"], queryFn: () => backend.tools() });
  const hookup = useQuery({ queryKey: ["hookup_snippets"], queryFn: () => backend.hookupSnippets() });
  const held = useQuery({ queryKey: ["tool_changes"], queryFn: () => backend.toolChanges() });
  const failure = [sessions.error, servers.error, tools.error, hookup.error, held.error].find(Boolean);
  return (
    <section className="view connections" aria-label="Connections">
      <div className="view-head">
        <h1>Connections</h1>
      </div>
      {failure && <p className="failure">{asBackendError(failure).message}</p>}
      <HeldTools changes={held.data ?? []} now={now} />
      <OtherHubs />
      <Shipping />
      <h2>Agent sessions ({sessions.data?.length ?? 0})</h2>
      <table className="grid tabular" data-testid="sessions">
        <thead>
          <tr>
            <th>client</th>
            <th>transport</th>
            <th>since</th>
            <th className="num">calls</th>
            <th>session</th>
          </tr>
        </thead>
        <tbody>
          {sessions.data?.map((s) => (
            <tr key={s.id} data-testid="session" data-calls={s.calls}>
              <td>
                {visible(s.client)} <span className="muted">{visible(s.version)}</span>
              </td>
              <td>{s.transport}</td>
              <td title={absolute(s.opened_at)}>{ago(s.opened_at, now)}</td>
              <td className="num">{s.calls}</td>
              <td className="mono muted">{s.id}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {sessions.data?.length === 0 && <p className="empty">No agent is connected.</p>}
      <h2>Upstream MCP servers ({servers.data?.length ?? 0})</h2>
      <table className="grid tabular" data-testid="servers">
        <thead>
          <tr>
            <th>server</th>
            <th>state</th>
            <th>transport</th>
            <th className="num">tools</th>
            <th className="num">restarts</th>
            <th>last error</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {servers.data?.map((s) => (
            <tr key={s.id} data-testid="server" data-server={s.id} data-state={s.state}>
              <td className="mono nowrap">{visible(s.id)}</td>
              <td className="nowrap" title={absolute(s.since)}>
                <span className={`state-word state-${s.state}`} data-testid="server-state">
                  {stateWords(s)}
                </span>{" "}
                <span className="muted">for {ago(s.since, now).replace(" ago", "")}</span>
              </td>
              <td>
                {s.transport} <div className="mono muted small">{visible(s.endpoint)}</div>
              </td>
              <td className="num">{s.tools}</td>
              <td className="num" data-testid="server-restarts">
                {s.restarts}
              </td>
              <td className="mono">
                {s.last_error ? (
                  <span title={absolute(s.last_error.at)}>
                    {visible(s.last_error.message)} <span className="muted">({ago(s.last_error.at, now)})</span>
                  </span>
                ) : (
                  <span className="muted">none</span>
                )}
                {s.stderr_tail.length > 0 && (
                  <details data-testid="stderr-tail">
                    <summary>
                      last {s.stderr_tail.length} stderr line{s.stderr_tail.length === 1 ? "" : "s"}
                    </summary>
                    {/* Server text: each line shown with its control characters made visible. */}
                    <pre>{s.stderr_tail.map(visible).join("\n")}</pre>
                  </details>
                )}
              </td>
              <td className="nowrap">
                <button type="button" onClick={() => void backend.restartServer(s.id)}>
                  Restart
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {servers.data?.length === 0 && (
        <p className="empty">No upstream server: list them under &quot;servers&quot; in a policy.</p>
      )}
      <h2>
        Tools agents see ({tools.data?.filter((t) => t.granted).length ?? 0} of {tools.data?.length ?? 0} granted)
      </h2>
      <table className="grid" data-testid="tools">
        <thead>
          <tr>
            <th>wire name</th>
            <th>granted</th>
            <th>annotations</th>
            <th>description and schema</th>
          </tr>
        </thead>
        <tbody>
          {tools.data?.map((t) => (
            <ToolLine key={t.name} tool={t} />
          ))}
        </tbody>
      </table>
      <h2>Hook an agent up</h2>
      {hookup.data && <HookupSnippets snippets={hookup.data} />}
    </section>
  );
}

function ToolLine({ tool: t }: { tool: CatalogTool }) {
  const hints =
    t.annotations && typeof t.annotations === "object" && !Array.isArray(t.annotations)
      ? Object.entries(t.annotations as Record<string, unknown>).filter(([, v]) => v !== null && v !== false)
      : [];
  return (
    <tr data-testid="tool" data-granted={t.granted}>
      <td className="mono">
        {visible(t.wire_name)}
        {t.wire_name !== t.name && <div className="muted small">{visible(t.name)}</div>}
      </td>
      <td className={`nowrap ${t.granted ? "state-ready" : "state-failed"}`}>{t.granted ? "✓ granted" : "✕ not granted"}</td>
      <td className="hints">
        {hints.map(([k, v]) => (
          <span key={k} className="hint mono">
            {v === true ? visible(k) : `${visible(k)}: ${visibleValue(v)}`}
          </span>
        ))}
      </td>
      <td>
        {visible(t.description.split("\n")[0] ?? "")}
        {t.parameters != null && (
          <details>
            <summary className="muted">schema</summary>
            <pre className="mono schema">{JSON.stringify(t.parameters, null, 2).split("\n").map(visible).join("\n")}</pre>
          </details>
        )}
      </td>
    </tr>
  );
}
