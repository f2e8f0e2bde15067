// Agent text made safe to show a person, as the hub's `harness::untrusted::visible` does for the terminal:
// every control, bidi and zero-width character written as a visible escape (`\x1b`, `\n`, `\u{202e}`),
// so the operator reads what will run, not what the text draws. React renders the result as text only.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/u;

function escape(c: string): string {
  switch (c) {
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
  }
  const code = c.codePointAt(0) ?? 0;
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** `text` with control and invisible characters escaped. */
export function visible(text: string): string {
  if (!HIDDEN.test(text)) return text;
  let out = "";
  for (const c of text) out += HIDDEN.test(c) ? escape(c) : c;
  return out;
}

/** A value of agent JSON as one visible line (strings unquoted). */
export function visibleValue(value: unknown): string {
  return visible(typeof value === "string" ? value : JSON.stringify(value) ?? "");
}
