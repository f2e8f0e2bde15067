// The policy editor's CodeMirror extensions: JSON language and parse lint, the policy schema's
// completion/hover/lint (codemirror-json-schema), the backend's diagnostics, history, folding, the
// gutters and keymaps. Schema messages and hovers are rendered as text here (see plainText.ts), never
// through the library's Markdown-to-HTML rendering, because they can quote the document.
import { cspNonce } from "./cspNonce";
import { Compartment, EditorState, type Extension } from "@codemirror/state";
import {
  EditorView, crosshairCursor, drawSelection, dropCursor, highlightActiveLine, highlightActiveLineGutter,
  highlightSpecialChars, hoverTooltip, keymap, lineNumbers, rectangularSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { bracketMatching, foldGutter, foldKeymap, indentOnInput } from "@codemirror/language";
import { type Diagnostic, lintGutter, lintKeymap, linter } from "@codemirror/lint";
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from "@codemirror/autocomplete";
import { json, jsonLanguage, jsonParseLinter } from "@codemirror/lang-json";
import { handleRefresh, jsonCompletion, jsonSchemaHover, jsonSchemaLinter, stateExtensions } from "codemirror-json-schema";
import { externalDiagnostics } from "./externalDiagnostics";
import { plainText } from "./plainText";
import { policyTheme } from "./theme";

/** Documents past this size skip the schema linter: it validates the whole document on the main thread
 * (seconds for a 1,000-rule policy in WebKit), and the hub's check of every draft reports the same
 * mistakes (unknown fields, wrong types) with their line and column. */
export const SCHEMA_LINT_MAX_BYTES = 64 * 1024;

/** The schema linter, its messages shown as text (the library would render them as Markdown HTML). */
function schemaLint(): (view: EditorView) => Diagnostic[] {
  const lint = jsonSchemaLinter();
  return (view) =>
    view.state.doc.length > SCHEMA_LINT_MAX_BYTES ? [] : lint(view).map(({ from, to, severity, message, source }) => ({
      from, to, severity, message, source,
      renderMessage: () => plainText(message),
    }));
}

/** The schema hover: the property's description and type as text. */
const schemaHover = jsonSchemaHover({
  formatHover: ({ message, typeInfo }) => {
    const box = plainText(message ?? "", "cm-policy-hover");
    if (typeInfo.trim()) box.append(plainText(typeInfo.trim(), "cm-policy-hover-type"));
    return box;
  },
});

/** `readOnly` as state: the text can still be selected, searched and replaced through the handle. */
export function readOnlyExtension(readOnly: boolean): Extension {
  return [EditorState.readOnly.of(readOnly), EditorView.contentAttributes.of({ "aria-readonly": String(readOnly) })];
}

export interface PolicyExtensionsOptions {
  /** The policy JSON Schema. */
  schema: object;
  /** Holds `readOnlyExtension(…)`, reconfigured when the prop changes. */
  readOnly: Compartment;
  readOnlyValue: boolean;
  /** Called after each transaction that changes the document. */
  onDocChanged(state: EditorState): void;
}

export function policyExtensions({ schema, readOnly, readOnlyValue, onDocChanged }: PolicyExtensionsOptions): Extension {
  const nonce = cspNonce();
  return [
    nonce ? EditorView.cspNonce.of(nonce) : [],
    // Policy files keep a rule on one line: wrapped, a whole rule stays in view.
    EditorView.lineWrapping,
    lineNumbers(),
    foldGutter(),
    lintGutter(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    history(),
    drawSelection(),
    dropCursor(),
    EditorState.allowMultipleSelections.of(true),
    indentOnInput(),
    bracketMatching(),
    closeBrackets(),
    autocompletion(),
    rectangularSelection(),
    crosshairCursor(),
    highlightActiveLine(),
    EditorState.tabSize.of(2),
    json(),
    linter(jsonParseLinter(), { delay: 300 }),
    linter(schemaLint(), { delay: 300, needsRefresh: handleRefresh }),
    jsonLanguage.data.of({ autocomplete: jsonCompletion() }),
    hoverTooltip(schemaHover),
    // The library types the schema as JSONSchema7; the committed policy schema is one.
    stateExtensions(schema as Parameters<typeof stateExtensions>[0]),
    externalDiagnostics(),
    keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...foldKeymap, ...completionKeymap, ...lintKeymap]),
    readOnly.of(readOnlyExtension(readOnlyValue)),
    EditorView.updateListener.of((update) => {
      if (update.docChanged) onDocChanged(update.state);
    }),
    policyTheme(),
  ];
}
