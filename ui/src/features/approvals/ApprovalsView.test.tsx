import { describe, expect, it } from "vitest";
import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { App } from "../../app/App";
import { fakeBackend } from "../../backend/fake";
import type { Answer } from "../../backend/backend";
import { asked, session, shellApproval } from "../../test/fixtures";

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
    expect(within(card).getByText("/home/dev/shop")).toBeInTheDocument();
  });

  it("answers the selected card by key: 1 is once, d is deny", async () => {
    const { backend, answers } = backendWith([shellApproval(7), shellApproval(8)]);
    const user = userEvent.setup();
    render(<App backend={backend} />);
    await screen.findAllByTestId("approval-card");
    await user.keyboard("1");
    await waitFor(() => expect(answers).toEqual([[7, { answer: "once", note: null }]]));
    await waitFor(() => expect(screen.getAllByTestId("approval-card")).toHaveLength(1));
    await user.keyboard("d");
    await waitFor(() => expect(answers[1]).toEqual([8, { answer: "deny", note: null }]));
    expect(await screen.findByTestId("inbox-empty")).toBeInTheDocument();
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
    await waitFor(() => expect(answers).toEqual([[7, { answer: "deny", note: "use the staging remote" }]]));
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
