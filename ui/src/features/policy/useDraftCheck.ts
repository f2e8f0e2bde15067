// Checks the draft as it is typed, latest text wins: one check in flight at a time, and when it returns
// the newest text (if it changed meanwhile) is checked next, so a fast typist never queues a backlog and
// the marks shown always belong to a text the editor showed. Also measures each round trip.
import { useEffect, useRef, useState } from "react";
import type { Backend, DraftCheck } from "../../backend/backend";
import { asBackendError } from "../../backend/backend";

export interface DraftCheckState {
  /** The newest answer (it may be for a slightly older text while the next check runs). */
  check: DraftCheck | null;
  /** The answer is for the text shown now. */
  current: boolean;
  /** Milliseconds the last check took, round trip. */
  millis: number | null;
  /** The check itself failed (not the draft): why. */
  failure: string | null;
}

export function useDraftCheck(backend: Backend, file: string, text: string): DraftCheckState {
  const [state, setState] = useState<{ check: DraftCheck | null; text: string | null; millis: number | null; failure: string | null }>(
    { check: null, text: null, millis: null, failure: null },
  );
  const latest = useRef(text);
  const inFlight = useRef(false);
  const alive = useRef(true);
  useEffect(() => {
    latest.current = text;
  }, [text]);

  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);

  useEffect(() => {
    if (inFlight.current) return;
    const run = (sent: string) => {
      inFlight.current = true;
      const started = performance.now();
      backend.checkPolicyDraft(file, sent).then(
        (check) => finish(sent, { check, millis: performance.now() - started, failure: null }),
        (e) => finish(sent, { check: null, millis: null, failure: asBackendError(e).message }),
      );
    };
    const finish = (sent: string, result: { check: DraftCheck | null; millis: number | null; failure: string | null }) => {
      inFlight.current = false;
      if (!alive.current) return;
      setState((s) => ({ check: result.check ?? s.check, text: sent, millis: result.millis, failure: result.failure }));
      if (latest.current !== sent) run(latest.current);
    };
    run(text);
  }, [backend, file, text]);

  return { check: state.check, current: state.text === text, millis: state.millis, failure: state.failure };
}
