// The "allow for this session" answers in force: which agent session, which tool and action, since
// when; each revocable (the next such call is asked again).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { asBackendError, type SessionGrant } from "../../../backend/backend";
import { absolute, ago } from "../../../lib/time";
import { useNow } from "../../../lib/useNow";
import { visible } from "../../../lib/visible";

const what = (g: SessionGrant) =>
  g.action.command ?? (g.action.paths?.length ? g.action.paths.join(" ") : g.action.operation);

export function SessionGrants() {
  const backend = useBackend();
  const client = useQueryClient();
  const now = useNow();
  const grants = useQuery({ queryKey: ["session_grants"], queryFn: () => backend.sessionGrants() });
  const revoke = useMutation({
    mutationFn: (id: string) => backend.revokeSessionGrant(id),
    onSettled: () => client.invalidateQueries({ queryKey: ["session_grants"] }),
  });
  const list = grants.data ?? [];
  return (
    <section className="grants" aria-label="Session grants" data-testid="session-grants">
      <h2>
        Session grants <span className="count">{list.length} in force</span>
      </h2>
      {revoke.isError && (
        <p className="failure" role="alert">
          Revoking failed: {asBackendError(revoke.error).message}
        </p>
      )}
      {list.length === 0 ? (
        <p className="muted small">None. “This session” answers appear here until the session ends or you revoke them.</p>
      ) : (
        <table className="grid">
          <thead>
            <tr>
              <th>session</th>
              <th>tool</th>
              <th>allows</th>
              <th>since</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((g) => (
              <tr key={g.id} data-testid="session-grant">
                <td className="mono">{visible(g.session_id.slice(0, 8))}</td>
                <td className="mono">{visible(g.tool)}</td>
                <td className="mono">{visible(what(g))}</td>
                <td title={absolute(g.granted_at)}>{ago(g.granted_at, now)}</td>
                <td>
                  <button
                    type="button"
                    data-testid="revoke-grant"
                    disabled={revoke.isPending}
                    onClick={() => revoke.mutate(g.id)}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
