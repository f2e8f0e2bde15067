// The "Decided by" column reads in plain words from the hub's one table (`DeciderKind::words`,
// generated as DECIDER_KIND_WORDS), never the column's raw kind; the rule or operator after it is agent
// text and stays escaped.
import { describe, expect, it } from "vitest";
import { render } from "@testing-library/react";
import { DECIDER_KINDS, DECIDER_KIND_WORDS, type CallRow } from "../../backend/backend";
import { COLUMNS, decidedWords } from "./columns";
import { deciderWords } from "./query";

type Decided = Pick<CallRow, "decided_by" | "decided_operator" | "decided_rule">;
const decided = (over: Partial<Decided>): Decided => ({ decided_by: "rule", decided_operator: null, decided_rule: null, ...over });

describe("who decided a call", () => {
  it("names a protected place in words, then the place", () => {
    const row = decided({ decided_by: "protected_place", decided_rule: "the hub's secrets" });
    expect(decidedWords(row)).toBe("protected place · the hub's secrets");
  });

  it("says the approval timed out, with nobody named", () => {
    expect(decidedWords(decided({ decided_by: "approval_timeout" }))).toBe("approval timed out");
    expect(decidedWords(decided({ decided_by: "approval_timeout" }))).toBe(DECIDER_KIND_WORDS.approval_timeout);
  });

  it("names the operator after the kind's words, escaped", () => {
    const row = decided({ decided_by: "operator", decided_operator: "ada\u202e (app): approved_once" });
    expect(decidedWords(row)).toBe("operator · ada\\u{202e} (app): approved_once");
  });

  it("shows the column's cell in words", () => {
    const cell = COLUMNS.find((c) => c.id === "decided")?.cell;
    const row = { ...decided({ decided_by: "protected_place", decided_rule: "policy file" }), contained: false } as CallRow;
    const { container } = render(<>{cell?.(row, 0)}</>);
    expect(container.textContent).toBe("protected place · policy file");
  });

  it("has words for every kind, and a kind this build does not know as written, escaped", () => {
    for (const kind of DECIDER_KINDS) {
      expect(deciderWords(kind)).toBe(DECIDER_KIND_WORDS[kind]);
      expect(deciderWords(kind)).not.toMatch(/_/);
    }
    expect(deciderWords("constructor")).toBe("constructor");
    expect(deciderWords("oracle\u001b")).toBe("oracle\\x1b");
  });
});
