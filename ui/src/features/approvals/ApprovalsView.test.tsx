import { describe, expect, it } from "vitest";
import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { App } from "../../app/App";
import { fakeBackend } from "../../backend/fake";
import type { Answer } from "../../backend/backend";
import { asked, session, shellApproval } from "../../test/fixtures";

/** The digest of the arguments card `id` shows, which its answer names. */
const digest = (id: number) => shellApproval(id).arguments_sha256;

function backendWith(pending = [shellApproval()]) {
  const answers: Array<[number, Answer]> = [];
  const backend = fakeBackend({
    hubState: async () => ({
      state: "running",
      mcp_url: "http://127.0.0.1:7391/mcp",
      token_file: "/home/dev/.config/portcullis/token",
      project: "/home/dev/shop",
      ledger: "/home/dev/.local/share/portcullis/ledger.db",
    }),
    pendingApprovals: async () => pending,
    sessions: async () => [session],
    answerApproval: async (id, answer) => {
      answers.push([id, answer]);
    },
    sessionGrants: async () => [],
  });
  return { backend, answers };
}

describe("the approvals inbox", () => {
  it("shows a card with the parsed sub-commands and the rules, the deciding one marked", async () => {
    const { backend } = backendWith();
    render(<App backend={backend} />);
    const card = await screen.findByTestId("approval-card");
    expect(within(card).getByTestId("command")).toHaveTextContent("git push origin main && rm -rf build");
    const commands = within(card).getByTestId("sub-commands");
    expect(within(commands).getByText("git push origin main")).toBeInTheDocument();
    expect(within(commands).getByText("rm -rf build")).toBeInTheDocument();
    const rules = within(card).getByTestId("rules");
    const deciding = rules.querySelector("tr[data-deciding]");
    expect(deciding).toHaveTextContent("git-push");
    expect(deciding).toHaveTextContent("…/shop/.portcullis/policy.json:14");
    expect(deciding).toHaveTextContent("decides");
    expect(within(rules).getByText("rm-build").closest("tr")).not.toHaveAttribute("data-deciding");
    expect(within(card).getByText(/claude-code 2\.1\.0/)).toBeInTheDocument();
    expect(within(card).getByText(/then denied \(timeout\)/)).toBeInTheDocument();
    expect(within(card).getAllByText("/home/dev/shop")[0]).toBeInTheDocument();
    // What an answer is bound to: the digest of the arguments shown, the policy version that asked.
    expect(card).toHaveAttribute("data-arguments-sha256", digest(7));
    expect(within(card).getByTestId("binding")).toHaveTextContent(`sha256 ${digest(7).slice(0, 12)}…`);
    expect(within(card).getByTestId("binding")).toHaveTextContent("under policy 3f2a9c1e7b6d");
  });

  it("shows the walls the command will run inside, and warns when it would run without them", async () => {
    const unconfined = shellApproval(8);
    unconfined.action.command = "make";
    unconfined.arguments = { command: "make" };
    unconfined.action.sandbox = {
      ...unconfined.action.sandbox!,
      enforcement: { state: "unconfined", reason: "this kernel has no Landlock" },
    };
    const { backend } = backendWith([shellApproval(), unconfined]);
    render(<App backend={backend} />);
    const cards = await screen.findAllByTestId("approval-card");
    const walls = within(cards[0]!).getByTestId("sandbox");
    expect(walls).toHaveTextContent("confined");
    expect(walls).toHaveTextContent("writes only /home/dev/shop");
    expect(within(walls).getByTestId("sandbox-network")).toHaveTextContent("closed");
    expect(walls).toHaveTextContent("hides 2 places");
    expect(within(cards[1]!).getByTestId("sandbox")).toHaveTextContent("unconfined");
    expect(within(cards[1]!).getByTestId("sandbox")).toHaveTextContent("this kernel has no Landlock");
  });

  it("asks about a host a running command's rule does not name, the host escaped", async () => {
    const host = shellApproval(9);
    host.action = { kind: "network", operation: "connect", target: "paste.example\u001b[2J:443", paths: [], risk: "low" };
    host.arguments = { command: "npm install left-pad", host: "paste.example", port: 443 };
    host.reason = "the command asks for paste.example:443, and rule `npm` allows registry.npmjs.org (not it)";
    host.evaluation = null;
    const { backend } = backendWith([host]);
    render(<App backend={backend} />);
    const card = await screen.findByTestId("approval-card");
    const asks = within(card).getByTestId("host-ask");
    expect(asks).toHaveTextContent("a running command asks to reach paste.example\\x1b[2J:443, which its rule does not name");
    expect(asks.textContent).not.toContain("\u001b");
    expect(within(card).getByTestId("arguments")).toHaveTextContent("npm install left-pad");
  });

  it("marks the part that caused the prompt, and flags what the parser could not see through", async () => {
    const approval = shellApproval();
    approval.evaluation!.parts!.push({
      kind: "unseen",
      text: "eval \"$x\"",
      decision: "prompt",
      rule: null,
      reason: "Eval cannot be judged statically",
      reasons: [],
      paths: [],
      unseen: true,
    });
    const { backend } = backendWith([approval]);
    render(<App backend={backend} />);
    const parts = await screen.findByTestId("sub-commands");
    const rows = within(parts).getAllByTestId("part");
    expect(rows[0]).toHaveAttribute("data-cause");
    expect(rows[0]).toHaveTextContent("git-push");
    expect(rows[1]).not.toHaveAttribute("data-cause");
    expect(rows[1]).toHaveTextContent("…/dev/shop/build");
    expect(rows[2]).toHaveTextContent("not seen through");
    expect(within(parts).getByTestId("unseen-note")).toHaveTextContent("1 the parser could not see through");
  });

  it("shows one card for identical calls and answers them all together", async () => {
    const { backend, answers } = backendWith([shellApproval(7), shellApproval(8)]);
    const user = userEvent.setup();
    render(<App backend={backend} />);
    const card = await screen.findByTestId("approval-card");
    expect(within(card).getByTestId("identical")).toHaveTextContent("×2 identical calls");
    await user.keyboard("s");
    await waitFor(() =>
      expect(answers).toEqual([
        [7, { answer: "session", arguments_sha256: digest(7), note: null, scope: null }],
        [8, { answer: "session", arguments_sha256: digest(8), note: null, scope: null }],
      ]),
    );
  });

  it("opens the always sheet: scope, file, diff and ledger impact before anything is written", async () => {
    const previews: Array<unknown> = [];
    const { backend, answers } = backendWith();
    backend.alwaysPreview = async (id, scope) => {
      previews.push([id, scope]);
      const words = scope?.[0]?.words ?? 4;
      const pattern = ["git", "push", "origin", "main"].slice(0, words);
      return {
        approval_id: id,
        file: "/home/dev/.config/portcullis/policy.json",
        creates: false,
        rules: [{ id: "always-1", pattern, exact: scope?.[0]?.exact ?? true, example: "git push origin main", words_offered: 4 }],
        read_roots: [],
        hosts: [],
        diff: [
          { kind: "same", old: 3, new: 3, text: '    "rules": [' },
          { kind: "added", new: 4, text: `{"id":"always-1","pattern":${JSON.stringify(pattern)}}` },
        ],
        allows_call: true,
        impact: { calls: 40, would_allow: 3, were_refused: 2, examples: ["git push origin main"] },
        impact_error: null,
      };
    };
    const user = userEvent.setup();
    render(<App backend={backend} />);
    await screen.findByTestId("approval-card");
    await user.keyboard("a");
    const sheet = await screen.findByTestId("always-sheet");
    expect(await within(sheet).findByTestId("always-impact")).toHaveTextContent(
      "it would have allowed 3 past calls the policy did not allow; 2 of them were refused",
    );
    expect(within(sheet).getByTestId("always-file")).toHaveTextContent("/home/dev/.config/portcullis/policy.json");
    expect(answers).toEqual([]);
    await user.selectOptions(within(sheet).getByTestId("always-scope"), "2:prefix");
    await waitFor(() => expect(within(sheet).getByTestId("always-diff")).toHaveTextContent('["git","push"]'));
    expect(previews.at(-1)).toEqual([7, [{ words: 2, exact: false }]]);
    await user.click(within(sheet).getByTestId("always-write"));
    await waitFor(() =>
      expect(answers).toEqual([
        [7, { answer: "always", arguments_sha256: digest(7), note: null, scope: [{ words: 2, exact: false }] }],
      ]),
    );
  });

  it("lists session grants and revokes one", async () => {
    const { backend } = backendWith([]);
    let grants = [
      {
        id: "g1",
        session_id: session.id,
        tool: "shell",
        action: { kind: "execute" as const, operation: "exec", command: "npm test", cwd: null, paths: [], risk: "low" as const },
        granted_at: Date.now() * 1000,
        receipt: "9c1e".padEnd(64, "0"),
      },
    ];
    backend.sessionGrants = async () => grants;
    backend.revokeSessionGrant = async (id) => {
      grants = grants.filter((g) => g.id !== id);
      return null;
    };
    const user = userEvent.setup();
    render(<App backend={backend} />);
    const row = await screen.findByTestId("session-grant");
    expect(row).toHaveTextContent("npm test");
    await user.click(within(row).getByTestId("revoke-grant"));
    await waitFor(() => expect(screen.queryByTestId("session-grant")).not.toBeInTheDocument());
  });

  it("lists calls whose outcome is unknown and sends the operator's decision on one", async () => {
    const { backend } = backendWith([]);
    const row = (key: string, state: "unknown" | "done") => ({
      agent: "ci-bot",
      key,
      tool: "shell",
      summary: "npm run migrate",
      digest: "ab".repeat(32),
      call_id: `call-${key}`,
      session_id: "s1",
      state,
      claimed_at: Date.now() * 1000 - 60_000_000,
      expires_at: Date.now() * 1000 + 60_000_000,
    });
    let effects = [row("migrate-\u001b[2J1", "unknown"), row("deploy-2", "done")];
    const marks: unknown[][] = [];
    backend.effects = async () => effects;
    backend.markEffect = async (...a) => {
      marks.push(a);
      effects = effects.filter((e) => e.key !== a[1]);
      return `call-${a[1]}`;
    };
    const user = userEvent.setup();
    render(<App backend={backend} />);
    const rows = await screen.findAllByTestId("unknown-outcome");
    expect(rows).toHaveLength(1);
    // The key is the agent's text: its control characters are shown escaped.
    expect(rows[0]).toHaveTextContent("migrate-\\x1b[2J1");
    expect(rows[0]).toHaveTextContent("ci-bot");
    expect(within(rows[0]!).getByTestId("effect-summary")).toHaveTextContent("npm run migrate");
    await user.click(within(rows[0]!).getByTestId("mark-retryable"));
    expect(marks).toEqual([["ci-bot", "migrate-\u001b[2J1", "retryable", null]]);
    await waitFor(() => expect(screen.queryByTestId("unknown-outcomes")).not.toBeInTheDocument());
  });

  it("shows a write's diff", async () => {
    const write = shellApproval(11);
    write.tool = "write";
    write.arguments = { path: "run.sh", content: "echo 2" };
    write.action = { kind: "write", operation: "write", command: null, cwd: "/home/dev/shop", paths: ["/home/dev/shop/run.sh"], risk: "medium" };
    write.file_change = {
      path: "/home/dev/shop/run.sh",
      exists: true,
      diff: [
        { kind: "removed", old: 1, text: "echo 1" },
        { kind: "added", new: 1, text: "echo 2" },
      ],
      note: null,
    };
    const { backend } = backendWith([write]);
    render(<App backend={backend} />);
    const change = await screen.findByTestId("file-change");
    expect(change).toHaveTextContent(/changes\s*\/home\/dev\/shop\/run.sh/);
    expect(within(change).getByTestId("file-diff")).toHaveTextContent("−echo 1");
    expect(within(change).getByTestId("file-diff")).toHaveTextContent("+echo 2");
  });

  it("says who settled a card this inbox did not answer (another operator, a timeout), agent text escaped", async () => {
    const escaped = shellApproval(9);
    escaped.action.command = "echo \u001b[2Jhi";
    escaped.arguments = { command: "echo \u001b[2Jhi" };
    const { backend } = backendWith([shellApproval(7), escaped]);
    render(<App backend={backend} />);
    expect(await screen.findAllByTestId("approval-card")).toHaveLength(2);
    act(() => backend.push([{ seq: 1, at: 0, event: { kind: "approval_settled", id: 7, outcome: "deny", operator: "bob (browser)" } }]));
    await waitFor(() => expect(screen.getAllByTestId("approval-card")).toHaveLength(1));
    expect(screen.getByTestId("settled-elsewhere")).toHaveTextContent(/^#7 \(git push origin main.*\) was denied by bob \(browser\)$/);
    act(() => backend.push([{ seq: 2, at: 0, event: { kind: "approval_settled", id: 9, outcome: "timeout", operator: null } }]));
    await waitFor(() => expect(screen.getByTestId("settled-elsewhere")).toHaveTextContent("#9 (echo \\x1b[2Jhi) was timed out (denied)"));
  });

  it("says which hub a call waits on when the inbox spans hubs", async () => {
    const theirs = shellApproval(7 + 2 ** 40);
    theirs.hub = "devbox:7391";
    theirs.arguments = { command: "make deploy" };
    const { backend, answers } = backendWith([shellApproval(7), theirs]);
    const user = userEvent.setup();
    render(<App backend={backend} />);
    const cards = await screen.findAllByTestId("approval-card");
    expect(within(cards[0]!).queryByTestId("approval-hub")).toBeNull();
    expect(within(cards[1]!).getByTestId("approval-hub")).toHaveTextContent("on devbox:7391");
    await user.click(within(cards[1]!).getByTestId("answer-once"));
    await waitFor(() => expect(answers.map(([id]) => id)).toEqual([7 + 2 ** 40]));
  });

  it("fetches the waiting calls again when the feed says events were missed", async () => {
    const pending = [shellApproval(7)];
    const { backend } = backendWith(pending);
    render(<App backend={backend} />);
    expect(await screen.findAllByTestId("approval-card")).toHaveLength(1);
    const later = shellApproval(8);
    later.arguments = { command: "make deploy" };
    pending.push(later);
    act(() => backend.push([{ seq: 1, at: 0, event: { kind: "missed", source: "connection", count: 0 } }]));
    await waitFor(() => expect(screen.getAllByTestId("approval-card")).toHaveLength(2));
  });

  it("keeps a broken policy's error in view, with its place, until a good one loads", async () => {
    const { backend } = backendWith([]);
    render(<App backend={backend} />);
    await screen.findByTestId("inbox-empty");
    act(() =>
      backend.push([
        { seq: 1, at: 0, event: { kind: "policy_rejected", code: "policy_parse", message: "/p/.portcullis/policy.json:3:7: expected `,`" } },
      ]),
    );
    expect(await screen.findByTestId("policy-rejected")).toHaveTextContent("policy.json:3:7");
    expect(screen.getByTestId("policy-rejected")).toHaveTextContent("the working policy stays in force");
    act(() => backend.push([{ seq: 2, at: 0, event: { kind: "policy_reloaded", sources: [] } }]));
    await waitFor(() => expect(screen.queryByTestId("policy-rejected")).not.toBeInTheDocument());
  });

  it("answers the selected card by key: 1 is once, d is deny", async () => {
    const other = shellApproval(8);
    other.arguments = { command: "git push --tags" };
    const { backend, answers } = backendWith([shellApproval(7), other]);
    const user = userEvent.setup();
    render(<App backend={backend} />);
    await screen.findAllByTestId("approval-card");
    await user.keyboard("1");
    await waitFor(() =>
      expect(answers).toEqual([[7, { answer: "once", arguments_sha256: digest(7), note: null, scope: null }]]),
    );
    await waitFor(() => expect(screen.getAllByTestId("approval-card")).toHaveLength(1));
    await user.keyboard("d");
    await waitFor(() =>
      expect(answers[1]).toEqual([8, { answer: "deny", arguments_sha256: digest(8), note: null, scope: null }]),
    );
    expect(await screen.findByTestId("inbox-empty")).toBeInTheDocument();
  });

  it("keeps a card the hub holds other arguments for, says so, and fetches the inbox again", async () => {
    const { backend } = backendWith();
    let fetched = 0;
    const listed = backend.pendingApprovals;
    backend.pendingApprovals = () => {
      fetched += 1;
      return listed();
    };
    backend.answerApproval = async () => {
      throw { code: "receipt_mismatch", message: "other arguments", details: { id: 7 } };
    };
    const user = userEvent.setup();
    render(<App backend={backend} />);
    await screen.findByTestId("approval-card");
    await user.keyboard("1");
    expect(await screen.findByText(/holds other arguments for it than this card shows/)).toBeInTheDocument();
    expect(screen.getByTestId("approval-card")).toBeInTheDocument();
    await waitFor(() => expect(fetched).toBeGreaterThanOrEqual(2));
  });

  it("denies with a note, and lists the keys on ?", async () => {
    const { backend, answers } = backendWith();
    const user = userEvent.setup();
    render(<App backend={backend} />);
    await screen.findByTestId("approval-card");
    await user.keyboard("?");
    expect(screen.getByTestId("key-list")).toHaveTextContent("Allow once");
    await user.keyboard("n");
    await user.type(screen.getByTestId("deny-note"), "use the staging remote{Enter}");
    await waitFor(() =>
      expect(answers).toEqual([
        [7, { answer: "deny", arguments_sha256: digest(7), note: "use the staging remote", scope: null }],
      ]),
    );
  });

  it("adds cards the feed announces, and shows agent text escaped", async () => {
    const { backend } = backendWith([]);
    render(<App backend={backend} />);
    await screen.findByTestId("inbox-empty");
    const sneaky = shellApproval(9);
    sneaky.action.command = "ls\u001b[2K\rrm -rf ~";
    act(() => backend.push([asked(1, sneaky)]));
    const card = await screen.findByTestId("approval-card");
    expect(within(card).getByTestId("command")).toHaveTextContent("ls\\x1b[2K\\rrm -rf ~");
  });

  it("shows agent text the same way in the command line, the parts table and the rule reasons", async () => {
    const esc = shellApproval(12);
    esc.action.command = "echo \u001b[2Jhi";
    esc.evaluation = {
      ...esc.evaluation!,
      parts: [{ ...esc.evaluation!.parts![0]!, text: "echo \u001b[2Jhi", reason: "`echo \u001b[2Jhi`: rule git-push says prompt" }],
    };
    const { backend } = backendWith([esc]);
    render(<App backend={backend} />);
    const card = await screen.findByTestId("approval-card");
    expect(within(card).getByTestId("command")).toHaveTextContent("echo \\x1b[2Jhi");
    const part = within(card).getAllByTestId("part")[0]!;
    expect(part).toHaveTextContent("echo \\x1b[2Jhi");
    expect(part).toHaveTextContent("`echo \\x1b[2Jhi`: rule git-push says prompt");
    expect(card.textContent).not.toContain("\u001b");
  });

  it("names the protected place that decided, not the policy's default", async () => {
    const settings = shellApproval(13);
    settings.tool = "write";
    settings.arguments = { path: ".claude/settings.json", content: "{}" };
    settings.action = { kind: "write", operation: "write", command: null, cwd: "/home/dev/shop", paths: ["/home/dev/shop/.claude/settings.json"], risk: "medium" };
    const place = { kind: "executed" as const, place: "Claude Code settings (hooks and commands run code)", path: "/home/dev/shop/.claude/settings.json" };
    settings.evaluation = {
      decision: "prompt",
      matched_rules: [],
      commands: [],
      paths: [place.path],
      reasons: ["writes …"],
      deciding_rule: null,
      deciding_reason: "writes /home/dev/shop/.claude/settings.json (Claude Code settings (hooks and commands run code)): …",
      deciding_place: place,
    };
    const { backend } = backendWith([settings]);
    render(<App backend={backend} />);
    const rules = await screen.findByTestId("rules");
    expect(screen.getByTestId("decided-by")).toHaveTextContent(
      "decided by: protected place (executed content): Claude Code settings (hooks and commands run code) at /home/dev/shop/.claude/settings.json",
    );
    expect(rules).not.toHaveTextContent("the policy's default decided");
    expect(within(rules).getByTestId("no-rule")).toHaveTextContent("a protected place decided");
  });

  it("offers always on a first day: the sheet says it creates the user's policy file", async () => {
    const first = shellApproval(14);
    first.always = { offered: "yes", file: "/home/dev/.config/portcullis/policy.json", creates: true, rules: [{ id: "always-1", example: "git push origin main", words: ["git", "push", "origin", "main"] }], read_roots: [], amendment: {} };
    const { backend } = backendWith([first]);
    backend.alwaysPreview = async (id) => ({
      approval_id: id,
      file: "/home/dev/.config/portcullis/policy.json",
      creates: true,
      rules: [{ id: "always-1", pattern: ["git", "push", "origin", "main"], exact: true, example: "git push origin main", words_offered: 4 }],
      read_roots: [],
      hosts: [],
      diff: [{ kind: "added", new: 1, text: "{" }],
      allows_call: true,
      impact: { calls: 0, would_allow: 0, were_refused: 0, examples: [] },
      impact_error: null,
    });
    render(<App backend={backend} />);
    const card = await screen.findByTestId("approval-card");
    expect(within(card).getByTestId("always-offer")).toHaveTextContent("Always creates your policy /home/dev/.config/portcullis/policy.json");
    await userEvent.keyboard("3");
    const creates = await screen.findByTestId("always-creates");
    expect(creates).toHaveTextContent("creates your policy file /home/dev/.config/portcullis/policy.json");
    expect(creates).toHaveTextContent("the built-in default's rules (shown unchanged below) plus this one");
  });

  it("says plainly when another hub already runs", async () => {
    const backend = fakeBackend({
      hubState: async () => ({
        state: "not_running",
        code: "hub_already_running",
        message: "a Portcullis hub is already running for this user (pid 42, MCP at http://127.0.0.1:7391/mcp)",
      }),
    });
    render(<App backend={backend} />);
    expect(await screen.findByText("Another Portcullis hub is already running")).toBeInTheDocument();
  });
});
