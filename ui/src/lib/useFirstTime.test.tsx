import { describe, expect, it } from "vitest";
import { renderHook, waitFor } from "@testing-library/react";
import { useFirstTime } from "./useFirstTime";

describe("useFirstTime", () => {
  it("is unset until ready, then keeps the first frame's time", async () => {
    const { result, rerender } = renderHook(({ ready }) => useFirstTime(ready), { initialProps: { ready: false } });
    expect(result.current).toBeUndefined();
    const before = Date.now();
    rerender({ ready: true });
    await waitFor(() => expect(result.current).toBeTypeOf("number"));
    const first = result.current ?? 0;
    expect(first).toBeGreaterThanOrEqual(before);
    rerender({ ready: false });
    rerender({ ready: true });
    expect(result.current).toBe(first);
  });
});
