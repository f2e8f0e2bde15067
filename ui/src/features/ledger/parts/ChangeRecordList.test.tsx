// The change set the call's record keeps, in the drawer: counts, each change with its size and short
// digest and why (agent text escaped); and the marks of the calls table: contained, held, discarded.
import { describe, expect, it } from "vitest";
import { render, screen, within } from "@testing-library/react";
import type { CallRow, ChangeRecord } from "../../../backend/backend";
import { ChangesMark, ContainedMark, columnById } from "../columns";
import { ChangeRecordList, shortDigest, sizeWords } from "./ChangeRecordList";

const CWD = "/home/dev/shop";

const RECORD: ChangeRecord = {
  kept: 1,
  held: 1,
  discarded: 2,
  entries: [
    { path: `${CWD}/src/new.txt`, what: "file", size: 5, sha256: "78051faade059d70866df6a3fb83ef348721fd74a87e93ef95c493f87d0d236b", outcome: "kept" },
    {
      path: `${CWD}/.env\u202e.local`,
      what: "file",
      size: 2048,
      sha256: "33de8da734e9c0cdbd949d8e6d8261b8fd87440825333939d600acb6e3abd164",
      outcome: "held",
      why: "the deny glob \".env*\" names it \u001b[31m",
    },
    { path: `${CWD}/pipe`, what: "special", sha256: null, outcome: "discarded", why: "a FIFO: never kept" },
  ],
  truncated: true,
};

describe("the change set in the drawer", () => {
  it("lists each change with its size, short digest and why, escaping the agent's text", () => {
    render(<ChangeRecordList record={RECORD} cwd={CWD} />);
    const list = screen.getByTestId("drawer-change-record");
    expect(within(list).getByTestId("change-record-counts").textContent).toBe("1 kept · 1 held · 2 discarded");
    const rows = within(list).getAllByTestId("change-record-entry");
    expect(rows.map((r) => r.textContent)).toEqual([
      "keptfilesrc/new.txt5 B78051faade05",
      "heldfile.env\\u{202e}.local2.0 KiB33de8da734e9the deny glob \".env*\" names it \\x1b[31m",
      "discardedspecialpipea FIFO: never kept",
    ]);
    expect(list.textContent).not.toContain("\u202e");
    expect(list.textContent).toContain("1 more not listed");
  });

  it("writes sizes and digests short", () => {
    expect([sizeWords(812), sizeWords(4300), sizeWords(1 << 20), sizeWords(null)]).toEqual(["812 B", "4.2 KiB", "1.0 MiB", ""]);
    expect(shortDigest(null)).toBe("");
  });
});

describe("the marks of a call in the table", () => {
  const row = (over: Partial<CallRow>) => ({ policy_decision: "allow", contained: false, changes: null, ...over }) as CallRow;
  it("marks a contained call in the decision columns and held or discarded changes", () => {
    const policy = columnById("policy");
    const { container } = render(<>{policy?.cell(row({ contained: true }), 0)}</>);
    expect(container.textContent).toBe("allowcontained");
    expect(render(<ContainedMark row={row({})} />).container.textContent).toBe("");
    expect(render(<ChangesMark row={row({ changes: "held" })} />).container.textContent).toBe("held");
    expect(render(<ChangesMark row={row({ changes: "discarded" })} />).container.textContent).toBe("discarded");
    expect(render(<ChangesMark row={row({ changes: "kept" })} />).container.textContent).toBe("kept");
    expect(render(<ChangesMark row={row({})} />).container.textContent).toBe("");
  });
});
