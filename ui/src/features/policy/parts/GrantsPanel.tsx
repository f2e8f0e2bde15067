// The grant matrix: every registered tool (built-in and each upstream server's, by the names scopes use)
// against the draft's grant scopes, each cell allow / deny / neither (a click cycles it), exact names
// only; beside each tool whether agents see it now and would see it with the draft, and which scope
// hides it. A scope with an allow list hides every tool it does not name; a deny in any scope hides it.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { addScope, cellOf, readGrants, setCell, type Cell } from "../access";
import { useSettled } from "../useSettled";

const NEXT: Record<Cell, Cell> = { none: "allow", allow: "deny", deny: "none" };
const SIGN: Record<Cell, string> = { none: "·", allow: "✓ allow", deny: "✕ deny" };

export function GrantsPanel({ draft }: { draft: DraftContext }) {
  const backend = useBackend();
  const text = useSettled(draft.text, 150);
  const scopes = readGrants(draft.text);
  const effect = useQuery({
    queryKey: ["grants_with_draft", draft.file, text],
    queryFn: () => backend.grantsWithDraft(draft.file, text),
    enabled: scopes !== null,
    placeholderData: (previous) => previous,
  });
  const [name, setName] = useState("");
  if (scopes === null) return <p className="bad small">The source does not parse: fix it on the right first.</p>;
  const tools = effect.data ?? [];
  const hidden = tools.filter((t) => !t.visible_with_draft).length;
  return (
    <div className="grants-panel" data-testid="grants-panel">
      <p className="small">
        Agents would see <strong data-testid="grants-visible">{tools.length - hidden} of {tools.length}</strong> tools with this draft
        {tools.some((t) => t.visible_now !== t.visible_with_draft) ? " (changed cells are marked)" : ""}. Names are exact; a scope
        with an allow list hides every tool it does not name.
      </p>
      {effect.isError && <p className="bad">{visible((effect.error as Error).message)}</p>}
      <table className="grid grants-matrix">
        <thead>
          <tr>
            <th>tool</th>
            {scopes.map((s, i) => (
              <th key={i} className="mono">
                {visible(s.name)}
                {s.allow.length > 0 && <span className="muted small"> (allow list)</span>}
              </th>
            ))}
            <th>agents see it</th>
          </tr>
        </thead>
        <tbody>
          {tools.map((tool) => (
            <tr key={tool.name} data-testid="grant-row" data-tool={tool.name} className={tool.visible_now !== tool.visible_with_draft ? "changed" : undefined}>
              <td>
                <span className="mono">{visible(tool.name)}</span>
                {tool.wire_name !== tool.name && <span className="muted small"> as {visible(tool.wire_name)}</span>}
              </td>
              {scopes.map((scope, i) => {
                const cell = cellOf(scope, tool.name);
                return (
                  <td key={i}>
                    <button
                      type="button"
                      className={`cell cell-${cell}`}
                      disabled={!draft.editable}
                      data-testid={`grant-cell-${i}`}
                      title="Click: neither → allow → deny"
                      onClick={() => draft.edit((t) => setCell(t, i, scope, tool.name, NEXT[cell]))}
                    >
                      {SIGN[cell]}
                    </button>
                  </td>
                );
              })}
              <td data-testid="grant-visible" data-visible={tool.visible_with_draft}>
                {tool.visible_with_draft ? "✓ yes" : `✕ no — ${visible(tool.refused_by ?? "")}`}
                {tool.visible_now !== tool.visible_with_draft && <span className="muted small"> (now: {tool.visible_now ? "yes" : "no"})</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {draft.editable && (
        <div className="row">
          <input className="mono" placeholder="new scope name" aria-label="New scope name" value={name} onChange={(e) => setName(e.target.value)} />
          <button
            type="button"
            disabled={!name.trim() || scopes.some((s) => s.name === name.trim())}
            data-testid="scope-add"
            onClick={() => {
              draft.edit((t) => addScope(t, name.trim()));
              setName("");
            }}
          >
            + scope
          </button>
        </div>
      )}
    </div>
  );
}
