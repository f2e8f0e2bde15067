// A policy's whole verdict on one command or call, as an operator reads it under time pressure: the
// decision and what decided it (rule, layer, file) on the first line; then each part of the command
// (sub-commands with wrappers unwrapped, redirections, what the parser could not see through) with its
// own decision; every file touched with its access; every rule that matched. All agent text as text.
import type { CallVerdict, LayerFile, MatchedRule } from "../../../backend/backend";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";
import { LAYER_KIND } from "../layerKind";

export function TraceView({ verdict, layers, testId }: { verdict: CallVerdict; layers: LayerFile[]; testId?: string }) {
  if (verdict.verdict === "blocked") {
    return (
      <div className="trace" data-testid={testId} data-decision="blocked">
        <p>
          <DecisionBadge decision="forbidden" /> blocked before the policy: <strong>{visible(verdict.reason)}</strong>
        </p>
        <p className="muted small">{visible(verdict.detail)}</p>
      </div>
    );
  }
  const e = verdict;
  const layerOf = (rule: MatchedRule) => {
    const layer = layers.find((l) => l.source === rule.source);
    return layer ? `${layer.layer != null ? `layer ${layer.layer + 1}, ` : ""}${LAYER_KIND[layer.kind]}` : "draft";
  };
  return (
    <div className="trace" data-testid={testId} data-decision={e.decision}>
      <p className="trace-head">
        <DecisionBadge decision={e.decision} />{" "}
        {e.deciding_rule ? (
          <span data-testid="trace-deciding">
            decided by rule <strong className="mono">{visible(e.deciding_rule.id)}</strong> ({e.deciding_rule.decision}) · {layerOf(e.deciding_rule)}
            {e.deciding_rule.line ? ` · line ${e.deciding_rule.line}` : ""}
          </span>
        ) : (
          <span data-testid="trace-deciding">{visible(e.deciding_reason ?? "no rule decided: the default applies")}</span>
        )}
      </p>
      {e.parts && e.parts.length > 0 && (
        <table className="trace-parts">
          <thead>
            <tr>
              <th>part</th>
              <th>decision</th>
              <th>why</th>
            </tr>
          </thead>
          <tbody>
            {e.parts.map((p, i) => (
              <tr key={i} data-testid="trace-part">
                <td>
                  <span className="muted small">{p.kind === "command" ? "command" : p.kind === "redirection" ? "redirect" : "unseen"}</span>{" "}
                  <code className="mono">{visible(p.text)}</code>
                </td>
                <td>
                  <DecisionBadge decision={p.decision} />
                </td>
                <td className="small">
                  {p.rule ? (
                    <>
                      rule <span className="mono">{visible(p.rule.id)}</span> ·{" "}
                    </>
                  ) : null}
                  {visible(p.reason ?? "")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {e.accesses && e.accesses.length > 0 && (
        <>
          <h4>Files</h4>
          <ul className="trace-files">
            {e.accesses.map((a, i) => (
              <li key={i}>
                <DecisionBadge decision={a.decision} /> <span className="muted small">{a.access}{a.recursive ? " (tree)" : ""}</span>{" "}
                <code className="mono">{visible(a.path)}</code> <span className="muted small">via {visible(a.via)}</span>
                {a.reason ? <span className="small"> — {visible(a.reason)}</span> : null}
              </li>
            ))}
          </ul>
        </>
      )}
      <h4>Rules that matched</h4>
      {e.matched_rules.length === 0 ? (
        <p className="muted small">none</p>
      ) : (
        <ul className="trace-rules">
          {e.matched_rules.map((r, i) => (
            <li key={i} className={e.deciding_rule && r.id === e.deciding_rule.id && r.source === e.deciding_rule.source ? "deciding" : undefined}>
              <span className="mono">{visible(r.id)}</span> <DecisionBadge decision={r.decision} /> <span className="muted small">{layerOf(r)}</span>
            </li>
          ))}
        </ul>
      )}
      {e.reasons.length > 0 && (
        <details>
          <summary className="small">every reason ({e.reasons.length})</summary>
          <ul className="small">
            {e.reasons.map((r, i) => (
              <li key={i}>{visible(r)}</li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
