// Connections: the agent sessions the hub has open, its upstream MCP servers (state, restarts, last
// stderr lines, restart button) and the tool catalog as agents see it. Lists are refetched when the feed says they changed
// (data/invalidation.ts).
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../app/context";
import { asBackendError } from "../../backend/backend";
import { ago, absolute } from "../../lib/time";
import { useNow } from "../../lib/useNow";
import { visible } from "../../lib/visible";

export function ConnectionsView() {
  const backend = useBackend();
  const now = useNow(5000);
  const sessions = useQuery({ queryKey: ["sessions"], queryFn: () => backend.sessions() });
  const servers = useQuery({ queryKey: ["servers"], queryFn: () => backend.servers() });
  const tools = useQuery({ queryKey: ["tools"], queryFn: () => backend.tools() });
  const failure = [sessions.error, servers.error, tools.error].find(Boolean);
  return (
    <section className="view connections" aria-label="Connections">
      <div className="view-head">
        <h1>Connections</h1>
      </div>
      {failure && <p className="failure">{asBackendError(failure).message}</p>}
      <h2>Agent sessions ({sessions.data?.length ?? 0})</h2>
      <table className="grid" data-testid="sessions">
        <thead>
          <tr>
            <th>client</th>
            <th>session</th>
            <th>since</th>
          </tr>
        </thead>
        <tbody>
          {sessions.data?.map((s) => (
            <tr key={s.id}>
              <td>
                {visible(s.client)} <span className="muted">{visible(s.version)}</span>
              </td>
              <td className="mono">{s.id}</td>
              <td title={absolute(s.opened_at)}>{ago(s.opened_at, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Upstream MCP servers ({servers.data?.length ?? 0})</h2>
      <table className="grid" data-testid="servers">
        <thead>
          <tr>
            <th>server</th>
            <th>state</th>
            <th className="num">tools</th>
            <th className="num">restarts</th>
            <th>last error</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {servers.data?.map((s) => (
            <tr key={s.id}>
              <td className="mono">{visible(s.id)}</td>
              <td>
                {s.state} <span className="muted">{ago(s.since, now)}</span>
              </td>
              <td className="num">{s.tools}</td>
              <td className="num">{s.restarts}</td>
              <td className="mono">
                {s.last_error ? visible(s.last_error.message) : ""}
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
              <td>
                <button type="button" onClick={() => void backend.restartServer(s.id)}>
                  Restart
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Tools agents see ({tools.data?.filter((t) => t.granted).length ?? 0})</h2>
      <table className="grid" data-testid="tools">
        <thead>
          <tr>
            <th>wire name</th>
            <th>name</th>
            <th>granted</th>
            <th>description</th>
          </tr>
        </thead>
        <tbody>
          {tools.data?.map((t) => (
            <tr key={t.name}>
              <td className="mono">{visible(t.wire_name)}</td>
              <td className="mono">{visible(t.name)}</td>
              <td>{t.granted ? "yes" : "no"}</td>
              <td>{visible(t.description.split("\n")[0] ?? "")}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
