// Line/column ↔ offset for policy text. The backend (Rust) reports 1-based lines and 1-based columns
// counted in UTF-8 bytes; the editor and jsonc-parser count UTF-16 code units from the start of the
// text. Out-of-range input is clamped, never thrown on: a diagnostic may describe an older text.

/** How a column is counted: UTF-8 bytes (the backend's) or UTF-16 code units (JavaScript's). */
export type ColumnUnit = "utf8" | "utf16";

/** Start offsets (UTF-16) of each line; a line ends at "\n" (a "\r" before it stays in the line). */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

function clampInt(value: number, min: number, max: number): number {
  if (!Number.isFinite(value)) return value === Infinity ? max : min;
  return Math.min(max, Math.max(min, Math.trunc(value)));
}

/** UTF-8 length of the UTF-16 code unit run `text[from, to)` (a lone surrogate counts as 3, like U+FFFD). */
function utf8Length(text: string, from: number, to: number): number {
  let bytes = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < to && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Offset (UTF-16, 0-based) of 1-based `line` and `column`. A line before the first or after the last is
 * clamped to it; a column past the line's end gives the end of the line (before its "\n"); a UTF-8 column
 * inside a multi-byte character gives that character's start.
 */
export function lineColumnToOffset(text: string, line: number, column: number, unit: ColumnUnit = "utf8"): number {
  const starts = lineStarts(text);
  const index = clampInt(line, 1, starts.length) - 1;
  const start = starts[index] ?? 0;
  const next = starts[index + 1];
  const end = next === undefined ? text.length : next - 1;
  const wanted = clampInt(column, 1, Number.MAX_SAFE_INTEGER) - 1;
  if (unit === "utf16") return Math.min(end, start + wanted);
  let bytes = 0;
  let at = start;
  while (at < end) {
    const width = isHighSurrogateAt(text, at, end) ? 2 : 1;
    const size = utf8Length(text, at, at + width);
    if (bytes + size > wanted) break;
    bytes += size;
    at += width;
  }
  return at;
}

function isHighSurrogateAt(text: string, at: number, end: number): boolean {
  const code = text.charCodeAt(at);
  return code >= 0xd800 && code <= 0xdbff && at + 1 < end && isLowSurrogate(text.charCodeAt(at + 1));
}

/** 1-based line and column of a UTF-16 `offset` (clamped to the text), the column counted in `unit`. */
export function offsetToLineColumn(
  text: string,
  offset: number,
  unit: ColumnUnit = "utf8",
): { line: number; column: number } {
  const at = clampInt(offset, 0, text.length);
  const start = at === 0 ? 0 : text.lastIndexOf("\n", at - 1) + 1;
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) line++;
  const column = (unit === "utf16" ? at - start : utf8Length(text, start, at)) + 1;
  return { line, column };
}
