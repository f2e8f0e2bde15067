// The pending approvals as the window shows them: fetched once, then kept current from the feed
// (asked → added, settled → removed), with the answers in flight and the last answer that failed.
import {
  asBackendError,
  type Approval,
  type Backend,
  type Choice,
  type FeedItem,
  type RuleScope,
} from "../../backend/backend";
import type { Feed } from "../../data/feed";
import { visible } from "../../lib/visible";

export interface ApprovalsState {
  pending: Approval[];
  /** Ids whose answer is on its way. */
  answering: number[];
  /** The last failure, in words (which approval, what went wrong). */
  failure: string | null;
  /** The last card settled by someone else (another operator, the terminal) or by the hub, in words. */
  settledElsewhere: string | null;
  loaded: boolean;
}

/** How a settled approval's outcome reads after "was …". */
const SETTLED_WORDS: Record<string, string> = {
  once: "allowed once",
  session: "allowed for the session",
  always: "allowed always",
  deny: "denied",
  timeout: "timed out (denied)",
  withdrawn: "withdrawn (the agent went away)",
};

/** `#12 (curl -s …) was denied by bob (browser)`: a card that left this inbox without this inbox's answer. */
export function settledElsewhereWords(approval: Approval, outcome: string, operator: string | null): string {
  const what = approval.action.command ?? approval.tool;
  const how = SETTLED_WORDS[outcome] ?? outcome;
  return `#${approval.id} (${visible(what).slice(0, 80)}) was ${how}${operator ? ` by ${visible(operator)}` : ""}`;
}

export interface ApprovalsStore {
  subscribe(listener: () => void): () => void;
  snapshot(): ApprovalsState;
  answer(id: number, choice: Choice, note?: string, scope?: RuleScope[]): Promise<void>;
  /** Answers identical calls together: the first as chosen, the others (for "always", once the rule is
   * written) with the same answer, "always" becoming "once" for them. */
  answerAll(ids: number[], choice: Choice, note?: string, scope?: RuleScope[]): Promise<void>;
  stop(): void;
}

export function approvalsStore(backend: Backend, feed: Feed): ApprovalsStore {
  let state: ApprovalsState = { pending: [], answering: [], failure: null, settledElsewhere: null, loaded: false };
  const listeners = new Set<() => void>();
  const settled = new Set<number>();
  const set = (next: Partial<ApprovalsState>) => {
    state = { ...state, ...next };
    listeners.forEach((l) => l());
  };
  /** Fetches the pending approvals again: after the feed said events were missed, what it would have
   * added or removed is not known. */
  const refetch = () =>
    backend.pendingApprovals().then(
      (fetched) => set({ pending: fetched.filter((p) => !settled.has(p.id)).sort((a, b) => a.id - b.id) }),
      () => undefined,
    );
  const apply = (items: FeedItem[]) => {
    let pending = state.pending;
    let settledElsewhere = state.settledElsewhere;
    if (items.some(({ event }) => event.kind === "missed")) void refetch();
    for (const { event } of items) {
      if (event.kind === "approval_asked" && !settled.has(event.approval.id)) {
        if (!pending.some((p) => p.id === event.approval.id)) pending = [...pending, event.approval];
      } else if (event.kind === "approval_settled") {
        settled.add(event.id);
        const shown = pending.find((p) => p.id === event.id);
        // Not this inbox's own answer (that one is in flight, or already took the card away).
        if (shown && !state.answering.includes(event.id)) {
          settledElsewhere = settledElsewhereWords(shown, event.outcome, event.operator);
        }
        pending = pending.filter((p) => p.id !== event.id);
      }
    }
    if (pending !== state.pending) {
      set({ pending, settledElsewhere, answering: state.answering.filter((id) => pending.some((p) => p.id === id)) });
    }
  };
  // Listen first, then fetch: nothing asked in between is lost.
  const unlisten = feed.listen(apply);
  backend.pendingApprovals().then(
    (fetched) => {
      const known = new Set(state.pending.map((p) => p.id));
      const fresh = fetched.filter((p) => !settled.has(p.id) && !known.has(p.id));
      const pending = [...fresh, ...state.pending].sort((a, b) => a.id - b.id);
      set({ pending, loaded: true });
    },
    (e) => set({ failure: `Loading the pending approvals failed: ${asBackendError(e).message}`, loaded: true }),
  );
  return {
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    snapshot: () => state,
    answer: (id, choice, note, scope) => answer(id, choice, note, scope),
    answerAll: async (ids, choice, note, scope) => {
      const [first, ...rest] = ids;
      if (first == null) return;
      await answer(first, choice, note, scope);
      const then: Choice = choice === "always" ? "once" : choice;
      await Promise.all(rest.map((id) => answer(id, then, note)));
    },
    stop: unlisten,
  };

  async function answer(id: number, choice: Choice, note?: string, scope?: RuleScope[]) {
    if (state.answering.includes(id)) return;
    // The answer names the arguments this inbox shows (their digest, as the hub listed it): the hub
    // refuses it for any others.
    const shown = state.pending.find((p) => p.id === id);
    if (!shown) return;
    set({ answering: [...state.answering, id], failure: null });
    try {
      await backend.answerApproval(id, {
        answer: choice,
        arguments_sha256: shown.arguments_sha256,
        note: note?.trim() ? note.trim() : null,
        scope: choice === "always" && scope ? scope : null,
      });
      settled.add(id);
      set({ pending: state.pending.filter((p) => p.id !== id) });
    } catch (e) {
      const error = asBackendError(e);
      const why =
        error.code === "approval_answered"
          ? "it was already settled (answered elsewhere, timed out or withdrawn)"
          : error.code === "receipt_mismatch"
            ? "the hub holds other arguments for it than this card shows (nothing was approved; it still waits)"
            : error.message;
      set({ failure: `Approval #${id} was not answered: ${why}` });
      if (error.code === "approval_answered" || error.code === "approval_unknown") {
        settled.add(id);
        set({ pending: state.pending.filter((p) => p.id !== id) });
      } else if (error.code === "receipt_mismatch") {
        void refetch();
      }
    } finally {
      set({ answering: state.answering.filter((a) => a !== id) });
    }
  }
}

/** Calls that are the same call: same tool, arguments and working folder (any agent session). */
export function sameCallKey(a: Approval): string {
  return JSON.stringify([a.tool, a.arguments, a.action.cwd ?? null]);
}

/** The pending calls grouped by [`sameCallKey`], in the order of each group's oldest. */
export function identicalGroups(pending: Approval[]): Approval[][] {
  const groups = new Map<string, Approval[]>();
  for (const a of pending) {
    const key = sameCallKey(a);
    const group = groups.get(key);
    if (group) group.push(a);
    else groups.set(key, [a]);
  }
  return [...groups.values()];
}
