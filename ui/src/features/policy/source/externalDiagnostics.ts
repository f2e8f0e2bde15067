// The backend's diagnostics inside the editor, beside the schema's own lint: a state field holds them
// (mapped through edits until the parent sends new ones), a linter source reads that field so both kinds
// of marks show at once, and line decorations give each line with an external problem a CSS class (and
// its line number) that end-to-end tests find without knowing CodeMirror's layout.
import { type EditorState, type Extension, type RangeSet, RangeSetBuilder, StateEffect, StateField } from "@codemirror/state";
import { Decoration, type DecorationSet, EditorView, GutterMarker, gutterLineClass, type ViewUpdate } from "@codemirror/view";
import { type Diagnostic, forceLinting, linter } from "@codemirror/lint";
import { syntaxTree } from "@codemirror/language";
import { lineColumnToOffset } from "./offsets";

export type MarkSeverity = "error" | "warning" | "info";

/** A problem the backend found: 1-based line and column (UTF-8 bytes, as Rust counts them). */
export interface ExternalDiagnostic {
  line: number;
  column: number;
  message: string;
  severity: MarkSeverity;
}

/** One external diagnostic placed in the current document. */
interface Placed {
  from: number;
  to: number;
  message: string;
  severity: MarkSeverity;
}

/** Replaces the external diagnostics. */
export const setExternalDiagnostics = StateEffect.define<readonly ExternalDiagnostic[]>();

const LINE_CLASS: Record<MarkSeverity, string> = {
  error: "cm-external-error-line",
  warning: "cm-external-warning-line",
  info: "cm-external-info-line",
};

/** Leaf tokens a diagnostic at their start underlines whole. */
const TOKENS = new Set(["String", "PropertyName", "Number", "True", "False", "Null"]);

function place(state: EditorState, diagnostics: readonly ExternalDiagnostic[]): Placed[] {
  const text = state.doc.toString();
  return diagnostics.map(({ line, column, message, severity }) => {
    const from = lineColumnToOffset(text, line, column);
    const lineEnd = state.doc.lineAt(from).to;
    const node = syntaxTree(state).resolveInner(from, 1);
    const to = TOKENS.has(node.name) && node.from === from && node.to <= lineEnd ? node.to : Math.min(lineEnd, from + 1);
    return { from, to, message: String(message), severity: Object.hasOwn(LINE_CLASS, severity) ? severity : "error" };
  });
}

const placedField = StateField.define<readonly Placed[]>({
  create: () => [],
  update(placed, tr) {
    for (const effect of tr.effects) if (effect.is(setExternalDiagnostics)) return place(tr.state, effect.value);
    if (!tr.docChanged || placed.length === 0) return placed;
    return placed.map((d) => {
      const from = tr.changes.mapPos(d.from, 1);
      return { ...d, from, to: Math.max(from, tr.changes.mapPos(d.to, -1)) };
    });
  },
});

/** Lines (by start offset) with their worst external severity, in document order. */
function linesOf(state: EditorState): { from: number; number: number; severity: MarkSeverity }[] {
  const rank: Record<MarkSeverity, number> = { error: 3, warning: 2, info: 1 };
  const byLine = new Map<number, { from: number; number: number; severity: MarkSeverity }>();
  for (const d of state.field(placedField)) {
    const line = state.doc.lineAt(d.from);
    const seen = byLine.get(line.from);
    if (!seen || rank[d.severity] > rank[seen.severity])
      byLine.set(line.from, { from: line.from, number: line.number, severity: d.severity });
  }
  return [...byLine.values()].sort((a, b) => a.from - b.from);
}

const lineDecorations = EditorView.decorations.compute([placedField], (state): DecorationSet => {
  const builder = new RangeSetBuilder<Decoration>();
  for (const { from, number, severity } of linesOf(state)) {
    builder.add(from, from, Decoration.line({ class: LINE_CLASS[severity], attributes: { "data-line": String(number) } }));
  }
  return builder.finish();
});

class LineNumberClass extends GutterMarker {
  override readonly elementClass: string;
  constructor(readonly severity: MarkSeverity) {
    super();
    this.elementClass = `${LINE_CLASS[severity]}-gutter`;
  }
  override eq(other: GutterMarker): boolean {
    return other instanceof LineNumberClass && other.severity === this.severity;
  }
}

/** Gives each gutter element of such a line the class `cm-external-<severity>-line-gutter`. */
const gutterClasses = gutterLineClass.compute([placedField], (state): RangeSet<GutterMarker> => {
  const builder = new RangeSetBuilder<GutterMarker>();
  for (const { from, severity } of linesOf(state)) builder.add(from, from, new LineNumberClass(severity));
  return builder.finish();
});

/** The linter source: the field's diagnostics, with their messages shown as text. */
function externalLint(view: EditorView): Diagnostic[] {
  return view.state.field(placedField).map((d) => ({
    from: d.from,
    to: d.to,
    severity: d.severity,
    message: d.message,
    source: "Portcullis",
    markClass: "cm-external-diagnostic",
  }));
}

function changedDiagnostics(update: ViewUpdate): boolean {
  return update.transactions.some((tr) => tr.effects.some((e) => e.is(setExternalDiagnostics)));
}

/** The field, its line and gutter classes, and its linter source (none shown until the first effect). */
export function externalDiagnostics(): Extension {
  return [placedField, lineDecorations, gutterClasses, linter(externalLint, { delay: 300, needsRefresh: changedDiagnostics })];
}

/** Shows `diagnostics` (replacing the previous ones) and lints at once rather than after the lint delay. */
export function showExternalDiagnostics(view: EditorView, diagnostics: readonly ExternalDiagnostic[]): void {
  view.dispatch({ effects: setExternalDiagnostics.of(diagnostics) });
  forceLinting(view);
}
