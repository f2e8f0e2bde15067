// The connections a command made or tried through its egress proxy (egress by name): one line each,
// reached or refused, and why; and a badge that counts them. Hosts and reasons are agent text, shown
// through `visible`.
import type { Connection } from "../../backend/backend";
import { byteSize } from "../numbers";
import { visible } from "../visible";

function where(c: Connection): string {
  return c.kind === "dns" ? `DNS ${visible(c.host)}` : `${visible(c.host)}:${c.port}`;
}

export function ConnectionList({ connections, testId }: { connections: Connection[]; testId: string }) {
  return (
    <ul className="connections" data-testid={testId}>
      {connections.map((c, i) => (
        <li key={i} className={c.allowed ? "conn conn-reached" : "conn conn-refused"} data-allowed={c.allowed}>
          <span className="conn-mark">{c.allowed ? "reached" : "refused"}</span>{" "}
          <span className="mono conn-where">{where(c)}</span>{" "}
          {c.allowed ? (
            <span className="muted">
              {byteSize(c.bytes_out)} out · {byteSize(c.bytes_in)} in · {visible(c.why)}
            </span>
          ) : (
            <span className="conn-why">{visible(c.why)}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** `2 connections · 1 refused`, in the warning colour when any was refused. */
export function ConnectionsBadge({ connections }: { connections: Connection[] }) {
  const refused = connections.filter((c) => !c.allowed).length;
  const n = connections.length;
  return (
    <span
      className={`conn-badge${refused > 0 ? " conn-badge-refused" : ""}`}
      data-testid="connections-badge"
      title={connections.map((c) => `${c.allowed ? "reached" : "refused"} ${where(c)}`).join("\n")}
    >
      {n} connection{n === 1 ? "" : "s"}
      {refused > 0 ? ` · ${refused} refused` : ""}
    </span>
  );
}
