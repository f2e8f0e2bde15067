// The walls a command will run inside, as the approval card shows them: confined or not (and why not),
// where it may write, whether it has network and which rule opened it, what is hidden from it, and its
// limits. Paths are agent-influenced text: shown through `visible`.
import type { SandboxProfile } from "../../../backend/backend";
import { visible } from "../../../lib/visible";

const names = (paths: string[]) => paths.map(visible).join(", ");

export function SandboxFacts({ profile }: { profile: SandboxProfile }) {
  if (profile.enforcement.state === "unconfined") {
    return (
      <dd className="sandbox" data-testid="sandbox">
        <span className="walls walls-open">unconfined</span>{" "}
        <span className="reason">runs with the hub's rights: {visible(profile.enforcement.reason)}</span>
      </dd>
    );
  }
  const l = profile.limits;
  const hosts = profile.egress?.hosts ?? [];
  return (
    <dd className="sandbox" data-testid="sandbox">
      <span className="walls" title="Landlock, namespaces and resource limits, enforced by the kernel">
        confined
      </span>{" "}
      writes only <span className="mono">{profile.write.length ? names(profile.write) : "nothing"}</span> and a private
      /tmp · network{" "}
      <strong data-testid="sandbox-network" className={profile.network ? "net-open" : undefined}>
        {profile.network ? "open to any host" : hosts.length > 0 ? "only named hosts" : "closed"}
      </strong>
      {hosts.length > 0 && (
        <span data-testid="sandbox-hosts">
          {" "}
          <span className="mono">{names(hosts)}</span> (through the egress proxy)
        </span>
      )}
      {profile.network_reason ? <span className="muted"> ({visible(profile.network_reason)})</span> : null}
      {profile.hidden.length > 0 && (
        <span className="muted" title={names(profile.hidden)}>
          {" "}
          · hides {profile.hidden.length} place{profile.hidden.length === 1 ? "" : "s"}
        </span>
      )}
      <span className="muted">
        {" "}
        · {l.processes} processes, {l.memory_mb} MiB, {l.cpu_seconds} s CPU each
      </span>
    </dd>
  );
}
