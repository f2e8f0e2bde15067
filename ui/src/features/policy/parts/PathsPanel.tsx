// The draft's path rules: roots with their access, deny globs, whether the built-in deny globs hold and
// what a read outside every root gets; and a probe: would this path be readable, writable? asked of the
// real read and write tools with the draft in place (they resolve relative paths and symlinks as they do
// for an agent, and refuse `~` as they do for an agent), with the path they would touch and why.
import { useState } from "react";
import { useMutation } from "@tanstack/react-query";
import type { CallVerdict } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { addDenyGlob, addRoot, readPaths, removeDenyGlob, removeRoot, setRootAccess } from "../access";

export function PathsPanel({ draft }: { draft: DraftContext }) {
  const backend = useBackend();
  const paths = readPaths(draft.text);
  const [probe, setProbe] = useState("README.md");
  const asked = useMutation({ mutationFn: (path: string) => backend.probePathDraft(draft.file, draft.text, path) });
  if (!paths) return <p className="bad small">The source does not parse: fix it on the right first.</p>;
  const ed = draft.editable;
  return (
    <div className="paths-panel" data-testid="paths-panel">
      <h3>Would this path be readable, writable?</h3>
      <div className="row">
        <input
          className="mono probe-input"
          value={probe}
          aria-label="Path to probe"
          data-testid="probe-path"
          onChange={(e) => setProbe(e.target.value)}
          onKeyDown={(e) => e.key === "Enter" && asked.mutate(probe)}
        />
        <button type="button" className="primary" onClick={() => asked.mutate(probe)} data-testid="probe-run">
          Ask the tools (Enter)
        </button>
      </div>
      {asked.isError && <p className="bad">{visible((asked.error as Error).message)}</p>}
      {asked.data && (
        <div className="probe" data-testid="probe-result">
          <p className="small">
            {asked.data.resolved ? (
              <>
                the tools would touch <code className="mono">{visible(asked.data.resolved)}</code>
              </>
            ) : (
              "the tools refused the path before resolving it"
            )}
          </p>
          <Answer label="read" verdict={asked.data.read} />
          <Answer label="write" verdict={asked.data.write} />
        </div>
      )}
      <h3>Roots</h3>
      {paths.roots.length === 0 && <p className="muted small">No roots: the project folder is the one write root.</p>}
      <ul className="results">
        {paths.roots.map((r, i) => (
          <li key={i} data-testid="root">
            <code className="mono">{visible(r.path)}</code>{" "}
            <select value={r.access} disabled={!ed} aria-label={`Access of ${r.path}`} onChange={(e) => draft.edit((t) => setRootAccess(t, i, e.target.value as "read" | "write"))}>
              <option value="read">read</option>
              <option value="write">read and write</option>
            </select>{" "}
            {ed && <Remove onClick={() => draft.edit((t) => removeRoot(t, i))} />}
          </li>
        ))}
      </ul>
      {ed && <AddRow label="New root" placeholder="/home/dev/src/lib or ./vendor" button="+ read root" onAdd={(path) => draft.edit((t) => addRoot(t, { path, access: "read" }))} />}
      <h3>Never read or written</h3>
      <p className="muted small">
        {paths.default_deny ? "The built-in globs hold (.env*, .ssh, .aws, .gnupg, .netrc, private keys)." : "The built-in deny globs are off in this file (another layer may keep them)."}{" "}
        A read outside every root: <DecisionBadge decision={paths.read_outside_roots} />
      </p>
      <ul className="results">
        {paths.deny.map((g, i) => (
          <li key={i}>
            <code className="mono">{visible(g)}</code>{" "}
            {ed && <Remove onClick={() => draft.edit((t) => removeDenyGlob(t, i))} />}
          </li>
        ))}
      </ul>
      {ed && <AddRow label="New deny glob" placeholder="*.sqlite or secrets/**" button="+ deny glob" onAdd={(glob) => draft.edit((t) => addDenyGlob(t, glob))} />}
    </div>
  );
}

function Answer({ label, verdict }: { label: string; verdict: CallVerdict }) {
  return (
    <p data-testid={`probe-${label}`} data-decision={verdict.verdict === "blocked" ? "blocked" : verdict.decision}>
      <strong>{label}</strong>{" "}
      {verdict.verdict === "blocked" ? (
        <>
          <DecisionBadge decision="forbidden" /> {visible(verdict.reason)}: {visible(verdict.detail)}
        </>
      ) : (
        <>
          <DecisionBadge decision={verdict.decision} /> {visible(verdict.deciding_reason ?? verdict.reasons.at(-1) ?? "")}
        </>
      )}
    </p>
  );
}

function Remove({ onClick }: { onClick(): void }) {
  return (
    <button type="button" className="link small" onClick={onClick}>
      remove
    </button>
  );
}

/** A text box and its add button (Enter adds too); the box empties once added. */
function AddRow({ label, placeholder, button, onAdd }: { label: string; placeholder: string; button: string; onAdd(value: string): void }) {
  const [value, setValue] = useState("");
  const add = () => {
    if (!value.trim()) return;
    onAdd(value.trim());
    setValue("");
  };
  return (
    <div className="row">
      <input className="mono" placeholder={placeholder} aria-label={label} value={value} onChange={(e) => setValue(e.target.value)} onKeyDown={(e) => e.key === "Enter" && add()} />
      <button type="button" disabled={!value.trim()} onClick={add}>
        {button}
      </button>
    </div>
  );
}
