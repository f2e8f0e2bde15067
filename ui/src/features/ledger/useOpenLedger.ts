// Holds one ledger open in the backend while the view shows it: opened when the file changes, closed
// when it changes again or the view goes away (a stale answer is closed at once, never shown).
import { useEffect, useState } from "react";
import { useBackend } from "../../app/context";
import { asBackendError, type BackendError, type OpenedLedger } from "../../backend/backend";

export type OpenState =
  | { state: "opening"; file: string | null }
  | { state: "open"; file: string | null; ledger: OpenedLedger }
  | { state: "failed"; file: string | null; error: BackendError };

export function useOpenLedger(file: string | null): OpenState {
  const backend = useBackend();
  const [state, setState] = useState<OpenState>({ state: "opening", file });
  useEffect(() => {
    let live = true;
    let opened: number | null = null;
    backend.openLedger(file).then(
      (ledger) => {
        if (!live) {
          void backend.closeLedger(ledger.id);
          return;
        }
        opened = ledger.id;
        setState({ state: "open", file, ledger });
      },
      (e) => {
        if (live) setState({ state: "failed", file, error: asBackendError(e) });
      },
    );
    return () => {
      live = false;
      if (opened != null) void backend.closeLedger(opened);
    };
  }, [backend, file]);
  return state.file === file ? state : { state: "opening", file };
}
