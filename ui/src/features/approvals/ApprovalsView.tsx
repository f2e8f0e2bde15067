// The approvals inbox (the default view): a card per pending call, oldest first. The selected card takes
// the keys (1-4 / o s a d, n for a note, j/k to move, ? for the list); a card being answered stays
// where it is until it is settled.
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import { useQuery } from "@tanstack/react-query";
import type { Approval } from "../../backend/backend";
import { useBackend, useFeed } from "../../app/context";
import { useFirstTime } from "../../lib/useFirstTime";
import { useNow } from "../../lib/useNow";
import { Kbd } from "../../lib/ui/Kbd";
import { approvalsStore, identicalGroups } from "./approvalsStore";
import { AlwaysSheet } from "./parts/AlwaysSheet";
import { SessionGrants } from "./parts/SessionGrants";
import { UnknownOutcomes } from "./parts/UnknownOutcomes";
import { ANSWER_KEYS, OTHER_KEYS, choiceOfKey } from "./keys";
import { ApprovalCard } from "./parts/ApprovalCard";

export function ApprovalsView() {
  const backend = useBackend();
  const feed = useFeed();
  const store = useMemo(() => approvalsStore(backend, feed), [backend, feed]);
  useEffect(() => () => store.stop(), [store]);
  const state = useSyncExternalStore(store.subscribe, store.snapshot);
  const sessions = useQuery({ queryKey: ["sessions"], queryFn: () => backend.sessions() });
  const now = useNow();
  const [selectedId, setSelectedId] = useState<number | null>(null);
  const [noting, setNoting] = useState<number | null>(null);
  const [showKeys, setShowKeys] = useState(false);
  /** The id of the card whose "always" sheet is open. */
  const [alwaysFor, setAlwaysFor] = useState<number | null>(null);

  const groups = useMemo(() => identicalGroups(state.pending), [state.pending]);
  // One card per group of identical calls: its oldest.
  const pending = useMemo(() => groups.map((g) => g[0]!), [groups]);
  const idsOf = (a: Approval) => groups.find((g) => g[0] === a)?.map((p) => p.id) ?? [a.id];
  const loadedAt = useFirstTime(state.loaded);
  const selected = pending.find((p) => p.id === selectedId) ?? pending[0];
  const sheetFor = pending.find((p) => p.id === alwaysFor);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      if (alwaysFor != null) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
      if (e.key === "?") {
        setShowKeys((s) => !s);
        return;
      }
      if (e.key === "Escape") {
        setShowKeys(false);
        return;
      }
      if (!selected) return;
      const index = pending.indexOf(selected);
      if (e.key === "j" || e.key === "ArrowDown") {
        setSelectedId(pending[Math.min(index + 1, pending.length - 1)]?.id ?? null);
      } else if (e.key === "k" || e.key === "ArrowUp") {
        setSelectedId(pending[Math.max(index - 1, 0)]?.id ?? null);
      } else if (e.key === "n") {
        e.preventDefault();
        setNoting(selected.id);
      } else {
        const choice = choiceOfKey(e.key);
        if (!choice || (choice === "always" && selected.always.offered !== "yes")) return;
        e.preventDefault();
        if (choice === "always") setAlwaysFor(selected.id);
        else void store.answerAll(idsOf(selected), choice);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });

  return (
    <section className="view approvals" aria-label="Approvals" data-loaded-at={loadedAt}>
      <div className="view-head">
        <h1>
          Approvals <span className="count">{pending.length} waiting</span>
        </h1>
        <button type="button" className="link" onClick={() => setShowKeys((s) => !s)}>
          <Kbd>?</Kbd> keys
        </button>
      </div>
      {state.failure && (
        <p className="failure" role="alert">
          {state.failure}
        </p>
      )}
      {state.settledElsewhere && (
        <p className="notice" role="status" data-testid="settled-elsewhere">
          {state.settledElsewhere}
        </p>
      )}
      {showKeys && <KeyList />}
      <UnknownOutcomes />
      {state.loaded && pending.length === 0 && (
        <p className="empty" data-testid="inbox-empty">
          Nothing waits for you. Calls the policy prompts for appear here.
        </p>
      )}
      <div className="cards">
        {pending.map((a) => (
          <ApprovalCard
            key={a.id}
            approval={a}
            count={idsOf(a).length}
            session={sessions.data?.find((s) => s.id === a.session_id)}
            now={now}
            selected={a === selected}
            answering={state.answering.includes(a.id)}
            noting={noting === a.id}
            onSelect={() => setSelectedId(a.id)}
            onNote={(open) => setNoting(open ? a.id : null)}
            onAnswer={(choice, note) => {
              setNoting(null);
              if (choice === "always") setAlwaysFor(a.id);
              else void store.answerAll(idsOf(a), choice, note);
            }}
          />
        ))}
      </div>
      {sheetFor && (
        <AlwaysSheet
          approval={sheetFor}
          count={idsOf(sheetFor).length}
          onCancel={() => setAlwaysFor(null)}
          onWrite={(scope) => {
            setAlwaysFor(null);
            void store.answerAll(idsOf(sheetFor), "always", undefined, scope);
          }}
        />
      )}
      <SessionGrants />
    </section>
  );
}

function KeyList() {
  return (
    <table className="keys" data-testid="key-list">
      <caption>Keys (they answer the selected card)</caption>
      <tbody>
        {ANSWER_KEYS.map((k) => (
          <tr key={k.choice}>
            <td>
              <Kbd>{k.keys[0]}</Kbd> <Kbd>{k.keys[1]}</Kbd>
            </td>
            <td>
              {k.label}: {k.hint}
            </td>
          </tr>
        ))}
        {OTHER_KEYS.map(([key, what]) => (
          <tr key={key}>
            <td>
              <Kbd>{key}</Kbd>
            </td>
            <td>{what}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
