import { describe, expect, it } from "vitest";
import { callFilter } from "./filter";
import { EMPTY_QUERY, filterKey, formatQuery, isFiltered, parseQuery } from "./query";

describe("ledger view state in the URL", () => {
  it("round-trips every part of a view", () => {
    const q = {
      ...EMPTY_QUERY,
      file: "/tmp/a ledger.db",
      tab: "stats" as const,
      tools: ["shell", "mcp__fs__read"],
      statuses: ["blocked"],
      reasons: ["duplicate_effect", "outcome_unknown"],
      deciders: ["operator"],
      decisions: ["prompt"],
      changes: ["held", "discarded"],
      rule: "git-push",
      owners: ["claude-code"],
      session: "s-1",
      range: "24h" as const,
      search: "rm -rf",
      order: "oldest" as const,
      call: { session: "s-1", id: "call/7" },
      columns: ["at", "tool"],
      widths: { tool: 180 },
    };
    expect(parseQuery(formatQuery(q))).toEqual(q);
  });

  it("writes nothing for the default view and drops what it does not know", () => {
    expect(formatQuery(EMPTY_QUERY)).toBe("");
    const q = parseQuery("tab=nope&status=exploded&status=error&range=9y&since=garbage&w=tool:5,at:120&call=noslash");
    expect(q.tab).toBe("calls");
    expect(q.statuses).toEqual(["error"]);
    expect(parseQuery("reason=made_up&reason=effect_conflict").reasons).toEqual(["effect_conflict"]);
    expect(q.range).toBeNull();
    expect(q.since).toBeNull();
    expect(q.widths).toEqual({ at: 120 });
    expect(q.call).toBeNull();
  });

  it("a custom range is kept only without a preset", () => {
    const q = parseQuery("since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00Z");
    expect(q.since).toBe("2026-11-01T00:00:00Z");
    expect(parseQuery("range=1h&since=2026-11-01T00:00:00Z").since).toBeNull();
  });

  it("the filter key ignores tab, open call, columns and order", () => {
    const base = parseQuery("tool=shell");
    expect(filterKey({ ...base, tab: "stats", call: { session: "s", id: "c" }, order: "oldest" })).toBe(
      filterKey(base),
    );
    expect(isFiltered(base)).toBe(true);
    expect(isFiltered({ ...EMPTY_QUERY, file: "/x.db" })).toBe(false);
  });
});

describe("call filter", () => {
  it("resolves a range preset against now and custom bounds to microseconds", () => {
    const now = Date.parse("2026-12-01T12:00:00Z");
    const f = callFilter(parseQuery("range=1h&tool=shell&q=%20kubectl%20"), now);
    expect(f.since).toBe((now - 3_600_000) * 1000);
    expect(f.until).toBeNull();
    expect(f.tools).toEqual(["shell"]);
    expect(f.search).toBe("kubectl");
    expect(callFilter(parseQuery("reason=duplicate_effect"), now).reasons).toEqual(["duplicate_effect"]);
    const c = callFilter(parseQuery("since=2026-11-01T00:00:00Z"), now);
    expect(c.since).toBe(Date.parse("2026-11-01T00:00:00Z") * 1000);
    expect(callFilter(EMPTY_QUERY, now).search).toBeNull();
    expect(callFilter(parseQuery("changes=held&changes=discarded&changes=bogus"), now).changes).toEqual(["held", "discarded"]);
  });
});
