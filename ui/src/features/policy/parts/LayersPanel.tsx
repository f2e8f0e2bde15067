// The effective policy by layer: each file in the order the hub layers them, and every command rule of
// every layer with the layer it comes from. Every layer's rules apply to every command; the strictest
// decision wins (forbidden over prompt over allow), so a project file cannot allow what the user's file
// forbids; only the user's file may allow what the built-in default alone would not.
import type { LayerFile } from "../../../backend/backend";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";
import { readRules } from "../model";
import { LAYER_KIND } from "../layerKind";

export function LayersPanel({ layers, open }: { layers: LayerFile[]; open: string }) {
  return (
    <div className="layers-panel" data-testid="layers-panel">
      <p className="small">
        Every layer's rules apply to every command and the <strong>strictest decision wins</strong> (forbidden, then prompt, then
        allow): a later layer can tighten but not loosen an earlier one. Rules below are as saved on disk; the open draft is
        the file marked “editing”.
      </p>
      {layers.map((layer) => {
        const rules = readRules(layer.text);
        return (
          <section key={layer.source} className="layer">
            <h4>
              {layer.layer != null ? `${layer.layer + 1}. ` : ""}
              {LAYER_KIND[layer.kind]} <span className="mono small">{visible(layer.source)}</span>{" "}
              <span className="small">{layer.in_force ? "● in force" : layer.layer == null ? "○ not created" : "○ not loaded"}</span>
              {layer.source === open && <span className="small"> · editing</span>}
            </h4>
            {rules.ok ? (
              <ul className="layer-rules">
                {rules.rules.map((r, i) => (
                  <li key={i}>
                    <DecisionBadge decision={r.decision} /> <span className="mono">{visible(r.id)}</span>{" "}
                    <code className="mono muted">{visible(r.pattern.map((p) => (Array.isArray(p) ? `{${p.join("|")}}` : p)).join(" "))}{r.exact ? "" : " …"}</code>
                  </li>
                ))}
                {rules.rules.length === 0 && <li className="muted">no command rules</li>}
              </ul>
            ) : (
              <p className="bad small">does not parse: {rules.error}</p>
            )}
          </section>
        );
      })}
    </div>
  );
}
