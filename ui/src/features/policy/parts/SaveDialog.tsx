// Save, after seeing it: the draft's diff against the file on disk now, then an atomic write that the hub
// refuses if the file changed since it was read (the conflict banner takes over) or if the whole policy
// would not load with it (the working policy stays in force, nothing is written).
import { useEffect, useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { asBackendError } from "../../../backend/backend";
import { useBackend } from "../../../app/context";
import { Diff } from "../../../lib/ui/Diff";
import { visible } from "../../../lib/visible";

interface Props {
  file: string;
  text: string;
  expectedVersion: string | null;
  onClose(): void;
  onSaved(version: string): void;
}

export function SaveDialog({ file, text, expectedVersion, onClose, onSaved }: Props) {
  const backend = useBackend();
  const diff = useQuery({ queryKey: ["diff_policy_draft", file, text], queryFn: () => backend.diffPolicyDraft(file, text), gcTime: 0 });
  const save = useMutation({ mutationFn: () => backend.savePolicyFile(file, text, expectedVersion), onSuccess: onSaved });
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  const changedOnDisk = diff.data != null && diff.data.version_on_disk !== expectedVersion;
  return (
    <div className="confirm" role="dialog" aria-modal="true" aria-label="Save the policy file">
      <div className="confirm-box save-box" data-testid="save-dialog">
        <h3>
          Save <span className="mono">{visible(file)}</span>
        </h3>
        {diff.isPending && <p className="muted">Comparing with the file on disk…</p>}
        {diff.data && <Diff lines={diff.data.diff} testId="save-diff" />}
        {changedOnDisk && (
          <p className="bad" data-testid="save-changed-on-disk">
            The file changed on disk since you opened it: saving now is refused. Close this and choose in the banner.
          </p>
        )}
        {error && (
          <p className="bad" role="alert" data-testid="save-error" data-code={error.code}>
            {visible(error.message)}
          </p>
        )}
        <div className="row">
          <button type="button" onClick={onClose}>
            Cancel <kbd className="kbd">Esc</kbd>
          </button>
          <button
            type="button"
            className="primary"
            autoFocus
            disabled={save.isPending || diff.isPending}
            data-testid="save-confirm"
            onClick={() => {
              setError(null);
              save.mutate(undefined, {
                onError: (e) => {
                  const { code, message } = asBackendError(e);
                  setError({ code, message });
                },
              });
            }}
          >
            Save — the hub reloads it
          </button>
        </div>
      </div>
    </div>
  );
}
