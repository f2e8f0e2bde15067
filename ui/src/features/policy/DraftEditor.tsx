// One policy file open as a draft: the source editor on the right (always there, so every edit, made in
// the source or in a panel, is one step of the same undo history), the panels on the left, and the bar
// on top that says whether the draft loads, what is unsaved, and whether the file changed on disk.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import type { LayerFile } from "../../backend/backend";
import { useBackend, useFeed } from "../../app/context";
import { Kbd } from "../../lib/ui/Kbd";
import { visible } from "../../lib/visible";
import { PolicySource, type ExternalDiagnostic, type PolicySourceHandle, type TextEdit } from "./source/PolicySource";
import { policySchema } from "./source/policySchema";
import { useDraftCheck } from "./useDraftCheck";
import { RulesPanel } from "./parts/RulesPanel";
import { parseRoute } from "../../app/route";
import { PlaygroundPanel } from "./parts/PlaygroundPanel";
import { TestsPanel } from "./parts/TestsPanel";
import { GrantsPanel } from "./parts/GrantsPanel";
import { PathsPanel } from "./parts/PathsPanel";
import { ReplayPanel } from "./parts/ReplayPanel";
import { LayersPanel } from "./parts/LayersPanel";
import { SaveDialog } from "./parts/SaveDialog";
import { ConflictBanner } from "./parts/ConflictBanner";

const PANELS = [
  { id: "rules", label: "Rules", key: "r" },
  { id: "playground", label: "Playground", key: "p" },
  { id: "grants", label: "Grants", key: "g" },
  { id: "paths", label: "Paths", key: "h" },
  { id: "tests", label: "Tests & lint", key: "t" },
  { id: "replay", label: "What-if replay", key: "y" },
  { id: "layers", label: "Layers", key: "l" },
] as const;
type PanelId = (typeof PANELS)[number]["id"];

/** What the open draft offers the panels. */
export interface DraftContext {
  file: string;
  text: string;
  editable: boolean;
  /** Applies the edits `make` computes from the editor's text at that moment (never a text React has not
   * caught up with: keys typed faster than a render would otherwise land at stale offsets), as one
   * undoable step. */
  edit(make: (text: string) => TextEdit[]): void;
  /** Puts the source editor's cursor on a line. */
  reveal(line: number): void;
}

