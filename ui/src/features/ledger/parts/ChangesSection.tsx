// The "Changes" section of a confined command's call: what its copy-on-write review kept, held for the
// operator and discarded (from the call's record), and what can still be done now (asked of the hub):
// Undo, which shows what it will put back and asks first, then puts it back or says why it cannot; and
// Keep / Discard for the changes held for the operator. Only on the hub's own ledger: another ledger
// file's calls ran on another hub (or long ago) and their undo store is not this hub's.
import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../../app/context";
import {
  asBackendError,
  type ApiError,
  type BackendError,
  type CallChanges,
  type HeldAnswer,
  type UndoPlan,
} from "../../../backend/backend";
import { visible } from "../../../lib/visible";
import { FileChangeView } from "../../approvals/parts/FileChangeView";
import { shownPath, undoWords, type ChangeWithWhy, type ReviewedChanges } from "../changes";

type Props = { session: string; callId: string; cwd: string | null; review: ReviewedChanges; hub: boolean };

export function ChangesSection({ session, callId, cwd, review, hub }: Props) {
  const backend = useBackend();
  const queryKey = ["call_changes", session, callId];
  const now = useQuery({ queryKey, queryFn: () => backend.callChanges(callId, session), enabled: hub });
  const path = (p: string) => visible(shownPath(p, cwd));
  return (
    <section data-testid="drawer-changes" aria-label="Changes">
      <h3>Changes</h3>
      <p className="changes-counts" data-testid="changes-counts">
        <span className={review.keptCount > 0 ? "kept" : "none"}>{review.keptCount} kept</span> ·{" "}
        <span className={review.heldCount > 0 ? "held" : "none"}>{review.heldCount} held for you</span> ·{" "}
        <span className="none">{review.discardedCount} discarded</span>
      </p>
      {review.kept.length > 0 && (
        <PathList label="Kept (written to the project)" testId="changes-kept" count={review.keptCount} shown={review.kept.length}>
          {review.kept.map((p, i) => (
            <li key={i} className="mono">
              {path(p)}
            </li>
          ))}
        </PathList>
      )}
      {review.discarded.length > 0 && (
        <PathList label="Discarded" testId="changes-discarded" count={review.discardedCount} shown={review.discarded.length}>
          {review.discarded.map((c, i) => (
            <WhyItem key={i} change={c} path={path} />
          ))}
        </PathList>
      )}
      {!hub && (
        <p className="muted small">Undo, keep and discard act on the hub&apos;s own ledger: open it to act on this call.</p>
      )}
      {hub && now.isError && <Refusal error={asBackendError(now.error)} testId="changes-error" />}
      {hub && now.data && <Held review={review} changes={now.data} path={path} />}
      {hub && now.data && <Undo changes={now.data} path={path} />}
    </section>
  );
}

function PathList(props: { label: string; testId: string; count: number; shown: number; children: React.ReactNode }) {
  return (
    <div className="changes-list" data-testid={props.testId}>
      <h4>{props.label}</h4>
      <ul className="plain">{props.children}</ul>
      {props.count > props.shown && (
        <p className="muted small">…and {props.count - props.shown} more (the record names the first few)</p>
      )}
    </div>
  );
}

function WhyItem({ change, path }: { change: ChangeWithWhy; path: (p: string) => string }) {
  return (
    <li>
      <span className="mono">{path(change.path)}</span> <span className="muted">— {visible(change.why)}</span>
    </li>
  );
}

function Refusal({ error, testId }: { error: BackendError; testId: string }) {
  return (
    <p className="error" role="alert" data-testid={testId}>
      {visible(error.message)}
    </p>
  );
}

/** The changes held for the operator now, with Keep and Discard. */
function Held({ review, changes, path }: { review: ReviewedChanges; changes: CallChanges; path: (p: string) => string }) {
  const backend = useBackend();
  const client = useQueryClient();
  const answer = useMutation({
    mutationFn: (a: HeldAnswer) => backend.answerHeld(changes.call_id, changes.session, a),
    onSettled: () => client.invalidateQueries({ queryKey: ["call_changes", changes.session, changes.call_id] }),
  });
  if (changes.held.length === 0) {
    if (review.heldCount === 0 && !answer.data) return null;
    return (
      <div className="changes-list" data-testid="changes-held">
        <h4>Held for you</h4>
        <p className="muted small" data-testid="held-answered">
          {answer.data
            ? answer.data.discarded > 0
              ? `Discarded ${answer.data.discarded} held change${answer.data.discarded === 1 ? "" : "s"}.`
              : `Kept ${answer.data.kept.length}; not kept ${answer.data.not_kept.length}.`
            : "Nothing is held any more: kept or discarded already."}
        </p>
        {answer.data?.not_kept.map((c, i) => (
          <p key={i} className="small">
            not kept: <WhyItem change={c} path={path} />
          </p>
        ))}
      </div>
    );
  }
  return (
    <div className="changes-list changes-held" data-testid="changes-held">
      <h4>Held for you — not in the project until you keep them</h4>
      <ul className="plain">
        {changes.held.map((c, i) => (
          <li key={i}>
            <span className="mono">{path(c.path)}</span> <span className="muted">— {visible(c.why)}</span>
            {c.change ? <FileChangeView change={c.change} /> : null}
          </li>
        ))}
      </ul>
      <div className="drawer-actions">
        <button type="button" data-testid="held-keep" disabled={answer.isPending} onClick={() => answer.mutate("keep")}>
          Keep (write to the project)
        </button>
        <button type="button" data-testid="held-discard" disabled={answer.isPending} onClick={() => answer.mutate("discard")}>
          Discard
        </button>
      </div>
      {answer.isError && <Refusal error={asBackendError(answer.error)} testId="held-error" />}
    </div>
  );
}

