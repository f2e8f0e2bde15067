// Agent text made safe to show a person, exactly as the hub's `harness::untrusted::visible` does for the
// terminal: every control, bidi and zero-width character written as a visible escape (`\x1b`, `\n`,
// `\u{202e}`), so the operator reads what will run, not what the text draws. Which characters: the
// hub's own table, generated into the bindings (`ESCAPED_RANGES`), so the two can never drift. React
// renders the result as text only.
import { ESCAPED_RANGES } from "../backend/backend";

function hidden(code: number): boolean {
  // Printable ASCII is never escaped: the common case costs one comparison.
  if (code >= 0x20 && code < 0x7f) return false;
  return ESCAPED_RANGES.some(([first, last]) => code >= first && code <= last);
}

function escape(code: number): string {
  switch (code) {
    case 0x0a:
      return "\\n";
    case 0x0d:
      return "\\r";
    case 0x09:
      return "\\t";
  }
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** `text` with control and invisible characters escaped. */
export function visible(text: string): string {
  let out = "";
  let changed = false;
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0;
    if (hidden(code)) {
      out += escape(code);
      changed = true;
    } else {
      out += c;
    }
  }
  return changed ? out : text;
}

/** A value of agent JSON as one visible line (strings unquoted). */
export function visibleValue(value: unknown): string {
  return visible(typeof value === "string" ? value : JSON.stringify(value) ?? "");
}
