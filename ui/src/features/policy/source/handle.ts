// What the parent of the policy editor may do to it: replace ranges (jsonc-parser's Edit shape) or the
// whole text as one undo step, undo/redo, and go to a line. Each method reads the live view through a
// getter, so a handle made before the editor exists (or after it is gone) does nothing.
import { type ChangeSpec, EditorSelection } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { isolateHistory, redo, redoDepth, undo, undoDepth } from "@codemirror/commands";

/** A replacement of `length` UTF-16 units at `offset` by `content` (jsonc-parser's `Edit`). */
export interface TextEdit {
  offset: number;
  length: number;
  content: string;
}

export interface PolicySourceHandle {
  /** Applies `edits` (offsets into the current text, as jsonc-parser computes them) as one undo step. */
  applyEdits(edits: readonly TextEdit[]): void;
  /** Replaces the whole text as one undo step (nothing happens if it is the same). */
  setText(text: string): void;
  /** The current text. */
  text(): string;
  /** Undoes one step; false when there was nothing to undo (or the editor is read-only). */
  undo(): boolean;
  /** Redoes one step; false when there was nothing to redo (or the editor is read-only). */
  redo(): boolean;
  canUndo(): boolean;
  canRedo(): boolean;
  /** Scrolls 1-based `line` (clamped) into view, puts the cursor at its start and focuses the editor. */
  revealLine(line: number): void;
  focus(): void;
}

function clamp(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(max, Math.max(min, Math.trunc(value))) : min;
}

/** Transaction fields for a programmatic change: its own undo step, never merged with typing. */
const programmatic = { annotations: isolateHistory.of("full") };

export function createHandle(view: () => EditorView | null): PolicySourceHandle {
  return {
    applyEdits(edits) {
      const v = view();
      if (!v || edits.length === 0) return;
      const length = v.state.doc.length;
      const changes: ChangeSpec[] = edits.map(({ offset, length: size, content }) => {
        const from = clamp(offset, 0, length);
        return { from, to: clamp(from + size, from, length), insert: String(content) };
      });
      // Positions refer to the text before the transaction, as in jsonc-parser's applyEdits.
      v.dispatch({ changes: v.state.changes(changes), ...programmatic });
    },
    setText(text) {
      const v = view();
      if (!v || v.state.doc.toString() === text) return;
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: text }, ...programmatic });
    },
    text: () => view()?.state.doc.toString() ?? "",
    undo() {
      const v = view();
      return v ? undo(v) : false;
    },
    redo() {
      const v = view();
      return v ? redo(v) : false;
    },
    canUndo: () => {
      const v = view();
      return v ? !v.state.readOnly && undoDepth(v.state) > 0 : false;
    },
    canRedo: () => {
      const v = view();
      return v ? !v.state.readOnly && redoDepth(v.state) > 0 : false;
    },
    revealLine(line) {
      const v = view();
      if (!v) return;
      const { from } = v.state.doc.line(clamp(line, 1, v.state.doc.lines));
      v.dispatch({ selection: EditorSelection.cursor(from), effects: EditorView.scrollIntoView(from, { y: "center" }) });
      v.focus();
    },
    focus: () => view()?.focus(),
  };
}