export function DraftEditor({ layer, layers, onDirty }: { layer: LayerFile; layers: LayerFile[]; onDirty(dirty: boolean): void }) {
  const backend = useBackend();
  const feed = useFeed();
  const queryClient = useQueryClient();
  const editor = useRef<PolicySourceHandle>(null);
  const [base, setBase] = useState({ text: layer.text, version: layer.version });
  const [text, setText] = useState(layer.text);
  // The ledger browser opens the playground with a recorded call (`#policy?try=...`).
  const [panel, setPanel] = useState<PanelId>(() => (new URLSearchParams(parseRoute(window.location.hash).params).has("try") ? "playground" : "rules"));
  const [saving, setSaving] = useState(false);
  const [reloaded, setReloaded] = useState<string | null>(null);
  const [history, setHistory] = useState({ undo: false, redo: false });
  const { check, current, millis, failure } = useDraftCheck(backend, layer.source, text);
  const dirty = text !== base.text;
  useEffect(() => onDirty(dirty), [dirty, onDirty]);

  // The file changed on disk: taken as it is when nothing is unsaved, else the operator decides.
  const disk = { text: layer.text, version: layer.version };
  // After a save, the layer list may still show the version it replaced until it is read again.
  const [replaced, setReplaced] = useState<{ version: string | null } | null>(null);
  const changedOnDisk = disk.version !== base.version && !(replaced && disk.version === replaced.version);
  useEffect(() => {
    if (changedOnDisk && !dirty && !saving) {
      editor.current?.setText(disk.text);
      // Follows the file on disk (outside React) into the editor and the saved state together.
      // eslint-disable-next-line react-hooks/set-state-in-effect
      setBase(disk);
      setReloaded("The file changed on disk and was reloaded (nothing here was unsaved).");
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- disk is read from `layer`, which these name
  }, [changedOnDisk, dirty, saving, layer.text, layer.version]);

  // The hub put this file in force.
  useEffect(
    () =>
      feed.listen((items) => {
        for (const { event } of items)
          if (event.kind === "policy_reloaded" && event.sources.includes(layer.source))
            setReloaded(`In force since ${new Date().toLocaleTimeString()}: the hub reloaded this file.`);
      }),
    [feed, layer.source],
  );

  const onChange = useCallback((next: string) => {
    setText(next);
    const handle = editor.current;
    if (handle) setHistory({ undo: handle.canUndo(), redo: handle.canRedo() });
  }, []);
  const draft: DraftContext = useMemo(
    () => ({
      file: layer.source,
      text,
      editable: layer.editable,
      edit: (make) => {
        const handle = editor.current;
        if (handle) handle.applyEdits(make(handle.text()));
      },
      reveal: (line) => editor.current?.revealLine(line),
    }),
    [layer.source, layer.editable, text],
  );

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key === "s" && layer.editable) {
        e.preventDefault();
        setSaving(true);
      } else if (e.altKey && !e.ctrlKey) {
        const p = PANELS.find((x) => x.key === e.key);
        if (p) {
          e.preventDefault();
          setPanel(p.id);
        }
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [layer.editable]);

  const problem = check?.problem ?? null;
  const diagnostics: ExternalDiagnostic[] = useMemo(() => {
    if (!check || !current) return [];
    const marks: ExternalDiagnostic[] = check.examples
      .filter((e) => !e.passed && e.line > 0)
      .map((e) => ({ line: e.line, column: e.column, message: `${e.rule}: ${e.example} — ${e.why ?? "fails"}`, severity: "error" }));
    if (problem && problem.line > 0 && problem.code !== "policy_rule")
      marks.push({ line: problem.line, column: problem.column, message: problem.message, severity: "error" });
    return marks;
  }, [check, current, problem]);

  return (
    <div className="draft">
      <div className="draft-bar">
        <button type="button" disabled={!history.undo} onClick={() => editor.current?.undo()} data-testid="draft-undo">
          Undo <Kbd>Ctrl+Z</Kbd>
        </button>
        <button type="button" disabled={!history.redo} onClick={() => editor.current?.redo()} data-testid="draft-redo">
          Redo <Kbd>Ctrl+Shift+Z</Kbd>
        </button>
        <DraftState loads={check ? !problem : null} current={current} problem={problem?.message ?? failure} millis={millis} />
        <span className="spacer" />
        <span className={dirty ? "unsaved" : "muted small"} data-testid="draft-dirty">
          {dirty ? "● unsaved changes" : layer.in_force ? "saved · in force" : "saved"}
        </span>
        {layer.editable ? (
          <button type="button" className="primary" disabled={!dirty} onClick={() => setSaving(true)} data-testid="draft-save">
            Review & save <Kbd>Ctrl+S</Kbd>
          </button>
        ) : (
          <span className="muted small">The built-in default is read-only: create the project file to change it.</span>
        )}
      </div>
      {changedOnDisk && dirty && !saving && (
        <ConflictBanner
          file={layer.source}
          base={base.text}
          mine={text}
          theirs={disk.text}
          onReload={() => {
            editor.current?.setText(disk.text);
            setBase(disk);
          }}
          onMerged={(merged) => {
            editor.current?.setText(merged);
            setBase(disk);
          }}
          onKeepMine={() => setBase(disk)}
        />
      )}
      {reloaded && (
        <p className="notice small" role="status" data-testid="draft-reloaded">
          {reloaded}
        </p>
      )}
      <div className="draft-panes">
        <div className="draft-left">
          <div className="panel-tabs" role="tablist">
            {PANELS.map((p) => (
              <button key={p.id} type="button" role="tab" aria-selected={panel === p.id} className={panel === p.id ? "active" : undefined} data-testid={`panel-${p.id}`} onClick={() => setPanel(p.id)}>
                {p.label} <Kbd>{`Alt+${p.key.toUpperCase()}`}</Kbd>
              </button>
            ))}
          </div>
          <div className="panel-body">
            {panel === "rules" && <RulesPanel draft={draft} check={current ? check : null} />}
            {panel === "playground" && <PlaygroundPanel draft={draft} layers={layers} />}
            {panel === "grants" && <GrantsPanel draft={draft} />}
            {panel === "paths" && <PathsPanel draft={draft} />}
            {panel === "tests" && <TestsPanel draft={draft} check={check} />}
            {panel === "replay" && <ReplayPanel draft={draft} loads={!problem} layers={layers} />}
            {panel === "layers" && <LayersPanel layers={layers} open={layer.source} />}
          </div>
        </div>
        <div className="draft-right">
          <div className="source-head mono small">{visible(layer.source)}</div>
          <div className="source-box">
            <PolicySource initialText={layer.text} schema={policySchema} onChange={onChange} diagnostics={diagnostics} handleRef={editor} readOnly={!layer.editable} />
          </div>
        </div>
      </div>
      {saving && (
        <SaveDialog
          file={layer.source}
          text={text}
          expectedVersion={base.version}
          onClose={() => setSaving(false)}
          onSaved={(version) => {
            setReplaced({ version: base.version });
            setBase({ text, version });
            void queryClient.invalidateQueries({ queryKey: ["policy_layers"] });
            setSaving(false);
            setReloaded("Saved. The hub reloads the file by itself…");
          }}
        />
      )}
    </div>
  );
}

function DraftState({ loads, current, problem, millis }: { loads: boolean | null; current: boolean; problem: string | null; millis: number | null }) {
  if (loads === null) return <span className="muted small">checking…</span>;
  return (
    <span className={`draft-state ${loads ? "ok" : "bad"}`} data-testid="draft-state" data-loads={loads} title={millis != null ? `checked in ${millis.toFixed(0)} ms` : undefined}>
      {loads ? "✓ loads" : `✕ does not load: ${visible(problem ?? "")}`}
      {!current && <span className="muted"> (checking…)</span>}
    </span>
  );
}