/** Undo: asks the hub for the plan as it is now, shows it, and puts it back once confirmed. */
function Undo({ changes, path }: { changes: CallChanges; path: (p: string) => string }) {
  const backend = useBackend();
  const client = useQueryClient();
  const queryKey = ["call_changes", changes.session, changes.call_id];
  // The plan shown for confirmation: asked afresh when Undo is pressed (a file may have changed since).
  const [asked, setAsked] = useState<UndoPlan | null>(null);
  const [asking, setAsking] = useState(false);
  const undo = useMutation({
    mutationFn: () => backend.undoCall(changes.call_id, changes.session),
    onSettled: () => client.invalidateQueries({ queryKey }),
  });
  const { undo: plan } = changes;
  const code = plan.refusal?.code;
  if (undo.isSuccess) {
    const steps = undo.data.steps;
    const [only] = steps;
    return (
      <p className="ok" role="status" data-testid="undo-done">
        <strong>Undone.</strong>{" "}
        {steps.length === 1 && only ? (
          <>
            <span className="mono">{path(only.path)}</span> is back as it was before the command.
          </>
        ) : (
          `${steps.length} paths are back as they were before the command.`
        )}
      </p>
    );
  }
  if (code === "undone_already") {
    return (
      <p className="muted" data-testid="undo-state">
        These changes were undone already.
      </p>
    );
  }
  // Nothing was committed, or its record is gone: there is nothing to offer.
  if (code === "nothing_to_undo") return null;
  const press = async () => {
    setAsking(true);
    try {
      const fresh = await client.fetchQuery({ queryKey, queryFn: () => backend.callChanges(changes.call_id, changes.session), staleTime: 0 });
      setAsked(fresh.undo);
    } catch (e) {
      const error = asBackendError(e);
      setAsked({ possible: false, steps: [], refusal: { code: error.code, message: error.message, details: null } });
    } finally {
      setAsking(false);
    }
  };
  return (
    <div className="undo-box" data-testid="undo-box">
      {asked == null && (
        <button type="button" data-testid="undo" disabled={asking} onClick={() => void press()}>
          Undo the kept changes…
        </button>
      )}
      {asked != null && !asked.possible && (
        <>
          <UndoRefused refusal={asked.refusal} path={path} />
          <button type="button" data-testid="undo-close" onClick={() => setAsked(null)}>
            Close
          </button>
        </>
      )}
      {asked != null && asked.possible && (
        <div className="undo-confirm" data-testid="undo-confirm">
          <p>
            <strong>
              {asked.steps.length === 1
                ? "Put this path back as it was before the command?"
                : `Put these ${asked.steps.length} paths back as they were before the command?`}
            </strong>
          </p>
          <ul className="plain undo-plan" data-testid="undo-plan">
            {asked.steps.map((s, i) => (
              <li key={i}>
                <span className="mono">{path(s.path)}</span> <span className="muted">— {undoWords(s.now, s.again)}</span>
              </li>
            ))}
          </ul>
          <p className="muted small">If any of them changes before you confirm, nothing is touched.</p>
          <div className="drawer-actions">
            <button type="button" className="danger" data-testid="undo-confirm-yes" disabled={undo.isPending} onClick={() => undo.mutate()}>
              {asked.steps.length === 1 ? "Put it back" : "Put them back"}
            </button>
            <button type="button" data-testid="undo-cancel" disabled={undo.isPending} onClick={() => setAsked(null)}>
              Cancel
            </button>
          </div>
          {undo.isError && <UndoRefused refusal={asBackendError(undo.error)} path={path} />}
        </div>
      )}
    </div>
  );
}

/** Why an undo cannot be done, in the operator's terms: by its code, with the paths it names. */
function UndoRefused({ refusal, path }: { refusal: ApiError | BackendError | null; path: (p: string) => string }) {
  const details: unknown = refusal?.details;
  const named = details && typeof details === "object" && "paths" in details ? details.paths : undefined;
  const paths = Array.isArray(named) ? named.filter((p): p is string => typeof p === "string") : [];
  if (refusal?.code === "changed_since_commit" && paths.length > 0) {
    return (
      <div className="error" role="alert" data-testid="undo-refused">
        <p>
          <strong>Undo is not possible: {paths.length === 1 ? "this file was" : "these files were"} changed after the command.</strong>
        </p>
        <ul className="plain">
          {paths.map((p, i) => (
            <li key={i} className="mono">
              {path(p)}
            </li>
          ))}
        </ul>
        <p>Putting the old version back would lose that change, so nothing was touched.</p>
      </div>
    );
  }
  const lead = refusal?.code === "undo_failed" ? "The undo failed." : "Undo is not possible.";
  return (
    <p className="error" role="alert" data-testid="undo-refused">
      <strong>{lead}</strong> {visible(refusal?.message ?? "the hub gave no reason")}
    </p>
  );
}
