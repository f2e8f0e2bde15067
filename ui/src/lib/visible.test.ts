import { describe, expect, it } from "vitest";
import { visible } from "./visible";

describe("visible", () => {
  // The same table as the hub's `untrusted::visible` tests.
  const rows: Array<[string, string]> = [
    ["ls -la", "ls -la"],
    ["rm x\r\x1b[2Kls -la", "rm x\\r\\x1b[2Kls -la"],
    ["a\nb\tc", "a\\nb\\tc"],
    ["\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\\x1b[0m"],
    ["x\x7fy", "x\\x7fy"],
    ["\u009b31m", "\\u{9b}31m"],
    ["echo \u202etxt.exe", "echo \\u{202e}txt.exe"],
    ["r\u200bm", "r\\u{200b}m"],
    ["\ufeffls", "\\u{feff}ls"],
    ["naïve café ✓", "naïve café ✓"],
    ["find . -exec rm {} \\;", "find . -exec rm {} \\;"],
    // Ranges the hub's table added after the first version of this file: read from the bindings.
    ["soft\u00adhyphen", "soft\\u{ad}hyphen"],
    ["tag\u{e0041}", "tag\\u{e0041}"],
    ["\u{1d173}note", "\\u{1d173}note"],
  ];
  it.each(rows)("shows %j as %j", (raw, shown) => {
    expect(visible(raw)).toBe(shown);
  });
});
