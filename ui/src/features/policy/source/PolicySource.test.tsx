// The policy source editor in jsdom: text in and out through the handle and onChange, one undo step per
// programmatic edit, the backend's diagnostics as line classes and lint marks, and one view per mount.
import { StrictMode, createRef } from "react";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { act, render, screen, waitFor } from "@testing-library/react";
import { EditorView } from "@codemirror/view";
import { forEachDiagnostic, openLintPanel } from "@codemirror/lint";
import { PolicySource, type ExternalDiagnostic, type PolicySourceHandle, type PolicySourceProps } from "./PolicySource";
import { policySchema } from "./policySchema";


// jsdom lays nothing out and its Range has no getClientRects; CodeMirror measures text ranges when it
// draws and scrolls (it logs a TypeError otherwise). An empty list is enough for it.
beforeAll(() => {
  const empty = () => ({ length: 0, item: () => null, [Symbol.iterator]: [][Symbol.iterator] }) as unknown as DOMRectList;
  Range.prototype.getClientRects ??= empty;
});

const TEXT = `{
  "commands": {
    "default": "prompt",
    "rules": []
  }
}`;

function setup(props: Partial<PolicySourceProps> = {}) {
  const handle = createRef<PolicySourceHandle>();
  const onChange = vi.fn<(text: string) => void>();
  const all: PolicySourceProps = { initialText: TEXT, schema: policySchema, onChange, diagnostics: [], handleRef: handle, ...props };
  const view = render(<PolicySource {...all} />);
  const rerender = (more: Partial<PolicySourceProps>) => view.rerender(<PolicySource {...all} {...more} />);
  const current = () => {
    if (!handle.current) throw new Error("no handle");
    return handle.current;
  };
  return { handle: current, onChange, rerender, root: screen.getByTestId("policy-source") };
}

/** The text of the editor's visible lines, as the DOM shows it. */
function shownText(root: HTMLElement): string {
  return [...root.querySelectorAll(".cm-line")].map((line) => line.textContent).join("\n");
}

/** The view inside the component, for what the DOM does not show (undo depth, diagnostics). */
function editorOf(root: HTMLElement): EditorView {
  const dom = root.querySelector<HTMLElement>(".cm-editor");
  const view = dom && EditorView.findFromDOM(dom);
  if (!view) throw new Error("no editor");
  return view;
}

function diagnosticsOf(root: HTMLElement): { line: number; message: string; severity: string; external: boolean }[] {
  const { state } = editorOf(root);
  const found: { line: number; message: string; severity: string; external: boolean }[] = [];
  forEachDiagnostic(state, (d, from) =>
    found.push({ line: state.doc.lineAt(from).number, message: d.message, severity: d.severity, external: d.markClass === "cm-external-diagnostic" }),
  );
  return found;
}

const lineNumber = (element: Element) => Number(element.getAttribute("data-line"));

