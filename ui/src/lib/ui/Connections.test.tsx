import { describe, expect, it } from "vitest";
import { render, screen, within } from "@testing-library/react";
import type { Connection } from "../../backend/backend";
import { byteSize } from "../numbers";
import { ConnectionList, ConnectionsBadge } from "./Connections";

const reached: Connection = {
  kind: "tcp",
  host: "registry.npmjs.org",
  port: 443,
  allowed: true,
  why: "rule `npm-install` (policy.json)",
  bytes_out: 812,
  bytes_in: 1_650_000,
};
const refused: Connection = {
  kind: "tcp",
  host: "paste.example\u001b[2J",
  port: 443,
  allowed: false,
  why: "network to paste.example:443 refused: rule `npm-install` (policy.json) allows registry.npmjs.org",
  bytes_out: 0,
  bytes_in: 0,
};
const lookup: Connection = { ...refused, kind: "dns", host: "c2VjcmV0.paste.example", port: 53, why: "DNS lookup refused" };

describe("connections through the egress proxy", () => {
  it("lists each as reached or refused, with bytes or the reason, and escapes the agent's host", () => {
    render(<ConnectionList connections={[reached, refused, lookup]} testId="conns" />);
    const items = within(screen.getByTestId("conns")).getAllByRole("listitem");
    expect(items.map((i) => i.dataset.allowed)).toEqual(["true", "false", "false"]);
    expect(items[0]!.textContent).toBe("reached registry.npmjs.org:443 812 B out · 1.7 MB in · rule `npm-install` (policy.json)");
    expect(items[1]!.textContent).not.toContain("\u001b");
    expect(items[1]!.textContent).toContain("refused paste.example\\x1b[2J:443 network to paste.example:443 refused");
    expect(items[2]!.textContent).toContain("DNS c2VjcmV0.paste.example DNS lookup refused");
  });

  it("counts them in a badge that turns to the warning colour when any was refused", () => {
    const { rerender } = render(<ConnectionsBadge connections={[reached]} />);
    expect(screen.getByTestId("connections-badge").textContent).toBe("1 connection");
    expect(screen.getByTestId("connections-badge").className).not.toContain("refused");
    rerender(<ConnectionsBadge connections={[reached, refused, lookup]} />);
    expect(screen.getByTestId("connections-badge").textContent).toBe("3 connections · 2 refused");
    expect(screen.getByTestId("connections-badge").className).toContain("conn-badge-refused");
  });

  it("writes byte sizes in powers of 1000", () => {
    expect([0, 999, 1000, 1_650_000, 24_000_000].map(byteSize)).toEqual(["0 B", "999 B", "1.0 kB", "1.7 MB", "24 MB"]);
  });
});
