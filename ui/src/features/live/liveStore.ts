// The live view's calls: the feed's call events grouped into one entry per call (the newest first, the
// last RING calls), each with the call's listing as the hub folded it (the ledger's own `CallRow`, the
// type the ledger browser lists) and its pipeline steps as the hub computed them. Feed batches are queued and
// applied once per animation frame, so a thousand calls a second cost one update a frame. While held
// (paused, or the pointer is on the list) new calls wait and the rows on screen keep their places; the
// calls already shown still get their steps. Says how many events the hub dropped for this window.
import type { Approval, CallDecision, CallRow, CallStep, Connection, FeedItem, StepOutcome } from "../../backend/backend";
import type { Feed } from "../../data/feed";

export const RING = 500;

/** One step of a call's timeline: the hub's step with when it happened (µs since the epoch), or an
 * approval's question (`asked`, with why it was asked: agent text may be quoted in it). */
export type StepView = Omit<CallStep, "outcome"> & { outcome: StepOutcome | "asked"; at: number; note?: string };

/** Where a call stands: its listing's status, or waiting for an operator. */
export type CallState = "waiting" | CallRow["status"];

/** One call of the live view. */
export interface LiveCall {
  key: string;
  /** The call as listed after its latest event (none while it waits for an answer and has no event yet). */
  listed: CallRow | null;
  /** The approval that asked, when one did. */
  asked: Approval | null;
  action?: string;
  /** The walls the command runs inside, in one line (`UNCONFINED: …` when it has none). */
  sandbox?: string;
  /** What the command reached or was refused through its egress proxy (its finish says). */
  connections?: Connection[];
  /** When its first event happened (µs since the epoch): the steps' times count from it. */
  startedAt: number;
  decision?: CallDecision | "prompt";
  state: CallState;
  steps: StepView[];
}

/** The tool a call names. */
export const toolOf = (c: LiveCall): string => c.listed?.tool ?? c.asked?.tool ?? "";
/** The agent that made it (agent text). */
export const agentOf = (c: LiveCall): string => c.listed?.owner ?? "";
/** How long it ran, once it finished or failed (µs). */
export const tookOf = (c: LiveCall): number | undefined => c.listed?.duration_us ?? undefined;

export interface LiveState {
  /** The newest first, at most RING. */
  calls: LiveCall[];
  paused: boolean;
  /** The pointer is on the list: new calls wait so that no row moves under it. */
  hovering: boolean;
  /** New calls waiting to be shown (paused or hovering); only the newest RING are kept. */
  held: number;
  /** Events the hub dropped for this window (the feed's `missed` items). */
  missed: number;
}

export interface LiveStore {
  subscribe(listener: () => void): () => void;
  snapshot(): LiveState;
  setPaused(paused: boolean): void;
  setHovering(hovering: boolean): void;
  stop(): void;
}

/** Schedules work before the next paint; tests pass their own. */
export type Frame = (work: () => void) => void;

const nextFrame: Frame = (work) => void requestAnimationFrame(work);

/** Under a stream of events the view changes at most this often (rows that move faster cannot be read,
 * and each change costs the window a layout); a lone call still shows in the next frame. */
export const MIN_APPLY_GAP_MS = 100;

