// "Always", before anything is saved: the rule that would be written with its scope editable (the exact
// command, or a prefix of its words), the policy file it goes to, the diff of that file, and what the
// rule would have changed over the ledger. Enter writes the rule (and allows the call), Esc goes back.
import { useEffect, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import { asBackendError, type Approval, type RuleScope } from "../../../backend/backend";
import { Diff } from "../../../lib/ui/Diff";
import { Kbd } from "../../../lib/ui/Kbd";
import { visible } from "../../../lib/visible";

export interface AlwaysSheetProps {
  approval: Approval;
  /** How many identical waiting calls the answer covers. */
  count: number;
  onCancel(): void;
  onWrite(scope: RuleScope[]): void;
}

const scopeKey = (s: RuleScope) => `${s.words}:${s.exact ? "exact" : "prefix"}`;

/** The scopes a rule of `words` can take: exactly the command, then ever shorter prefixes. */
export function scopeChoices(words: string[]): Array<{ scope: RuleScope; label: string }> {
  const all = words.map(visible);
  const choices = [{ scope: { words: words.length, exact: true }, label: `exactly: ${all.join(" ")}` }];
  for (let n = words.length; n >= 1; n -= 1) {
    choices.push({ scope: { words: n, exact: false }, label: `prefix: ${all.slice(0, n).join(" ")} …` });
  }
  return choices;
}

export function AlwaysSheet({ approval, count, onCancel, onWrite }: AlwaysSheetProps) {
  const backend = useBackend();
  const offered = approval.always.offered === "yes" ? approval.always.rules : [];
  const [scope, setScope] = useState<RuleScope[]>(() => offered.map((r) => ({ words: r.words.length, exact: true })));
  const preview = useQuery({
    queryKey: ["always-preview", approval.id, scope.map(scopeKey).join(",")],
    queryFn: () => backend.alwaysPreview(approval.id, scope),
    retry: false,
  });
  const ready = preview.data?.allows_call === true;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.preventDefault();
        onCancel();
      } else if (e.key === "Enter" && ready && (e.target as HTMLElement | null)?.tagName !== "SELECT") {
        e.preventDefault();
        onWrite(scope);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onCancel, onWrite, ready, scope]);

  const p = preview.data;
  const impact = p?.impact;
  return (
    <div className="sheet-backdrop" onClick={onCancel}>
      <section
        className="sheet"
        role="dialog"
        aria-modal="true"
        aria-label="Always allow"
        data-testid="always-sheet"
        onClick={(e) => e.stopPropagation()}
      >
        <h2>
          {p != null && p.hosts.length > 0
            ? `Always allow ${p.hosts.map((h) => `${visible(h.host)} (rule ${visible(h.rule)})`).join(", ")} — add it to the rule`
            : `Always allow — write ${offered.length === 1 ? "a rule" : `${offered.length} rules`} to the policy`}
        </h2>
        {offered.map((rule, i) => (
          <label key={rule.id} className="scope-row">
            <span className="label">Rule {visible(rule.id)} allows</span>
            <select
              data-testid="always-scope"
              value={scopeKey(scope[i] ?? { words: rule.words.length, exact: true })}
              onChange={(e) => {
                const chosen = scopeChoices(rule.words).find((c) => scopeKey(c.scope) === e.target.value);
                if (chosen) setScope(scope.map((s, j) => (j === i ? chosen.scope : s)));
              }}
            >
              {scopeChoices(rule.words).map((c) => (
                <option key={scopeKey(c.scope)} value={scopeKey(c.scope)}>
                  {c.label}
                </option>
              ))}
            </select>
          </label>
        ))}
        {preview.isError && (
          <p className="failure" role="alert">
            {asBackendError(preview.error).message}
          </p>
        )}
        {p && (
          <>
            {p.creates ? (
              <p data-testid="always-creates">
                <strong>creates your policy file</strong>{" "}
                <span className="mono" data-testid="always-file">{visible(p.file)}</span>: no policy file is in force
                yet (the built-in default is), so it starts as the built-in default's rules (shown unchanged below) plus
                this one.
              </p>
            ) : (
              <p>
                into <span className="mono" data-testid="always-file">{visible(p.file)}</span>
              </p>
            )}
            {p.read_roots.length > 0 && (
              <p className="small">
                and read access to{" "}
                {p.read_roots.map((r) => (
                  <span key={r} className="mono">
                    {visible(r)}{" "}
                  </span>
                ))}
              </p>
            )}
            <Diff lines={p.diff} testId="always-diff" />
            <p data-testid="always-impact">
              {impact ? (
                <>
                  Over the ledger ({impact.calls} calls): it would have allowed <strong>{impact.would_allow}</strong>{" "}
                  past call{impact.would_allow === 1 ? "" : "s"} the policy did not allow
                  {impact.would_allow > 0 ? (
                    <>
                      ; <strong>{impact.were_refused}</strong> of them were refused then (denied, timed out or
                      forbidden)
                    </>
                  ) : null}
                  .
                </>
              ) : (
                <span className="muted">The ledger could not be read: {visible(p.impact_error ?? "unknown")}</span>
              )}
            </p>
            {impact && impact.examples.length > 0 && (
              <ul className="small mono">
                {impact.examples.map((x) => (
                  <li key={x}>{visible(x)}</li>
                ))}
              </ul>
            )}
            {!p.allows_call && (
              <p className="failure">With this rule the policy would still not allow this call.</p>
            )}
          </>
        )}
        {preview.isPending && <p className="muted">Checking the rule against the policy and the ledger…</p>}
        <footer className="answers">
          <button
            type="button"
            className="answer answer-always"
            data-testid="always-write"
            disabled={!ready}
            onClick={() => onWrite(scope)}
          >
            <Kbd>Enter</Kbd> {p != null && p.hosts.length > 0 ? "Add the host and allow" : "Write rule and allow"}
            {count > 1 ? ` all ${count}` : ""}
          </button>
          <button type="button" onClick={onCancel}>
            <Kbd>Esc</Kbd> Back
          </button>
        </footer>
      </section>
    </div>
  );
}
