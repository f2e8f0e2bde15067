// The live view's calls: the feed's call events grouped into one row per call (the newest first, the
// last RING calls), each with its pipeline steps as the hub computed them. Feed batches are queued and
// applied once per animation frame, so a thousand calls a second cost one update a frame. While held
// (paused, or the pointer is on the list) new calls wait and the rows on screen keep their places; the
// calls already shown still get their steps. Says how many events the hub dropped for this window.
import type { CallDecision, CallStep, Decider, FeedItem, PipelineStage, StepOutcome } from "../../backend/backend";
import type { Feed } from "../../data/feed";

export const RING = 500;

/** One step of a call's timeline: the hub's step, when it happened, and an approval's question. */
export interface StepView {
  /** µs since the epoch. */
  at: number;
  stage: PipelineStage;
  outcome: StepOutcome | "asked";
  decision?: CallDecision;
  decidedBy?: Decider;
  durationUs?: number;
  error?: string;
  /** Why an approval was asked (agent text may be quoted in it). */
  note?: string;
}

/** Where a call stands. */
export type CallState = "waiting" | "running" | "finished" | "error" | "blocked";

export interface CallRow {
  key: string;
  sessionId: string;
  callId: string;
  tool: string;
  agent: string;
  action?: string;
  /** The walls the command runs inside, in one line (`UNCONFINED: …` when it has none). */
  sandbox?: string;
  /** When its first event happened (µs since the epoch): the steps' times count from it. */
  startedAt: number;
  decision?: CallDecision | "prompt";
  state: CallState;
  /** Execution time once it finished or failed, in µs. */
  durationUs?: number;
  steps: StepView[];
}

export interface LiveState {
  /** The newest first, at most RING. */
  calls: CallRow[];
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
  const known = new Map<string, CallRow>();
  // Held new calls, the oldest first.
  let held: CallRow[] = [];
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
    const fresh = new Map<string, CallRow>();
    const added: CallRow[] = [];
    const touch = (key: string, make: () => CallRow): CallRow => {
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
        const key = `${event.session_id}/${event.call_id}`;
        const row = touch(key, () => ({
          key,
          sessionId: event.session_id,
          callId: event.call_id,
          tool: event.tool,
          agent: event.agent,
          startedAt: event.at,
          state: "running",
          steps: [],
        }));
        if (event.action != null) row.action = event.action;
        if (event.sandbox != null) row.sandbox = event.sandbox;
        if (!row.agent) row.agent = event.agent;
        placed(event.steps, event.at).forEach((at, i) => addStep(row, event.steps[i]!, at));
      } else if (event.kind === "approval_asked") {
        const a = event.approval;
        const key = `${a.session_id}/${a.call_id}`;
        const row = touch(key, () => ({
          key,
          sessionId: a.session_id,
          callId: a.call_id,
          tool: a.tool,
          agent: "",
          startedAt: a.requested_at,
          state: "waiting",
          steps: [],
        }));
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
function release(calls: CallRow[], held: CallRow[], known: Map<string, CallRow>) {
  const all = [...[...held].reverse(), ...calls];
  for (const r of all.slice(RING)) known.delete(r.key);
  return { calls: all.slice(0, RING), held: [] as CallRow[] };
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

function addStep(row: CallRow, step: CallStep, at: number) {
  if (at < row.startedAt) row.startedAt = at;
  row.steps.push({
    at,
    stage: step.stage,
    outcome: step.outcome,
    decision: step.decision ?? undefined,
    decidedBy: step.decided_by ?? undefined,
    durationUs: step.duration_us ?? undefined,
    error: step.error ?? undefined,
  });
  if (step.decision) row.decision = step.decision;
  switch (step.outcome) {
    case "blocked":
      row.state = "blocked";
      break;
    case "started":
    case "progress":
      row.state = "running";
      break;
    case "finished":
    case "error":
      row.state = step.outcome;
      row.durationUs = step.duration_us ?? undefined;
      if (step.duration_us != null) retime(row, at - step.duration_us);
      break;
  }
}

/** The call was allowed at `begun` (its duration counts from there, before its ledger row was written):
 * its decision step is placed there rather than where the start was announced, and the call starts
 * there if nothing came earlier (an approval asked). */
function retime(row: CallRow, begun: number) {
  row.steps = row.steps.map((s) =>
    s.outcome === "passed" && (s.stage === "policy" || s.stage === "approval") && s.at > begun ? { ...s, at: begun } : s,
  );
  if (begun < row.startedAt) row.startedAt = begun;
}
