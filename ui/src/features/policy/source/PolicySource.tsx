// The policy file's source editor: CodeMirror 6 over JSON with the policy schema's completion, hover and
// lint, plus the backend's diagnostics. The editor owns its text after the first render (the parent
// changes it through the handle and hears every change through onChange); the view is made once per
// mount and props that change later are applied to it, never by recreating it.
import { type Ref, useImperativeHandle, useLayoutEffect, useRef, useState } from "react";
import { Compartment, EditorState } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { getJSONSchema, updateSchema } from "codemirror-json-schema";
import { type ExternalDiagnostic, showExternalDiagnostics } from "./externalDiagnostics";
import { policyExtensions, readOnlyExtension } from "./extensions";
import { createHandle, type PolicySourceHandle } from "./handle";

export type { ExternalDiagnostic } from "./externalDiagnostics";
export type { PolicySourceHandle, TextEdit } from "./handle";

export interface PolicySourceProps {
  /** Initial text; the component owns the EditorState afterwards (the parent drives changes through the handle). */
  initialText: string;
  /** The policy JSON Schema object (see policySchema.ts). */
  schema: object;
  /** Called synchronously after each document change, the user's or the handle's, with the whole text. */
  onChange(text: string): void;
  /**
   * The backend's diagnostics (1-based line, 1-based column in UTF-8 bytes), shown as lint marks beside the
   * schema's; each line with one gets the class `cm-external-<severity>-line` and `data-line="<n>"`.
   */
  diagnostics: readonly ExternalDiagnostic[];
  /** What the parent may do to the editor. */
  handleRef?: Ref<PolicySourceHandle>;
  /** The user cannot change the text (the handle still can). */
  readOnly?: boolean;
}

function sameDiagnostics(a: readonly ExternalDiagnostic[] | null, b: readonly ExternalDiagnostic[]): boolean {
  return (
    a !== null &&
    a.length === b.length &&
    a.every((d, i) => {
      const e = b[i];
      return e !== undefined && d.line === e.line && d.column === e.column && d.message === e.message && d.severity === e.severity;
    })
  );
}

export function PolicySource({ initialText, schema, onChange, diagnostics, handleRef, readOnly = false }: PolicySourceProps) {
  const hostRef = useRef<HTMLDivElement>(null);
  const viewRef = useRef<EditorView | null>(null);
  const [readOnlyCompartment] = useState(() => new Compartment());
  // The latest props, read by the view's listeners and by its creation (which runs once per mount).
  const latest = useRef({ initialText, schema, readOnly, onChange });
  // The diagnostics the current view shows (null: none sent to this view yet).
  const shown = useRef<readonly ExternalDiagnostic[] | null>(null);

  useLayoutEffect(() => {
    latest.current = { ...latest.current, onChange };
  }, [onChange]);

  useLayoutEffect(() => {
    const host = hostRef.current;
    if (!host) return;
    const { initialText: doc, schema: initialSchema, readOnly: initialReadOnly } = latest.current;
    const extensions = policyExtensions({
      schema: initialSchema,
      readOnly: readOnlyCompartment,
      readOnlyValue: initialReadOnly,
      onDocChanged: (state) => latest.current.onChange(state.doc.toString()),
    });
    const view = new EditorView({ state: EditorState.create({ doc, extensions }), parent: host });
    viewRef.current = view;
    shown.current = null;
    return () => {
      viewRef.current = null;
      view.destroy();
    };
  }, [readOnlyCompartment]);

  useLayoutEffect(() => {
    const view = viewRef.current;
    if (!view || view.state.readOnly === readOnly) return;
    view.dispatch({ effects: readOnlyCompartment.reconfigure(readOnlyExtension(readOnly)) });
  }, [readOnly, readOnlyCompartment]);

  useLayoutEffect(() => {
    const view = viewRef.current;
    if (view && getJSONSchema(view.state) !== schema) updateSchema(view, schema as Parameters<typeof updateSchema>[1]);
  }, [schema]);

  useLayoutEffect(() => {
    const view = viewRef.current;
    if (!view || sameDiagnostics(shown.current, diagnostics)) return;
    shown.current = diagnostics;
    showExternalDiagnostics(view, diagnostics);
  }, [diagnostics]);

  useImperativeHandle(handleRef, () => createHandle(() => viewRef.current), []);

  return (
    <div
      ref={hostRef}
      className="policy-source"
      data-testid="policy-source"
      style={{ height: "100%", minHeight: 0, overflow: "hidden" }}
    />
  );
}