describe("PolicySource", () => {
  it("shows the initial text", () => {
    const { root, handle } = setup();
    expect(shownText(root)).toBe(TEXT);
    expect(handle().text()).toBe(TEXT);
    expect(handle().canUndo()).toBe(false);
  });

  it("applies jsonc-parser edits as one change, reported through onChange", () => {
    const { root, handle, onChange } = setup();
    const at = TEXT.indexOf('"prompt"');
    act(() =>
      handle().applyEdits([
        { offset: at, length: '"prompt"'.length, content: '"allow"' },
        { offset: TEXT.indexOf("[]"), length: 2, content: '[{ "id": "x" }]' },
      ]),
    );
    const edited = TEXT.replace('"prompt"', '"allow"').replace("[]", '[{ "id": "x" }]');
    expect(handle().text()).toBe(edited);
    expect(shownText(root)).toBe(edited);
    expect(onChange).toHaveBeenCalledTimes(1);
    expect(onChange).toHaveBeenLastCalledWith(edited);
  });

  it("undoes an applyEdits in one step and redoes it", () => {
    const { handle, onChange } = setup();
    act(() =>
      handle().applyEdits([
        { offset: 1, length: 0, content: '\n  "approvals": {},' },
        { offset: TEXT.indexOf('"prompt"'), length: 8, content: '"forbidden"' },
      ]),
    );
    const edited = handle().text();
    // Right after the first insertion, at once: still its own undo step (typing there would merge).
    act(() => handle().applyEdits([{ offset: 1 + '\n  "approvals": {},'.length, length: 0, content: " " }]));
    expect(handle().canUndo()).toBe(true);
    expect(handle().canRedo()).toBe(false);

    act(() => void handle().undo());
    expect(handle().text()).toBe(edited);
    act(() => void handle().undo());
    expect(handle().text()).toBe(TEXT);
    expect(onChange).toHaveBeenLastCalledWith(TEXT);
    expect(handle().canUndo()).toBe(false);
    expect(handle().undo()).toBe(false);

    expect(handle().canRedo()).toBe(true);
    act(() => void handle().redo());
    expect(handle().text()).toBe(edited);
    expect(onChange).toHaveBeenLastCalledWith(edited);
  });

  it("clamps edits that run past the end, and ignores an empty list", () => {
    const { handle, onChange } = setup({ initialText: "{}" });
    act(() => handle().applyEdits([]));
    expect(onChange).not.toHaveBeenCalled();
    act(() => handle().applyEdits([{ offset: 1, length: 99, content: "}\n" }]));
    expect(handle().text()).toBe("{}\n");
    act(() => handle().applyEdits([{ offset: 99, length: 5, content: "x" }]));
    expect(handle().text()).toBe("{}\nx");
  });

  it("replaces the whole text with setText, as one undo step", () => {
    const { root, handle, onChange } = setup();
    act(() => handle().setText('{ "grants": [] }'));
    expect(shownText(root)).toBe('{ "grants": [] }');
    expect(onChange).toHaveBeenLastCalledWith('{ "grants": [] }');
    act(() => handle().setText('{ "grants": [] }'));
    expect(onChange).toHaveBeenCalledTimes(1);
    act(() => void handle().undo());
    expect(handle().text()).toBe(TEXT);
  });

  it("marks the lines of the backend's diagnostics, and clears them when the prop empties", async () => {
    const { root, rerender } = setup();
    const diagnostics: ExternalDiagnostic[] = [
      { line: 3, column: 16, message: "unknown decision", severity: "error" },
      { line: 4, column: 5, message: "no rules", severity: "warning" },
    ];
    rerender({ diagnostics });
    const errorLines = [...root.querySelectorAll(".cm-line.cm-external-error-line")];
    expect(errorLines.map(lineNumber)).toEqual([3]);
    expect(errorLines[0]?.textContent).toBe('    "default": "prompt",');
    expect([...root.querySelectorAll(".cm-external-warning-line")].map(lineNumber)).toEqual([4]);
    const gutter = root.querySelector(".cm-lineNumbers .cm-external-error-line-gutter");
    expect(gutter?.textContent).toBe("3");
    await waitFor(() => expect(root.querySelectorAll(".cm-external-diagnostic")).toHaveLength(2));
    expect(diagnosticsOf(root)).toEqual([
      { line: 3, message: "unknown decision", severity: "error", external: true },
      { line: 4, message: "no rules", severity: "warning", external: true },
    ]);
    // The underline covers the whole string token the column points at.
    expect(root.querySelector(".cm-lintRange-error")?.textContent).toBe('"prompt"');
    expect(root.querySelector(".cm-lint-marker-error")).not.toBeNull();

    rerender({ diagnostics: [] });
    expect(root.querySelector(".cm-external-error-line, .cm-external-warning-line")).toBeNull();
    await waitFor(() => expect(root.querySelector(".cm-external-diagnostic")).toBeNull());
    expect(diagnosticsOf(root)).toEqual([]);
  });

  it("shows diagnostics given at the first render", async () => {
    const { root } = setup({ diagnostics: [{ line: 2, column: 3, message: "here", severity: "info" }] });
    expect([...root.querySelectorAll(".cm-external-info-line")].map(lineNumber)).toEqual([2]);
    await waitFor(() => expect(diagnosticsOf(root)).toEqual([{ line: 2, message: "here", severity: "info", external: true }]));
  });

  it("keeps a diagnostic on its line while lines are inserted above it", () => {
    const { root, handle, rerender } = setup();
    rerender({ diagnostics: [{ line: 3, column: 5, message: "x", severity: "error" }] });
    act(() => handle().applyEdits([{ offset: 1, length: 0, content: '\n  "approvals": {},' }]));
    const [line] = root.querySelectorAll(".cm-external-error-line");
    expect(line && lineNumber(line)).toBe(4);
    expect(line?.textContent).toBe('    "default": "prompt",');
  });

  it("clamps diagnostics outside the text instead of throwing", async () => {
    const { root, rerender } = setup();
    expect(() =>
      rerender({
        diagnostics: [
          { line: 999, column: 999, message: "past the end", severity: "error" },
          { line: 0, column: -4, message: "before the start", severity: "warning" },
          { line: Number.NaN, column: Number.POSITIVE_INFINITY, message: "nonsense", severity: "info" },
        ],
      }),
    ).not.toThrow();
    expect([...root.querySelectorAll(".cm-external-error-line")].map(lineNumber)).toEqual([6]);
    expect([...root.querySelectorAll(".cm-external-warning-line")].map(lineNumber)).toEqual([1]);
    await waitFor(() => expect(diagnosticsOf(root)).toHaveLength(3));
  });

  it("keeps its editor across re-renders and calls the latest onChange", () => {
    const { root, handle, rerender, onChange } = setup();
    const editor = root.querySelector(".cm-editor");
    const view = editorOf(root);
    const later = vi.fn<(text: string) => void>();
    rerender({ onChange: later, diagnostics: [] });
    rerender({ onChange: later, diagnostics: [{ line: 1, column: 1, message: "m", severity: "error" }] });
    rerender({ onChange: later, readOnly: true });
    expect(root.querySelector(".cm-editor")).toBe(editor);
    expect(editorOf(root)).toBe(view);
    expect(root.querySelectorAll(".cm-editor")).toHaveLength(1);
    act(() => handle().setText("{}"));
    expect(onChange).not.toHaveBeenCalled();
    expect(later).toHaveBeenCalledWith("{}");
  });

  it("is read-only for the user when asked, while the handle can still change the text", () => {
    const { root, handle, rerender } = setup({ readOnly: true });
    expect(editorOf(root).state.readOnly).toBe(true);
    expect(root.querySelector(".cm-content")).toHaveAttribute("aria-readonly", "true");
    act(() => handle().setText("{}"));
    expect(handle().text()).toBe("{}");
    rerender({ readOnly: false });
    expect(editorOf(root).state.readOnly).toBe(false);
    expect(handle().canUndo()).toBe(true);
  });

  it("reveals a line: the cursor goes to its start", () => {
    const { root, handle } = setup();
    act(() => handle().revealLine(3));
    const { state } = editorOf(root);
    expect(state.selection.main.head).toBe(state.doc.line(3).from);
    act(() => handle().revealLine(400));
    expect(editorOf(root).state.selection.main.head).toBe(state.doc.line(6).from);
  });

  it("shows the schema's lint beside the backend's, as text", async () => {
    const text = '{\n  "commands": { "default": "prompt" },\n  "<img src=x onerror=alert(1)>": 1\n}';
    const { root } = setup({ initialText: text, diagnostics: [{ line: 2, column: 3, message: "<b>not bold</b>", severity: "error" }] });
    await waitFor(() => expect(diagnosticsOf(root).map((d) => [d.line, d.external])).toEqual([[2, true], [3, false]]));
    const view = editorOf(root);
    act(() => void openLintPanel(view));
    const panel = root.querySelector(".cm-panel-lint");
    expect(panel?.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(panel?.textContent).toContain("<b>not bold</b>");
    expect(panel?.querySelector("img, b")).toBeNull();
  });

  it("shows the document as text", () => {
    const { root } = setup({ initialText: '{ "x": "<img src=x>" }' });
    expect(root.querySelector("img")).toBeNull();
    expect(shownText(root)).toBe('{ "x": "<img src=x>" }');
  });

  it("works under StrictMode's second mount: one editor, diagnostics shown", async () => {
    const handle = createRef<PolicySourceHandle>();
    const diagnostics: ExternalDiagnostic[] = [{ line: 2, column: 3, message: "m", severity: "error" }];
    render(
      <StrictMode>
        <PolicySource initialText={TEXT} schema={policySchema} onChange={() => {}} diagnostics={diagnostics} handleRef={handle} />
      </StrictMode>,
    );
    const root = screen.getByTestId("policy-source");
    expect(root.querySelectorAll(".cm-editor")).toHaveLength(1);
    expect([...root.querySelectorAll(".cm-external-error-line")].map(lineNumber)).toEqual([2]);
    await waitFor(() => expect(diagnosticsOf(root)).toHaveLength(1));
    act(() => handle.current?.setText("{}"));
    expect(shownText(root)).toBe("{}");
  });
});
