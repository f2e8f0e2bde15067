// The open file changed on disk while it was being edited (an "always" answer, another editor): never
// overwritten silently. The operator reloads the file (dropping their edits), merges (the rules added on
// disk join the draft), or keeps their draft over it (the save dialog then shows what it replaces).
import { useMemo } from "react";
import { visible } from "../../../lib/visible";
import { mergeAddedRules } from "../model";

interface Props {
  file: string;
  base: string;
  mine: string;
  theirs: string;
  onReload(): void;
  onMerged(text: string): void;
  onKeepMine(): void;
}

export function ConflictBanner({ file, base, mine, theirs, onReload, onMerged, onKeepMine }: Props) {
  const merge = useMemo(() => mergeAddedRules(base, mine, theirs), [base, mine, theirs]);
  return (
    <div className="conflict" role="alert" data-testid="draft-conflict">
      <strong>{visible(file)} changed on disk while you edited it</strong> (an “always” answer or another editor).{" "}
      {merge.added.length > 0 ? (
        <span>
          It added rule{merge.added.length === 1 ? "" : "s"} {merge.added.map((r) => visible(r.id)).join(", ")}
          {merge.rest ? ", and changed more." : "."}
        </span>
      ) : (
        <span>Your draft was made from the earlier text.</span>
      )}
      <div className="row">
        <button type="button" onClick={onReload} data-testid="conflict-reload">
          Reload the file (drop my edits)
        </button>
        {merge.added.length > 0 && (
          <button type="button" className="primary" onClick={() => onMerged(merge.merged)} data-testid="conflict-merge">
            Merge: add {merge.added.length === 1 ? "its rule" : `its ${merge.added.length} rules`} to my draft
          </button>
        )}
        <button type="button" onClick={onKeepMine} data-testid="conflict-keep">
          Keep my draft (replaces the file when saved)
        </button>
      </div>
      {merge.rest && merge.added.length > 0 && (
        <p className="small">A merge keeps only the added rules: the file's other changes would be replaced when you save.</p>
      )}
    </div>
  );
}
