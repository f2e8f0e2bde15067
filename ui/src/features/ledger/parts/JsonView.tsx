// Agent JSON and text for a person to read: pretty-printed, every line through visible(), the
// redactor's `[REDACTED]` marks drawn as marks (the value they replaced was never recorded), long
// values cut with a way to see all. Rendered as text only.
import { useState } from "react";
import { visible } from "../../../lib/visible";
import { count } from "../../../lib/numbers";

/** Most characters shown before "show all". */
export const SHOWN_CHARS = 20_000;

const REDACTED = /(\[REDACTED(?::[^\]]*)?\])/;

function Line({ text }: { text: string }) {
  const parts = visible(text).split(REDACTED);
  return (
    <>
      {parts.map((p, i) =>
        i % 2 === 1 ? (
          <span key={i} className="redacted-span" data-testid="redacted-span" title="a secret was here: it was replaced before the call was recorded">
            {p}
          </span>
        ) : (
          p
        ),
      )}
    </>
  );
}

export function TextBlock({ text, testId }: { text: string; testId?: string }) {
  const [all, setAll] = useState(false);
  const cut = !all && text.length > SHOWN_CHARS;
  const shown = cut ? text.slice(0, SHOWN_CHARS) : text;
  return (
    <div className="text-block" data-testid={testId}>
      <pre className="mono">
        {shown.split("\n").map((line, i) => (
          <div key={i}>
            <Line text={line} />
          </div>
        ))}
      </pre>
      {cut && (
        <button type="button" className="link" onClick={() => setAll(true)}>
          Show all ({count(text.length)} characters)
        </button>
      )}
    </div>
  );
}

export function JsonView({ value, testId }: { value: unknown; testId?: string }) {
  return <TextBlock text={JSON.stringify(value, null, 2) ?? "null"} testId={testId} />;
}
