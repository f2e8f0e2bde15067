// Tests and lint of the open draft: every rule example (from the live check) and every test case (judged
// as a live call, on demand and after each pause in typing) with its result, and the lint findings of the
// whole policy with the draft in place (dead, shadowed, voided, redundant rules), each linked to its line.
import { useQuery } from "@tanstack/react-query";
import type { DraftCheck } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { DecisionBadge } from "../../../lib/ui/DecisionBadge";
import { visible } from "../../../lib/visible";
import type { DraftContext } from "../DraftEditor";
import { useSettled } from "../useSettled";

export function TestsPanel({ draft, check }: { draft: DraftContext; check: DraftCheck | null }) {
  const backend = useBackend();
  const text = useSettled(draft.text, 400);
  const loads = check != null && check.problem == null;
  const tests = useQuery({
    queryKey: ["test_policy_draft", draft.file, text],
    queryFn: () => backend.testPolicyDraft(draft.file, text),
    enabled: loads,
    placeholderData: (previous) => previous,
  });
  const lint = useQuery({
    queryKey: ["lint_policy_draft", draft.file, text],
    queryFn: () => backend.lintPolicyDraft(draft.file, text),
    enabled: loads,
    placeholderData: (previous) => previous,
  });
  const examples = check?.examples ?? [];
  return (
    <div className="tests-panel" data-testid="tests-panel">
      <h3>
        Test cases{" "}
        <span className="muted small">{tests.data
            ? tests.data.length === 0
              ? "none yet: save a playground trial as a test case"
              : `${tests.data.filter((t) => t.passed).length}/${tests.data.length} pass`
            : loads
              ? "running…"
              : "the draft must load first"}</span>
      </h3>
      {tests.isError && <p className="bad">{visible((tests.error as Error).message)}</p>}
      <ul className="results">
        {(tests.data ?? []).map((t, i) => (
          <li key={i} className={t.passed ? "pass" : "fail"} data-testid="test-case" data-passed={t.passed}>
            <span aria-label={t.passed ? "passes" : "fails"}>{t.passed ? "✓" : "✕"}</span> {visible(t.name)}{" "}
            <span className="muted small">
              expects <DecisionBadge decision={t.expected} /> got <DecisionBadge decision={t.got} /> · {visible(t.decided_by)}
            </span>
          </li>
        ))}
      </ul>
      <h3>
        Rule examples <span className="muted small">{examples.filter((e) => e.passed).length}/{examples.length} hold</span>
      </h3>
      <ul className="results">
        {examples
          .filter((e) => !e.passed)
          .map((e, i) => (
            <li key={i} className="fail">
              ✕ <span className="mono">{visible(e.rule)}</span>: <code className="mono">{visible(e.example)}</code> {e.should_match ? "should match" : "should not match"} —{" "}
              {visible(e.why ?? "")}{" "}
              <button type="button" className="link small" onClick={() => draft.reveal(e.line)}>
                line {e.line}
              </button>
            </li>
          ))}
        {examples.length > 0 && examples.every((e) => e.passed) && <li className="pass">✓ every example holds</li>}
      </ul>
      <h3>
        Lint <span className="muted small">{lint.data ? `${lint.data.findings.length} finding${lint.data.findings.length === 1 ? "" : "s"} over ${lint.data.rules} rules` : ""}</span>
      </h3>
      <ul className="results" data-testid="lint-findings">
        {(lint.data?.findings ?? []).map((f, i) => (
          <li key={i} className={f.severity === "warning" ? "fail" : undefined} data-testid="lint-finding">
            <span className="muted small">{f.severity} · {f.kind.replace("_", " ")}</span> <span className="mono">{visible(f.rule)}</span>: {visible(f.message)}{" "}
            {f.source === draft.file && f.line > 0 ? (
              <button type="button" className="link small" onClick={() => draft.reveal(f.line)}>
                line {f.line}
              </button>
            ) : (
              <span className="muted small">{visible(f.source)}</span>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
