// How to hook agents up, as the hub computed it for itself (its port, token file, binary): each snippet
// with where it goes and a one-click copy that says "copied"; when the clipboard refuses, the text is
// selected so that Ctrl+C copies it.
import { useRef, useState } from "react";
import type { HookupSnippet } from "../../../backend/backend";

export function HookupSnippets({ snippets }: { snippets: HookupSnippet[] }) {
  return (
    <div className="snippets" data-testid="hookup">
      {snippets.map((s) => (
        <Snippet key={`${s.client}/${s.purpose}`} snippet={s} />
      ))}
    </div>
  );
}

function Snippet({ snippet }: { snippet: HookupSnippet }) {
  const text = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState<"copied" | "select" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(snippet.text);
      setCopied("copied");
    } catch {
      const pre = text.current;
      const selection = window.getSelection();
      if (pre && selection) {
        const range = document.createRange();
        range.selectNodeContents(pre);
        selection.removeAllRanges();
        selection.addRange(range);
      }
      setCopied("select");
    }
  };
  return (
    <div className="snippet" data-testid="hookup-snippet" data-client={snippet.client}>
      <div className="snippet-head">
        <strong>{snippet.client}</strong>
        <span>{snippet.purpose}</span>
        <span className="muted mono">{snippet.file ? `in ${snippet.file}` : "run in a terminal"}</span>
        <button type="button" className="copy" onClick={() => void copy()} data-testid="copy-snippet">
          {copied === "copied" ? "✓ Copied" : "Copy"}
        </button>
        {copied === "select" && <span className="failure">the clipboard refused: the text is selected, press Ctrl+C</span>}
      </div>
      <pre ref={text} className={`mono snippet-text lang-${snippet.language}`}>
        {snippet.text}
      </pre>
    </div>
  );
}
