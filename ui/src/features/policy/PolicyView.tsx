// The policy workbench: the hub's policy layer by layer (tabs on top), one layer's file open as a draft.
// The layer list is re-read every few seconds and whenever the hub reloads or rejects a policy, so a
// change on disk (an "always" answer, another editor) reaches the open draft.
import { useEffect, useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend, useFeed } from "../../app/context";
import { visible } from "../../lib/visible";
import { DraftEditor } from "./DraftEditor";
import { LAYER_KIND } from "./layerKind";
import "./policy.css";


export function PolicyView() {
  const backend = useBackend();
  const feed = useFeed();
  const queryClient = useQueryClient();
  const layers = useQuery({ queryKey: ["policy_layers"], queryFn: () => backend.policyLayers(), refetchInterval: 3000 });
  useEffect(
    () =>
      feed.listen((items) => {
        if (items.some(({ event }) => event.kind === "policy_reloaded" || event.kind === "policy_rejected")) {
          void queryClient.invalidateQueries({ queryKey: ["policy_layers"] });
        }
      }),
    [feed, queryClient],
  );
  const [chosen, setChosen] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  if (layers.isPending) return <p className="muted">Reading the policy…</p>;
  if (layers.isError) return <p role="alert">The policy could not be read: {visible(String(layers.error))}</p>;
  const all = layers.data.layers;
  const open = all.find((l) => l.source === chosen) ?? all.find((l) => l.editable && l.kind === "project") ?? all.find((l) => l.editable) ?? all[0];
  return (
    <section className="policy-view" data-testid="policy-view">
      <div className="layer-tabs" role="tablist" aria-label="Policy layers">
        {all.map((l) => (
          <button
            key={l.source}
            type="button"
            role="tab"
            aria-selected={l === open}
            className={l === open ? "layer-tab active" : "layer-tab"}
            disabled={dirty && l !== open}
            title={dirty && l !== open ? "Save or undo your changes first" : l.source}
            data-testid={`layer-${l.kind}`}
            onClick={() => setChosen(l.source)}
          >
            <span className="layer-kind">
              {l.layer != null ? `${l.layer + 1}. ` : "new · "}
              {LAYER_KIND[l.kind]}
            </span>
            <span className="mono small">{visible(shortPath(l.source, layers.data.project))}</span>
            <span className={`small ${l.in_force ? "in-force" : "not-in-force"}`}>
              {l.in_force ? "● in force" : l.layer == null ? "○ not created" : "○ not loaded"}
            </span>
          </button>
        ))}
        <span className="muted small layer-rule" title="Every layer's rules apply; the strictest decision wins, and only the user's file may allow what the built-in default would not.">
          strictest wins across layers
        </span>
      </div>
      {open && <DraftEditor key={open.source} layer={open} layers={all} onDirty={setDirty} />}
    </section>
  );
}

/** A path inside the project as `./…`, else as it is. */
export function shortPath(path: string, project: string): string {
  return path.startsWith(`${project}/`) ? `./${path.slice(project.length + 1)}` : path;
}
