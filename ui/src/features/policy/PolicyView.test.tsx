// The policy workbench against the fake backend: the hub's layers as tabs, the project file open as a
// draft checked as typed (example marks from the check), a structured edit written into the source, and
// a save through the diff dialog with the version that was read.
import { beforeAll, describe, expect, it } from "vitest";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendContext, FeedContext } from "../../app/context";
import { fakeBackend, type FakeBackend } from "../../backend/fake";
import { followFeed } from "../../data/feed";
import type { DraftCheck, PolicyLayers } from "../../backend/backend";
import { PolicyView } from "./PolicyView";
import { readRules } from "./model";

beforeAll(() => {
  const empty = () => ({ length: 0, item: () => null, [Symbol.iterator]: [][Symbol.iterator] }) as unknown as DOMRectList;
  Range.prototype.getClientRects ??= empty;
});

const FILE = "/home/dev/shop/.portcullis/policy.json";
const TEXT = `{
  "commands": {
    "rules": [
      { "id": "git-read", "pattern": ["git", ["status", "log"]], "decision": "allow", "match": ["git status", "git diff"] }
    ]
  }
}
`;

const layers: PolicyLayers = {
  project: "/home/dev/shop",
  layers: [{ source: FILE, kind: "project", layer: 0, text: TEXT, version: "v1", editable: true, in_force: true }],
};

function check(text: string): DraftCheck {
  const read = readRules(text);
  const rules = read.ok ? read.rules : [];
  return {
    version: String(text.length),
    problem: null,
    summary: { rules: rules.length, examples: 2, tests: 0, servers: 0 },
    examples: rules.flatMap((r, ri) =>
      (r.match ?? []).map((example, i) => ({
        source: FILE,
        line: 0,
        column: 0,
        rule: r.id,
        example,
        should_match: true,
        passed: example !== "git diff",
        rule_index: ri,
        example_index: i,
        why: example === "git diff" ? "word 2 of `git diff` is `diff`; the pattern wants one of `status`, `log`" : null,
      })),
    ),
  };
}

function setup(): FakeBackend {
  const backend = fakeBackend({
    policyLayers: async () => layers,
    checkPolicyDraft: async (_file, text) => check(text),
    diffPolicyDraft: async () => ({ diff: [{ kind: "added", new: 4, text: "x" }], version_on_disk: "v1" }),
    savePolicyFile: async () => "v2",
    ruleActivity: async () => ({
      hits: [{ rule: "git-read", day: 3, week: 9 }],
      candidates: [
        { command: "npm run build", calls: 4, words: ["npm", "run", "build"] },
        { command: "make && make install", calls: 2, words: null },
      ],
      millis: 1,
    }),
  });
  const feed = followFeed(backend);
  render(
    <BackendContext.Provider value={backend}>
      <FeedContext.Provider value={feed}>
        <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
          <PolicyView />
        </QueryClientProvider>
      </FeedContext.Provider>
    </BackendContext.Provider>,
  );
  return backend;
}

describe("the policy workbench", () => {
  it("opens the project file with its rules, marks from the check, and why an example fails", async () => {
    setup();
    const card = await screen.findByTestId("rule-0");
    expect(within(card).getByTestId("rule-id")).toHaveValue("git-read");
    await waitFor(() => expect(within(card).getAllByTestId("example").map((e) => e.dataset.mark)).toEqual(["pass", "fail"]));
    expect(within(card).getByTestId("example-why")).toHaveTextContent("word 2 of `git diff` is `diff`");
    expect(screen.getByTestId("layer-project")).toHaveTextContent("in force");
  });

  it("writes a structured edit into the draft and saves it over the version read", async () => {
    const backend = setup();
    const card = await screen.findByTestId("rule-0");
    await userEvent.click(within(card).getByTestId("rule-decision-forbidden"));
    await waitFor(() => expect(screen.getByTestId("draft-dirty")).toHaveTextContent("unsaved"));
    const last = backend.calls.filter(([m]) => m === "checkPolicyDraft").at(-1);
    expect(String(last?.[1][1])).toMatch(/"decision": "forbidden"/);
    await userEvent.click(screen.getByTestId("draft-save"));
    await userEvent.click(await screen.findByTestId("save-confirm"));
    await waitFor(() => expect(screen.queryByTestId("save-dialog")).toBeNull());
    const save = backend.calls.find(([m]) => m === "savePolicyFile");
    expect(save?.[1][0]).toBe(FILE);
    expect(String(save?.[1][1])).toMatch(/"decision": "forbidden"/);
    expect(save?.[1][2]).toBe("v1");
    expect(screen.getByTestId("draft-dirty")).toHaveTextContent("saved");
  });
});

describe("typing into a rule's field", () => {
  it("keeps every character, spaces included", async () => {
    const backend = setup();
    const card = await screen.findByTestId("rule-0");
    const field = within(card).getByLabelText("Justification");
    await userEvent.type(field, "reading is safe, mostly");
    await waitFor(() => expect(field).toHaveValue("reading is safe, mostly"));
    const last = backend.calls.filter(([m]) => m === "checkPolicyDraft").at(-1);
    expect(String(last?.[1][1])).toContain('"justification": "reading is safe, mostly"');
  });
});

describe("what the rules did lately", () => {
  it("shows each rule's calls and offers the most prompted commands as rules", async () => {
    const backend = setup();
    const card = await screen.findByTestId("rule-0");
    await waitFor(() => expect(within(card).getByTestId("rule-hits")).toHaveTextContent("3 today · 9 this week"));
    const candidates = screen.getByTestId("candidates");
    expect(candidates).toHaveTextContent("make && make install");
    expect(within(candidates).getAllByTestId("candidate-add")).toHaveLength(1);
    await userEvent.click(within(candidates).getByText(/Most prompted/));
    await userEvent.click(within(candidates).getByTestId("candidate-add"));
    const card1 = await screen.findByTestId("rule-1");
    expect(within(card1).getByTestId("rule-id")).toHaveValue("npm-run");
    const last = backend.calls.filter(([m]) => m === "checkPolicyDraft").at(-1);
    expect(String(last?.[1][1])).toContain('{ "id": "npm-run", "pattern": ["npm", "run", "build"], "decision": "allow", "exact": true, "match": ["npm run build"] }');
  });
});
