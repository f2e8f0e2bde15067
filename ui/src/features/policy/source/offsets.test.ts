// Line/column ↔ offset: 1-based, clamped, UTF-8 columns (the backend's) and UTF-16 columns.
import { describe, expect, it } from "vitest";
import { lineColumnToOffset, offsetToLineColumn } from "./offsets";

const TEXT = '{\n  "a": 1,\n  "b": "é😀x"\n}';

describe("lineColumnToOffset", () => {
  it("finds 1-based lines and columns", () => {
    expect(lineColumnToOffset(TEXT, 1, 1)).toBe(0);
    expect(lineColumnToOffset(TEXT, 2, 3)).toBe(TEXT.indexOf('"a"'));
    expect(lineColumnToOffset(TEXT, 4, 1)).toBe(TEXT.lastIndexOf("}"));
  });

  it("clamps lines and columns out of range, and odd numbers", () => {
    expect(lineColumnToOffset(TEXT, 0, 1)).toBe(0);
    expect(lineColumnToOffset(TEXT, -5, -5)).toBe(0);
    expect(lineColumnToOffset(TEXT, 99, 1)).toBe(TEXT.lastIndexOf("}"));
    expect(lineColumnToOffset(TEXT, 99, 99)).toBe(TEXT.length);
    expect(lineColumnToOffset(TEXT, 2, 999)).toBe(TEXT.indexOf(",") + 1);
    expect(lineColumnToOffset(TEXT, Number.NaN, Number.NaN)).toBe(0);
    expect(lineColumnToOffset(TEXT, 2.7, 3.9)).toBe(TEXT.indexOf('"a"'));
    expect(lineColumnToOffset("", 3, 3)).toBe(0);
  });

  it("counts columns in UTF-8 bytes by default, and in UTF-16 units on request", () => {
    const line3 = TEXT.indexOf('  "b"');
    const e = TEXT.indexOf("é");
    // `  "b": "` is 8 bytes, é 2, 😀 4.
    expect(lineColumnToOffset(TEXT, 3, 9)).toBe(e);
    expect(lineColumnToOffset(TEXT, 3, 11)).toBe(e + 1);
    expect(lineColumnToOffset(TEXT, 3, 15)).toBe(e + 3);
    expect(lineColumnToOffset(TEXT, 3, 10)).toBe(e); // inside é: its start
    expect(lineColumnToOffset(TEXT, 3, 13)).toBe(e + 1); // inside 😀: its start
    expect(lineColumnToOffset(TEXT, 3, 11, "utf16")).toBe(line3 + 10);
  });

  it("keeps a CR before LF inside its line", () => {
    expect(lineColumnToOffset("ab\r\ncd", 1, 99)).toBe(3);
    expect(lineColumnToOffset("ab\r\ncd", 2, 1)).toBe(4);
  });
});

describe("offsetToLineColumn", () => {
  it("is the inverse on character boundaries", () => {
    for (let offset = 0; offset <= TEXT.length; offset++) {
      if (TEXT.charCodeAt(offset - 1) >= 0xd800 && TEXT.charCodeAt(offset - 1) <= 0xdbff) continue;
      for (const unit of ["utf8", "utf16"] as const) {
        const { line, column } = offsetToLineColumn(TEXT, offset, unit);
        expect(lineColumnToOffset(TEXT, line, column, unit)).toBe(offset);
      }
    }
  });

  it("clamps offsets, and handles a leading newline", () => {
    expect(offsetToLineColumn(TEXT, -3)).toEqual({ line: 1, column: 1 });
    expect(offsetToLineColumn(TEXT, 10_000)).toEqual({ line: 4, column: 2 });
    expect(offsetToLineColumn("\nx", 0)).toEqual({ line: 1, column: 1 });
    expect(offsetToLineColumn("\nx", 1)).toEqual({ line: 2, column: 1 });
  });

  it("counts UTF-8 bytes by default", () => {
    const after = TEXT.indexOf("x");
    expect(offsetToLineColumn(TEXT, after)).toEqual({ line: 3, column: 15 });
    expect(offsetToLineColumn(TEXT, after, "utf16")).toEqual({ line: 3, column: 12 });
  });
});
