// The change set the call's record keeps: every change a confined command made (up to the record's
// bound; the counts are whole), what it is, its size, the short SHA-256 of a file's new content, and
// what became of it — kept, held for the operator, discarded — with why. Paths and reasons are the
// agent's text: escaped with visible() and rendered as text.
import type { ChangeEntry, ChangeRecord } from "../../../backend/backend";
import { count } from "../../../lib/numbers";
import { visible } from "../../../lib/visible";
import { shownPath } from "../changes";

/** A size in bytes, in words: `812 B`, `4.2 KiB`, `1.0 MiB`. */
export function sizeWords(bytes: number | null | undefined): string {
  if (bytes == null) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The first 12 hex digits of a digest (the whole one is in the title). */
export const shortDigest = (sha256: string | null | undefined): string => (sha256 ? visible(sha256.slice(0, 12)) : "");

function Row({ entry, cwd }: { entry: ChangeEntry; cwd: string | null }) {
  return (
    <tr data-testid="change-record-entry" className={`change-${entry.outcome}`}>
      <td>{entry.outcome}</td>
      <td>{entry.what}</td>
      <td className="mono">{visible(shownPath(entry.path, cwd))}</td>
      <td>{sizeWords(entry.size)}</td>
      <td className="mono" title={entry.sha256 ? visible(entry.sha256) : "not digested (not a file, past the bounds, or discarded)"}>
        {shortDigest(entry.sha256)}
      </td>
      <td>{entry.why ? visible(entry.why) : ""}</td>
    </tr>
  );
}

export function ChangeRecordList({ record, cwd }: { record: ChangeRecord; cwd: string | null }) {
  const all = record.kept + record.held + record.discarded;
  const more = all - record.entries.length;
  return (
    <section data-testid="drawer-change-record" aria-label="Change set">
      <h3>Change set</h3>
      <p className="muted small" data-testid="change-record-counts">
        {count(record.kept)} kept · {count(record.held)} held · {count(record.discarded)} discarded
      </p>
      <table className="change-record">
        <thead>
          <tr>
            <th>Outcome</th>
            <th>What</th>
            <th>Path</th>
            <th>Size</th>
            <th>SHA-256</th>
            <th>Why</th>
          </tr>
        </thead>
        <tbody>
          {record.entries.map((entry, i) => (
            <Row key={i} entry={entry} cwd={cwd} />
          ))}
        </tbody>
      </table>
      {(record.truncated || more > 0) && <p className="muted small">{count(Math.max(more, 0))} more not listed</p>}
    </section>
  );
}
