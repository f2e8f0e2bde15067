// The shell commands the policy prompted for most this week, offered as rules: one click adds the
// command's words as an exact rule (decision allow, the command as its example) to the draft, where the
// operator can widen or narrow it before saving. Commands that are not one simple command are shown but
// not offered (a rule matches one simple command).
import type { CandidateRule } from "../../../backend/backend";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { addRule, type Rule } from "../model";

export function Candidates({
  candidates,
  rules,
  draft,
  editable,
  title,
}: {
  candidates: CandidateRule[];
  rules: Rule[];
  draft: DraftContext;
  editable: boolean;
  /** Shown open with this title (a command brought from the ledger browser). */
  title?: string;
}) {
  return (
    <details className="candidates" data-testid={title ? "ledger-candidate" : "candidates"} open={title != null}>
      <summary className="small">
        {title ?? `Most prompted this week: ${candidates.length} command${candidates.length === 1 ? "" : "s"} you could write a rule for`}
      </summary>
      <ul>
        {candidates.map((c) => (
          <li key={c.command}>
            <span className="muted small">{c.calls}×</span> <code className="mono">{visible(c.command)}</code>{" "}
            {c.words ? (
              <button
                type="button"
                className="small"
                disabled={!editable}
                data-testid="candidate-add"
                onClick={() => draft.edit((text) => addRule(text, { id: candidateId(c.words ?? [], rules), pattern: c.words ?? [], decision: "allow", exact: true, match: [c.command] }))}
              >
                + rule
              </button>
            ) : (
              <span className="muted small">not one simple command</span>
            )}
          </li>
        ))}
      </ul>
    </details>
  );
}

/** An id from the command's first words that no rule uses: `git-status`, `git-status-2`. */
function candidateId(words: string[], rules: Rule[]): string {
  const base = words.slice(0, 2).join("-").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "rule";
  const used = new Set(rules.map((r) => r.id));
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}
