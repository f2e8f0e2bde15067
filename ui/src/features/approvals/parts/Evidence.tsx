// What the policy saw in a call: the sub-commands the parser found (one row each), the rules that
// matched with their file:line, the deciding one marked, and the paths it checked. All agent text.
import type { Evaluation, MatchedRule } from "../../../backend/backend";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";

const where = (rule: MatchedRule) => (rule.line ? `${rule.source}:${rule.line}` : rule.source);

const same = (a: MatchedRule, b: MatchedRule | null) =>
  !!b && a.id === b.id && a.source === b.source && a.line === b.line;

export function SubCommands({ evaluation }: { evaluation: Evaluation }) {
  if (evaluation.commands.length === 0) return null;
  return (
    <table className="grid" data-testid="sub-commands">
      <caption>Commands the parser found ({evaluation.commands.length})</caption>
      <thead>
        <tr>
          <th className="num">#</th>
          <th>command</th>
        </tr>
      </thead>
      <tbody>
        {evaluation.commands.map((argv, i) => (
          <tr key={i}>
            <td className="num">{i + 1}</td>
            <td className="mono">{argv.map(visible).join(" ")}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Rules({ evaluation }: { evaluation: Evaluation }) {
  const deciding = evaluation.deciding_rule ?? null;
  return (
    <table className="grid" data-testid="rules">
      <caption>
        Rules that matched ({evaluation.matched_rules.length})
        {!deciding && evaluation.deciding_reason ? ` — decided by: ${visible(evaluation.deciding_reason)}` : ""}
      </caption>
      <thead>
        <tr>
          <th>rule</th>
          <th>says</th>
          <th>where</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {evaluation.matched_rules.length === 0 && (
          <tr>
            <td colSpan={4} className="muted">
              no rule matched: the policy's default decided
            </td>
          </tr>
        )}
        {evaluation.matched_rules.map((rule, i) => {
          const decides = same(rule, deciding);
          return (
            <tr key={i} className={decides ? "deciding" : undefined} data-deciding={decides || undefined}>
              <td className="mono">{visible(rule.id)}</td>
              <td>
                <DecisionBadge decision={rule.decision} />
              </td>
              <td className="mono path" title={where(rule)}>
                {visible(where(rule))}
              </td>
              <td>{decides ? <strong>◀ decides</strong> : null}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function Paths({ evaluation }: { evaluation: Evaluation }) {
  if (evaluation.paths.length === 0) return null;
  return (
    <div className="paths">
      <span className="label">Paths</span>
      <ul>
        {evaluation.paths.map((p, i) => (
          <li key={i} className="mono">
            {visible(p)}
          </li>
        ))}
      </ul>
    </div>
  );
}
