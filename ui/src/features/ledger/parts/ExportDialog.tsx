// Export exactly the calls the filter selects (every record of each) as JSONL or CSV, to a file the
// operator names or picks, with progress and a Cancel that leaves no file behind.
import { useEffect, useRef, useState } from "react";
import { useBackend } from "../../../app/context";
import type { CallFilter, ExportFormat, ExportUpdate } from "../../../backend/backend";
import { visible } from "../../../lib/visible";
import { count } from "../../../lib/numbers";

type Run = { state: "idle" } | { state: "running"; done: number; total: number } | { state: "done"; records: number; file: string } | { state: "failed"; code: string; message: string };

export function ExportDialog({
  ledgerId,
  filter,
  matching,
  suggestedDir,
  onClose,
}: {
  ledgerId: number;
  filter: CallFilter;
  matching: number | null;
  suggestedDir: string;
  onClose: () => void;
}) {
  const backend = useBackend();
  const [format, setFormat] = useState<ExportFormat>("jsonl");
  const [file, setFile] = useState(`${suggestedDir}/portcullis-calls.jsonl`);
  const [run, setRun] = useState<Run>({ state: "idle" });
  const stop = useRef<(() => void) | null>(null);
  useEffect(() => () => stop.current?.(), []);
  const start = () => {
    setRun({ state: "running", done: 0, total: 0 });
    stop.current = backend.exportLedger(ledgerId, filter, format, file, (u: ExportUpdate) => {
      if (u.kind === "progress") setRun({ state: "running", done: u.done, total: u.total });
      else if (u.kind === "done") {
        stop.current = null;
        setRun({ state: "done", records: u.records, file: u.file });
      } else {
        stop.current = null;
        setRun({ state: "failed", code: u.error.code, message: u.error.message });
      }
    });
  };
  const running = run.state === "running";
  return (
    <div className="confirm" role="dialog" aria-modal="true" aria-label="Export calls" data-testid="export-dialog">
      <div className="confirm-box export-box">
        <h2>Export the filtered calls</h2>
        <p className="muted">
          {matching == null ? "The calls the filter selects" : `${count(matching)} ${matching === 1 ? "call" : "calls"}`}, every
          record of each, as they are in the ledger (secrets already redacted).
        </p>
        <label>
          Format{" "}
          <select
            value={format}
            disabled={running}
            data-testid="export-format"
            onChange={(e) => {
              const f = e.target.value as ExportFormat;
              setFormat(f);
              setFile((old) => old.replace(/\.(jsonl|csv)$/, `.${f}`));
            }}
          >
            <option value="jsonl">JSON Lines</option>
            <option value="csv">CSV</option>
          </select>
        </label>
        <label className="export-file">
          File{" "}
          <input className="mono" value={file} disabled={running} data-testid="export-file" onChange={(e) => setFile(e.target.value)} />
        </label>
        <button
          type="button"
          disabled={running}
          onClick={() => void backend.pickExportFile(file.split("/").pop() ?? "calls.jsonl").then((f) => f && setFile(f))}
        >
          Choose…
        </button>
        {run.state === "running" && (
          <p data-testid="export-progress">
            <progress max={Math.max(1, run.total)} value={run.done} /> {count(run.done)} of {count(run.total)} records
          </p>
        )}
        {run.state === "done" && (
          <p className="ok" data-testid="export-done">
            Wrote {count(run.records)} records to <span className="mono">{visible(run.file)}</span>.
          </p>
        )}
        {run.state === "failed" && (
          <p className={run.code === "cancelled" ? "muted" : "error"} role="alert" data-testid="export-failed">
            {run.code === "cancelled" ? "Export cancelled: no file was written." : visible(run.message)}
          </p>
        )}
        <div className="dialog-buttons">
          {running ? (
            <button type="button" data-testid="export-cancel" onClick={() => stop.current?.()}>
              Cancel
            </button>
          ) : (
            <button type="button" className="primary" data-testid="export-start" disabled={!file.trim()} onClick={start}>
              Export
            </button>
          )}
          <button type="button" onClick={onClose} disabled={running}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
