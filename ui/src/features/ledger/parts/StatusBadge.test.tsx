import { describe, expect, it } from "vitest";
import { render } from "@testing-library/react";
import { StatusBadge } from "./StatusBadge";
import type { CallRow } from "../../../backend/backend";

type Row = Pick<CallRow, "status" | "decided_by" | "policy_decision" | "reason">;

describe("a call's status", () => {
  // One row per call: what the badge says.
  const rows: Array<[Row, string]> = [
    [{ status: "finished", decided_by: "rule", policy_decision: "allow", reason: null }, "✓ finished"],
    [{ status: "blocked", decided_by: "rule", policy_decision: "forbidden", reason: "execution_denied" }, "✕ blocked"],
    [{ status: "blocked", decided_by: "approval_timeout", policy_decision: "prompt", reason: "execution_denied" }, "⏱ timed out?"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, reason: "duplicate_effect" }, "↺ retry answered"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, reason: "outcome_unknown" }, "? outcome unknown"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, reason: "effect_conflict" }, "✕ blocked"],
    [{ status: "interrupted", decided_by: "rule", policy_decision: "allow", reason: null }, "⏸ interrupted"],
  ];
  for (const [row, words] of rows) {
    it(`${row.status} ${row.reason ?? ""} reads "${words}"`, () => {
      const { container } = render(<StatusBadge row={row} />);
      expect(container.textContent).toBe(words);
    });
  }
});
