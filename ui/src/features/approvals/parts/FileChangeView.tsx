// What a waiting write or edit would do to its file: the path, whether it exists, and the diff (or why
// there is none to show).
import type { FileChange } from "../../../backend/backend";
import { Diff } from "../../../lib/ui/Diff";
import { visible } from "../../../lib/visible";

export function FileChangeView({ change }: { change: FileChange }) {
  return (
    <div className="file-change" data-testid="file-change">
      <div>
        <span className="label">{change.exists ? "changes" : "creates"}</span>{" "}
        <span className="mono">{visible(change.path)}</span>
      </div>
      {change.note ? <p className="small warn">{visible(change.note)}</p> : null}
      {change.diff.length > 0 || !change.note ? <Diff lines={change.diff} testId="file-diff" /> : null}
    </div>
  );
}
