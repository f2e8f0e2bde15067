import { describe, expect, it, vi } from "vitest";
import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { FeedContext } from "../../app/context";
import { fakeBackend } from "../../backend/fake";
import { followFeed } from "../../data/feed";
import { allowedCall, callEvent, shellApproval } from "../../test/fixtures";
import type { FeedItem } from "../../backend/backend";
import { LiveView } from "./LiveView";
import { RING, liveStore, placed, type Frame } from "./liveStore";

const T0 = 1_767_000_000_000_000;

/** A store whose frames run when the test says. */
function manualStore() {
  const backend = fakeBackend();
  const feed = followFeed(backend);
  const frames: Array<() => void> = [];
  const frame: Frame = (work) => void frames.push(work);
  const store = liveStore(feed, frame);
  const paint = () => frames.splice(0).forEach((f) => f());
  return { backend, store, paint };
}

describe("the live calls store", () => {
  it("lays an event's checks back from its time by their durations", () => {
    const passed = (stage: "grant" | "arguments" | "policy" | "ledger", us: number) => ({
      stage,
      outcome: "passed" as const,
      decision: null,
      decided_by: null,
      duration_us: us,
      error: null,
    });
    const started = { stage: "execution" as const, outcome: "started" as const, decision: null, decided_by: null, duration_us: null, error: null };
    const steps = [passed("grant", 5), passed("arguments", 20), passed("policy", 100), passed("ledger", 300), started];
    expect(placed(steps, 1_000)).toEqual([575, 580, 600, 700, 1_000]);
  });

  it("under a stream of events changes at most once per gap; a lone call shows at once", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    try {
      const backend = fakeBackend();
      const feed = followFeed(backend);
      const store = liveStore(feed, (work) => work(), 100);
      backend.push(allowedCall(1, "c1", T0, 3_400));
      expect(store.snapshot().calls).toHaveLength(1);
      backend.push(allowedCall(3, "c2", T0 + 5, 800));
      backend.push(allowedCall(5, "c3", T0 + 9, 800));
      expect(store.snapshot().calls).toHaveLength(1);
      vi.advanceTimersByTime(99);
      expect(store.snapshot().calls).toHaveLength(1);
      vi.advanceTimersByTime(2);
      expect(store.snapshot().calls).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("groups a call's events into one row with its steps, applied once per frame", () => {
    const { backend, store, paint } = manualStore();
    backend.push(allowedCall(1, "c1", T0, 3_400));
    expect(store.snapshot().calls).toHaveLength(0);
    paint();
    const [row] = store.snapshot().calls;
    expect(row).toMatchObject({ action: "echo hi", decision: "allow", state: "finished" });
    // The listing is the hub's: the ledger's row type, as the ledger browser lists the call.
    expect(row?.listed).toMatchObject({ tool: "shell", status: "finished", duration_us: 3_400 });
    expect(row?.steps.map((s) => `${s.stage} ${s.outcome} +${s.at - T0}`)).toEqual([
      "policy passed +0",
      "ledger passed +850",
      "execution started +850",
      "execution finished +3400",
    ]);
  });

  it("puts an approval on its call's timeline and shows the operator who answered", () => {
    const { backend, store, paint } = manualStore();
    const approval = { ...shellApproval(3), requested_at: T0 };
    backend.push([{ seq: 1, at: T0, event: { kind: "approval_asked", approval } }]);
    paint();
    expect(store.snapshot().calls[0]).toMatchObject({ state: "waiting", decision: "prompt" });
    backend.push([
      callEvent(2, approval.call_id, "tool_execution_started", [
        { stage: "approval", outcome: "passed", decision: "approved", decided_by: { kind: "operator", words: "alice (app): approved once" }, duration_us: null, error: null },
        { stage: "execution", outcome: "started", decision: null, decided_by: null, duration_us: null, error: null },
      ], { at: T0 + 4_000_000, session: approval.session_id }),
    ]);
    paint();
    const [row] = store.snapshot().calls;
    expect(store.snapshot().calls).toHaveLength(1);
    expect(row).toMatchObject({ state: "running", decision: "approved", listed: { owner: "claude-code 2.1.0 (http)" } });
    expect(row?.steps.map((s) => `${s.stage} ${s.outcome}`)).toEqual([
      "approval asked",
      "approval passed",
      "execution started",
    ]);
  });

  it("keeps the last RING calls and counts the events the hub dropped", () => {
    const { backend, store, paint } = manualStore();
    const items: FeedItem[] = [];
    for (let i = 0; i < RING + 100; i++) items.push(...allowedCall(2 * i, `c${i}`, T0 + i, 10));
    items.push({ seq: 99_999, at: T0, event: { kind: "missed", source: "calls", count: 42 } });
    backend.push(items);
    paint();
    const { calls, missed } = store.snapshot();
    expect(calls).toHaveLength(RING);
    expect(calls[0]?.listed?.call_id).toBe(`c${RING + 99}`);
    expect(missed).toBe(42);
  });

  it("holds new calls while paused or hovered; the rows shown still get their steps", () => {
    const { backend, store, paint } = manualStore();
    const [started, finished] = allowedCall(1, "c1", T0, 50);
    backend.push([started as FeedItem]);
    paint();
    store.setHovering(true);
    backend.push([finished as FeedItem, ...allowedCall(3, "c2", T0 + 100, 50)]);
    paint();
    expect(store.snapshot().calls.map((c) => `${c.listed?.call_id} ${c.state}`)).toEqual(["c1 finished"]);
    expect(store.snapshot().held).toBe(1);
    store.setHovering(false);
    expect(store.snapshot().calls.map((c) => c.listed?.call_id)).toEqual(["c2", "c1"]);
    expect(store.snapshot().held).toBe(0);
  });

  it("takes a thousand calls (2,000 events) in one frame within a few milliseconds", () => {
    const { backend, store, paint } = manualStore();
    const items: FeedItem[] = [];
    for (let i = 0; i < 1000; i++) items.push(...allowedCall(3 * i, `c${i}`, T0 + i * 1000, 900));
    backend.push(items);
    const started = performance.now();
    paint();
    const took = performance.now() - started;
    console.log(`live store: 1,000 calls (2,000 events) applied in ${took.toFixed(1)} ms`);
    expect(store.snapshot().calls).toHaveLength(RING);
    expect(took).toBeLessThan(200);
  });
});

/** The live view over a fake backend's feed; returns the backend to push events into and the feed. */
function showLive() {
  const backend = fakeBackend();
  const feed = followFeed(backend);
  render(
    <FeedContext.Provider value={feed}>
      <LiveView />
    </FeedContext.Provider>,
  );
  return { backend, feed };
}

describe("the live calls view", () => {
  it("marks each command with its walls: confined, or unconfined in the warning colour", async () => {
    const { backend } = showLive();
    await act(async () => {
      backend.push([
        ...allowedCall(1, "c1", T0, 900, { action: "make test", sandbox: "confined · writes /home/dev/shop · network closed · 512 processes, 4096 MiB each" }),
        ...allowedCall(3, "c2", T0 + 5, 700, { action: "ls", sandbox: "UNCONFINED: this kernel has no Landlock" }),
      ]);
      await new Promise((r) => requestAnimationFrame(() => r(null)));
    });
    const rows = await screen.findAllByTestId("live-call");
    const walls = rows.map((r) => within(r).getByTestId("live-walls"));
    expect(walls.map((w) => w.textContent)).toEqual(["unconfined", "confined"]);
    expect(walls[0]).toHaveClass("walls-open");
    await userEvent.click(within(rows[1] as HTMLElement).getByTestId("live-call-toggle"));
    expect(screen.getByTestId("live-sandbox")).toHaveTextContent("walls: confined · writes /home/dev/shop · network closed");
  });

  it("shows one row per call; expanding it shows each stage's time from the start and who decided", async () => {
    const { backend, feed } = showLive();
    await act(async () => {
      backend.push([
        ...allowedCall(1, "c1", T0, 12_300, { action: "echo hi" }),
        ...allowedCall(3, "c2", T0 + 5, 800, { tool: "read", action: "read /home/dev/shop/README.md", agent: "codex 0.9 (stdio)" }),
        callEvent(5, "c3", "tool_execution_blocked", [
          { stage: "policy", outcome: "blocked", decision: "forbidden", decided_by: { kind: "rule", words: "rule no-rm (/p/policy.json)" }, duration_us: null, error: "execution_denied: rm -rf \u001b[2J is forbidden" },
        ], { at: T0 + 9 }),
      ]);
      await new Promise((r) => requestAnimationFrame(() => r(null)));
    });
    const rows = await screen.findAllByTestId("live-call");
    expect(rows).toHaveLength(3);
    expect(rows[0]).toHaveTextContent("forbidden");
    await userEvent.click(within(rows[2] as HTMLElement).getByTestId("live-call-toggle"));
    const steps = within(screen.getByTestId("live-steps")).getAllByTestId("live-step");
    expect(steps.map((s) => s.textContent)).toEqual([
      expect.stringMatching(/^\+0\.0 mspolicypassed.*allow.*by rule read-only/),
      expect.stringMatching(/^\+3\.1 msledgerpassed.*started row written/),
      expect.stringMatching(/^\+3\.1 msexecutionstarted/),
      expect.stringMatching(/^\+12 msexecution12 msfinished/),
    ]);
    // Agent text in an error is shown with its control characters made visible.
    await userEvent.click(within(rows[0] as HTMLElement).getByTestId("live-call-toggle"));
    expect(screen.getAllByTestId("live-steps")[0]).toHaveTextContent("rm -rf \\x1b[2J is forbidden");
    await userEvent.selectOptions(screen.getByTestId("filter-agent"), "codex 0.9 (stdio)");
    expect(screen.getAllByTestId("live-call").map((r) => r.dataset.tool)).toEqual(["read"]);
    await userEvent.selectOptions(screen.getByTestId("filter-agent"), "");
    await userEvent.selectOptions(screen.getByTestId("filter-decision"), "forbidden");
    expect(screen.getAllByTestId("live-call")).toHaveLength(1);
    feed.stop();
  });
});
