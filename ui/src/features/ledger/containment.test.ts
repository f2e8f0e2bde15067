import { describe, expect, it } from "vitest";
import type { CallDetail } from "../../backend/backend";
import { containmentOf } from "./changes";

const detail = (records: unknown[]) => ({ records }) as unknown as CallDetail;

describe("containmentOf", () => {
  it("finds the walls of a call that ran contained, and nothing for any other", () => {
    const contained = { unread: ["InterpreterCode cannot be judged statically: python3 -c x"], masked: [] };
    expect(containmentOf(detail([{ action: { sandbox: { contained } } }]))).toEqual(contained);
    expect(containmentOf(detail([{ action: { sandbox: {} } }, { action: null }]))).toBeNull();
    expect(containmentOf(detail([]))).toBeNull();
  });
});
