// One command rule in the structured editor: id, pattern words (alternatives as `a | b`), decision, exact
// and network, justification, and its `match` / `not_match` examples, each with the mark of the last
// check and, when it fails, the word where it leaves the pattern. Every change is a text edit.
import { useState } from "react";
import type { ExampleOutcome, RuleHitCount } from "../../../backend/backend";
import type { DraftContext } from "../DraftEditor";
import { DECISIONS, elementOf, elementText, removeRule, setRuleField, type Rule } from "../model";
import { visible } from "../../../lib/visible";
import { exampleKey } from "./RulesPanel";
import { TextField } from "./TextField";

interface Props {
  rule: Rule;
  index: number;
  draft: DraftContext;
  editable: boolean;
  outcomes: Map<string, ExampleOutcome>;
  /** Calls this rule decided lately (`null`: none; undefined: not known yet). */
  hits?: RuleHitCount | null;
}

export function RuleCard({ rule, index, draft, editable, outcomes, hits }: Props) {
  const set = <K extends keyof Rule>(field: K, value: Rule[K]) => draft.edit((text) => setRuleField(text, index, field, value));
  const setWord = (i: number, text: string) => set("pattern", rule.pattern.map((p, j) => (j === i ? elementOf(text) : p)));
  return (
    <li className={`rule-card decision-${rule.decision}`} data-testid={`rule-${index}`} data-rule-id={rule.id}>
      <div className="rule-row">
        <TextField className="rule-id mono" aria-label="Rule id" value={rule.id} disabled={!editable} onValue={(v) => set("id", v)} data-testid="rule-id" />
        <span className="decision-choice" role="radiogroup" aria-label="Decision">
          {DECISIONS.map((d) => (
            <button
              key={d}
              type="button"
              role="radio"
              aria-checked={rule.decision === d}
              className={rule.decision === d ? `badge badge-${d}` : "badge-off"}
              disabled={!editable}
              onClick={() => set("decision", d)}
              data-testid={`rule-decision-${d}`}
            >
              {d}
            </button>
          ))}
        </span>
        <label className="small" title="The command must be exactly the pattern, with no further words">
          <input type="checkbox" checked={rule.exact ?? false} disabled={!editable} onChange={(e) => set("exact", e.target.checked)} /> exact
        </label>
        <label className="small" title="Commands this rule matches may reach any host from inside their sandbox">
          <input type="checkbox" checked={rule.network === true} disabled={!editable} onChange={(e) => set("network", e.target.checked ? true : undefined)} /> any host
        </label>
        <HostsField
          key={Array.isArray(rule.network) ? rule.network.join(", ") : ""}
          hosts={Array.isArray(rule.network) ? rule.network : []} editable={editable && rule.network !== true} onChange={(hosts) => set("network", hosts.length ? hosts : undefined)} />
        <span className="spacer" />
        {hits !== undefined && (
          <span className="hits muted small" data-testid="rule-hits" title="Calls this rule decided in the hub's ledger (rules with this id in any layer)">
            {hits ? `${hits.day} today · ${hits.week} this week` : "no calls this week"}
          </span>
        )}
        <button type="button" className="link small" disabled={!editable} onClick={() => draft.edit((text) => removeRule(text, index))} aria-label={`Remove rule ${rule.id}`}>
          remove
        </button>
      </div>
      <div className="pattern-row" aria-label="Pattern">
        {rule.pattern.map((element, i) => (
          <span key={i} className="token">
            <TextField
              className="mono"
              aria-label={`Pattern word ${i + 1}`}
              value={elementText(element)}
              size={Math.max(3, elementText(element).length)}
              disabled={!editable}
              onValue={(v) => setWord(i, v)}
              data-testid={`pattern-word-${i}`}
            />
            {rule.pattern.length > 1 && editable && (
              <button type="button" className="token-x" aria-label={`Remove word ${i + 1}`} onClick={() => set("pattern", rule.pattern.filter((_, j) => j !== i))}>
                ×
              </button>
            )}
          </span>
        ))}
        {editable && (
          <button type="button" className="small" onClick={() => set("pattern", [...rule.pattern, "word"])} data-testid="pattern-add">
            + word
          </button>
        )}
        {rule.exact ? <span className="muted small">and nothing after</span> : <span className="muted small">…</span>}
      </div>
      <TextField
        className="justification"
        placeholder="Justification (why this rule)"
        aria-label="Justification"
        value={rule.justification ?? ""}
        disabled={!editable}
        onValue={(v) => set("justification", v)}
      />
      <Examples title="matches" field="match" rule={rule} index={index} draft={draft} editable={editable} outcomes={outcomes} />
      <Examples title="does not match" field="not_match" rule={rule} index={index} draft={draft} editable={editable} outcomes={outcomes} />
    </li>
  );
}

function Examples({ title, field, rule, index, draft, editable, outcomes }: Props & { title: string; field: "match" | "not_match" }) {
  const list = rule[field] ?? [];
  const [adding, setAdding] = useState("");
  const set = (next: string[]) => draft.edit((text) => setRuleField(text, index, field, next));
  return (
    <div className="examples" data-testid={`examples-${field}`}>
      <span className="muted small">{title}:</span>
      {list.map((example, i) => {
        const outcome = outcomes.get(exampleKey(index, field === "match", i));
        const mark = outcome == null ? "pending" : outcome.passed ? "pass" : "fail";
        return (
          <div key={i} className={`example example-${mark}`} data-testid="example" data-mark={mark}>
            <span className="example-mark" aria-label={mark}>
              {mark === "pass" ? "✓" : mark === "fail" ? "✕" : "…"}
            </span>
            <TextField className="mono" aria-label={`${title} example ${i + 1}`} value={example} disabled={!editable} onValue={(v) => set(list.map((x, j) => (j === i ? v : x)))} />
            {editable && (
              <button type="button" className="token-x" aria-label={`Remove example ${i + 1}`} onClick={() => set(list.filter((_, j) => j !== i))}>
                ×
              </button>
            )}
            {outcome && !outcome.passed && (
              <span className="example-why small" data-testid="example-why">
                {field === "match" ? "does not match: " : "matches: "}
                {visible(outcome.why ?? "")}
              </span>
            )}
          </div>
        );
      })}
      {editable && (
        <input
          className="mono example-add"
          placeholder={`+ a command it ${field === "match" ? "matches" : "does not match"} (Enter)`}
          aria-label={`Add a ${title} example`}
          value={adding}
          data-testid={`example-add-${field}`}
          onChange={(e) => setAdding(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && adding.trim()) {
              set([...list, adding]);
              setAdding("");
            }
          }}
        />
      )}
    </div>
  );
}

/** The hosts a rule's commands may reach, typed as a comma-separated list and written when the field is
 * left (or Enter is pressed), so half-typed names are never written to the file. Keyed by the hosts
 * the file holds, so an edit of the source starts it afresh. */
function HostsField({ hosts, editable, onChange }: { hosts: string[]; editable: boolean; onChange(hosts: string[]): void }) {
  const shown = hosts.join(", ");
  const [text, setText] = useState(shown);
  const commit = () => {
    const next = text.split(",").map((h) => h.trim()).filter((h) => h !== "");
    if (next.join(", ") !== shown) onChange(next);
  };
  return (
    <label className="small" title="Only these hosts (a host without a port: 80 and 443), e.g. registry.npmjs.org, *.crates.io, github.com:443">
      hosts{" "}
      <input
        className="mono hosts"
        data-testid="rule-hosts"
        value={text}
        disabled={!editable}
        placeholder="none"
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === "Enter") commit();
        }}
      />
    </label>
  );
}