export function liveStore(
  feed: Feed,
  frame: Frame = nextFrame,
  minGapMs: number = frame === nextFrame ? MIN_APPLY_GAP_MS : 0,
): LiveStore {
  let state: LiveState = { calls: [], paused: false, hovering: false, held: 0, missed: 0 };
  const listeners = new Set<() => void>();
  // Every call the store knows, shown or held, by key.
  const known = new Map<string, LiveCall>();
  // Held new calls, the oldest first.
  let held: LiveCall[] = [];
  let queue: FeedItem[] = [];
  let scheduled = false;
  let stopped = false;
  let lastApply = -Infinity;

  const publish = (next: Partial<LiveState>) => {
    state = { ...state, ...next };
    listeners.forEach((l) => l());
  };
  const holding = () => state.paused || state.hovering;

  const apply = () => {
    scheduled = false;
    if (stopped) return;
    lastApply = performance.now();
    const items = queue;
    queue = [];
    let missed = state.missed;
    // Rows changed in this frame: copied once, then changed in place.
    const fresh = new Map<string, LiveCall>();
    const added: LiveCall[] = [];
    const touch = (key: string, make: () => LiveCall): LiveCall => {
      const copy = fresh.get(key);
      if (copy) return copy;
      const old = known.get(key);
      const row = old ? { ...old, steps: [...old.steps] } : make();
      if (!old) added.push(row);
      fresh.set(key, row);
      known.set(key, row);
      return row;
    };
    for (const { event } of items) {
      if (event.kind === "missed") missed += event.count;
      else if (event.kind === "call") {
        const key = `${event.row.session_id}/${event.row.call_id}`;
        const row = touch(key, () => ({ key, listed: null, asked: null, startedAt: event.at, state: "running", steps: [] }));
        row.listed = event.row;
        row.state = event.row.status;
        if (event.action != null) row.action = event.action;
        if (event.sandbox != null) row.sandbox = event.sandbox;
        if (event.connections != null && event.connections.length > 0) row.connections = event.connections;
        placed(event.steps, event.at).forEach((at, i) => addStep(row, event.steps[i]!, at));
      } else if (event.kind === "approval_asked") {
        const a = event.approval;
        const key = `${a.session_id}/${a.call_id}`;
        const row = touch(key, () => ({ key, listed: null, asked: a, startedAt: a.requested_at, state: "waiting", steps: [] }));
        row.asked = a;
        row.action ??= a.action.command ?? undefined;
        row.steps.push({ at: a.requested_at, stage: "approval", outcome: "asked", note: a.reason ?? undefined });
        row.decision = "prompt";
        row.state = "waiting";
      }
    }
    if (!fresh.size && missed === state.missed) return;
    held = [...held.map((r) => fresh.get(r.key) ?? r), ...added];
    if (held.length > RING) for (const r of held.splice(0, held.length - RING)) known.delete(r.key);
    let calls = state.calls.map((r) => fresh.get(r.key) ?? r);
    if (!holding()) ({ calls, held } = release(calls, held, known));
    publish({ calls, missed, held: held.length });
  };

  const stop = feed.listen((batch) => {
    for (const item of batch) queue.push(item);
    if (!scheduled) {
      scheduled = true;
      const wait = lastApply + minGapMs - performance.now();
      if (wait > 0) setTimeout(() => frame(apply), wait);
      else frame(apply);
    }
  });

  const setHolding = (next: Partial<LiveState>) => {
    state = { ...state, ...next };
    if (!holding() && held.length) {
      const released = release(state.calls, held, known);
      held = released.held;
      publish({ calls: released.calls, held: 0 });
    } else publish({});
  };

  return {
    subscribe: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    snapshot: () => state,
    setPaused: (paused) => setHolding({ paused }),
    setHovering: (hovering) => {
      if (hovering !== state.hovering) setHolding({ hovering });
    },
    stop: () => {
      stopped = true;
      stop();
    },
  };
}

/** The held calls shown on top (the newest first), the list cut to RING. */
function release(calls: LiveCall[], held: LiveCall[], known: Map<string, LiveCall>) {
  const all = [...[...held].reverse(), ...calls];
  for (const r of all.slice(RING)) known.delete(r.key);
  return { calls: all.slice(0, RING), held: [] as LiveCall[] };
}

/** When each of an event's steps began: the event is emitted as its last step ends, and each passed check
 * before it took its `duration_us`, so they are laid back from the event's time, last first. */
export function placed(steps: CallStep[], at: number): number[] {
  const times = new Array<number>(steps.length);
  let cursor = at;
  for (let i = steps.length - 1; i >= 0; i -= 1) {
    const step = steps[i]!;
    if (step.outcome === "passed" && step.duration_us != null) cursor -= step.duration_us;
    times[i] = cursor;
  }
  return times;
}

function addStep(row: LiveCall, step: CallStep, at: number) {
  if (at < row.startedAt) row.startedAt = at;
  row.steps.push({ ...step, at });
  if (step.decision) row.decision = step.decision;
  if ((step.outcome === "finished" || step.outcome === "error") && step.duration_us != null) retime(row, at - step.duration_us);
}

/** The call was allowed at `begun` (its duration counts from there, before its ledger row was written):
 * its decision step is placed there rather than where the start was announced, and the call starts
 * there if nothing came earlier (an approval asked). */
function retime(row: LiveCall, begun: number) {
  row.steps = row.steps.map((s) =>
    s.outcome === "passed" && (s.stage === "policy" || s.stage === "approval") && s.at > begun ? { ...s, at: begun } : s,
  );
  if (begun < row.startedAt) row.startedAt = begun;
}
