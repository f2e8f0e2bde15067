// The command rules of the open draft as cards. Read from the text on every change; a text that does not
// parse keeps showing the last readable rules, read-only, with where the source breaks. Each card edits
// its rule through text edits (one undo step each), and shows its examples' marks from the last check.
import { useMemo, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { DraftCheck, ExampleOutcome, RuleHitCount } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { useRoute } from "../../../app/route";
import { Candidates } from "./Candidates";
import type { DraftContext } from "../DraftEditor";
import { addRule, freshId, readRules, type Rule } from "../model";
import { RuleCard } from "./RuleCard";

/** Cards drawn at most before "show more" (a 1,000-rule policy stays quick to type in). */
const SHOWN = 150;

export function RulesPanel({ draft, check }: { draft: DraftContext; check: DraftCheck | null }) {
  const read = useMemo(() => readRules(draft.text), [draft.text]);
  // The last rules the text gave, shown (read-only) while the text does not parse.
  const [lastGood, setLastGood] = useState<Rule[]>([]);
  if (read.ok && read.rules !== lastGood) setLastGood(read.rules);
  const rules = read.ok ? read.rules : lastGood;
  const [filter, setFilter] = useState("");
  const [shown, setShown] = useState(SHOWN);
  const outcomes = useMemo(() => byExample(check?.examples ?? []), [check]);
  const backend = useBackend();
  const activity = useQuery({ queryKey: ["rule_activity"], queryFn: () => backend.ruleActivity(), refetchInterval: 30_000 });
  // "Make a rule from this call" in the ledger browser brings the call's command here.
  const fromLedger = new URLSearchParams(useRoute().params).get("rule");
  const brought = useQuery({
    queryKey: ["candidate_rule", fromLedger],
    queryFn: () => backend.candidateRule(fromLedger ?? ""),
    enabled: fromLedger != null,
  });
  const hits = useMemo(() => new Map<string, RuleHitCount>((activity.data?.hits ?? []).map((h) => [h.rule, h])), [activity.data]);
  const failing = check?.examples.filter((e) => !e.passed).length ?? 0;
  const visibleRules = rules
    .map((rule, index) => ({ rule, index }))
    .filter(({ rule }) => !filter || rule.id.includes(filter) || rule.pattern.flat().some((w) => w.includes(filter)));
  const editable = draft.editable && read.ok;
  return (
    <div className="rules-panel" data-testid="rules-panel">
      <div className="rules-head">
        <input
          type="search"
          placeholder="Filter rules by id or word"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          aria-label="Filter rules"
        />
        <span className="muted small" data-testid="rules-count">
          {rules.length} rule{rules.length === 1 ? "" : "s"} · {check ? `${check.examples.length - failing}/${check.examples.length} examples hold` : "checking…"}
        </span>
        <button
          type="button"
          disabled={!editable}
          data-testid="rule-add"
          onClick={() => draft.edit((text) => addRule(text, { id: freshId(rules), pattern: ["command"], decision: "prompt" }))}
        >
          + Add rule
        </button>
      </div>
      {brought.data && (
        <Candidates candidates={[brought.data]} rules={rules} draft={draft} editable={editable} title="From the ledger: a rule for this recorded command" />
      )}
      {activity.data && activity.data.candidates.length > 0 && (
        <Candidates candidates={activity.data.candidates} rules={rules} draft={draft} editable={editable} />
      )}
      {!read.ok && (
        <p className="notice bad small" role="alert" data-testid="rules-unreadable">
          The source does not parse ({read.error}): fix it on the right. The rules below are the last readable ones, read-only.
        </p>
      )}
      {rules.length === 0 && read.ok && <p className="muted">No command rules yet: every command gets the default decision.</p>}
      <ol className="rule-list">
        {visibleRules.slice(0, shown).map(({ rule, index }) => (
          <RuleCard key={index} rule={rule} index={index} draft={draft} editable={editable} outcomes={outcomes} hits={activity.data ? (hits.get(rule.id) ?? null) : undefined} />
        ))}
      </ol>
      {visibleRules.length > shown && (
        <button type="button" onClick={() => setShown((n) => n + SHOWN)}>
          Show {Math.min(SHOWN, visibleRules.length - shown)} more of {visibleRules.length - shown}
        </button>
      )}
    </div>
  );
}

/** Example outcomes by `rule:m|n:example`. */
export function byExample(examples: ExampleOutcome[]): Map<string, ExampleOutcome> {
  return new Map(examples.map((e) => [exampleKey(e.rule_index ?? 0, e.should_match, e.example_index ?? 0), e]));
}

export function exampleKey(rule: number, shouldMatch: boolean, example: number): string {
  return `${rule}:${shouldMatch ? "m" : "n"}:${example}`;
}
