// What the policy saw in a call: the sub-commands the parser found (one row each), the rules that
// matched with their file:line, the deciding one marked, and the paths it checked. All agent text.
import type { DecidingPlace, Evaluation, MatchedRule, Part } from "../../../backend/backend";
import { PROTECTED_KIND_WORDS } from "../../../backend/backend";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";

const where = (rule: MatchedRule) => (rule.line ? `${rule.source}:${rule.line}` : rule.source);

/** `…/shop/.portcullis/policy.json:11`: the last three parts of a path (the whole one on hover). */
const short = (path: string) => {
  const parts = path.split("/");
  return parts.length > 4 ? `…/${parts.slice(-3).join("/")}` : path;
};

/** The rules once each, in order, with how many sub-commands each matched. */
function distinct(rules: MatchedRule[]): Array<[MatchedRule, number]> {
  const seen: Array<[MatchedRule, number]> = [];
  for (const rule of rules) {
    const known = seen.find(([r]) => same(r, rule));
    if (known) known[1] += 1;
    else seen.push([rule, 1]);
  }
  return seen;
}

function same(a: MatchedRule, b: MatchedRule | null): boolean {
  return !!b && a.id === b.id && a.source === b.source && a.line === b.line;
}

/** A protected place as the decider: `protected place (executed content): Claude Code settings (…)`,
 * its path beside it. The kind's words are the hub's own (generated). */
export function placeWords(place: DecidingPlace): string {
  return `${PROTECTED_KIND_WORDS[place.kind]}: ${place.place}`;
}

/** What decided the call when no rule did: the protected place, else the reason that set it. */
function deciderWords(evaluation: Evaluation): string | null {
  if (evaluation.deciding_place) return `${placeWords(evaluation.deciding_place)} at ${evaluation.deciding_place.path}`;
  return evaluation.deciding_reason ?? null;
}

/** The parts that set the call's decision: as strict as the whole, and not an allow. */
export function causes(evaluation: Evaluation, part: Part): boolean {
  return part.decision !== "allow" && part.decision === evaluation.decision;
}

const KIND: Record<Part["kind"], string> = { command: "command", redirection: "file", unseen: "unseen" };

/** Each part of the command the parser found, with its own decision, rule and paths; the parts that
 * caused the prompt are marked, and what the parser could not see through is flagged. */
export function SubCommands({ evaluation }: { evaluation: Evaluation }) {
  const parts = evaluation.parts ?? [];
  if (parts.length === 0) {
    if (evaluation.commands.length === 0) return null;
    return (
      <table className="grid" data-testid="sub-commands">
        <caption>Commands the parser found ({evaluation.commands.length})</caption>
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
  const blind = parts.filter((p) => p.unseen).length;
  return (
    <table className="grid parts" data-testid="sub-commands">
      <caption>
        What the command does ({parts.length} part{parts.length === 1 ? "" : "s"})
        {blind > 0 ? (
          <span className="unseen-note" data-testid="unseen-note">
            {" "}
            — ⚠ {blind} the parser could not see through
          </span>
        ) : null}
      </caption>
      <thead>
        <tr>
          <th className="num">#</th>
          <th>part</th>
          <th>says</th>
          <th>why (rule, file:line)</th>
        </tr>
      </thead>
      <tbody>
        {parts.map((part, i) => {
          const cause = causes(evaluation, part);
          return (
            <tr key={i} className={cause ? "deciding" : undefined} data-cause={cause || undefined} data-testid="part">
              <td className="num">{i + 1}</td>
              <td>
                <span className="mono">{visible(part.text)}</span>
                {part.kind !== "command" ? <span className="tag">{KIND[part.kind]}</span> : null}
                {part.unseen ? (
                  <span className="tag tag-unseen" title="known only at run time: judged without being seen">
                    ⚠ not seen through
                  </span>
                ) : null}
                {part.paths.length > 0 ? (
                  <ul className="part-paths">
                    {part.paths.map((p, j) => (
                      <li key={j} className="mono" title={visible(p)}>
                        {visible(short(p))}
                      </li>
                    ))}
                  </ul>
                ) : null}
              </td>
              <td>
                <DecisionBadge decision={part.decision} />
                {cause ? <strong className="cause"> ◀ asks</strong> : null}
              </td>
              <td>
                {part.rule ? (
                  <span className="mono" title={visible(where(part.rule))}>
                    {visible(part.rule.id)} <span className="muted">{visible(short(where(part.rule)))}</span>
                  </span>
                ) : null}
                {!part.rule && part.place ? (
                  <strong className="place" data-testid="part-place" title={visible(part.place.path)}>
                    {visible(placeWords(part.place))}
                  </strong>
                ) : null}
                {part.reason ? <div className="small">{visible(part.reason)}</div> : null}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function Rules({ evaluation }: { evaluation: Evaluation }) {
  const deciding = evaluation.deciding_rule ?? null;
  const decider = deciderWords(evaluation);
  const rules = distinct(evaluation.matched_rules);
  // What decided stands on its own line above the table, as wide as the card: a protected place's
  // words and path are long, and squeezed into the table's caption they wrapped into a narrow column.
  return (
    <>
      {!deciding && decider ? (
        <p className="decided-by" data-testid="decided-by">
          decided by: {evaluation.deciding_place ? <strong>{visible(decider)}</strong> : visible(decider)}
        </p>
      ) : null}
      <table className="grid" data-testid="rules">
        <caption>Rules that matched ({rules.length})</caption>
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
              <td colSpan={4} className="muted" data-testid="no-rule">
                {evaluation.deciding_place
                  ? "no rule matched: a protected place decided (no rule can loosen it)"
                  : decider
                    ? "no rule matched"
                    : "no rule matched: the policy's default decided"}
              </td>
            </tr>
          )}
          {rules.map(([rule, times], i) => {
            const decides = same(rule, deciding);
            return (
              <tr key={i} className={decides ? "deciding" : undefined} data-deciding={decides || undefined}>
                <td className="mono nowrap">
                  {visible(rule.id)}
                  {times > 1 ? <span className="muted"> ×{times}</span> : null}
                </td>
                <td>
                  <DecisionBadge decision={rule.decision} />
                </td>
                <td className="mono" title={visible(where(rule))}>
                  {visible(short(where(rule)))}
                </td>
                <td className="nowrap">{decides ? <strong>◀ decides</strong> : null}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
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
