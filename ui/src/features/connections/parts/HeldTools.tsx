// Upstream tools held back because their server changed their definition after it was pinned (the MCP
// "rug pull"): for each, what changed as a diff of the accepted and the offered definition (server
// text, every line escaped), and the one action that serves it again — accepting exactly the
// definition shown (its digest goes with the answer; a server that changed it again meanwhile is
// refused and the list refetched).
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { asBackendError, type ToolChange } from "../../../backend/backend";
import { absolute, ago } from "../../../lib/time";
import { Diff } from "../../../lib/ui/Diff";
import { visible } from "../../../lib/visible";

export function HeldTools({ changes, now }: { changes: ToolChange[]; now: number }) {
  if (changes.length === 0) return null;
  return (
    <section className="held-tools" data-testid="held-tools" aria-label="Tools held back">
      <h2 className="attention">
        ⚠ {changes.length} tool{changes.length === 1 ? "" : "s"} changed by {changes.length === 1 ? "its server" : "their servers"} since accepted
      </h2>
      <p className="muted small">
        Read what changed — the server wrote this text, and a new description can carry instructions to the
        model — then accept it, or leave it waiting.
      </p>
      {changes.map((c) => (
        <HeldTool key={`${c.server}/${c.tool}`} change={c} now={now} />
      ))}
    </section>
  );
}

function HeldTool({ change: c, now }: { change: ToolChange; now: number }) {
  const backend = useBackend();
  const client = useQueryClient();
  const accept = useMutation({
    mutationFn: () => backend.acceptToolChange(c.server, c.tool, c.offered_digest),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: ["tool_changes"] });
      void client.invalidateQueries({ queryKey: ["tools"] });
    },
  });
  return (
    <article className="held-tool" data-testid="held-tool" data-server={c.server} data-tool={c.tool}>
      <header>
        <span className="mono">
          {visible(c.server)} / {visible(c.tool)}
        </span>{" "}
        <span className="muted" title={absolute(c.since)}>
          changed {ago(c.since, now)} · offered {c.offered_digest.slice(0, 12)}, accepted {c.accepted_digest.slice(0, 12)}
        </span>
        <div className="state-word" data-testid="held-tool-state">
          {c.prompted
            ? "Served meanwhile: every call to it asks you."
            : "Held back: agents can neither see nor call it."}
        </div>
      </header>
      <Diff lines={c.diff} testId="held-tool-diff" />
      <div className="actions">
        <button type="button" className="primary" disabled={accept.isPending} onClick={() => accept.mutate()}>
          Accept this definition
        </button>
        {accept.error && <span className="failure">{asBackendError(accept.error).message}</span>}
      </div>
    </article>
  );
}
