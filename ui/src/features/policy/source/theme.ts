// The policy editor's look from the window's design tokens (src/app/theme.css), so it follows the light
// and dark schemes: monospace text, the panel colors, and JSON highlighting in the app's color language.
import type { Extension } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags } from "@lezer/highlight";

const tint = (token: string, percent: number) => `color-mix(in srgb, var(${token}) ${percent}%, transparent)`;

const editorTheme = EditorView.theme({
  "&": { height: "100%", color: "var(--text)", backgroundColor: "var(--panel)", fontSize: "13px" },
  "&.cm-focused": { outline: "2px solid var(--accent)", outlineOffset: "-2px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5", overflow: "auto" },
  ".cm-content": { caretColor: "var(--text)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--text)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection":
    { backgroundColor: tint("--accent", 28) },
  ".cm-activeLine": { backgroundColor: tint("--accent", 6) },
  ".cm-gutters": { backgroundColor: "var(--panel-2)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLineGutter": { backgroundColor: tint("--accent", 12), color: "var(--text)" },
  ".cm-matchingBracket, &.cm-focused .cm-matchingBracket": { backgroundColor: tint("--allow", 22), outline: "none" },
  ".cm-nonmatchingBracket, &.cm-focused .cm-nonmatchingBracket": { backgroundColor: tint("--forbidden", 22) },
  ".cm-foldPlaceholder": { backgroundColor: "var(--panel-2)", border: "1px solid var(--border)", color: "var(--muted)" },
  ".cm-tooltip": {
    backgroundColor: "var(--panel)", color: "var(--text)", border: "1px solid var(--border)", borderRadius: "6px",
    fontFamily: "var(--sans)", maxWidth: "min(520px, 80vw)",
  },
  ".cm-tooltip code, .cm-diagnostic code": { fontFamily: "var(--mono)", backgroundColor: "var(--panel-2)", padding: "0 3px", borderRadius: "3px" },
  ".cm-tooltip-autocomplete > ul > li[aria-selected]": { backgroundColor: "var(--accent)", color: "var(--panel)" },
  ".cm-policy-hover": { padding: "4px 8px", whiteSpace: "pre-wrap" },
  ".cm-policy-hover-type": { color: "var(--muted)", fontFamily: "var(--mono)", fontSize: "12px", marginTop: "4px" },
  ".cm-diagnostic": { whiteSpace: "pre-wrap" },
  ".cm-diagnostic-error": { borderLeftColor: "var(--forbidden)" },
  ".cm-diagnostic-warning": { borderLeftColor: "var(--prompt)" },
  ".cm-diagnostic-info": { borderLeftColor: "var(--accent)" },
  ".cm-external-error-line": { backgroundColor: tint("--forbidden", 12) },
  ".cm-external-warning-line": { backgroundColor: tint("--prompt", 12) },
  ".cm-external-info-line": { backgroundColor: tint("--accent", 8) },
  ".cm-external-error-line-gutter": { color: "var(--forbidden)", fontWeight: "600" },
  ".cm-external-warning-line-gutter": { color: "var(--prompt)", fontWeight: "600" },
});

const jsonHighlight = HighlightStyle.define([
  { tag: tags.propertyName, color: "var(--accent)" },
  { tag: tags.string, color: "var(--allow)" },
  { tag: tags.number, color: "var(--timeout)" },
  { tag: [tags.bool, tags.null], color: "var(--prompt)" },
  { tag: [tags.separator, tags.punctuation, tags.brace, tags.squareBracket], color: "var(--muted)" },
  { tag: tags.invalid, color: "var(--forbidden)" },
]);

/** The theme and the highlighting. */
export function policyTheme(): Extension {
  return [editorTheme, syntaxHighlighting(jsonHighlight)];
}
