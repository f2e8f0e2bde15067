// The Changes section of a confined command's call against the fake backend: the review's counts and
// paths (agent text escaped), Undo showing the plan as the hub has it when pressed and undoing only once
// confirmed, a refusal with its reason, and Keep / Discard of held changes sent for this call.
import { describe, expect, it } from "vitest";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendContext } from "../../../app/context";
import { BackendError, type CallChanges, type CallDetail, type CallRow } from "../../../backend/backend";
import { fakeBackend, type FakeBackend } from "../../../backend/fake";
import { CallDrawer } from "./CallDrawer";

const NOW = Date.now() * 1000;
const CWD = "/home/dev/shop";

const ROW = {
  record_id: 9,
  session_id: "claude-code-00001",
  run_id: "r",
  call_id: "call-7",
  owner: "claude-code",
  tool: "shell",
  status: "finished",
  at: NOW,
  decided_by: "rule",
  decided_rule: "edits",
  redacted: false,
  summary: "printf x > notes.txt",
} as CallRow;

const DETAIL = {
  call: ROW,
  arguments: { command: ROW.summary },
  output: [
    { type: "text", text: "[changes kept: 1 (notes.txt)]" },
    {
      type: "other",
      value: {
        exit_code: 0,
        sandbox: {
          confined: true,
          changes: {
            kept_count: 1,
            kept: [`${CWD}/notes.txt`],
            held_count: 1,
            held: [{ path: `${CWD}/.cargo/config.toml`, why: "executed config \u001b[31m" }],
            discarded_count: 0,
            discarded: [],
          },
        },
      },
    },
  ],
  output_is_error: false,
  connections: [],
  error: null,
  decider: { kind: "rule", words: "rule edits", rule: "edits", source: ".portcullis/policy.json", operator: null },
  policy_decider: null,
  matched_rules: [],
  files: [],
  cwd: CWD,
  timings: { first_at: NOW, started_at: NOW, ended_at: NOW + 1000, approval_wait_us: null, run_us: 1000, total_us: 1000 },
  records: [],
  approvals: [],
} as CallDetail;

function changes(over: Partial<CallChanges> = {}): CallChanges {
  return {
    call_id: "call-7",
    session: "claude-code-00001",
    undo: { possible: true, steps: [{ path: `${CWD}/notes\u202e.txt`, now: "file", again: "file" }], refusal: null },
    held: [{ path: `${CWD}/.cargo/config.toml`, why: "executed config \u001b[31m" }],
    ...over,
  };
}

function mount(backend: FakeBackend, hub = true) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(
    <BackendContext.Provider value={backend}>
      <QueryClientProvider client={client}>
        <CallDrawer ledgerId={1} hub={hub} session="claude-code-00001" callId="call-7" onClose={() => {}} onSession={() => {}} />
      </QueryClientProvider>
    </BackendContext.Provider>,
  );
}

describe("the Changes section", () => {
  it("shows what was kept and held, and undoes only after showing the plan and a confirmation", async () => {
    const backend = fakeBackend({
      ledgerCall: async () => DETAIL,
      callChanges: async () => changes(),
      undoCall: async () => ({ steps: changes().undo.steps }),
    });
    mount(backend);
    const section = await screen.findByTestId("drawer-changes");
    expect(within(section).getByTestId("changes-counts").textContent).toBe("1 kept · 1 held for you · 0 discarded");
    expect(within(section).getByTestId("changes-kept").textContent).toContain("notes.txt");
    const held = await within(section).findByTestId("changes-held");
    expect(held.textContent).toContain(".cargo/config.toml");
    expect(held.textContent).toContain("executed config \\x1b[31m");
    expect(held.textContent).not.toContain("\u001b");

    await userEvent.click(within(section).getByTestId("undo"));
    const plan = await screen.findByTestId("undo-plan");
    expect(plan.textContent).toContain("notes\\u{202e}.txt — its old content put back");
    expect(backend.calls.some(([name]) => name === "undoCall")).toBe(false);
    await userEvent.click(screen.getByTestId("undo-confirm-yes"));
    expect((await screen.findByTestId("undo-done")).textContent).toBe("Undone. notes\\u{202e}.txt is back as it was before the command.");
    expect(backend.calls.find(([name]) => name === "undoCall")?.[1]).toEqual(["call-7", "claude-code-00001"]);
  });

  it("says why an undo is refused when it is pressed, and puts nothing back", async () => {
    let pressed = false;
    const refusal = {
      code: "changed_since_commit" as const,
      message: `nothing was put back: changed since the commit, so putting the old state back would lose that: ${CWD}/notes.txt`,
      details: { paths: [`${CWD}/notes.txt`] },
    };
    const backend = fakeBackend({
      ledgerCall: async () => DETAIL,
      callChanges: async () => {
        const now = pressed ? changes({ undo: { possible: false, steps: [], refusal } }) : changes();
        pressed = true;
        return now;
      },
      undoCall: async () => {
        throw new BackendError(refusal);
      },
    });
    mount(backend);
    await userEvent.click(await screen.findByTestId("undo"));
    const refused = await screen.findByTestId("undo-refused");
    expect(refused.textContent).toContain("Undo is not possible: this file was changed after the command.");
    expect(within(refused).getByRole("listitem").textContent).toBe("notes.txt");
    expect(refused.textContent).toContain("nothing was touched");
    expect(backend.calls.some(([name]) => name === "undoCall")).toBe(false);
  });

  it("keeps or discards the held changes of this call", async () => {
    let held = true;
    const backend = fakeBackend({
      ledgerCall: async () => DETAIL,
      callChanges: async () => changes({ held: held ? changes().held : [] }),
      answerHeld: async () => {
        held = false;
        return { kept: [], not_kept: [], discarded: 1 };
      },
    });
    mount(backend);
    await userEvent.click(await screen.findByTestId("held-discard"));
    expect((await screen.findByTestId("held-answered")).textContent).toContain("Discarded 1 held change");
    expect(backend.calls.find(([name]) => name === "answerHeld")?.[1]).toEqual(["call-7", "claude-code-00001", "discard"]);
  });

  it("on a ledger file that is not the hub's, shows the review but offers no undo", async () => {
    const backend = fakeBackend({ ledgerCall: async () => DETAIL });
    mount(backend, false);
    const section = await screen.findByTestId("drawer-changes");
    expect(within(section).getByTestId("changes-counts")).toBeTruthy();
    expect(within(section).queryByTestId("undo")).toBeNull();
    expect(backend.calls.some(([name]) => name === "callChanges")).toBe(false);
  });
});
