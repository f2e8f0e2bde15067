import { describe, expect, it } from "vitest";
import { render } from "@testing-library/react";
import { StatusBadge } from "./StatusBadge";
import type { CallRow } from "../../../backend/backend";

type Row = Pick<CallRow, "status" | "decided_by" | "policy_decision" | "error_code">;

describe("a call's status", () => {
  // One row per call: what the badge says.
  const rows: Array<[Row, string]> = [
    [{ status: "finished", decided_by: "rule", policy_decision: "allow", error_code: null }, "✓ finished"],
    [{ status: "blocked", decided_by: "rule", policy_decision: "forbidden", error_code: "execution_denied" }, "✕ blocked"],
    [{ status: "blocked", decided_by: "approval_timeout", policy_decision: "prompt", error_code: "execution_denied" }, "⏱ timed out?"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "duplicate_effect" }, "↺ duplicate"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "effect_marked_failed" }, "✕ blocked"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "cancelled" }, "✕ blocked"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "outcome_unknown" }, "? unknown"],
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "effect_conflict" }, "✕ blocked"],
    [{ status: "interrupted", decided_by: "rule", policy_decision: "allow", error_code: null }, "⏸ interrupted"],
    // A code an older or newer ledger wrote that this build does not know: blocked, as written.
    [{ status: "blocked", decided_by: "validator", policy_decision: null, error_code: "quota_exceeded" }, "✕ blocked"],
  ];
  for (const [row, words] of rows) {
    it(`${row.status} ${row.error_code ?? ""} reads "${words}"`, () => {
      const { container } = render(<StatusBadge row={row} />);
      expect(container.textContent).toBe(words);
    });
  }
});
